"""zarr-python 3 reads the Zarr arrays tessera wrote, and writes the ones tessera reads.

Usage: zarr_interop.py DIR

DIR/tessera holds tessera's arrays (written by tests/integration/array_io.rs), each
arange(0, 13 * 7).reshape(13, 7) * 0.5 as float64 in chunks of (5, 4):
  v2-none, v2-zstd, v2-gzip, v2-blosc, v3-none, v3-zstd, v3-gzip, v3-blosc, v3-sharded
  (shards (10, 4) of inner chunks (5, 2), zstd), and v3-int16 (the same values - 30 as int16).
The script checks every one exactly (values, dtype, shape, chunks) and writes DIR/python,
for the Rust side to check:
  v3-zstd      float64 (100, 73), chunks (30, 20), zstd; a NaN at [3, 5]
  v3-blosc     float32 (100, 73), chunks (30, 20), blosc lz4 with shuffle
  v3-gzip      int32 (100, 73), chunks (30, 20), gzip
  v3-sharded   float64 (100, 73), shards (50, 40) of inner chunks (10, 10), zstd
  v2-blosc     float64 (100, 73), chunks (30, 20), v2 blosc
  v3-fill      float64 (10, 10), chunks (5, 5), fill value -1, only chunk (0, 0) written
  v2-uint8-f   uint8 (6, 4) chunks (3, 4) in Fortran order (v2 'order': 'F')
where the values are arange(100 * 73).reshape(100, 73) (cast) unless said otherwise.
"""

import sys

import numpy as np
import zarr
from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec


def check_tessera(d):
    want = np.arange(13 * 7).reshape(13, 7) * 0.5
    names = [f"v{v}-{c}" for v in (2, 3) for c in ("none", "zstd", "gzip", "blosc")]
    for name in names + ["v3-sharded"]:
        a = zarr.open_array(f"{d}/tessera/{name}", mode="r")
        assert a.dtype == np.float64, (name, a.dtype)
        assert a.shape == (13, 7), (name, a.shape)
        got = a[...]
        assert np.array_equal(got, want), name
    s = zarr.open_array(f"{d}/tessera/v3-sharded", mode="r")
    assert s.shards == (10, 4) and s.chunks == (5, 2), (s.shards, s.chunks)
    i = zarr.open_array(f"{d}/tessera/v3-int16", mode="r")
    assert i.dtype == np.int16
    assert np.array_equal(i[...], (np.arange(13 * 7).reshape(13, 7) * 0.5 - 30).astype(np.int16))


def write_python(d):
    base = np.arange(100 * 73).reshape(100, 73)
    out = f"{d}/python"
    x = base.astype(np.float64)
    x[3, 5] = np.nan
    a = zarr.create_array(f"{out}/v3-zstd", shape=x.shape, chunks=(30, 20), dtype="f8",
                          compressors=ZstdCodec(level=3))
    a[...] = x
    a = zarr.create_array(f"{out}/v3-blosc", shape=x.shape, chunks=(30, 20), dtype="f4",
                          compressors=BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"))
    a[...] = base.astype(np.float32)
    a = zarr.create_array(f"{out}/v3-gzip", shape=x.shape, chunks=(30, 20), dtype="i4",
                          compressors=GzipCodec(level=5))
    a[...] = base.astype(np.int32)
    a = zarr.create_array(f"{out}/v3-sharded", shape=x.shape, shards=(50, 40), chunks=(10, 10),
                          dtype="f8", compressors=ZstdCodec(level=1))
    a[...] = base.astype(np.float64)
    a = zarr.create_array(f"{out}/v2-blosc", shape=x.shape, chunks=(30, 20), dtype="f8",
                          zarr_format=2)
    a[...] = base.astype(np.float64)
    a = zarr.create_array(f"{out}/v3-fill", shape=(10, 10), chunks=(5, 5), dtype="f8",
                          fill_value=-1.0)
    a[0:5, 0:5] = np.arange(25).reshape(5, 5)
    a = zarr.create_array(f"{out}/v2-uint8-f", shape=(6, 4), chunks=(3, 4), dtype="u1",
                          zarr_format=2, order="F")
    a[...] = np.arange(24, dtype=np.uint8).reshape(6, 4)


if __name__ == "__main__":
    check_tessera(sys.argv[1])
    write_python(sys.argv[1])
    print("zarr", zarr.__version__, "ok")
