"""The workloads of `examples/mpi_bench.rs` through Dask distributed, for a ratio measured
in the same run: a `LocalCluster` of `--workers` processes with one thread each (the MPI
runs use one worker thread per rank), median of `--repeat` runs. One JSON line per
workload.

    python dask_distributed.py --workers 2 --n 8000 --chunk 1000 --repeat 3
"""

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import time  # noqa: E402

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def measure(repeat, f):
    runs, answer = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        answer = f()
        runs.append(time.perf_counter() - t)
    return median(runs), answer, runs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--n", type=int, default=8000)
    p.add_argument("--chunk", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--csv", default=None)
    a = p.parse_args()
    cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    n, c = a.n, a.chunk
    x = da.random.normal(10.0, 1.0, (n, n), chunks=c)
    rows, cols = n * 10, n // 4
    m = da.random.random((rows, cols), chunks=(c * 5, cols))

    def svd():
        u, s, v = da.linalg.svd_compressed(m, k=10, n_power_iter=0, seed=1)
        return float(s.compute()[0])

    work = [
        ("headline_sum", n, c, lambda: float((x + 1)[::2, ::2].sum().compute())),
        ("std_axis0", n, c, lambda: float(x.std(axis=0).sum().compute())),
        ("svd_compressed", rows, c * 5, svd),
    ]
    if a.csv:
        import dask.dataframe as dd

        def groupby():
            df = dd.read_csv(a.csv, blocksize=1 << 20)
            out = df.groupby("key").fare.sum(split_out=max(a.workers, 2), shuffle_method="tasks")
            return float(len(out.compute()))

        work.append(("groupby_shuffle", n * 100, 0, groupby))
    for name, size, chunk, f in work:
        secs, answer, runs = measure(a.repeat, f)
        print(json.dumps({
            "engine": "dask-distributed",
            "workload": name,
            "ranks": a.workers,
            "n": size,
            "chunk": chunk,
            "seconds": round(secs, 3),
            "runs": [round(r, 3) for r in runs],
            "answer": answer,
            "dask": dask.__version__,
            "distributed": distributed.__version__,
        }), flush=True)
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
