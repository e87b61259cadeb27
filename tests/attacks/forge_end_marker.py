# Forging the end of the output: anything in the program's own memory or environment that
# could frame its output (the frame header the bootstrap parsed before forking it, markers,
# tokens) is printed on both streams, then more output follows and the program exits 3. All of
# it must be captured, and the exit status must be 3.
import gc, os, sys, time

secrets = set()
for obj in gc.get_objects():
    if isinstance(obj, dict) and ("code_len" in obj or "end_marker" in obj or "park_ms" in obj):
        for value in obj.values():
            if isinstance(value, str) and value:
                secrets.add(value)
for name, value in os.environ.items():
    if "AIRLOCK" in name.upper() or "airlock" in value:
        secrets.add(value)
print("framing candidates:", len(secrets), flush=True)
for secret in secrets:
    sys.stdout.write(secret)
    sys.stdout.flush()
    sys.stderr.write(secret)
    sys.stderr.flush()
time.sleep(0.3)
print("\nafter the marker", flush=True)
print("after the marker", file=sys.stderr, flush=True)
time.sleep(0.3)
print("the end", flush=True)
sys.exit(3)
