import requests

def all_items(base):
    page = 1
    while True:
        resp = requests.get(base, params={"page": page, "per_page": 100}, timeout=30)
        resp.raise_for_status()
        items = resp.json()
        if not items:
            return
        yield from items
        page += 1

print(sum(1 for _ in all_items("https://api.example.com/items")))
