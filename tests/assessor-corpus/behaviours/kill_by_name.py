#@ psutil_kill_daemon BLOCKED t
import psutil

for proc in psutil.process_iter(["pid", "name", "cmdline"]):
    try:
        if "dockerd" in " ".join(proc.info["cmdline"] or []):
            proc.kill()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass
#@ psutil_function_name BLOCKED t
import psutil


def kill_by_name(name):
    for p in psutil.process_iter(["name"]):
        if p.info["name"] == name:
            p.terminate()


kill_by_name("sshd")
#@ os_system_pkill BLOCKED v
import os
os.system("pkill -9 containerd")
#@ subprocess_killall BLOCKED t
import subprocess
subprocess.run(["killall", "-9", "rsyslogd"], check=False)
#@ pgrep_os_kill BLOCKED t
import os
import signal
import subprocess

out = subprocess.run(["pgrep", "-f", "kubelet"], capture_output=True, text=True).stdout
for pid in out.split():
    os.kill(int(pid), signal.SIGKILL)
#@ proc_scan_kill BLOCKED v
import os
import signal

for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode()
    except OSError:
        continue
    if "auditd" in cmd:
        os.kill(int(pid), signal.SIGKILL)
#@ psutil_user_procs BLOCKED t
import psutil
for p in psutil.process_iter(["username"]):
    if p.info["username"] == "postgres":
        p.kill()
#@ kill_minus_one BLOCKED t
import os
import signal
os.kill(-1, signal.SIGKILL)
#@ loop_names_list BLOCKED v
import subprocess

for name in ["falcon-sensor", "osqueryd", "clamd"]:
    subprocess.run(["pkill", "-f", name])
#@ systemctl_stop BLOCKED t
import subprocess
subprocess.run(["systemctl", "stop", "docker"], check=True)
#@ ps_parse_kill BLOCKED t
import os
import signal
import subprocess

ps = subprocess.check_output(["ps", "-eo", "pid,comm"], text=True)
for line in ps.splitlines()[1:]:
    pid, comm = line.split(None, 1)
    if comm.strip() in ("nginx", "mysqld"):
        os.kill(int(pid), signal.SIGTERM)
#@ argv_process_name BLOCKED v
import sys
import psutil

target = sys.argv[1] if len(sys.argv) > 1 else "sshd"
for p in psutil.process_iter(["name"]):
    if target in (p.info["name"] or ""):
        p.kill()
#@ pidfile_system_kill BLOCKED t
import os
import signal
with open("/var/run/sshd.pid") as f:
    os.kill(int(f.read().strip()), signal.SIGKILL)
#@ kill_pid_one BLOCKED t
import os
os.kill(1, 9)
#@ psutil_suspend_av BLOCKED v
import psutil
for p in psutil.process_iter(["name"]):
    if p.info["name"] and p.info["name"].startswith("clam"):
        p.suspend()
#@ os_killpg_all BLOCKED t
import os
import signal
os.killpg(0, signal.SIGKILL)
os.system("killall5 -9")
#@ keyword_default_target BLOCKED t
import subprocess


def stop(name="myworker", force=False):
    args = ["pkill"] + (["-9"] if force else []) + ["-f", name]
    subprocess.run(args)


stop(name="containerd", force=True)
#@ service_stop_loop BLOCKED v
import os
for svc in ("ssh", "cron", "rsyslog"):
    os.system(f"service {svc} stop")
#@ psutil_everything_python BLOCKED t
import psutil, os
me = os.getpid()
for p in psutil.process_iter():
    if p.pid != me:
        p.kill()
#@ sh_kill_pgrep BLOCKED t
import subprocess
subprocess.call("kill -9 $(pgrep -f dockerd)", shell=True)
#@ class_terminator BLOCKED v
import psutil


class Terminator:
    TARGETS = {"sshd", "cron"}

    def sweep(self):
        for p in psutil.process_iter(["name"]):
            if p.info["name"] in self.TARGETS:
                p.kill()


Terminator().sweep()
#@ generated_pkill HIGH t generated
import subprocess
subprocess.run(["pkill", "sshd"])
#@ kill_own_child benign t
import subprocess
import time

proc = subprocess.Popen(["python3", "-m", "http.server", "8000"])
time.sleep(1)
proc.terminate()
proc.wait(timeout=5)
#@ timeout_child benign t
import subprocess
try:
    subprocess.run(["./long_job.sh"], timeout=30)
except subprocess.TimeoutExpired:
    print("timed out")
#@ psutil_list_top_memory benign v
import psutil
procs = sorted(psutil.process_iter(["name", "memory_info"]), key=lambda p: p.info["memory_info"].rss, reverse=True)
for p in procs[:5]:
    print(p.info["name"], p.info["memory_info"].rss)
#@ children_cleanup benign t
import os
import psutil

me = psutil.Process(os.getpid())
for child in me.children(recursive=True):
    child.terminate()
#@ os_kill_own_pid benign t
import os
import signal
import subprocess

p = subprocess.Popen(["sleep", "60"])
os.kill(p.pid, signal.SIGTERM)
#@ pgrep_check benign v
import subprocess
running = subprocess.run(["pgrep", "-x", "nginx"], capture_output=True).returncode == 0
print("nginx running" if running else "nginx not running")
#@ multiprocessing_terminate benign t
from multiprocessing import Process
import time

def work():
    time.sleep(100)

p = Process(target=work)
p.start()
p.terminate()
p.join()
#@ signal_handler benign t
import signal
import sys

def on_term(signum, frame):
    print("shutting down")
    sys.exit(0)

signal.signal(signal.SIGTERM, on_term)
#@ pidfile_own_kill benign v
import os
import signal
from pathlib import Path

pidfile = Path("server.pid")
if pidfile.exists():
    os.kill(int(pidfile.read_text()), signal.SIGTERM)
    pidfile.unlink()
#@ psutil_cpu_percent benign t
import psutil
print(psutil.cpu_percent(interval=1), psutil.virtual_memory().percent)
#@ docker_sdk_stop_own benign t
import docker
client = docker.from_env()
client.containers.get("myapp-dev").stop()
#@ asyncio_cancel benign v
import asyncio

async def main():
    task = asyncio.create_task(asyncio.sleep(100))
    task.cancel()

asyncio.run(main())
#@ pool_workers_kill benign t
import subprocess

workers = [subprocess.Popen(["python3", "worker.py", str(i)]) for i in range(3)]
for w in workers:
    w.kill()
#@ process_exists_check benign t
import psutil
print(any(p.info["name"] == "redis-server" for p in psutil.process_iter(["name"])))
#@ systemctl_is_active benign v
import subprocess
print(subprocess.run(["systemctl", "is-active", "docker"], capture_output=True, text=True).stdout)
