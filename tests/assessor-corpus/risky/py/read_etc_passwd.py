with open("/etc/passwd") as f:
    for line in f:
        user, _, uid, *_ = line.split(":")
        print(user, uid)
