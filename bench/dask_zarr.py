"""Dask's side of bench/compare_zarr.sh: dask.array.from_zarr + zarr-python 3 reading the
arrays tessera's zarr_bench wrote, reduced on Dask's threaded scheduler. Prints one JSON
line per workload and codec: engine, workload, codec, n, chunk, seconds (median),
runs, answer, raw_gb_per_s, peak_rss_bytes.

Usage: dask_zarr.py --dir DIR [--workloads sum,mean_axis0] [--repeat 3]

DIR may be an s3:// URL: then s3fs reads it, with the endpoint from
TESSERA_STORAGE_ENDPOINT and the keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
(the same settings tessera reads).
"""

import argparse
import json
import resource
import statistics
import time

import os

import dask
import dask.array as da


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--workloads", default="sum,mean_axis0")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    dask.config.set(scheduler="threads")
    for codec in ("blosc", "zstd"):
        for w in a.workloads.split(","):
            if a.dir.startswith("s3://"):
                opts = {"key": os.environ["AWS_ACCESS_KEY_ID"],
                        "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
                        "client_kwargs": {"endpoint_url": os.environ["TESSERA_STORAGE_ENDPOINT"],
                                          "region_name": "us-east-1"}}
                x = da.from_zarr(f"{a.dir}/{codec}", storage_options=opts)
            else:
                x = da.from_zarr(f"{a.dir}/{codec}")
            if w == "sum":
                expr = x.sum()
            elif w == "mean_axis0":
                expr = x.mean(axis=0).sum()
            else:
                raise SystemExit(f"unknown workload {w}")
            runs = []
            for _ in range(max(1, a.repeat)):
                t = time.perf_counter()
                answer = float(expr.compute())
                runs.append(time.perf_counter() - t)
            secs = statistics.median(runs)
            print(json.dumps({
                "engine": "dask", "workload": w, "codec": codec, "n": x.shape[0],
                "chunk": x.chunksize[0], "seconds": secs, "runs": runs, "answer": answer,
                "raw_gb_per_s": x.nbytes / secs / 1e9,
                "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            }), flush=True)


if __name__ == "__main__":
    main()
