"""The array families NumPy- and Dask-written code calls beyond elementwise math and
reductions, tessera against dask.array on the same 1 GiB inputs, as JSON lines (one per
engine and op: best of REPEAT seconds, and the process's peak RSS).

  cumsum0 / cumsum1   x.cumsum(axis).sum(), x float64 8192 x 16384, chunks 1024 x 2048
  fancy_rows          x[idx].sum(), x float64 1M x 128 (chunks of 65536 rows), 100k
                      random row indices from NumPy
  mask_rows           x[mask].sum(), the same x, a NumPy mask keeping ~30% of the rows
  nanmean             nanmean(x), x float64 134M (10% NaN), chunks of 8M
  median1             median(x, axis=1).sum(), x float64 8192 x 16384, chunks 512 x 16384
  isin                isin(x, 1000 values).sum(), x int64 134M in [0, 1e6), chunks of 8M
  searchsorted        searchsorted(s, v).sum(), s sorted float64 1M (chunks of 256k),
                      v float64 134M, chunks of 8M
  sort                sort(x)[::1000].sum(), x float64 134M, chunks of 8M; Dask has no
                      sort, so NumPy's np.sort (one thread) is the peer

Each (engine, op) runs in a fresh interpreter, so the peak RSS is that run's alone; the
input is made from NumPy's generator with the same seed for both engines before the
clock starts (Dask wraps the NumPy array, tessera copies it into its chunks).

  python bench/python_array_ops.py [--ops a,b] [--engines tessera,dask] [--repeat 3]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

N2 = (8192, 16384)
ROWS = (1 << 20, 128)
N1 = 1 << 27


def inputs(op):
    rng = np.random.default_rng(0)
    if op in ("cumsum0", "cumsum1"):
        return {"x": rng.standard_normal(N2)}
    if op == "fancy_rows":
        return {"x": rng.standard_normal(ROWS), "idx": rng.integers(0, ROWS[0], 100_000)}
    if op == "mask_rows":
        return {"x": rng.standard_normal(ROWS), "mask": rng.random(ROWS[0]) < 0.3}
    if op == "nanmean":
        x = rng.standard_normal(N1)
        x[rng.random(N1) < 0.1] = np.nan
        return {"x": x}
    if op == "median1":
        return {"x": rng.standard_normal(N2)}
    if op == "isin":
        return {"x": rng.integers(0, 1_000_000, N1), "test": rng.integers(0, 1_000_000, 1000)}
    if op == "searchsorted":
        return {"s": np.sort(rng.standard_normal(1 << 20)), "v": rng.standard_normal(N1)}
    if op == "sort":
        return {"x": rng.standard_normal(N1)}
    raise SystemExit(f"unknown op {op}")


def plans(engine, op, d):
    """The op as a function of nothing (the inputs already made and chunked)."""
    if engine == "numpy":
        if op != "sort":
            return None
        return lambda: float(np.sort(d["x"])[::1000].sum())
    if engine == "tessera":
        import tessera as xs

        arr = lambda a, c: xs.from_array(a, chunks=c)  # noqa: E731
    else:
        import dask
        import dask.array as xs

        dask.config.set(scheduler="threads")
        arr = lambda a, c: xs.from_array(a, chunks=c)  # noqa: E731
    if op in ("cumsum0", "cumsum1"):
        x = arr(d["x"], (1024, 2048))
        axis = int(op[-1])
        return lambda: float(x.cumsum(axis=axis).sum().compute())
    if op == "fancy_rows":
        x = arr(d["x"], (65536, 128))
        return lambda: float(x[d["idx"]].sum().compute())
    if op == "mask_rows":
        x = arr(d["x"], (65536, 128))
        return lambda: float(x[d["mask"]].sum().compute())
    if op == "nanmean":
        x = arr(d["x"], 1 << 23)
        return lambda: float(xs.nanmean(x).compute())
    if op == "median1":
        x = arr(d["x"], (512, 16384))
        if engine == "tessera":
            return lambda: float(np.median(x, axis=1).sum().compute())
        return lambda: float(xs.median(x, axis=1).sum().compute())
    if op == "isin":
        x = arr(d["x"], 1 << 23)
        return lambda: int(xs.isin(x, d["test"]).sum().compute())
    if op == "searchsorted":
        s, v = arr(d["s"], 1 << 18), arr(d["v"], 1 << 23)
        if engine == "tessera":
            return lambda: int(np.searchsorted(s, v).sum().compute())
        return lambda: int(xs.searchsorted(s, v).sum().compute())
    if op == "sort":
        if engine != "tessera":
            return None
        x = arr(d["x"], 1 << 23)
        return lambda: float(xs.sort(x)[::1000].sum().compute())
    raise SystemExit(f"unknown op {op}")


def one(engine, op, repeat):
    d = inputs(op)
    f = plans(engine, op, d)
    if f is None:
        return
    best, value = None, None
    for _ in range(repeat):
        t = time.perf_counter()
        value = f()
        s = time.perf_counter() - t
        best = s if best is None else min(best, s)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"engine": engine, "op": op, "seconds": round(best, 4), "value": value, "peak_rss_bytes": peak}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ops", default="cumsum0,cumsum1,fancy_rows,mask_rows,nanmean,median1,isin,searchsorted,sort")
    p.add_argument("--engines", default="tessera,dask,numpy")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--one", nargs=2, metavar=("ENGINE", "OP"))
    a = p.parse_args()
    if a.one:
        one(a.one[0], a.one[1], a.repeat)
        return
    for op in a.ops.split(","):
        for engine in a.engines.split(","):
            subprocess.run([sys.executable, __file__, "--one", engine, op, "--repeat", str(a.repeat)], check=True, env=os.environ)


if __name__ == "__main__":
    main()
