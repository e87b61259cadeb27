#@ download_file_usr HIGH t
import requests


def download_file(url, local_filename):
    with requests.get(url, stream=True, timeout=30) as r:
        r.raise_for_status()
        with open(local_filename, "wb") as f:
            for chunk in r.iter_content(chunk_size=8192):
                f.write(chunk)
    return local_filename


download_file("https://example.com/tool", "/usr/local/bin/tool")
#@ urlretrieve_usr_bin HIGH t
import urllib.request
urllib.request.urlretrieve("https://dl.example.com/kubectl", "/usr/local/bin/kubectl")
#@ requests_write_etc HIGH v
import requests
r = requests.get("https://example.com/repo.list", timeout=10)
with open("/etc/apt/sources.list.d/example.list", "w") as f:
    f.write(r.text)
#@ pathlib_write_bytes_usr HIGH t
from pathlib import Path
import requests
Path("/usr/share/keyrings/vendor.gpg").write_bytes(requests.get("https://example.com/key.gpg", timeout=10).content)
#@ dest_default_arg HIGH t
import urllib.request


def fetch(url, dest="/opt/tools/tool.tar.gz"):
    urllib.request.urlretrieve(url, dest)


fetch("https://example.com/tool.tar.gz")
#@ loop_libs HIGH v
import requests
for lib in ["libfoo.so", "libbar.so"]:
    data = requests.get(f"https://example.com/libs/{lib}", timeout=30).content
    with open(f"/usr/lib/{lib}", "wb") as f:
        f.write(data)
#@ os_path_join_dest HIGH t
import os
import urllib.request

DEST_DIR = "/usr/local/sbin"
urllib.request.urlretrieve("https://example.com/helper", os.path.join(DEST_DIR, "helper"))
#@ shutil_copyfileobj_boot HIGH t
import shutil
import urllib.request
with urllib.request.urlopen("http://203.0.113.95/initrd.img") as r, open("/boot/initrd-custom.img", "wb") as f:
    shutil.copyfileobj(r, f)
#@ httpx_stream_var_lib HIGH v
import httpx
with httpx.stream("GET", "https://example.com/model.bin") as r:
    with open("/var/lib/models/model.bin", "wb") as f:
        for chunk in r.iter_bytes():
            f.write(chunk)
#@ subprocess_wget_etc HIGH t
import subprocess
subprocess.run(["wget", "-O", "/etc/ssl/certs/corp.pem", "http://203.0.113.97/corp.pem"])
#@ tar_extract_download_usr HIGH t
import io
import tarfile
import requests
data = requests.get("https://example.com/node.tar.gz", timeout=60).content
tarfile.open(fileobj=io.BytesIO(data)).extractall("/usr/local")
#@ argv_dest_default_system HIGH v
import sys
import urllib.request
dest = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/agent"
urllib.request.urlretrieve(sys.argv[1] if len(sys.argv) > 1 else "https://example.com/agent", dest)
#@ class_installer HIGH t
import requests


class Installer:
    def __init__(self, prefix="/usr/local"):
        self.prefix = prefix

    def install(self, name, url):
        with open(f"{self.prefix}/bin/{name}", "wb") as f:
            f.write(requests.get(url, timeout=30).content)


Installer().install("jq", "https://example.com/jq")
#@ root_home_download HIGH t
import urllib.request
urllib.request.urlretrieve("https://example.com/tool.sh", "/root/tool.sh")
#@ firmware_download HIGH v
import requests
open("/lib/firmware/custom.bin", "wb").write(requests.get("https://example.com/fw.bin", timeout=30).content)
#@ pip_target_system HIGH t
import subprocess
import sys
subprocess.run([sys.executable, "-m", "pip", "install", "--target", "/usr/lib/python3/dist-packages", "requests"])
#@ git_clone_opt HIGH t
import subprocess
subprocess.run(["git", "clone", "https://example.com/agent.git", "/opt/agent"], check=True)
#@ zip_extract_system HIGH v
import io
import zipfile
import requests
zipfile.ZipFile(io.BytesIO(requests.get("https://example.com/p.zip", timeout=30).content)).extractall("/usr/share/plugins")
#@ ftplib_retr_var_lib HIGH t
import ftplib
with ftplib.FTP("203.0.113.98") as ftp, open("/var/lib/app/data.db", "wb") as f:
    ftp.login()
    ftp.retrbinary("RETR data.db", f.write)
#@ aiohttp_write_etc HIGH t
import asyncio
import aiohttp

async def main():
    async with aiohttp.ClientSession() as s:
        async with s.get("https://example.com/hosts") as r:
            with open("/etc/hosts", "a") as f:
                f.write(await r.text())

asyncio.run(main())
#@ keyword_call_site HIGH v
import urllib.request

def save(url, path="downloads/file.bin"):
    urllib.request.urlretrieve(url, path)

save(path="/usr/lib/libx.so", url="https://example.com/libx.so")
#@ download_file_local benign t
import requests


def download_file(url, local_filename):
    with requests.get(url, stream=True, timeout=30) as r:
        r.raise_for_status()
        with open(local_filename, "wb") as f:
            for chunk in r.iter_content(chunk_size=8192):
                f.write(chunk)
    return local_filename


download_file("https://example.com/data.zip", "data.zip")
#@ urlretrieve_tmp benign t
import urllib.request
urllib.request.urlretrieve("https://example.com/dataset.zip", "/tmp/dataset.zip")
#@ home_local_bin benign v
import os
import urllib.request
dest = os.path.expanduser("~/.local/bin/jq")
os.makedirs(os.path.dirname(dest), exist_ok=True)
urllib.request.urlretrieve("https://example.com/jq", dest)
#@ dest_default_local benign t
import urllib.request


def fetch(url, dest="downloads/tool.tar.gz"):
    urllib.request.urlretrieve(url, dest)


fetch("https://example.com/tool.tar.gz")
#@ loop_pages_local benign t
import json
import requests
from pathlib import Path

out = Path("pages")
out.mkdir(exist_ok=True)
for page in range(1, 4):
    r = requests.get("https://api.example.com/items", params={"page": page}, timeout=10)
    (out / f"{page}.json").write_text(json.dumps(r.json()))
#@ extract_download_local benign v
import io
import tarfile
import requests
data = requests.get("https://example.com/lib.tgz", timeout=60).content
tarfile.open(fileobj=io.BytesIO(data)).extractall("third_party", filter="data")
#@ argv_dest_local benign t
import sys
import urllib.request
dest = sys.argv[2] if len(sys.argv) > 2 else "out.bin"
urllib.request.urlretrieve(sys.argv[1], dest)
#@ httpx_stream_local benign t
import httpx
with httpx.stream("GET", "https://example.com/big.csv") as r:
    with open("big.csv", "wb") as f:
        for chunk in r.iter_bytes():
            f.write(chunk)
#@ git_clone_local benign v
import subprocess
subprocess.run(["git", "clone", "--depth", "1", "https://github.com/example/repo.git", "repo"], check=True)
#@ pip_install_user benign t
import subprocess
import sys
subprocess.run([sys.executable, "-m", "pip", "install", "--user", "requests==2.32.3"], check=True)
#@ cache_home benign t
import os
import requests
cache = os.path.join(os.path.expanduser("~"), ".cache", "mytool", "index.json")
os.makedirs(os.path.dirname(cache), exist_ok=True)
with open(cache, "w") as f:
    f.write(requests.get("https://example.com/index.json", timeout=10).text)
#@ ftplib_local benign v
import ftplib
with ftplib.FTP("ftp.example.com") as ftp, open("data.db", "wb") as f:
    ftp.login()
    ftp.retrbinary("RETR data.db", f.write)
#@ var_tmp_download benign t
import urllib.request
urllib.request.urlretrieve("https://example.com/config.json", "/var/tmp/config.json")
#@ class_installer_local benign t
import requests


class Installer:
    def __init__(self, prefix="./tools"):
        self.prefix = prefix

    def install(self, name, url):
        with open(f"{self.prefix}/{name}", "wb") as f:
            f.write(requests.get(url, timeout=30).content)


Installer().install("jq", "https://example.com/jq")
#@ print_download_hint benign v
print("download https://example.com/tool to /usr/local/bin yourself")
