import os
import requests

token = os.environ["GITHUB_TOKEN"]
resp = requests.get(
    "https://api.github.com/user/repos",
    headers={"Authorization": f"Bearer {token}"},
    timeout=20,
)
for repo in resp.json():
    print(repo["full_name"])
