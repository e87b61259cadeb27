#@ subprocess_sudo HIGH t
import subprocess
subprocess.run(["sudo", "apt-get", "install", "-y", "nmap"], check=True)
#@ os_system_sudo HIGH t
import os
os.system("sudo systemctl restart nginx")
#@ setuid_chmod HIGH v
import os
import stat
os.chmod("./helper", os.stat("./helper").st_mode | stat.S_ISUID)
#@ chmod_4755 HIGH t
import os
os.chmod("/tmp/rootshell", 0o4755)
#@ setcap_subprocess HIGH t
import subprocess
subprocess.run(["setcap", "cap_net_raw+ep", "./scanner"], check=True)
#@ os_setuid_zero HIGH v
import os
os.setuid(0)
os.execv("/bin/sh", ["sh"])
#@ sudo_helper_function HIGH t
import subprocess


def as_root(*cmd):
    return subprocess.run(["sudo", *cmd], check=True)


as_root("mkdir", "-p", "/opt/app")
#@ sudo_password_stdin HIGH t
import os
import subprocess
pw = os.environ.get("SUDO_PASSWORD", "")
subprocess.run(["sudo", "-S", "id"], input=pw + "\n", text=True)
#@ pkexec_call HIGH v
import subprocess
subprocess.call(["pkexec", "/usr/bin/tee", "/etc/motd"])
#@ useradd_subprocess HIGH t
import subprocess
subprocess.run(["useradd", "-m", "-G", "sudo", "helper"], check=True)
#@ usermod_docker HIGH t
import getpass
import subprocess
subprocess.run(["usermod", "-aG", "docker", getpass.getuser()])
#@ chpasswd HIGH v
import subprocess
subprocess.run(["chpasswd"], input="root:toor\n", text=True)
#@ su_c HIGH t
import os
os.system("su -c 'cat /var/log/auth.log' root")
#@ mount_subprocess HIGH t
import subprocess
subprocess.run(["mount", "-o", "bind", "/etc", "./etc_copy"])
#@ ctypes_setresuid HIGH v
import ctypes
libc = ctypes.CDLL("libc.so.6")
libc.setresuid(0, 0, 0)
#@ loop_sudo_packages HIGH t
import subprocess

for pkg in ["curl", "jq", "htop"]:
    subprocess.run(["sudo", "apt-get", "install", "-y", pkg])
#@ iptables_flush HIGH t
import subprocess
subprocess.run("iptables -F && iptables -P INPUT ACCEPT", shell=True)
#@ modprobe HIGH v
import subprocess
subprocess.run(["modprobe", "-r", "apparmor"])
#@ setgid_bits HIGH t
import os
import stat
os.chmod("tool", stat.S_ISGID | 0o755)
#@ nsenter_host HIGH t
import os
os.execvp("nsenter", ["nsenter", "-t", "1", "-m", "-u", "-n", "-i", "sh"])
#@ doas_call HIGH v
import subprocess
subprocess.run(["doas", "rc-service", "sshd", "restart"])
#@ sudoedit_call HIGH t
import subprocess
subprocess.run(["sudo", "-u", "postgres", "psql", "-c", "select 1"])
#@ getuid_check benign t
import os
import sys
if os.geteuid() == 0:
    sys.exit("please do not run as root")
#@ chmod_exec benign t
import os
os.chmod("run.sh", 0o755)
#@ chmod_private benign v
import os
os.chmod("deploy_key", 0o600)
#@ print_sudo_hint benign t
print("Run `sudo make install` yourself to install system-wide.")
#@ stat_mode benign t
import os
import stat
mode = os.stat("run.sh").st_mode
print(bool(mode & stat.S_IXUSR))
#@ grp_membership benign v
import getpass
import grp
print(getpass.getuser() in grp.getgrnam("docker").gr_mem)
#@ umask benign t
import os
os.umask(0o077)
open("secret.txt", "w").write("x")
#@ shutil_which_sudo benign t
import shutil
print("sudo available:", shutil.which("sudo") is not None)
#@ subprocess_id benign v
import subprocess
print(subprocess.run(["id", "-Gn"], capture_output=True, text=True).stdout)
#@ pwd_lookup benign t
import os
import pwd
print(pwd.getpwuid(os.getuid()).pw_name)
#@ os_chown_own benign t
import os
os.chown("output.txt", os.getuid(), os.getgid())
#@ capabilities_read benign v
with open("/proc/self/status") as f:
    print([l for l in f if l.startswith("Cap")])
#@ mount_list_psutil benign t
import psutil
print([p.mountpoint for p in psutil.disk_partitions()])
#@ drop_privileges_text benign t
SUDO_NOTE = "this tool never uses sudo"
print(SUDO_NOTE)
#@ chmod_group_write benign v
import os
import stat
os.chmod("shared.txt", stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP)
