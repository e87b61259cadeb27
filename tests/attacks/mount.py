# mount and namespaces: no CAP_SYS_ADMIN, and the seccomp profile refuses unshare and mount.
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None) == -1:
    print("CONTAINED mount", os.strerror(ctypes.get_errno()))
else:
    print("ESCAPED mount")
if libc.mount(b"/", b"/", None, 4096 | 32, None) == -1:  # MS_BIND | MS_REMOUNT
    print("CONTAINED remount", os.strerror(ctypes.get_errno()))
else:
    print("ESCAPED remount")
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
for name, flags in [("user", CLONE_NEWUSER), ("mount", CLONE_NEWNS), ("net", CLONE_NEWNET),
                    ("user+mount", CLONE_NEWUSER | CLONE_NEWNS)]:
    if libc.unshare(flags) == -1:
        print("CONTAINED unshare", name, os.strerror(ctypes.get_errno()))
    else:
        print("ESCAPED unshare", name)
try:
    os.chroot("/tmp")
    print("ESCAPED chroot")
except OSError as e:
    print("CONTAINED chroot", e.strerror)
