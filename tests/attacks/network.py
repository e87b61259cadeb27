# Network: the container has no interface but its own loopback. The host's loopback, the Docker
# bridge's address, the internet: nothing is reachable. Extra targets come as host:port args.
import socket, sys
targets = [("127.0.0.1", 4222), ("127.0.0.1", 22), ("172.17.0.1", 2375), ("172.17.0.1", 22),
           ("1.1.1.1", 443), ("8.8.8.8", 53), ("169.254.169.254", 80)]
for arg in sys.argv[1:]:
    host, port = arg.rsplit(":", 1)
    targets.append((host, int(port)))
for host, port in targets:
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect((host, port))
        print("ESCAPED connected", host, port)
    except OSError as e:
        print("CONTAINED", host, port, e.strerror or e)
    finally:
        s.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"x", ("8.8.8.8", 53))
    print("ESCAPED udp sent")
except OSError as e:
    print("CONTAINED udp", e.strerror)
names = sorted(n for _, n in socket.if_nameindex())
print("interfaces", " ".join(names))
