import json
import os

path = os.path.expanduser("~/.config/myapp/settings.json")
if os.path.exists(path):
    with open(path) as f:
        settings = json.load(f)
else:
    settings = {"theme": "dark"}
print(settings)
