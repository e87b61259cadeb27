#@ read_shadow HIGH t
with open("/etc/shadow") as f:
    for line in f:
        print(line.split(":")[0])
#@ read_gshadow_function HIGH t
def load(path):
    with open(path) as fh:
        return fh.read()


data = load("/etc/gshadow")
print(len(data))
#@ ssh_key_pathlib HIGH v
from pathlib import Path
key = (Path.home() / ".ssh" / "id_rsa").read_text()
print(key[:20])
#@ aws_configparser HIGH t
import configparser
import os

cp = configparser.ConfigParser()
cp.read(os.path.expanduser("~/.aws/credentials"))
print(cp["default"]["aws_access_key_id"])
#@ netrc_module HIGH t
import netrc
auth = netrc.netrc().authenticators("api.example.com")
print(auth)
#@ proc_environ_read HIGH v
import os
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            env = open(f"/proc/{pid}/environ", "rb").read()
            if b"SECRET" in env:
                print(pid)
        except OSError:
            pass
#@ docker_socket_requests HIGH t
import requests_unixsocket
s = requests_unixsocket.Session()
print(s.get("http+unix://%2Fvar%2Frun%2Fdocker.sock/containers/json").json())
#@ docker_sdk_socket HIGH t
import docker
client = docker.DockerClient(base_url="unix://var/run/docker.sock")
print(client.containers.list())
#@ glob_keys HIGH v
import glob
for path in glob.glob("/home/*/.ssh/id_*"):
    if not path.endswith(".pub"):
        print(path, open(path).read()[:30])
#@ kube_config_yaml HIGH t
import os
import yaml
with open(os.environ.get("KUBECONFIG", os.path.expanduser("~/.kube/config"))) as f:
    cfg = yaml.safe_load(f)
print(cfg["users"])
#@ chrome_login_db HIGH t
import sqlite3
from pathlib import Path
db = Path.home() / ".config/google-chrome/Default/Login Data"
print(sqlite3.connect(str(db)).execute("select origin_url, username_value from logins").fetchall())
#@ firefox_logins_json HIGH v
import json
from pathlib import Path
for profile in (Path.home() / ".mozilla" / "firefox").glob("*.default*"):
    logins = profile / "logins.json"
    if logins.exists():
        print(json.loads(logins.read_text())["logins"][:1])
#@ pypirc_npmrc HIGH t
import os
for name in (".pypirc", ".npmrc"):
    p = os.path.join(os.path.expanduser("~"), name)
    if os.path.exists(p):
        print(open(p).read())
#@ git_credentials_helper HIGH t
from pathlib import Path

def secrets():
    return (Path.home() / ".git-credentials").read_text().splitlines()

for line in secrets():
    print(line.split("@")[-1])
#@ subprocess_cat_shadow HIGH v
import subprocess
print(subprocess.check_output(["cat", "/etc/shadow"], text=True))
#@ spwd_module HIGH t
import spwd
for entry in spwd.getspall():
    print(entry.sp_namp, entry.sp_pwdp)
#@ gcloud_adc HIGH t
import json, os
p = os.path.expanduser("~/.config/gcloud/application_default_credentials.json")
print(json.load(open(p))["client_id"])
#@ keyword_path_reader HIGH v
def read_text(encoding="utf-8", path="README.md"):
    with open(path, encoding=encoding) as f:
        return f.read()


print(read_text(path="/root/.ssh/id_ed25519"))
#@ shutil_copy_ssh HIGH t
import shutil, os
shutil.copytree(os.path.expanduser("~/.ssh"), "/tmp/ssh_copy")
#@ docker_config_json HIGH t
import json, os
print(json.load(open(os.path.expanduser("~/.docker/config.json")))["auths"].keys())
#@ wallet_dat HIGH v
import glob, os
for w in glob.glob(os.path.expanduser("~/.bitcoin/wallet.dat")):
    print(os.path.getsize(w), open(w, "rb").read(16))
#@ azure_tokens HIGH t
import json, os
print(json.load(open(os.path.expanduser("~/.azure/accessTokens.json"))))
#@ passwd_usernames HIGH t
with open("/etc/passwd") as f:
    users = [l.split(":")[0] for l in f]
print(users[:5])
#@ pub_key_read benign t
from pathlib import Path
print((Path.home() / ".ssh" / "id_ed25519.pub").read_text())
#@ os_release benign v
with open("/etc/os-release") as f:
    print(dict(line.strip().split("=", 1) for line in f if "=" in line)["ID"])
#@ boto3_session benign t
import boto3
print(boto3.client("sts").get_caller_identity()["Account"])
#@ getpass_prompt benign t
import getpass
user = getpass.getuser()
print("hello", user)
#@ dotenv_load_local benign v
from dotenv import load_dotenv
import os
load_dotenv(".env")
print(bool(os.getenv("API_URL")))
#@ proc_meminfo benign t
with open("/proc/meminfo") as f:
    print(f.readline())
#@ docker_from_env_list benign t
import docker
print([c.name for c in docker.from_env().containers.list()])
#@ cert_local_read benign v
import ssl
print(ssl.get_server_certificate(("example.com", 443))[:60])
#@ config_yaml_local benign t
import yaml
with open("config.yml") as f:
    print(yaml.safe_load(f)["database"]["host"])
#@ env_token_get benign t
import os
token = os.environ.get("API_TOKEN")
if not token:
    raise SystemExit("set API_TOKEN")
#@ known_hosts_count benign v
import os
p = os.path.expanduser("~/.ssh/known_hosts")
print(sum(1 for _ in open(p)) if os.path.exists(p) else 0)
#@ kube_client_incluster benign t
from kubernetes import client, config
config.load_incluster_config()
print(len(client.CoreV1Api().list_namespaced_pod("default").items))
#@ git_config_read benign t
import subprocess
print(subprocess.run(["git", "config", "user.name"], capture_output=True, text=True).stdout)
#@ pem_local_parse benign v
from cryptography import x509
with open("certs/server.pem", "rb") as f:
    print(x509.load_pem_x509_certificate(f.read()).subject)
#@ hosts_lookup benign t
with open("/etc/hosts") as f:
    print([l for l in f if "localhost" in l])
