from pathlib import Path
print(Path("/etc/shadow").read_text())
