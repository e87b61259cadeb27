# setuid: the image has no setuid programs, no-new-privileges would neutralise any, /tmp is
# nosuid and noexec, and the process cannot change its uid.
import os, stat, subprocess
found = []
for root, dirs, files in os.walk("/", topdown=True):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev")]
    for f in files:
        p = os.path.join(root, f)
        try:
            if os.lstat(p).st_mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(p)
        except OSError:
            pass
print("CONTAINED no setuid files" if not found else "ESCAPED setuid files " + " ".join(found[:5]))
for call, arg in [(os.setuid, 0), (os.setgid, 0), (os.seteuid, 0)]:
    try:
        call(arg)
        print("ESCAPED", call.__name__)
    except OSError as e:
        print("CONTAINED", call.__name__, e.strerror)
with open("/tmp/su", "wb") as f:
    f.write(open("/bin/sh", "rb").read())
os.chmod("/tmp/su", 0o4755)
try:
    subprocess.run(["/tmp/su", "-c", "id -u"], check=True)
    print("ESCAPED ran a binary from /tmp")
except (OSError, subprocess.CalledProcessError) as e:
    print("CONTAINED exec from /tmp", getattr(e, "strerror", e))
print("uid", os.getuid(), "euid", os.geteuid())
