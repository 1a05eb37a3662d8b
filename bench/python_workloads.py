"""The seed workloads from Python, tessera beside its peers in the same interpreter, as
JSON lines (one per engine and workload, best of REPEAT):

  headline      (x + 1)[::2, ::2].sum(), x = normal(10, 1) of N x N, chunks C
                tessera vs dask.array
  taxi_groupby  read_csv + groupby(passenger_count).trip_distance.mean()
                tessera vs Dask, pandas, Polars (lazy)
  join          inner join of 20M x 1M rows on an int64 key, then len (16 x 1 partitions)
                tessera vs Dask, Polars (lazy)
  overhead      compute() of a one-element sum, end to end (median of 1000): the binding's
                cost per call is below it
  export        handing a computed 1 GiB result over: an array to NumPy (the engine's
                buffer becomes the ndarray's), a frame to pyarrow (the C stream capsule,
                then pyarrow's import of it); the addresses are checked equal

Run by bench/compare_python.sh, which installs tessera (`pip install ./python`) and the
peers into a virtual environment outside the repository.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from dataframe_peers import join_frames, timed  # noqa: E402 - the same inputs as the Rust peers script


def emit(engine, workload, seconds, **extra):
    print(json.dumps({"engine": engine, "workload": workload, "seconds": round(seconds, 7), **extra}), flush=True)


def headline(a, engines):
    import tessera as ts

    if "tessera" in engines:
        def q():
            x = ts.random.RandomState(42).normal(10.0, 1.0, size=(a.n, a.n), chunks=a.chunk)
            return float((x + 1)[::2, ::2].sum().compute())
        s, v = timed(q, a.repeat)
        emit("tessera", "headline", s, value=v)
    if "dask" in engines:
        import dask
        import dask.array as da
        dask.config.set(scheduler="threads")

        def q():
            x = da.random.RandomState(42).normal(10.0, 1.0, size=(a.n, a.n), chunks=a.chunk)
            return float((x + 1)[::2, ::2].sum().compute())
        s, v = timed(q, a.dask_repeat)
        emit("dask", "headline", s, value=v)


def taxi_groupby(a, engines):
    import tessera as ts

    path = a.csv
    if "tessera" in engines:
        s, out = timed(lambda: ts.read_csv(path).groupby("passenger_count")["trip_distance"].mean().compute(), a.repeat)
        emit("tessera", "taxi_groupby", s, groups=len(out))
    if "dask" in engines:
        import dask
        import dask.dataframe as dd
        dask.config.set(scheduler="threads")
        s, out = timed(lambda: dd.read_csv(path).groupby("passenger_count").trip_distance.mean().compute(), a.dask_repeat)
        emit("dask", "taxi_groupby", s, groups=len(out))
    if "pandas" in engines:
        import pandas as pd
        s, out = timed(lambda: pd.read_csv(path).groupby("passenger_count").trip_distance.mean(), a.repeat)
        emit("pandas", "taxi_groupby", s, groups=len(out))
    if "polars" in engines:
        import polars as pl
        s, out = timed(
            lambda: pl.scan_csv(path).group_by("passenger_count").agg(pl.col("trip_distance").mean()).collect(), a.repeat
        )
        emit("polars_lazy", "taxi_groupby", s, groups=out.height)


def join(a, engines):
    import pyarrow as pa

    import tessera as ts

    left, right = join_frames(a.join_left, a.join_right)
    if "tessera" in engines:
        L = ts.from_arrow(pa.table(left), npartitions=16)
        R = ts.from_arrow(pa.table(right), npartitions=1)
        s, out = timed(lambda: len(L.merge(R, on="key", how="inner")), a.repeat)
        emit("tessera", "join", s, rows=int(out))
    if "dask" in engines:
        import dask
        import dask.dataframe as dd
        import pandas as pd
        dask.config.set(scheduler="threads")
        L = dd.from_pandas(pd.DataFrame(left), npartitions=16)
        R = dd.from_pandas(pd.DataFrame(right), npartitions=1)
        s, out = timed(lambda: len(L.merge(R, on="key", how="inner")), a.dask_repeat)
        emit("dask", "join", s, rows=int(out))
    if "polars" in engines:
        import polars as pl
        L, R = pl.DataFrame(left).lazy(), pl.DataFrame(right).lazy()
        s, out = timed(lambda: L.join(R, on="key", how="inner").select(pl.len()).collect().item(), a.repeat)
        emit("polars_lazy", "join", s, rows=int(out))


def overhead(a, engines):
    """The binding's own cost per compute(): a one-element sum from Python, against the
    same plan's engine time (`Array.num_tasks` plans it; `_compute_traced` splits off the
    hand-over)."""
    import tessera as ts

    x = ts.ones(1).sum()
    for _ in range(50):
        x.compute()
    calls = []
    for _ in range(1000):
        t = time.perf_counter()
        x.compute()
        calls.append(time.perf_counter() - t)
    emit("tessera", "overhead", statistics.median(calls), p99=sorted(calls)[989], unit="seconds per compute() of a one-element sum, end to end")


def export(a, engines):
    import pyarrow as pa

    import tessera as ts

    n = (1 << 30) // 8
    x = ts.ones(n, chunks=n // 16) * 2.0
    handed = []
    for _ in range(a.repeat):
        out, address, seconds = x._compute_traced()
        assert out.__array_interface__["data"][0] == address
        handed.append(seconds)
        del out
    emit("tessera", "export_array_1gib", min(handed), unit="seconds to hand a computed 1 GiB array to NumPy")
    src = pa.table({"a": np.arange(n // 2, dtype="float64"), "b": np.ones(n // 2)})
    r = ts.from_arrow(src, npartitions=8).compute()
    capsule, imported = [], []
    for _ in range(a.repeat):
        t = time.perf_counter()
        r.__arrow_c_stream__()
        capsule.append(time.perf_counter() - t)
        t = time.perf_counter()
        table = pa.table(r)
        imported.append(time.perf_counter() - t)
        got = [c.buffers()[-1].address for c in table.column(0).chunks]
        assert got == [b[0] for b in r._buffer_addresses()]
    emit("tessera", "export_frame_1gib_capsule", min(capsule), unit="seconds to make the C stream capsule of a 1 GiB result")
    emit("tessera", "export_frame_1gib_pyarrow", min(imported), unit="seconds for pyarrow.table() to take it (pyarrow's import of 8 batches x 2 columns)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workloads", default="headline,taxi_groupby,join,overhead,export")
    p.add_argument("--engines", default="tessera,dask,pandas,polars")
    p.add_argument("--csv", default=None)
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--chunk", type=int, default=2_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dask-repeat", type=int, default=2)
    p.add_argument("--join-left", type=int, default=20_000_000)
    p.add_argument("--join-right", type=int, default=1_000_000)
    a = p.parse_args()
    engines = a.engines.split(",")
    for w in a.workloads.split(","):
        if w == "taxi_groupby" and not a.csv:
            sys.exit("taxi_groupby needs --csv (bench/compare_python.sh writes it)")
        {"headline": headline, "taxi_groupby": taxi_groupby, "join": join, "overhead": overhead, "export": export}[
            w
        ](a, engines)


if __name__ == "__main__":
    main()
