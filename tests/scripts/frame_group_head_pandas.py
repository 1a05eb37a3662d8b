"""pandas' answers for per-group row selection: `groupby(k).cumcount()` and
`groupby(k).head(n)` for several n, and `groupby(k)["v"].nlargest(n)` / `nsmallest(n)`.

Reads the CSV written by `frame_group_head::group_head_matches_pandas` (columns r: int64
row id, k: Int64 key with missing values, v: int64) and prints one JSON object:

    {"cumcount": [count or null, ...] in row order,
     "head": {n: [r, ...] the row ids kept, in order},
     "nlargest" | "nsmallest": {n: {key: [v, ...] best first}}}

    python tests/scripts/frame_group_head_pandas.py INPUT.csv
"""
import json
import sys

import pandas as pd

df = pd.read_csv(sys.argv[1], dtype={"r": "int64", "k": "Int64", "v": "int64"})
g = df.groupby("k")
counts = g.cumcount()
out = {
    # Rows with a missing key belong to no group (pandas leaves them out of cumcount).
    "cumcount": [None if pd.isna(df.k[i]) else int(counts[i]) for i in range(len(df))],
    "head": {str(n): [int(r) for r in g.head(n)["r"]] for n in [0, 1, 3, 50]},
}
for name in ["nlargest", "nsmallest"]:
    out[name] = {}
    for n in [1, 3]:
        picked = getattr(g["v"], name)(n)
        per = {}
        for (key, _), v in picked.items():
            per.setdefault(str(key), []).append(int(v))
        out[name][str(n)] = per
print(json.dumps(out))
