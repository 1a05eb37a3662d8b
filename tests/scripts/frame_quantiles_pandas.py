"""pandas' answers for tessera's quantiles: groupby quantile, frame quantile, describe; and
for the higher moments beside them: groupby and frame skew and kurt.

Reads the CSV written by `frame_quantiles::quantiles_match_pandas` (columns k: int64 key,
v: float64 with NaN where empty, w: int64, t: seconds since the epoch, read as datetime64,
empty where missing) and prints one JSON object:

    {"groupby": {q: {key: value or null}}, "frame": {column: {q: value}},
     "describe": {column: {statistic: value}},
     "moments": {"skew" | "kurt": {key: value or null}},
     "frame_moments": {column: {"skew" | "kurt": value or null}}}

`describe`'s statistics of `t` are instants as nanoseconds since the epoch (its count a
number, its std null).

    python tests/scripts/frame_quantiles_pandas.py INPUT.csv
"""
import json
import math
import sys

import pandas as pd

df = pd.read_csv(sys.argv[1], dtype={"k": "int64", "v": "float64", "w": "int64", "t": "float64"})
df["t"] = pd.to_datetime(df["t"], unit="s")
LEVELS = [0.0, 0.1, 0.3, 0.5, 0.95, 1.0]


def num(x):
    x = float(x)
    return None if math.isnan(x) else x


out = {
    "groupby": {
        str(q): {str(k): num(v) for k, v in df.groupby("k")["v"].quantile(q).items()}
        for q in LEVELS
    },
    "frame": {c: {str(q): num(df[c].quantile(q)) for q in LEVELS} for c in ["v", "w"]},
    "describe": {
        c: {stat: num(v) for stat, v in df.describe()[c].items()} for c in ["k", "v", "w"]
    },
}


def instant(x):
    if isinstance(x, pd.Timestamp):
        return x.value
    return None if pd.isna(x) else int(x)


out["describe"]["t"] = {stat: instant(v) for stat, v in df.describe()["t"].items()}
grouped = df.groupby("k")["v"]
out["moments"] = {
    "skew": {str(k): num(v) for k, v in grouped.skew().items()},
    "kurt": {str(k): num(v) for k, v in grouped.agg(lambda s: s.kurt()).items()},
}
out["frame_moments"] = {
    c: {"skew": num(df[c].skew()), "kurt": num(df[c].kurt())} for c in ["v", "w"]
}
print(json.dumps(out))
