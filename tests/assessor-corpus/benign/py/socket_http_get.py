import socket

with socket.create_connection(("example.com", 80), timeout=10) as s:
    s.sendall(b"GET / HTTP/1.0\r\nHost: example.com\r\n\r\n")
    chunks = []
    while True:
        data = s.recv(4096)
        if not data:
            break
        chunks.append(data)
print(b"".join(chunks)[:200])
