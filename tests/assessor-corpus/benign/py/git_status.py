import subprocess

result = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, check=True)
changed = [line[3:] for line in result.stdout.splitlines()]
print("changed files:", changed)
