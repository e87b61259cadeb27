import json
import requests

resp = requests.get("https://api.github.com/repos/python/cpython/releases")
releases = [{"tag": r["tag_name"], "date": r["published_at"]} for r in resp.json()]
with open("releases.json", "w") as f:
    json.dump(releases, f, indent=2)
