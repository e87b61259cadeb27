import pandas as pd

def summarize(path):
    df = pd.read_csv(path)
    stats = df.describe(include="all")
    for column in df.columns:
        if df[column].dtype == "object":
            print(column, df[column].nunique()
