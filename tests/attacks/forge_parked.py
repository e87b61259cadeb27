# Faking "the program is over": the executor takes it from PID 1's name and the pids cgroup,
# seen from the host. Renaming PID 1 must fail; renaming itself must change nothing; the run is
# supervised to its real end (exit 3 after the sleep).
import ctypes, os, sys, time
for path in ("/proc/1/comm", "/proc/1/task/1/comm"):
    try:
        with open(path, "w") as f:
            f.write("airlock-parked")
        print("ESCAPED renamed pid 1 through", path, flush=True)
    except OSError as e:
        print("CONTAINED rename pid 1", path, e.strerror, flush=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"airlock-parked", 0, 0, 0)  # PR_SET_NAME, its own name
with open("/proc/self/comm") as f:
    print("renamed itself", f.read().strip(), flush=True)
time.sleep(1.5)
print("still running after renaming", flush=True)
sys.exit(3)
