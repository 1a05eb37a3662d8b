"""pandas' answers for merge options, groupby(dropna=False) and drop_duplicates.

Reads LEFT.csv and RIGHT.csv written by `frame_relational::relational_options_match_pandas`
(left: r int64 row id, k Int64 key with missing values, a string, v float64; right: k, b
string, v float64) and prints one JSON object:

    {"merge.<how>": [[cell, ...], ...]      rows as canonical strings, in any order,
     "groupby": [[k, sum, count, mean], ...] in pandas' order (null keys last),
     "dedup.<keep>": [r, ...]}               the row ids kept, in order

Cells are canonical strings: numbers with six decimals, strings as themselves, missing
values as "null".

    python tests/scripts/frame_relational_pandas.py LEFT.csv RIGHT.csv
"""
import json
import math
import sys

import pandas as pd

left = pd.read_csv(sys.argv[1], dtype={"r": "int64", "k": "Int64", "a": "object", "v": "float64"})
right = pd.read_csv(sys.argv[2], dtype={"k": "Int64", "b": "object", "v": "float64"})


def cell(x):
    if x is None or x is pd.NA:
        return "null"
    if isinstance(x, str):
        return x
    x = float(x)
    return "null" if math.isnan(x) else f"{x:.6f}"


out = {}
for how in ["inner", "left", "right", "outer"]:
    m = left.merge(right, on="k", how=how, suffixes=("_l", "_r"), indicator=True)
    m["_merge"] = m["_merge"].astype(str)
    out[f"merge.{how}"] = [[cell(x) for x in row] for row in m.itertuples(index=False)]
g = left.groupby("k", dropna=False).agg(s=("v", "sum"), n=("v", "count"), m=("v", "mean"))
out["groupby"] = [[cell(k), cell(s), cell(n), cell(m)] for k, (s, n, m) in g.iterrows()]
for name, keep in [("first", "first"), ("last", "last"), ("false", False)]:
    kept = left.drop_duplicates(subset=["k", "a"], keep=keep)
    out[f"dedup.{name}"] = kept["r"].tolist()
print(json.dumps(out))
