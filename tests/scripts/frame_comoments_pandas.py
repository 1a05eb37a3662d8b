"""pandas' answers for tessera's pair aggregations: per group, the covariance and the
correlation of two columns (`Series.cov` / `Series.corr` of each group's rows, which skip
the rows where either value is missing).

Reads the CSV written by `frame_comoments::cov_and_corr_match_pandas` (columns k: int64
key, x and y: float64, empty where missing) and prints one JSON object:

    {"cov": {key: value or null}, "corr": {key: value or null}}

    python tests/scripts/frame_comoments_pandas.py INPUT.csv
"""
import json
import math
import sys

import pandas as pd

df = pd.read_csv(sys.argv[1], dtype={"k": "int64", "x": "float64", "y": "float64"})


def num(v):
    v = float(v)
    return None if math.isnan(v) else v


out = {"cov": {}, "corr": {}}
for key, g in df.groupby("k"):
    out["cov"][str(key)] = num(g["x"].cov(g["y"]))
    out["corr"][str(key)] = num(g["x"].corr(g["y"]))
print(json.dumps(out))
