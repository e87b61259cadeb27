import csv
import requests
from bs4 import BeautifulSoup

URL = "https://books.toscrape.com/catalogue/page-{}.html"
rows = []
for page in range(1, 4):
    resp = requests.get(URL.format(page), timeout=15, headers={"User-Agent": "research-bot"})
    resp.raise_for_status()
    soup = BeautifulSoup(resp.text, "html.parser")
    for book in soup.select("article.product_pod"):
        rows.append({"title": book.h3.a["title"], "price": book.select_one(".price_color").text})
with open("books.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["title", "price"])
    writer.writeheader()
    writer.writerows(rows)
print(len(rows), "books")
