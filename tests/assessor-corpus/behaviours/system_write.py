#@ etc_hosts_append HIGH t
with open("/etc/hosts", "a") as f:
    f.write("203.0.113.91 updates.example.com\n")
#@ write_usr_local_bin HIGH t
import os
import shutil

shutil.copy("mytool", "/usr/local/bin/mytool")
os.chmod("/usr/local/bin/mytool", 0o755)
#@ pathlib_etc_write HIGH v
from pathlib import Path
(Path("/etc") / "apt" / "sources.list.d" / "extra.list").write_text("deb http://203.0.113.92/debian stable main\n")
#@ helper_write_dest HIGH t
def save(content, dest):
    with open(dest, "w") as f:
        f.write(content)


save("PermitRootLogin yes\n", "/etc/ssh/sshd_config")
#@ proc_sys_write HIGH t
with open("/proc/sys/kernel/randomize_va_space", "w") as f:
    f.write("0")
#@ var_lib_state HIGH v
import os
os.makedirs("/var/lib/myagent", exist_ok=True)
with open("/var/lib/myagent/state.json", "w") as f:
    f.write("{}")
#@ root_dotfile HIGH t
open("/root/.inputrc", "w").write("set editing-mode vi\n")
#@ sys_write HIGH t
from pathlib import Path
Path("/sys/class/leds/input0::capslock/brightness").write_text("1")
#@ boot_config HIGH v
with open("/boot/config.txt", "a") as f:
    f.write("dtoverlay=custom\n")
#@ subprocess_tee_etc HIGH t
import subprocess
subprocess.run(["tee", "-a", "/etc/hosts"], input="1.2.3.4 x\n", text=True)
#@ os_system_cp_bin HIGH t
import os
os.system("cp ./daemon /usr/sbin/daemon")
#@ loop_copy_libs HIGH v
import glob
import shutil
for lib in glob.glob("build/*.so"):
    shutil.copy(lib, "/usr/lib/")
#@ os_path_join_etc HIGH t
import os
conf = os.path.join("/etc", "myapp", "app.conf")
os.makedirs(os.path.dirname(conf), exist_ok=True)
with open(conf, "w") as f:
    f.write("[main]\n")
#@ tarfile_extract_etc HIGH t
import tarfile
with tarfile.open("config.tgz") as t:
    t.extractall("/etc")
#@ symlink_usr HIGH v
import os
os.symlink(os.path.abspath("bin/tool"), "/usr/local/bin/tool")
#@ chown_etc HIGH t
import os
os.chown("/etc/myapp.conf", 1000, 1000)
#@ resolv_conf HIGH t
with open("/etc/resolv.conf", "w") as f:
    f.write("nameserver 203.0.113.93\n")
#@ keyword_dest_default HIGH v
import shutil


def deploy(src, dest="./deploy"):
    shutil.copytree(src, dest, dirs_exist_ok=True)


deploy("assets", dest="/usr/share/myapp")
#@ fstring_path HIGH t
name = "custom"
with open(f"/etc/modprobe.d/{name}.conf", "w") as f:
    f.write("blacklist nouveau\n")
#@ zipfile_extract_usr HIGH t
import zipfile
zipfile.ZipFile("plugins.zip").extractall("/usr/lib/plugins")
#@ sed_subprocess_etc HIGH v
import subprocess
subprocess.run(["sed", "-i", "s/^#Port 22/Port 2222/", "/etc/ssh/sshd_config"], check=True)
#@ rename_into_bin HIGH t
import os
os.replace("./ls_wrapper", "/bin/ls")
#@ write_local benign t
with open("hosts.test", "a") as f:
    f.write("127.0.0.1 api.local\n")
#@ tmp_write benign t
import tempfile
with tempfile.NamedTemporaryFile("w", delete=False, suffix=".txt") as f:
    f.write("scratch")
print(f.name)
#@ user_local_bin benign v
import os
import shutil
dest = os.path.expanduser("~/.local/bin/mytool")
os.makedirs(os.path.dirname(dest), exist_ok=True)
shutil.copy("mytool", dest)
#@ helper_write_local benign t
def save(content, dest):
    with open(dest, "w") as f:
        f.write(content)


save("PermitRootLogin no\n", "out/sshd_config.suggested")
#@ read_etc benign t
with open("/etc/hostname") as f:
    print(f.read().strip())
#@ extract_local benign v
import tarfile
with tarfile.open("release.tgz") as t:
    t.extractall("vendor", filter="data")
#@ os_path_join_local benign t
import os
out = os.path.join("build", "etc", "app.conf")
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "w") as f:
    f.write("[main]\n")
#@ proc_read benign t
print(open("/proc/loadavg").read())
#@ copy_from_usr_share benign v
import shutil
shutil.copy("/usr/share/dict/words", "words.txt")
#@ keyword_dest_local benign t
import shutil


def deploy(src, dest="./deploy"):
    shutil.copytree(src, dest, dirs_exist_ok=True)


deploy("assets")
#@ var_tmp benign t
import os
os.makedirs("/var/tmp/mycache", exist_ok=True)
open("/var/tmp/mycache/x.bin", "wb").write(b"0")
#@ write_dev_null benign v
import subprocess
subprocess.run(["./noisy"], stdout=open("/dev/null", "w"))
#@ print_etc_path_text benign t
print("configuration usually lives in /etc/myapp/app.conf")
#@ pathlib_home_config benign t
from pathlib import Path
p = Path.home() / ".config" / "tool" / "settings.toml"
p.parent.mkdir(parents=True, exist_ok=True)
p.write_text('theme = "dark"\n')
#@ zip_extract_local benign v
import zipfile
zipfile.ZipFile("fonts.zip").extractall("fonts")
