import psutil

for proc in psutil.process_iter(["name"]):
    if proc.info["name"] == "sshd":
        proc.kill()
