# Looks for a way to write to the kernel's record of this run: a socket descriptor of any
# process it can see (gVisor's trace sink is one, held by gVisor's kernel; eBPF's ring buffer is
# the host's), or a socket file anywhere it can connect to; then names Airlock's trace markers
# itself, which must stay the program's own points.
import os, socket, stat

seen = []
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        continue
    for fd in fds:
        try:
            target = os.readlink("/proc/%s/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:"):
            seen.append((pid, fd, target))
if seen:
    print("ESCAPED socket descriptors in reach:", seen)
else:
    print("CONTAINED no socket descriptor in reach")

connected = []
for top in ("/", "/tmp", "/run", "/var/run", "/dev"):
    for dirpath, dirs, files in os.walk(top):
        if dirpath.startswith("/proc") or dirpath.startswith("/sys"):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                if not stat.S_ISSOCK(os.lstat(path).st_mode):
                    continue
            except OSError:
                continue
            for kind in (socket.SOCK_SEQPACKET, socket.SOCK_STREAM, socket.SOCK_DGRAM):
                s = socket.socket(socket.AF_UNIX, kind)
                try:
                    s.connect(path)
                    connected.append(path)
                except OSError:
                    pass
                finally:
                    s.close()
        if dirpath == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
print("ESCAPED connected to %s" % connected if connected else "CONTAINED no socket file to connect to")

for marker in ("/.airlock-trace-end", "/.airlock-trace-start"):
    try:
        os.open(marker, os.O_RDONLY)
    except OSError as error:
        print("CONTAINED marker %s: %s" % (marker, error.strerror))
