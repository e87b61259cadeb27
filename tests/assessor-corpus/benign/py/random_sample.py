import csv
import random

with open("population.csv") as f:
    rows = list(csv.DictReader(f))
sample = random.sample(rows, k=min(100, len(rows)))
with open("sample.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=rows[0].keys())
    writer.writeheader()
    writer.writerows(sample)
