"""pandas' answers for rank, pivot_table and crosstab.

Reads the CSV written by `frame_reshape::ranks_and_pivots_match_pandas` (columns k: Int64
key with missing values, c: string, v: float64 with missing values, i: int64) and prints
one JSON object:

    {"rank.<over>.<column>.<method>.<asc|desc>": [rank or null, ...],
     "pivot.<func>": [[index, cell, ...], ...], "pivot.columns": [...],
     "crosstab": [[index, count, ...], ...], "crosstab.columns": [...]}

    python tests/scripts/frame_reshape_pandas.py INPUT.csv
"""
import json
import math
import sys

import pandas as pd

df = pd.read_csv(sys.argv[1], dtype={"k": "Int64", "c": "object", "v": "float64", "i": "int64"})


def num(x):
    if x is None or x is pd.NA:
        return None
    x = float(x)
    return None if math.isnan(x) else x


out = {}
for over in ["all", "group", "groupnull"]:
    for column in ["v", "i"]:
        for method in ["average", "min", "max", "first", "dense"]:
            for asc in [True, False]:
                if over == "all":
                    s = df[column]
                else:
                    s = df.groupby("k", dropna=(over == "group"))[column]
                r = s.rank(method=method, ascending=asc)
                key = f"rank.{over}.{column}.{method}.{'asc' if asc else 'desc'}"
                out[key] = [num(x) for x in r.tolist()]
for func in ["sum", "mean", "count", "max"]:
    p = df.pivot_table(values="v", index="k", columns="c", aggfunc=func)
    out["pivot.columns"] = [str(c) for c in p.columns]
    out[f"pivot.{func}"] = [[num(k)] + [num(x) for x in row] for k, row in zip(p.index, p.values.tolist())]
ct = pd.crosstab(df["k"], df["c"])
out["crosstab.columns"] = [str(c) for c in ct.columns]
out["crosstab"] = [[num(k)] + [num(x) for x in row] for k, row in zip(ct.index, ct.values.tolist())]
print(json.dumps(out))
