# Closing stdout and stderr, then running forever: still killed at the wall time.
import os
print("closing and looping", flush=True)
os.close(1)
os.close(2)
while True:
    pass
