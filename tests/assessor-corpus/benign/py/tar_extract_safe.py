import tarfile

with tarfile.open("dataset.tar.gz") as archive:
    archive.extractall("dataset", filter="data")
