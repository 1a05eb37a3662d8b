"""h5py and netCDF4-python write the files tessera reads, and what they decode them to.

Usage: hdf5_netcdf_interop.py DIR

Writes into DIR (read by tests/integration/array_io.rs):
  h5py.h5        t2m     float32 (30, 20, 12), chunks (10, 7, 12), gzip + shuffle
                 counts  uint16 (25, 9), contiguous, big endian
                 flags   bool (10, 10), chunks (4, 4)
                 grp/deep float64 (5, 4) in a group
                 names   variable-length strings (a type tessera does not hold)
  cf.nc          NETCDF4: tas int16 (12, 9, 10) packed (scale_factor 0.01, add_offset
                 273.15, float32) with _FillValue -32767 at some points, zlib, chunks
                 (4, 9, 5); pr float64 (12, 9, 10) with _FillValue 1e20 at some points;
                 level int32 (12,), no fill
  classic.nc     NETCDF3_CLASSIC: x float64 (7, 11)
and, for each array, NAME.npy: the values h5py or netCDF4-python gives (netCDF4's
mask-and-scale decoding, masked points as NaN), the reference tessera is compared with.
"""

import sys

import h5py
import netCDF4
import numpy as np


def main(d):
    rng = np.random.default_rng(7)
    t2m = (rng.standard_normal((30, 20, 12)) * 10 + 280).astype(np.float32)
    counts = np.arange(25 * 9, dtype=np.uint16).reshape(25, 9) * 3
    flags = (np.arange(100).reshape(10, 10) % 7) == 0
    deep = np.linspace(-1, 1, 20).reshape(5, 4)
    with h5py.File(f"{d}/h5py.h5", "w") as f:
        f.create_dataset("t2m", data=t2m, chunks=(10, 7, 12), compression="gzip", shuffle=True)
        f.create_dataset("counts", data=counts, dtype=">u2")
        f.create_dataset("flags", data=flags, chunks=(4, 4))
        f.create_group("grp").create_dataset("deep", data=deep)
        f.create_dataset("names", data=["a", "bb"], dtype=h5py.string_dtype())
    for name, a in [("t2m", t2m), ("counts", counts), ("flags", flags), ("deep", deep)]:
        np.save(f"{d}/{name}.npy", a)

    with netCDF4.Dataset(f"{d}/cf.nc", "w", format="NETCDF4") as nc:
        nc.createDimension("time", 12)
        nc.createDimension("lat", 9)
        nc.createDimension("lon", 10)
        tas = nc.createVariable(
            "tas", "i2", ("time", "lat", "lon"), zlib=True, chunksizes=(4, 9, 5), fill_value=-32767
        )
        tas.scale_factor = np.float32(0.01)
        tas.add_offset = np.float32(273.15)
        kelvin = 273.15 + rng.uniform(-40, 40, (12, 9, 10))
        masked = np.ma.masked_array(kelvin, mask=rng.uniform(size=kelvin.shape) < 0.1)
        tas[:] = masked
        pr = nc.createVariable("pr", "f8", ("time", "lat", "lon"), fill_value=1e20)
        rain = rng.gamma(2.0, 1.5, (12, 9, 10))
        pr[:] = np.ma.masked_array(rain, mask=rain > 5)
        level = nc.createVariable("level", "i4", ("time",))
        level[:] = np.arange(12) * 100
    with netCDF4.Dataset(f"{d}/cf.nc") as nc:
        for name in ["tas", "pr", "level"]:
            v = nc[name][:]
            if np.ma.isMaskedArray(v) and v.dtype.kind == "f":
                v = v.filled(np.nan)
            np.save(f"{d}/{name}.npy", np.asarray(v))

    with netCDF4.Dataset(f"{d}/classic.nc", "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("r", 7)
        nc.createDimension("c", 11)
        x = nc.createVariable("x", "f8", ("r", "c"))
        x[:] = np.arange(77).reshape(7, 11) / 8
        np.save(f"{d}/x.npy", np.arange(77).reshape(7, 11) / 8)
    print("h5py", h5py.__version__, "netCDF4", netCDF4.__version__, "ok")


if __name__ == "__main__":
    main(sys.argv[1])
