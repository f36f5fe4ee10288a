# The classic code-interpreter task: load a table, compute a median.
# (As a model would write it: pandas, a CSV, a groupby.)
import pandas as pd

df = pd.read_csv("sales.csv")
print(f"rows: {len(df)}")
print(f"median amount: {df['amount'].median():.2f}")
print("median by region:")
print(df.groupby("region")["amount"].median().round(2).to_string())
