import pandas as pd
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

df = pd.read_csv("sales.csv", parse_dates=["date"])
df["month"] = df["date"].dt.to_period("M")
monthly = df.groupby(["month", "region"])["amount"].sum().unstack(fill_value=0)
print(monthly.describe())
ax = monthly.plot(kind="bar", figsize=(10, 4))
ax.set_title("Sales by month and region")
plt.tight_layout()
plt.savefig("sales_by_month.png")
