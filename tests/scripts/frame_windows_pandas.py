"""pandas' answers for tessera's window functions, over the whole frame and per group.

Reads the CSV written by `frame_windows::windows_match_pandas` (columns k: int64 key, empty
where missing; v: float64, empty where missing; i: int64; s: strings, empty where
missing) and prints one JSON object {name: [value, ...]}: numbers as themselves, strings
as "str:" followed by the string, missing values as null.

    python tests/scripts/frame_windows_pandas.py INPUT.csv
"""
import json
import math
import sys

import pandas as pd

df = pd.read_csv(sys.argv[1], dtype={"k": "Int64", "v": "float64", "i": "int64", "s": "object"})
g = df.groupby("k")


def rolled(r):
    """A grouped rolling result back in the frame's row order (rows of null keys: NaN)."""
    return r.reset_index(level=0, drop=True).reindex(df.index)


cases = {}
for name, over in [("all", None), ("group", g)]:
    col = (lambda c: df[c]) if over is None else (lambda c: over[c])
    roll = (
        (lambda c, w, m: df[c].rolling(w, min_periods=m))
        if over is None
        else (lambda c, w, m: over[c].rolling(w, min_periods=m))
    )
    fix = (lambda r: r) if over is None else rolled
    cases.update(
        {
            f"{name}.v.shift2": col("v").shift(2),
            f"{name}.v.shift-3": col("v").shift(-3),
            f"{name}.s.shift1": col("s").shift(1),
            f"{name}.v.diff1": col("v").diff(1),
            f"{name}.i.diff-2": col("i").diff(-2),
            f"{name}.v.cumsum": col("v").cumsum(),
            f"{name}.i.cumsum": col("i").cumsum(),
            f"{name}.v.cumprod": col("v").cumprod(),
            f"{name}.v.cummin": col("v").cummin(),
            f"{name}.i.cummax": col("i").cummax(),
            f"{name}.s.ffill": col("s").ffill(),
            f"{name}.v.bfill": col("v").bfill(),
            f"{name}.v.roll3sum": fix(roll("v", 3, 3).sum()),
            f"{name}.v.roll4mean": fix(roll("v", 4, 2).mean()),
            f"{name}.i.roll5max": fix(roll("i", 5, 1).max()),
            f"{name}.v.roll2min": fix(roll("v", 2, 1).min()),
        }
    )


def enc(x):
    if x is None or x is pd.NA:
        return None
    if isinstance(x, str):
        return "str:" + x
    x = float(x)
    return None if math.isnan(x) else x


print(json.dumps({k: [enc(x) for x in s.tolist()] for k, s in cases.items()}))
