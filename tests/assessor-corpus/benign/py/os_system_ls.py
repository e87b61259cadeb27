import os

os.system("ls -la data")
print("done")
