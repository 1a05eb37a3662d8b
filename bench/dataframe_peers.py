"""The dataframe workloads through Dask, pandas and Polars, as JSON lines.

Run by bench/compare_dataframes.sh inside a virtual environment outside the repository
(dask[dataframe], pandas, polars, pyarrow from PyPI). Workloads:

  taxi_groupby   read_csv + groupby(passenger_count).trip_distance.mean()
  taxi_tip_hour  read_csv(parse_dates) + filter + tip_fraction + groupby(hour).mean()
  join           inner join of a 20M-row and a 1M-row frame on an int64 key, then len
  multi_agg      groupby(key) with sum/mean/min/max/count/std on 20M rows
  group_top2     the two largest x of each of 100k keys over 10M rows (pandas nlargest,
                 Polars top_k, DuckDB row_number() <= 2)
"""
import argparse
import json
import time

import numpy as np


def timed(fn, repeat):
    best = None
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    return best, out


def emit(engine, query, seconds, **extra):
    print(json.dumps({"engine": engine, "query": query, "seconds": round(seconds, 4), **extra}), flush=True)


def top_frame(rows, groups):
    rng = np.random.default_rng(11)
    return {"key": rng.integers(0, groups, rows, dtype=np.int64), "x": rng.random(rows)}


def join_frames(n_left, n_right):
    rng = np.random.default_rng(42)
    left = {"key": rng.integers(0, n_right * 2, n_left, dtype=np.int64), "x": rng.random(n_left)}
    right = {"key": np.arange(n_right, dtype=np.int64) * 2, "y": rng.random(n_right)}
    return left, right


def group_frame(n, groups):
    rng = np.random.default_rng(7)
    return {"key": rng.integers(0, groups, n, dtype=np.int64), "x": rng.random(n), "y": rng.integers(0, 1000, n, dtype=np.int64)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--csv", required=True)
    p.add_argument("--engines", default="dask,pandas,polars,polars_lazy")
    p.add_argument("--queries", default="taxi_groupby,taxi_tip_hour,join,multi_agg,group_top2")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--join-left", type=int, default=20_000_000)
    p.add_argument("--join-right", type=int, default=1_000_000)
    p.add_argument("--agg-rows", type=int, default=20_000_000)
    p.add_argument("--agg-groups", type=int, default=100_000)
    a = p.parse_args()
    engines = a.engines.split(",")
    queries = a.queries.split(",")
    path = a.csv

    if "dask" in engines:
        import dask
        import dask.dataframe as dd
        import pandas as pd
        dask.config.set(scheduler="threads")
        if "taxi_groupby" in queries:
            s, out = timed(lambda: dd.read_csv(path).groupby("passenger_count").trip_distance.mean().compute(), a.repeat)
            emit("dask", "taxi_groupby", s, groups=len(out))
        if "taxi_tip_hour" in queries:
            def q():
                df = dd.read_csv(path, parse_dates=["pickup_datetime"])
                df2 = df[(df.tip_amount > 0) & (df.fare_amount > 0)]
                df2["tip_fraction"] = df2.tip_amount / df2.fare_amount
                return df2.groupby(df2.pickup_datetime.dt.hour).tip_fraction.mean().compute()
            s, out = timed(q, a.repeat)
            emit("dask", "taxi_tip_hour", s, groups=len(out))
        if "join" in queries:
            l, r = join_frames(a.join_left, a.join_right)
            L = dd.from_pandas(pd.DataFrame(l), npartitions=16)
            R = dd.from_pandas(pd.DataFrame(r), npartitions=1)
            s, out = timed(lambda: len(L.merge(R, on="key", how="inner")), a.repeat)
            emit("dask", "join", s, rows=int(out))
        if "multi_agg" in queries:
            g = dd.from_pandas(pd.DataFrame(group_frame(a.agg_rows, a.agg_groups)), npartitions=16)
            s, out = timed(lambda: g.groupby("key").agg({"x": ["sum", "mean", "min", "max", "std"], "y": ["count", "max"]}).compute(), a.repeat)
            emit("dask", "multi_agg", s, groups=len(out))

    if "pandas" in engines:
        import pandas as pd
        if "group_top2" in queries:
            g = pd.DataFrame(top_frame(a.agg_rows // 2, a.agg_groups))
            s, out = timed(lambda: g.groupby("key")["x"].nlargest(2), a.repeat)
            emit("pandas", "group_top2", s, rows=len(out))
        if "taxi_groupby" in queries:
            s, out = timed(lambda: pd.read_csv(path).groupby("passenger_count").trip_distance.mean(), a.repeat)
            emit("pandas", "taxi_groupby", s, groups=len(out))
        if "taxi_tip_hour" in queries:
            def q():
                df = pd.read_csv(path, parse_dates=["pickup_datetime"])
                df2 = df[(df.tip_amount > 0) & (df.fare_amount > 0)].copy()
                df2["tip_fraction"] = df2.tip_amount / df2.fare_amount
                return df2.groupby(df2.pickup_datetime.dt.hour).tip_fraction.mean()
            s, out = timed(q, a.repeat)
            emit("pandas", "taxi_tip_hour", s, groups=len(out))

    if "polars" in engines or "polars_lazy" in engines:
        import polars as pl
        if "polars" in engines and "taxi_groupby" in queries:
            s, out = timed(lambda: pl.read_csv(path).group_by("passenger_count").agg(pl.col("trip_distance").mean()), a.repeat)
            emit("polars", "taxi_groupby", s, groups=out.height)
        if "polars_lazy" in engines:
            if "taxi_groupby" in queries:
                s, out = timed(lambda: pl.scan_csv(path).group_by("passenger_count").agg(pl.col("trip_distance").mean()).collect(), a.repeat)
                emit("polars_lazy", "taxi_groupby", s, groups=out.height)
            if "taxi_tip_hour" in queries:
                def q():
                    return (
                        pl.scan_csv(path, try_parse_dates=True)
                        .filter((pl.col("tip_amount") > 0) & (pl.col("fare_amount") > 0))
                        .with_columns((pl.col("tip_amount") / pl.col("fare_amount")).alias("tip_fraction"))
                        .group_by(pl.col("pickup_datetime").dt.hour().alias("hour"))
                        .agg(pl.col("tip_fraction").mean())
                        .collect()
                    )
                s, out = timed(q, a.repeat)
                emit("polars_lazy", "taxi_tip_hour", s, groups=out.height)
            if "join" in queries:
                l, r = join_frames(a.join_left, a.join_right)
                L, R = pl.DataFrame(l).lazy(), pl.DataFrame(r).lazy()
                s, out = timed(lambda: L.join(R, on="key", how="inner").select(pl.len()).collect().item(), a.repeat)
                emit("polars_lazy", "join", s, rows=int(out))
            if "group_top2" in queries:
                g = pl.DataFrame(top_frame(a.agg_rows // 2, a.agg_groups)).lazy()
                s, out = timed(lambda: g.group_by("key").agg(pl.col("x").top_k(2)).explode("x").collect(), a.repeat)
                emit("polars_lazy", "group_top2", s, rows=out.height)
            if "multi_agg" in queries:
                g = pl.DataFrame(group_frame(a.agg_rows, a.agg_groups)).lazy()
                aggs = [pl.col("x").sum().alias("x_sum"), pl.col("x").mean().alias("x_mean"), pl.col("x").min().alias("x_min"),
                        pl.col("x").max().alias("x_max"), pl.col("x").std().alias("x_std"), pl.col("y").count().alias("y_count"), pl.col("y").max().alias("y_max")]
                s, out = timed(lambda: g.group_by("key").agg(aggs).collect(), a.repeat)
                emit("polars_lazy", "multi_agg", s, groups=out.height)

    if "duckdb" in engines and "group_top2" in queries:
        import duckdb
        import pandas as pd
        t = pd.DataFrame(top_frame(a.agg_rows // 2, a.agg_groups))
        con = duckdb.connect()
        con.register("t", t)
        sql = "select key, x from (select key, x, row_number() over (partition by key order by x desc) as rn from t) where rn <= 2"
        s, out = timed(lambda: con.sql(sql).to_arrow_table(), a.repeat)
        emit("duckdb", "group_top2", s, rows=out.num_rows)

if __name__ == "__main__":
    main()
