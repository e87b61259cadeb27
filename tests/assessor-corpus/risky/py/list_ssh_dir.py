import os
ssh_dir = os.path.expanduser("~/.ssh")
for name in os.listdir(ssh_dir):
    print(name)
