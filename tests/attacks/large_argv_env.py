# Large argv and environment reach the program intact (through the frame on stdin, not the
# container's command line), and nothing breaks at the executor.
import os, sys
arg = sys.argv[1] if len(sys.argv) > 1 else ""
env = os.environ.get("AIRLOCK_BIG_ENV", "")
print("argv", len(arg), set(arg), "env", len(env), set(env))
