# Endless loop: the wall-time limit kills it (SIGKILL, from outside).
while True:
    pass
