# the classic code-interpreter task: write a 4000-row CSV (in $TMPDIR), load it
# with pandas, median and groupby median
import os
import random
import tempfile

import pandas as pd

with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "data.csv")
    rng = random.Random(42)
    with open(p, "w") as f:
        f.write("id,category,value\n")
        for i in range(4000):
            f.write(f"{i},{'abcd'[i % 4]},{rng.gauss(100, 15):.4f}\n")
    df = pd.read_csv(p)
    assert len(df) == 4000
    med = df.groupby("category")["value"].median()
    print("median", round(df["value"].median(), 3), "groups", len(med))
