# Ignoring SIGTERM (and every other catchable signal): the sandbox kills with SIGKILL.
import signal, time
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
    signal.signal(s, signal.SIG_IGN)
print("ignoring signals", flush=True)
while True:
    time.sleep(0.1)
