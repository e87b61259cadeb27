# Output flood: one endless line, no newline. Output is read from the attach stream under a hard
# byte cap; at the cap reading stops and the container is killed.
import sys
block = "A" * 65536
while True:
    sys.stdout.write(block)
