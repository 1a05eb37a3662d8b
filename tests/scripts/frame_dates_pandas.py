"""pandas' answers for tessera's calendar expressions (offset_by, truncate, elapsed_since).

Reads the CSV written by `frames::calendar_functions_match_pandas`: columns `d` (days
since 1970-01-01, empty where missing), `t` and `u` (microseconds since the epoch, empty
where missing). Prints one JSON object {name: [value or null, ...]}: dates as days since
the epoch, timestamps as microseconds since the epoch, elapsed counts as integers.

    python tests/scripts/frame_dates_pandas.py INPUT.csv
"""
import json
import sys

import numpy as np
import pandas as pd

raw = pd.read_csv(sys.argv[1], dtype={"d": "Int64", "t": "Int64", "u": "Int64"})


def column(values, unit):
    """Integers since the epoch in `unit` as datetime64[ns] (built from the integers:
    microseconds need more than float64's 53 bits)."""
    return pd.to_datetime(
        values.map(lambda v: None if pd.isna(v) else np.datetime64(int(v), unit))
    ).astype("datetime64[ns]")


d, t, u = column(raw["d"], "D"), column(raw["t"], "us"), column(raw["u"], "us")

DAY = 86_400_000_000_000


def days(s):
    return [None if pd.isna(v) else int(v.value // DAY) for v in s]


def micros(s):
    return [None if pd.isna(v) else int(v.value // 1000) for v in s]


def whole(end, start, unit_ns):
    """Whole units from start to end, rounded toward zero, exactly (integer nanoseconds)."""
    out = []
    for e, s in zip(end, start):
        if pd.isna(e) or pd.isna(s):
            out.append(None)
            continue
        n = e.value - s.value
        q = abs(n) // unit_ns
        out.append(q if n >= 0 else -q)
    return out


def start_of(s, freq):
    return s.dt.to_period(freq).dt.start_time


out = {
    "d+1mo": days(d + pd.DateOffset(months=1)),
    "d-90d": days(d - pd.DateOffset(days=90)),
    "d+1y": days(d + pd.DateOffset(years=1)),
    "d-13mo+2d": days(d + pd.DateOffset(months=-13, days=2)),
    "t-3mo+14d+5h": micros(t + pd.DateOffset(months=-3, days=14, hours=5)),
    "t+90s": micros(t + pd.DateOffset(seconds=90)),
    "d.year": days(start_of(d, "Y")),
    "d.quarter": days(start_of(d, "Q")),
    "d.month": days(start_of(d, "M")),
    "d.week": days(start_of(d, "W")),
    "t.year": micros(start_of(t, "Y")),
    "t.month": micros(start_of(t, "M")),
    "t.week": micros(start_of(t, "W")),
    "t.day": micros(t.dt.normalize()),
    "t.hour": micros(t.dt.floor("h")),
    "t.minute": micros(t.dt.floor("min")),
    "t.second": micros(t.dt.floor("s")),
    "t.millisecond": micros(t.dt.floor("ms")),
    "u-t.days": whole(u, t, DAY),
    "u-t.weeks": whole(u, t, 7 * DAY),
    "u-t.hours": whole(u, t, 3_600_000_000_000),
    "u-t.seconds": whole(u, t, 1_000_000_000),
    "u-t.micros": whole(u, t, 1_000),
    "t-d.days": whole(t, d, DAY),
}
print(json.dumps(out))
