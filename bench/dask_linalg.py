"""The linear-algebra workloads of `examples/linalg_bench.rs`, through Dask, for a ratio
measured in the same session. One JSON line per workload (best of `--repeat` runs).

    python dask_linalg.py tsqr|compressed [--repeat N] [--chunk-rows R] [--backend cupy]

`--backend cupy` runs it on the GPU the seed's way (Dask's `array.backend = "cupy"`), the
peer of tessera's `cuda` backend.

BLAS is limited to one thread per worker (as in the issue's reference figures), so Dask's
threaded scheduler supplies the parallelism.
"""

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import resource  # noqa: E402
import time  # noqa: E402

import dask  # noqa: E402
import dask.array as da  # noqa: E402


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tsqr():
    x = da.random.random((2_000_000, 20), chunks=(125_000, 20))
    u, s, v = da.linalg.svd(x)
    return dask.compute(u, s, v)


def compressed(rows):
    chunks = (rows, 5_000) if rows else "auto"
    x = da.random.random((200_000, 5_000), chunks=chunks)
    u, s, v = da.linalg.svd_compressed(x, k=10, seed=1)
    return dask.compute(u, s, v)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload", choices=["tsqr", "compressed"])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--chunk-rows", type=int, default=0)
    p.add_argument("--backend", choices=["numpy", "cupy"], default="numpy")
    a = p.parse_args()
    best = None
    for _ in range(a.repeat):
        t = time.perf_counter()
        with dask.config.set({"array.backend": a.backend}):
            u, s, v = tsqr() if a.workload == "tsqr" else compressed(a.chunk_rows)
        if a.backend == "cupy":
            import cupy

            cupy.cuda.Device().synchronize()
        secs = time.perf_counter() - t
        best = secs if best is None else min(best, secs)
    print(json.dumps({
        "engine": "dask",
        "backend": a.backend,
        "workload": "tsqr_svd" if a.workload == "tsqr" else "svd_compressed",
        "seconds": round(best, 3),
        "s0": float(s[0]),
        "u_shape": list(u.shape),
        "peak_rss_mb": round(peak_rss_mb()),
        "dask": dask.__version__,
    }))


if __name__ == "__main__":
    main()
