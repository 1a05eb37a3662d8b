"""NumPy reads the .npy files tessera wrote, and writes the ones tessera reads back.

Usage: npy_interop.py DIR

DIR holds tessera's files (written by tests/integration/array_io.rs):
  tessera_f64.npy  arange(0, 60).reshape(6, 10) * 0.5, float64
  tessera_i16.npy  arange(0, 60).reshape(6, 10) - 30, int16
  tessera_bool.npy arange(0, 60).reshape(6, 10) % 3 == 0
The script checks them exactly and writes, for the Rust side to check:
  numpy_c_f32.npy      arange(24, dtype=float32).reshape(2, 3, 4) / 4, C order
  numpy_f_u16.npy      arange(24, dtype=uint16).reshape(4, 6) in Fortran order
  numpy_be_f8.npy      arange(10, dtype='>f8') * -1.5, big endian
  numpy_v2.npy         arange(5, dtype=int64) saved with format version 2.0
  numpy_nan.npy        [nan, inf, -inf, -0.0, 1.0] as float64
"""

import sys

import numpy as np
from numpy.lib import format as npformat


def main(d):
    base = np.arange(60).reshape(6, 10)
    checks = {
        "tessera_f64.npy": base * 0.5,
        "tessera_i16.npy": (base - 30).astype(np.int16),
        "tessera_bool.npy": base % 3 == 0,
    }
    for name, want in checks.items():
        got = np.load(f"{d}/{name}")
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert np.array_equal(got, want), name

    np.save(f"{d}/numpy_c_f32.npy", np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4)
    np.save(f"{d}/numpy_f_u16.npy", np.asfortranarray(np.arange(24, dtype=np.uint16).reshape(4, 6)))
    np.save(f"{d}/numpy_be_f8.npy", np.arange(10, dtype=">f8") * -1.5)
    with open(f"{d}/numpy_v2.npy", "wb") as f:
        npformat.write_array(f, np.arange(5, dtype=np.int64), version=(2, 0))
    np.save(f"{d}/numpy_nan.npy", np.array([np.nan, np.inf, -np.inf, -0.0, 1.0]))
    print("numpy", np.__version__, "ok")


if __name__ == "__main__":
    main(sys.argv[1])
