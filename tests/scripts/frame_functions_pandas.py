"""pandas' answers for the frame expressions tessera checks against it.

Reads the CSV written by `frames::math_and_isin_match_pandas` (columns f: float64 with
NaN where empty, i: int64), computes every expression the test lists with pandas, and
prints one JSON object: {name: [value, ...]}. NaN and the infinities are printed as the
strings "nan", "inf" and "-inf" (JSON has no such numbers).

    python tests/scripts/frame_functions_pandas.py INPUT.csv
"""
import json
import sys

import numpy as np
import pandas as pd

df = pd.read_csv(sys.argv[1], dtype={"f": "float64", "i": "int64"})
f, i = df["f"], df["i"]
out = {
    "f.abs": f.abs(),
    "f.sqrt": np.sqrt(f),
    "f.exp": np.exp(f),
    "f.ln": np.log(f),
    "f.floor": np.floor(f),
    "f.ceil": np.ceil(f),
    "f.round": f.round(),
    "i.abs": i.abs(),
    "i.sqrt": np.sqrt(i),
    "i.between": i.between(-3, 7),
    "i.isin": i.isin([0, 7, 12, 1000]),
    "f.isin": f.isin([0.0, 2.5, np.nan]),
}


def enc(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    v = float(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


with np.errstate(all="ignore"):
    print(json.dumps({k: [enc(v) for v in s.tolist()] for k, s in out.items()}))
