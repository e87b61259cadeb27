# Zombie children: fork children that exit and are never reaped. Zombies keep their pids, so they
# run into the pids limit like a fork bomb.
import os, time
n = 0
while True:
    try:
        if os.fork() == 0:
            os._exit(0)
        n += 1
    except OSError:
        print("CONTAINED fork refused after", n, "zombies", flush=True)
        time.sleep(30)
