# Writes to system places: the root filesystem is read-only, the user is not root, /proc/sys and
# /sys are read-only, and no capability lets any of that change.
import os
targets = [
    "/etc/passwd", "/etc/airlock-was-here", "/usr/bin/python3", "/bin/sh", "/root/x",
    "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches", "/proc/sysrq-trigger",
    "/sys/kernel/mm/transparent_hugepage/enabled", "/sys/fs/cgroup/pids/pids.max",
    "/proc/self/oom_score_adj",
]
for path in targets:
    try:
        with open(path, "w") as f:
            f.write("-1000\n" if path.endswith("oom_score_adj") else "pwned\n")
        # Lowering one's own OOM score needs CAP_SYS_RESOURCE; raising it is harmless. Under
        # gVisor the score is its own kernel's, which the host's OOM killer never reads.
        print("WROTE own OOM score" if path.endswith("oom_score_adj") else "ESCAPED wrote", path)
    except OSError as e:
        print("CONTAINED", path, e.strerror)
for path in ["/etc", "/usr/lib"]:
    try:
        os.mkdir(path + "/airlock-dir")
        print("ESCAPED mkdir", path)
    except OSError as e:
        print("CONTAINED mkdir", path, e.strerror)
