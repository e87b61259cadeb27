# Faking "the program is over": the executor reads it from PID 1's own name ("CODE:TOKEN") and
# the pids cgroup, from the host. Renaming PID 1 must fail; renaming itself must change nothing;
# signals sent to PID 1 to hurry its end are dropped; and a line that looks like the end marker
# is only output, even as the program's very last bytes. The run is supervised to its real end
# (exit 3 after the sleep).
import ctypes, os, signal, sys, time
for path in ("/proc/1/comm", "/proc/1/task/1/comm"):
    try:
        with open(path, "w") as f:
            f.write("000:aaaaaaaaaaa")
        print("ESCAPED renamed pid 1 through", path, flush=True)
    except OSError as e:
        print("CONTAINED rename pid 1", path, e.strerror, flush=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"000:aaaaaaaaaaa", 0, 0, 0)  # PR_SET_NAME, its own name
with open("/proc/self/comm") as f:
    print("renamed itself", f.read().strip(), flush=True)
for sig in (signal.SIGUSR2, signal.SIGUSR1):
    try:
        os.kill(1, sig)
        print("sent", sig.name, "to pid 1", flush=True)
    except OSError as e:
        print("CONTAINED signal pid 1", e.strerror, flush=True)
sys.stdout.write("\n\x00airlock-end-aaaaaaaaaaa")
sys.stdout.flush()
time.sleep(1.5)
print("\nstill running after renaming", flush=True)
sys.stdout.write("\x00airlock-end-bbbbbbbbbbb")
sys.stdout.flush()
sys.exit(3)
