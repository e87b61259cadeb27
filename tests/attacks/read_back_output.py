# Reading its own output back. Under gVisor a run is sealed: the seal's token is on stdout before
# the program starts, so the program must not be able to read stdout back (or it could forge
# PID 1's end marker). Under runc no seal is used (the end's token is drawn after the program is
# gone), and a process can reopen its own pipe there: reading back is harmless, and said so.
import errno, os
for name in ("/proc/self/fd/1", "/proc/self/fd/2", "/dev/stdout", "/proc/1/fd/1"):
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        print("CONTAINED reopen", name, e.strerror, flush=True)
        continue
    try:
        data = os.read(fd, 65536)
        print("REOPENED", name, "and read", len(data), "bytes back", flush=True)
    except OSError as e:
        if e.errno == errno.EAGAIN:
            print("REOPENED", name, "for reading (nothing left to read)", flush=True)
        else:
            print("CONTAINED reopen", name, "read:", e.strerror, flush=True)
    os.close(fd)
