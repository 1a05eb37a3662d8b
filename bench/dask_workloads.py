"""The tessera benchmark workloads, run through Dask for a side-by-side ratio.

Prints one JSON line per workload with the same fields as tessera's `bench` example
(`workload`, `n`, `chunk`, `seconds`, `runs`, `answer`, `peak_rss_bytes`). `seconds` is the
median of `--repeat` computes of the same expression (`runs` lists them all), as in
tessera's bench. Run by `compare_dask.sh` inside a virtual environment outside the
repository; not part of the product.

    python dask_workloads.py [--n N] [--chunk C] [--workloads a,b,...] [--repeat R]
"""

import argparse
import json
import resource
import time

import dask
import dask.array as da
import numpy as np


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def headline(n, c, reduce):
    rs = da.random.default_rng(42)
    x = rs.normal(10.0, 1.0, size=(n, n), chunks=c)
    y = (x + 1)[::2, ::2]
    return getattr(y, reduce)()


def transposed_std(n, c):
    rs = da.random.default_rng(42)
    x = rs.normal(10.0, 1.0, size=(n, n), chunks=c)
    return (x + x.T)[::2, ::2].std()


def normal_sum(n, c):
    rs = da.random.default_rng(42)
    return rs.normal(10.0, 1.0, size=(n, n), chunks=c).sum()


def ones_sum(n, c):
    return da.ones((n, n), chunks=c).sum()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--chunk", type=int, default=2000)
    ap.add_argument("--workloads", default="headline_sum,headline_mean,transposed_std,normal_sum,ones_sum")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    dask.config.set(scheduler="threads")
    for w in args.workloads.split(","):
        if w == "headline_sum":
            expr, n, c = headline(args.n, args.chunk, "sum"), args.n, args.chunk
        elif w == "headline_mean":
            expr, n, c = headline(args.n, args.chunk, "mean"), args.n, args.chunk
        elif w == "transposed_std":
            expr, n, c = transposed_std(args.n, args.chunk), args.n, args.chunk
        elif w == "normal_sum":
            expr, n, c = normal_sum(args.n, args.chunk), args.n, args.chunk
        elif w == "ones_sum":
            expr, n, c = ones_sum(10000, 100), 10000, 100
        else:
            raise SystemExit(f"unknown workload {w}")
        tasks = len(expr.__dask_graph__())
        runs = []
        for _ in range(max(args.repeat, 1)):
            t = time.perf_counter()
            answer = float(expr.compute())
            runs.append(time.perf_counter() - t)
        secs = sorted(runs)[len(runs) // 2]
        print(json.dumps({
            "engine": "dask",
            "version": dask.__version__,
            "workload": w,
            "n": n,
            "chunk": c,
            "seconds": secs,
            "runs": runs,
            "answer": answer,
            "tasks": tasks,
            "us_per_task": secs / tasks * 1e6,
            "peak_rss_bytes": peak_rss_bytes(),
        }), flush=True)


if __name__ == "__main__":
    main()
