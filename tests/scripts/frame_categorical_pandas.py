"""pandas' answers for tessera's categorical columns: `astype("category")` of a string
column, then a groupby on it (observed categories only), a merge on it, a sort by it and a
filter of it; each answer as rows of canonical cells, in pandas' order where it has one.

Reads the CSV written by `frame_categorical::categoricals_match_pandas` (columns s:
string with missing values, v: int64) and a second one for the merge (s: string, w:
int64), and prints one JSON object:

    {"groupby": [[s, sum, count], ...], "merge": [[s, v, w], ...],
     "sorted": [[s, v], ...], "filtered": [v, ...], "categories": [s, ...]}

    python tests/scripts/frame_categorical_pandas.py LEFT.csv RIGHT.csv
"""
import json
import sys

import pandas as pd

left = pd.read_csv(sys.argv[1], dtype={"s": "object", "v": "int64"}, keep_default_na=False, na_values=[""])
right = pd.read_csv(sys.argv[2], dtype={"s": "object", "w": "int64"})
left["s"] = left["s"].astype("category")
right["s"] = right["s"].astype("category")


def cell(x):
    return "null" if pd.isna(x) else str(x)


g = left.groupby("s", observed=True).agg(total=("v", "sum"), n=("v", "count")).reset_index()
merged = left.merge(right, on="s", how="inner")
srt = left.sort_values(["s", "v"], kind="stable", na_position="last")
out = {
    "groupby": [[cell(r.s), int(r.total), int(r.n)] for r in g.itertuples()],
    "merge": sorted([cell(r.s), str(r.v), str(r.w)] for r in merged.itertuples()),
    "sorted": [[cell(r.s), str(r.v)] for r in srt.itertuples()],
    "filtered": [int(v) for v in left[left["s"] == "b"]["v"]],
    "categories": [str(c) for c in left["s"].cat.categories],
}
print(json.dumps(out))
