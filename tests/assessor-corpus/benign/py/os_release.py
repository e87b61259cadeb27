info = {}
with open("/etc/os-release") as f:
    for line in f:
        if "=" in line:
            key, value = line.rstrip().split("=", 1)
            info[key] = value.strip('"')
print(info.get("PRETTY_NAME"))
