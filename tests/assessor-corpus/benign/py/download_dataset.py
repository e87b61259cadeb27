import urllib.request
import pandas as pd

url = "https://raw.githubusercontent.com/mwaskom/seaborn-data/master/tips.csv"
urllib.request.urlretrieve(url, "tips.csv")
tips = pd.read_csv("tips.csv")
print(tips.groupby("day")["tip"].mean())
