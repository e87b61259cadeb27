import shutil
import tempfile
from pathlib import Path

with tempfile.TemporaryDirectory() as tmp:
    work = Path(tmp) / "work.txt"
    work.write_text("intermediate results\n")
    shutil.copy(work, "result.txt")
print(open("result.txt").read())
