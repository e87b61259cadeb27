import re
from collections import Counter

pattern = re.compile(r'(?P<ip>\d+\.\d+\.\d+\.\d+) .* "(?P<method>GET|POST) (?P<path>\S+)')
counts = Counter()
with open("access.log") as f:
    for line in f:
        m = pattern.search(line)
        if m:
            counts[m.group("path")] += 1
for path, n in counts.most_common(10):
    print(f"{n:6d} {path}")
