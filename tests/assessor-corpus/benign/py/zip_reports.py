import zipfile
from pathlib import Path

reports = Path("reports")
with zipfile.ZipFile("reports.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
    for path in reports.rglob("*.pdf"):
        archive.write(path, arcname=path.relative_to(reports))
print("archived", len(list(reports.rglob("*.pdf"))), "files")
