"""Ten workloads written for ``dask.dataframe``, run unchanged on ``tessera.dataframe``,
beside Dask itself, pandas, tessera's Polars-style API and Polars, as JSON lines (one per
engine and workload: best of REPEAT seconds from reading the files to the pandas answer,
the peak RSS of that run's interpreter, and a checksum of the answer so the engines can
be compared).

The data: ROWS taxi-like rows in 8 Parquet files (``pickup`` timestamps in order,
``passenger_count``, ``payment_type``, ``zone``, ``vendor`` text, ``fare_amount``,
``tip_amount``, ``trip_distance``), written once into DIR and reused; a 265-row zone
table for the merge.

  groupby_mean     df[df.tip_amount > 0].groupby("passenger_count").tip_amount.mean()
  value_counts     df.payment_type.value_counts()
  set_index_loc    df.set_index("pickup").loc["2015-01-10":"2015-01-12"].fare_amount.sum()
  resample         df.set_index("pickup").tip_amount.resample("1h").mean()
  rolling          df.set_index("pickup", sorted=True).fare_amount.rolling(10).mean().sum()
  describe         df[["fare_amount", "tip_amount", "trip_distance"]].describe()
  merge_groupby    df.merge(zones, on="zone").groupby("borough").fare_amount.sum()
  drop_duplicates  len(df[["passenger_count", "payment_type", "zone"]].drop_duplicates())
  nunique          df.trip_distance.nunique()
  apply            df.map_partitions(lambda p: p.fare_amount + p.tip_amount).sum()

Engines: ``tessera`` (``import tessera.dataframe as dd``), ``dask`` (threaded
scheduler), ``pandas`` (eager, one thread), ``tessera-expr`` (the same question through
``tessera.read_parquet`` and expressions, where it has the operation) and ``polars``
(lazy scan, where it has it). Each (engine, workload) runs in a fresh interpreter.

  python bench/python_dask_dataframe.py [--dir /tmp/tessera-dd-bench] [--rows 10000000]
                                        [--workloads a,b] [--engines tessera,dask] [--repeat 2]
"""
import argparse
import json
import os
import pathlib
import platform
import resource
import subprocess
import sys
import time

import numpy as np

WORKLOADS = ("groupby_mean", "value_counts", "set_index_loc", "resample", "rolling", "describe",
             "merge_groupby", "drop_duplicates", "nunique", "apply")
ENGINES = ("tessera", "dask", "pandas", "tessera-expr", "polars")
FILES = 8


def make_files(root: pathlib.Path, rows: int):
    import pandas as pd

    root.mkdir(parents=True, exist_ok=True)
    marker = root / f"rows-{rows}"
    if marker.exists():
        return
    rng = np.random.default_rng(0)
    per = rows // FILES
    start = pd.Timestamp("2015-01-01")
    span = 31 * 86_400
    for k in range(FILES):
        seconds = np.sort(rng.integers(k * span // FILES, (k + 1) * span // FILES, per))
        pdf = pd.DataFrame({
            "pickup": start + pd.to_timedelta(seconds, unit="s"),
            "passenger_count": rng.integers(1, 7, per),
            "payment_type": rng.choice([1, 2, 3, 4], per, p=[0.6, 0.35, 0.03, 0.02]),
            "zone": rng.integers(1, 266, per),
            "vendor": rng.choice(["CMT", "VTS", "DDS"], per),
            "fare_amount": rng.gamma(2.0, 6.0, per).round(2),
            "tip_amount": np.where(rng.random(per) < 0.4, 0.0, rng.random(per) * 4).round(2),
            "trip_distance": rng.gamma(2.0, 1.5, per).round(2),
        })
        pdf.to_parquet(root / f"part-{k}.parquet", index=False)
    zones = pd.DataFrame({"zone": np.arange(1, 266), "borough": [f"B{z % 6}" for z in range(1, 266)]})
    zones.to_parquet(root / "zones.parquet", index=False)
    marker.write_text("")


def dask_shaped(dd, root, name):
    """The workload as Dask's documentation writes it, for any Dask-shaped module."""
    path = str(root / "part-*.parquet")
    df = dd.read_parquet(path)
    if name == "groupby_mean":
        return df[df.tip_amount > 0].groupby("passenger_count").tip_amount.mean().compute()
    if name == "value_counts":
        return df.payment_type.value_counts().compute()
    if name == "set_index_loc":
        return df.set_index("pickup").loc["2015-01-10":"2015-01-12"].fare_amount.sum().compute()
    if name == "resample":
        return df.set_index("pickup").tip_amount.resample("1h").mean().compute()
    if name == "rolling":
        # Dask rolls only a frame of known divisions: the pickup times are in order.
        return df.set_index("pickup", sorted=True).fare_amount.rolling(10).mean().sum().compute()
    if name == "describe":
        return df[["fare_amount", "tip_amount", "trip_distance"]].describe().compute()
    if name == "merge_groupby":
        zones = dd.read_parquet(str(root / "zones.parquet"))
        return df.merge(zones, on="zone").groupby("borough").fare_amount.sum().compute()
    if name == "drop_duplicates":
        return len(df[["passenger_count", "payment_type", "zone"]].drop_duplicates())
    if name == "nunique":
        return df.trip_distance.nunique().compute()
    if name == "apply":
        return df.map_partitions(lambda p: p.fare_amount + p.tip_amount).sum().compute()
    raise SystemExit(f"unknown workload {name}")


def pandas_version(root, name):
    """The same question in pandas, eager and on one thread."""
    import glob

    import pandas as pd

    df = pd.concat([pd.read_parquet(p) for p in sorted(glob.glob(str(root / "part-*.parquet")))], ignore_index=True)
    if name == "groupby_mean":
        return df[df.tip_amount > 0].groupby("passenger_count").tip_amount.mean()
    if name == "value_counts":
        return df.payment_type.value_counts()
    if name == "set_index_loc":
        return df.set_index("pickup").sort_index().loc["2015-01-10":"2015-01-12"].fare_amount.sum()
    if name == "resample":
        return df.set_index("pickup").sort_index().tip_amount.resample("1h").mean()
    if name == "rolling":
        return df.fare_amount.rolling(10).mean().sum()
    if name == "describe":
        return df[["fare_amount", "tip_amount", "trip_distance"]].describe()
    if name == "merge_groupby":
        zones = pd.read_parquet(root / "zones.parquet")
        return df.merge(zones, on="zone").groupby("borough").fare_amount.sum()
    if name == "drop_duplicates":
        return len(df[["passenger_count", "payment_type", "zone"]].drop_duplicates())
    if name == "nunique":
        return df.trip_distance.nunique()
    if name == "apply":
        return (df.fare_amount + df.tip_amount).sum()
    raise SystemExit(f"unknown workload {name}")


def tessera_expr(root, name):
    """The same question through tessera's Polars-style API, where it has the operation."""
    import tessera as ts

    df = ts.read_parquet(str(root / "part-*.parquet"))
    c = ts.col
    if name == "groupby_mean":
        return df.filter(c("tip_amount") > 0).groupby("passenger_count")["tip_amount"].mean().compute().to_pandas()["tip_amount"]
    if name == "value_counts":
        return df.value_counts("payment_type").compute().to_pandas()["count"]
    if name == "set_index_loc":
        lo, hi = "2015-01-10", "2015-01-12 23:59:59.999999"
        kept = df.filter((c("pickup") >= lo) & (c("pickup") <= hi))
        return kept.agg_exprs([(c("fare_amount"), "sum", "s")]).compute().to_pandas()["s"][0]
    if name == "describe":
        return df.select(["fare_amount", "tip_amount", "trip_distance"]).describe().to_pandas()
    if name == "merge_groupby":
        zones = ts.read_parquet(str(root / "zones.parquet"))
        return df.merge(zones, on="zone").groupby("borough")["fare_amount"].sum().compute().to_pandas()["fare_amount"]
    if name == "drop_duplicates":
        return len(df.select(["passenger_count", "payment_type", "zone"]).drop_duplicates())
    if name == "nunique":
        return df.agg_exprs([(c("trip_distance"), "nunique", "n")]).compute().to_pandas()["n"][0]
    if name == "rolling":
        out = df.transform("fare_amount", "rolling_mean", output="r", window=10)
        return out.agg_exprs([(c("r"), "sum", "s")]).compute().to_pandas()["s"][0]
    return None


def polars_version(root, name):
    import polars as pl

    df = pl.scan_parquet(str(root / "part-*.parquet"))
    if name == "groupby_mean":
        return (df.filter(pl.col("tip_amount") > 0).group_by("passenger_count").agg(pl.col("tip_amount").mean())
                .collect().to_pandas()["tip_amount"])
    if name == "value_counts":
        return df.group_by("payment_type").len().collect().to_pandas()["len"]
    if name == "resample":
        return (df.sort("pickup").group_by_dynamic("pickup", every="1h").agg(pl.col("tip_amount").mean())
                .collect().to_pandas()["tip_amount"])
    if name == "rolling":
        return df.select(pl.col("fare_amount").rolling_mean(10).sum()).collect().item()
    if name == "describe":
        out = df.select(["fare_amount", "tip_amount", "trip_distance"]).collect().describe().to_pandas()
        return out[out.statistic != "null_count"].set_index("statistic")
    if name == "merge_groupby":
        zones = pl.scan_parquet(str(root / "zones.parquet"))
        return (df.join(zones, on="zone").group_by("borough").agg(pl.col("fare_amount").sum())
                .collect().to_pandas()["fare_amount"])
    if name == "drop_duplicates":
        return df.select(["passenger_count", "payment_type", "zone"]).unique().collect().height
    if name == "nunique":
        return df.select(pl.col("trip_distance").n_unique()).collect().item()
    if name == "set_index_loc":
        import datetime as dt

        return df.filter(pl.col("pickup").is_between(dt.datetime(2015, 1, 10), dt.datetime(2015, 1, 12, 23, 59, 59, 999999))
                         ).select(pl.col("fare_amount").sum()).collect().item()
    if name == "apply":
        return df.select((pl.col("fare_amount") + pl.col("tip_amount")).sum()).collect().item()
    return None


def checksum(out) -> float:
    import pandas as pd

    if isinstance(out, (pd.Series, pd.DataFrame)):
        return float(np.nansum(np.asarray(out.select_dtypes("number") if isinstance(out, pd.DataFrame) else out, dtype=np.float64)))
    return float(out)


def one(engine, name, root, repeat):
    run = {
        "tessera": lambda: dask_shaped(__import__("tessera.dataframe", fromlist=["x"]), root, name),
        "dask": lambda: dask_shaped(__import__("dask.dataframe", fromlist=["x"]), root, name),
        "pandas": lambda: pandas_version(root, name),
        "tessera-expr": lambda: tessera_expr(root, name),
        "polars": lambda: polars_version(root, name),
    }[engine]
    if engine == "dask":
        import dask

        dask.config.set(scheduler="threads")
    best, value = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = run()
        s = time.perf_counter() - t
        if out is None:
            return
        best = s if best is None else min(best, s)
        value = checksum(out)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"engine": engine, "workload": name, "seconds": round(best, 4), "checksum": value,
                      "peak_rss_bytes": peak, "cpu": platform.processor() or platform.machine()}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default="/tmp/tessera-dd-bench")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--one", nargs=2, metavar=("ENGINE", "WORKLOAD"))
    a = p.parse_args()
    root = pathlib.Path(a.dir)
    make_files(root, a.rows)
    if a.one:
        one(a.one[0], a.one[1], root, a.repeat)
        return
    for name in a.workloads.split(","):
        for engine in a.engines.split(","):
            cmd = [sys.executable, __file__, "--one", engine, name, "--repeat", str(a.repeat),
                   "--dir", a.dir, "--rows", str(a.rows)]
            subprocess.run(cmd, check=True, env=os.environ)


if __name__ == "__main__":
    main()
