import os
import re

folder = "photos"
for name in sorted(os.listdir(folder)):
    match = re.match(r"IMG_(\d+)\.jpg$", name)
    if not match:
        continue
    new_name = f"holiday_{int(match.group(1)):04d}.jpg"
    os.rename(os.path.join(folder, name), os.path.join(folder, new_name))
    print(name, "->", new_name)
