"""pandas' answers for the frame expressions tessera checks against it.

Reads the CSV written by `frames::math_and_isin_match_pandas` (columns f: float64 with
NaN where empty, i: int64, s: strings, missing where empty), computes every expression
the test lists with pandas, and prints one JSON object: {name: [value, ...]}. NaN and the
infinities are printed as the strings "nan", "inf" and "-inf" (JSON has no such
numbers); the results of string functions as null where missing, strings as "str:"
followed by the string, lists (of `split`) as JSON arrays of those, and booleans and
integers as themselves.

    python tests/scripts/frame_functions_pandas.py INPUT.csv
"""
import json
import re
import sys

import numpy as np
import pandas as pd

df = pd.read_csv(sys.argv[1], dtype={"f": "float64", "i": "int64", "s": "object"})
f, i, s = df["f"], df["i"], df["s"]
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
    "f.pow": np.power(f, 2.0),
    "i.pow": np.power(i.astype("float64"), 0.5),
    "f.clip": f.clip(-5.0, 5.0),
    "i.clip": i.clip(-3, 7),
    # Integers: pandas compares NaN as false, tessera (like Polars and DuckDB) orders NaN
    # above every number, so `when` on floats with NaN is checked by hand elsewhere.
    "i.when": pd.Series(np.where(i > 10, 100.5, np.where(i < -10, -100, i))),
}
strings = {
    "s.starts_with": s.str.startswith("ka"),
    "s.ends_with": s.str.endswith("o"),
    "s.like": s.str.fullmatch(r"k.*o", flags=re.S),
    "s.lower": s.str.lower(),
    "s.upper": s.str.upper(),
    "s.strip": s.str.strip(),
    "s.len": s.str.len(),
    "s.replace": s.str.replace("a", "ä", regex=False),
    "s.substring": s.str.slice(1, 3),
    "s.substring_end": s.str.slice(-2),
    "s.isin": s.isin(["ka", "loÄ", "mé", "Zu", "a", "b", "c", "d", "e"]),
    "s.isin_few": s.isin(["ka", "lo"]),
    "s.matches": s.str.contains(r"(ka|lo)+Ä", regex=True),
    "s.matches_anchored": s.str.contains(r"^\s+\w", regex=True),
    "s.extract": s.str.extract(r"(k\w)(\w*)o", expand=True)[1],
    "s.split": s.str.split("a", regex=False),
    "s.split_part": s.str.split("a", regex=False).str[1],
    "s.split_last": s.str.split("a", regex=False).str[-1],
}


def enc_str(v):
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, str):
        return "str:" + v
    if isinstance(v, list):
        return [enc_str(x) for x in v]
    return int(v)


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
    result = {k: [enc(v) for v in col.tolist()] for k, col in out.items()}
    result.update({k: [enc_str(v) for v in col.tolist()] for k, col in strings.items()})
    print(json.dumps(result))
