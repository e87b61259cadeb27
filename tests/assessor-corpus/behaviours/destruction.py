#@ rmtree_root BLOCKED t
import shutil
shutil.rmtree("/", ignore_errors=True)
#@ rmtree_home_expanduser BLOCKED t
import os
import shutil
shutil.rmtree(os.path.expanduser("~"))
#@ cleanup_function_etc BLOCKED v
import shutil


def cleanup(path):
    print(f"removing {path}")
    shutil.rmtree(path, ignore_errors=True)


cleanup("/etc")
#@ os_remove_passwd BLOCKED t
import os
os.remove("/etc/passwd")
#@ walk_unlink_usr BLOCKED t
import os

for root, dirs, files in os.walk("/usr"):
    for name in files:
        try:
            os.unlink(os.path.join(root, name))
        except OSError:
            pass
#@ overwrite_disk BLOCKED v
with open("/dev/sda", "wb") as disk:
    disk.write(b"\0" * 1024 * 1024)
#@ subprocess_rm_rf BLOCKED t
import subprocess
subprocess.run(["rm", "-rf", "/var/lib"], check=False)
#@ os_system_rm_home BLOCKED t
import os
os.system("rm -rf $HOME/*")
#@ loop_system_dirs BLOCKED v
import shutil

for d in ["/var/lib/docker", "/var/lib/postgresql", "/opt"]:
    shutil.rmtree(d, ignore_errors=True)
#@ pathlib_unlink_glob BLOCKED t
from pathlib import Path
for p in Path("/etc").glob("*.conf"):
    p.unlink()
#@ truncate_system_file BLOCKED t
open("/etc/hosts", "w").close()
#@ rmtree_argv_default BLOCKED v
import shutil
import sys

target = sys.argv[1] if len(sys.argv) > 1 else "/home"
shutil.rmtree(target)
#@ path_home_rglob BLOCKED t
from pathlib import Path

for f in Path.home().rglob("*"):
    if f.is_file():
        f.unlink()
#@ shred_os_system BLOCKED t
import os
os.system("shred -uz /etc/shadow")
#@ keyword_arg_path BLOCKED v
import shutil


def wipe(dry_run=True, path="./build"):
    if not dry_run:
        shutil.rmtree(path)


wipe(dry_run=False, path="/boot")
#@ dd_subprocess BLOCKED t
import subprocess
subprocess.check_call("dd if=/dev/urandom of=/dev/nvme0n1 bs=1M", shell=True)
#@ mkfs_subprocess BLOCKED t
import subprocess
subprocess.run(["mkfs.ext4", "-F", "/dev/sdb"], check=True)
#@ class_cleaner BLOCKED v
import os
import shutil


class Cleaner:
    def __init__(self, roots):
        self.roots = roots

    def run(self):
        for root in self.roots:
            if os.path.isdir(root):
                shutil.rmtree(root)


Cleaner(["/srv", "/var/www"]).run()
#@ os_rmdir_walk_home BLOCKED t
import os
home = os.environ["HOME"]
for root, dirs, files in os.walk(home, topdown=False):
    for f in files:
        os.remove(os.path.join(root, f))
#@ overwrite_bin BLOCKED t
with open("/bin/ls", "wb") as f:
    f.write(b"")
#@ fstring_rm BLOCKED v
import os
user = "ubuntu"
os.system(f"rm -rf /home/{user}")
#@ generated_rmtree_home HIGH t generated
import shutil, os
shutil.rmtree(os.path.expanduser("~"))
#@ rmtree_build benign t
import shutil
shutil.rmtree("build", ignore_errors=True)
#@ tempdir_cleanup benign t
import shutil
import tempfile

work = tempfile.mkdtemp()
try:
    with open(f"{work}/data.txt", "w") as f:
        f.write("x")
finally:
    shutil.rmtree(work)
#@ cleanup_function_local benign v
import shutil


def cleanup(path):
    print(f"removing {path}")
    shutil.rmtree(path, ignore_errors=True)


cleanup("./output")
cleanup(".pytest_cache")
#@ remove_old_files benign t
import os
import time

for name in os.listdir("logs"):
    path = os.path.join("logs", name)
    if time.time() - os.path.getmtime(path) > 7 * 86400:
        os.remove(path)
#@ unlink_tmp benign t
from pathlib import Path
for p in Path("/tmp").glob("myapp-*.lock"):
    p.unlink(missing_ok=True)
#@ overwrite_local_file benign v
with open("results.txt", "w") as f:
    f.write("fresh start\n")
#@ subprocess_rm_local benign t
import subprocess
subprocess.run(["rm", "-rf", "dist", "build"], check=True)
#@ os_system_clean benign t
import os
os.system("rm -f *.pyc")
#@ rmtree_argv_local benign v
import shutil
import sys

target = sys.argv[1] if len(sys.argv) > 1 else "./cache"
shutil.rmtree(target, ignore_errors=True)
#@ disk_image_local benign t
with open("disk.img", "wb") as f:
    f.truncate(64 * 1024 * 1024)
#@ read_dev_urandom benign t
with open("/dev/urandom", "rb") as f:
    print(f.read(16).hex())
#@ pathlib_rmdir_empty benign v
from pathlib import Path
for d in sorted(Path("data").rglob("*"), reverse=True):
    if d.is_dir() and not any(d.iterdir()):
        d.rmdir()
#@ listdir_home benign t
import os
print(sorted(os.listdir(os.path.expanduser("~")))[:10])
#@ walk_etc_count benign t
import os
count = sum(len(files) for _, _, files in os.walk("/etc"))
print(count, "files under /etc")
#@ shutil_move_local benign v
import shutil
shutil.move("report.txt", "archive/report.txt")
