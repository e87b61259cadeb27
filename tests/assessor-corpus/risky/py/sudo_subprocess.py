import subprocess
subprocess.run(["sudo", "apt-get", "install", "-y", "nmap"], check=True)
