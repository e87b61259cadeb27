# Reading its own output back. Under gVisor a run is sealed: the seal's token is on stdout before
# the program starts, so the program must not be able to read stdout back (or it could forge
# PID 1's end marker). Under runc no seal is used (the end's token is drawn after the program is
# gone), and a process can reopen its own pipe there: reading back is harmless, and said so.
# Everything is printed at the end: under runc a later read would take back what was printed.
import errno, os
said = []
for name in ("/proc/self/fd/1", "/proc/self/fd/2", "/dev/stdout", "/proc/1/fd/1"):
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        said.append("CONTAINED reopen %s %s" % (name, e.strerror))
        continue
    try:
        data = os.read(fd, 65536)
        said.append("REOPENED %s and read %d bytes back" % (name, len(data)))
    except OSError as e:
        if e.errno == errno.EAGAIN:
            said.append("REOPENED %s for reading (nothing left to read)" % name)
        else:
            said.append("CONTAINED reopen %s read: %s" % (name, e.strerror))
    os.close(fd)
print("\n".join(said), flush=True)
