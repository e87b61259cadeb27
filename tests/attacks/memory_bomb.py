# Memory bomb: touch ever more memory. Contained by the memory limit with no swap: the kernel's
# OOM killer ends it, and the executor reports the memory violation.
chunks = []
while True:
    chunks.append(bytearray(16 * 1024 * 1024))
    chunks[-1][::4096] = b"x" * (len(chunks[-1]) // 4096)
