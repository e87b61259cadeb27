# Disk fill: write until the disk is full. The only writable place is a size-limited tmpfs, so
# writing stops at its size (ENOSPC); the executor sees it full and stops the program.
import os, time
with open("/tmp/fill", "wb") as f:
    try:
        while True:
            f.write(b"\0" * (1024 * 1024))
            f.flush()
    except OSError as e:
        print("CONTAINED write stopped:", e.strerror, flush=True)
time.sleep(30)
