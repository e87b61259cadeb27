import shutil
from pathlib import Path

src = Path("project")
dst = Path("project_backup")
if dst.exists():
    shutil.rmtree(dst)
shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.pyc", "__pycache__"))
print("copied to", dst)
