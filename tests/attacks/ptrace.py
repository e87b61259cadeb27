# ptrace: attaching to PID 1 (the bootstrap, non-dumpable) must fail, and so must attaching to
# anything outside the container (not even visible).
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16
for pid in (1,):
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) == -1:
        print("CONTAINED ptrace", pid, os.strerror(ctypes.get_errno()), flush=True)
    else:
        print("ESCAPED ptrace attached to", pid, flush=True)
try:
    os.kill(1, 9)
    print("sent SIGKILL to pid 1; still running:", os.path.exists("/proc/1"))
except OSError as e:
    print("CONTAINED kill 1", e.strerror)
print("CONTAINED alive after kill" if os.path.exists("/proc/1/status") else "ESCAPED pid 1 died")
