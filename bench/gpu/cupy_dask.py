"""The seed headline with CuPy + Dask, the peer of tessera's `cuda` backend.

    python3 bench/gpu/cupy_dask.py N CHUNK [REPEAT]

`(x + 1)[::2, ::2].sum()` with x = normal(10, 1) of N x N, generated on the GPU by CuPy
through Dask's `array.backend = "cupy"` (the seed's way), one JSON line with the median
seconds of REPEAT computes (default 3) and every run, as examples/gpu_check.rs prints.
"""

import json
import sys
import time

import cupy
import dask
import dask.array as da


def main():
    n, chunk = int(sys.argv[1]), int(sys.argv[2])
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    runs, answer = [], None
    with dask.config.set({"array.backend": "cupy"}):
        for _ in range(repeat):
            x = da.random.normal(10, 1, size=(n, n), chunks=(chunk, chunk))
            y = (x + 1)[::2, ::2].sum()
            t = time.perf_counter()
            answer = float(y.compute())
            cupy.cuda.Device().synchronize()
            runs.append(time.perf_counter() - t)
    secs = sorted(runs)[len(runs) // 2]
    print(json.dumps({
        "check": "headline_sum", "backend": "cupy+dask", "n": n, "chunk": chunk,
        "answer": answer, "seconds": secs, "runs": runs,
        "logical_gb_per_s": n * n * 8 / secs / 1e9,
        "dask": dask.__version__, "cupy": cupy.__version__,
    }))


if __name__ == "__main__":
    main()
