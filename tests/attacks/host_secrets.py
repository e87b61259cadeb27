# Reading host secrets: the host's processes are in another pid namespace, PID 1 here is the
# non-dumpable bootstrap, the Docker socket is not mounted, and the process has no capabilities.
import os, socket
def attempt(label, fn):
    try:
        value = fn()
        print("ESCAPED", label, repr(value)[:80])
    except OSError as e:
        print("CONTAINED", label, e.strerror)
# The sandbox's own variables, which every program in it is given anyway (the executor's base
# environment, the bootstrap's source and idle time, and Docker's HOSTNAME): under gVisor (2022-12-19), which does not
# hide a non-dumpable process's /proc/<pid>/environ, PID 1's can be read, and that is all it
# may hold. Anything else in it is a secret that escaped.
SANDBOX_VARIABLES = {"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "LANG", "AIRLOCK_BOOT", "AIRLOCK_IDLE_S", "AIRLOCK_RUN_AS", "HOSTNAME"}
try:
    names = sorted(v.split(b"=", 1)[0].decode() for v in open("/proc/1/environ", "rb").read().split(b"\0") if v)
    if set(names) <= SANDBOX_VARIABLES:
        print("EXPOSED /proc/1/environ holds only the sandbox's own", " ".join(names))
    else:
        print("ESCAPED /proc/1/environ", names)
except OSError as e:
    print("CONTAINED /proc/1/environ", e.strerror)
attempt("/proc/1/mem", lambda: open("/proc/1/mem", "rb").read(16))
attempt("/proc/1/root", lambda: os.listdir("/proc/1/root"))
attempt("/etc/shadow", lambda: open("/etc/shadow").read())
attempt("/proc/kcore", lambda: open("/proc/kcore", "rb").read(16))
for path in ["/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"]:
    def connect(path=path):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        return "connected"
    attempt(path, connect)
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
print("uid", status["Uid"].split()[0], "CapEff", status["CapEff"].strip(), "CapBnd", status["CapBnd"].strip(),
      "NoNewPrivs", status.get("NoNewPrivs", "absent").strip(), "Seccomp", status["Seccomp"].strip())
others = [p for p in os.listdir("/proc") if p.isdigit()]
print("processes visible", len(others))
