# Tries the network: the sandbox has none, so this fails inside the container.
import socket

try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("network reachable (this should never print)")
except OSError as exc:
    print(f"no network: {exc}")
