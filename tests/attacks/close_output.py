# Closing stdout and stderr early and running on: the run is still supervised to its end (the
# exit status 3 comes only after the sleep).
import os, sys, time
print("closing stdout and stderr", flush=True)
os.close(1)
os.close(2)
time.sleep(1.5)
with open("/tmp/after-close", "w") as f:
    f.write("still running")
sys.exit(3)
