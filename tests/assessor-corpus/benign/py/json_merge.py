import glob
import json

merged = {}
for path in glob.glob("configs/*.json"):
    with open(path) as f:
        merged.update(json.load(f))
with open("merged.json", "w") as f:
    json.dump(merged, f, indent=2, sort_keys=True)
