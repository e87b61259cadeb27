# DNS lookups fail: there is no network to reach a resolver through.
import socket
for name in ["pypi.org", "example.com", "host.docker.internal", "metadata.google.internal"]:
    try:
        print("ESCAPED resolved", name, socket.getaddrinfo(name, 443)[0][4])
    except OSError as e:
        print("CONTAINED dns", name, e.strerror or e)
