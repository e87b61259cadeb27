import os

for entry in os.environ.get("PATH", "").split(os.pathsep):
    print(entry)
