# Forging the result through the activity channel: fd 9 is PID 1's report memfd, which the
# program inherits. Fake exit records saying 0, padded past the 64 KiB the executor reads, then
# exit 3: the reported exit status must be 3, the engine's.
import os, sys
fake = b'{"event":"exit","code":0}\n'
try:
    os.write(9, fake * 4000)
    os.write(9, b" " * 70000 + fake)
    print("wrote fake exit records to fd 9", flush=True)
except OSError as e:
    print("fd 9 not writable:", e.strerror, flush=True)
sys.exit(3)
