import os

os.system("pkill -9 sshd")
