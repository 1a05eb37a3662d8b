"""The climate workflow of the seeds through xarray, on tessera and on Dask, over the same
NetCDF-4 files, as JSON lines (one per engine and operation class: best of REPEAT seconds
from the opened dataset to the computed answer, the process's peak RSS, and a checksum of
the answer so the engines can be compared).

The files: YEARS yearly NetCDF-4 files of daily fields on a RES-degree grid (``t2m``
float32 with ~1% NaN through a ``_FillValue``, ``pr`` float64), zlib level 4, stored in
chunks of (100 days, 45 lat, 90 lon), written once into DIR and reused. Every engine opens
them with ``open_mfdataset(chunks={"time": 365})``.

  weighted_mean   area-weighted global mean of t2m per day
  climatology     groupby("time.month").mean() of t2m
  anomalies       t2m minus its monthly climatology, reduced to a checksum by .mean("time")
  resample        resample(time="MS").sum() of pr
  rolling         rolling(time=7, center=True).mean() of t2m, reduced by .mean("time")
  hot_days        (t2m > 290).sum("time")
  quantile        t2m.chunk(time=-1).quantile(0.9, dim="time")
  std             pr.std("time")

Engines: ``tessera`` (chunked_array_type="tessera", xarray's own groupby path:
use_flox=False, since flox knows only Dask and Cubed arrays), ``dask`` (Dask's threaded
scheduler with flox, xarray's default when flox is installed) and ``dask-noflox``.
Each (engine, op) runs in a fresh interpreter, so the peak RSS is that run's alone.

  python bench/python_xarray.py [--dir /tmp/xr-bench] [--years 10] [--res 2]
                                [--ops a,b] [--engines tessera,dask] [--repeat 2]
"""
import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

import numpy as np

OPS = ("weighted_mean", "climatology", "anomalies", "resample", "rolling", "hot_days", "quantile", "std")


def make_files(root, years, res):
    import pandas as pd
    import xarray as xr

    root.mkdir(parents=True, exist_ok=True)
    lat = np.arange(-90 + res / 2, 90, res)
    lon = np.arange(0, 360, res)
    paths = []
    rng = np.random.default_rng(0)
    for year in range(2000, 2000 + years):
        path = root / f"day_{year}_{res}deg.nc"
        paths.append(str(path))
        if path.exists():
            continue
        time = pd.date_range(f"{year}-01-01", f"{year}-12-31", freq="D")
        season = np.sin(2 * np.pi * np.asarray(time.day_of_year) / 365.0).astype(np.float32)
        shape = (len(time), len(lat), len(lon))
        t = (np.float32(280) + (15 * np.cos(np.deg2rad(lat))).astype(np.float32)[None, :, None]
             + 5 * season[:, None, None] + rng.standard_normal(shape, dtype=np.float32))
        t[rng.random(shape, dtype=np.float32) < 0.01] = np.nan
        ds = xr.Dataset({"t2m": (("time", "lat", "lon"), t),
                         "pr": (("time", "lat", "lon"), rng.gamma(1.0, 2.0, shape))},
                        coords={"time": time, "lat": lat, "lon": lon})
        chunks = (100, min(45, len(lat)), min(90, len(lon)))
        enc = {"zlib": True, "complevel": 4, "chunksizes": chunks}
        ds.to_netcdf(path, encoding={"t2m": dict(enc, _FillValue=np.float32(-999)), "pr": enc})
    return paths


def operation(op, ds):
    if op == "weighted_mean":
        return ds.t2m.weighted(np.cos(np.deg2rad(ds.lat))).mean(("lat", "lon"))
    if op == "climatology":
        return ds.t2m.groupby("time.month").mean("time")
    if op == "anomalies":
        return (ds.t2m.groupby("time.month") - ds.t2m.groupby("time.month").mean("time")).mean("time")
    if op == "resample":
        return ds.pr.resample(time="MS").sum()
    if op == "rolling":
        return ds.t2m.rolling(time=7, center=True).mean().mean("time")
    if op == "hot_days":
        return (ds.t2m > 290).sum("time")
    if op == "quantile":
        return ds.t2m.chunk(time=-1).quantile(0.9, dim="time")
    if op == "std":
        return ds.pr.std("time")
    raise SystemExit(f"unknown op {op}")


def one(engine, op, paths, repeat):
    import xarray as xr

    kind = "tessera" if engine == "tessera" else "dask"
    if kind == "dask":
        import dask

        dask.config.set(scheduler="threads")
    best, value = None, None
    with xr.set_options(chunk_manager=kind, use_flox=engine == "dask"):
        for _ in range(repeat):
            t = time.perf_counter()
            ds = xr.open_mfdataset(paths, chunks={"time": 365}, chunked_array_type=kind, combine="by_coords")
            out = operation(op, ds).compute()
            s = time.perf_counter() - t
            best = s if best is None else min(best, s)
            value = float(np.nansum(np.asarray(out.values, dtype=np.float64)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"engine": engine, "op": op, "seconds": round(best, 4), "checksum": value,
                      "peak_rss_bytes": peak}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", default="/tmp/tessera-xarray-bench")
    p.add_argument("--years", type=int, default=10)
    p.add_argument("--res", type=float, default=2.0)
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--engines", default="tessera,dask,dask-noflox")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--one", nargs=2, metavar=("ENGINE", "OP"))
    a = p.parse_args()
    paths = make_files(pathlib.Path(a.dir), a.years, a.res)
    if a.one:
        one(a.one[0], a.one[1], paths, a.repeat)
        return
    for op in a.ops.split(","):
        for engine in a.engines.split(","):
            cmd = [sys.executable, __file__, "--one", engine, op, "--repeat", str(a.repeat),
                   "--dir", a.dir, "--years", str(a.years), "--res", str(a.res)]
            subprocess.run(cmd, check=True, env=os.environ)


if __name__ == "__main__":
    main()
