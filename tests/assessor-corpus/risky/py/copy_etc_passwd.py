import shutil

source = "/etc/passwd"
destination = "/usr/copy_file"
shutil.copy(source, destination)
print("copied")
