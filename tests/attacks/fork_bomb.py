# Fork bomb: every process forks forever. Contained by the pids limit (fork fails with EAGAIN),
# which the executor sees in the pids cgroup and answers with SIGKILL.
import os
while True:
    try:
        os.fork()
    except OSError:
        pass
