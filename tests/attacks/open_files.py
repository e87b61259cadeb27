# Open files: RLIMIT_NOFILE stops it at the limit (EMFILE).
import os
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print("CONTAINED open stopped after", len(fds), e.strerror)
