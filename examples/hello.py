# The smallest program: rated LOW, approved by policy, run in a fresh hardened container.
import platform
import sys

print("hello from the airlock sandbox")
print(f"python {platform.python_version()} as uid", __import__("os").getuid(), file=sys.stderr)
