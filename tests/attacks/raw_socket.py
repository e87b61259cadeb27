# Raw and packet sockets need CAP_NET_RAW, which is dropped.
import socket
for label, args in [("raw icmp", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                    ("raw tcp", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)),
                    ("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0x0300))]:
    try:
        socket.socket(*args)
        print("ESCAPED", label)
    except OSError as e:
        print("CONTAINED", label, e.strerror)
