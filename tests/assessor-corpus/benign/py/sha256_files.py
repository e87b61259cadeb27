import hashlib
from pathlib import Path

for path in sorted(Path("dist").glob("*.whl")):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    print(f"{digest}  {path.name}")
