import socket
s = socket.create_connection(("pool.supportxmr.com", 3333))
s.sendall(b'{"id":1,"method":"login"}\n')
