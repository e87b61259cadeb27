with open("/etc/hosts", "a") as hosts:
    hosts.write("127.0.0.1 telemetry.example.com\n")
