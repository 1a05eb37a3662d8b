"""Zero-copy hand-over, checked by buffer addresses: a 1 GiB computed array is the
buffer the engine wrote (NumPy's data pointer); a 1 GiB computed frame's columns are the
engine's Arrow buffers in pyarrow and Polars; a frame made from a pyarrow table reads the
table's own buffers. DLPack and the buffer protocol go through the same NumPy array. How
long the hand-over takes is a benchmark figure (`bench/python_workloads.py export`), not
an assertion here: the machines are shared and noisy."""

import numpy as np
import pytest

import tessera as ts

GIB = 1 << 30


def test_a_1_gib_array_result_is_the_engines_buffer():
    n = GIB // 8
    x = ts.ones(n, dtype="float64", chunks=n // 16) * 2.0
    out, address, _seconds = x._compute_traced()
    assert out.nbytes == GIB
    assert out.__array_interface__["data"][0] == address, "NumPy got a copy, not the engine's buffer"
    assert out[0] == 2.0 and out[-1] == 2.0
    # The memory is NumPy's to keep: it outlives the tessera objects.
    del x
    assert float(out[n // 2]) == 2.0


def test_compute_and_array_protocols_share_the_result():
    x = ts.arange(1_000_000, chunks=100_000)
    a = x.compute()
    assert a.flags["C_CONTIGUOUS"] and a.flags["OWNDATA"] is False  # owned by the engine's allocation
    b = np.asarray(x)
    np.testing.assert_array_equal(a, b)
    mv = memoryview(b)
    assert mv.nbytes == 8_000_000
    assert x.__dlpack_device__() == (1, 0)
    via_dlpack = np.from_dlpack(x)
    np.testing.assert_array_equal(via_dlpack, a)


def test_a_large_frame_result_exports_its_buffers_without_copying():
    pa = pytest.importorskip("pyarrow")
    n = GIB // 16  # two float64 columns: 1 GiB
    src = pa.table({"a": np.arange(n, dtype="float64"), "b": np.ones(n)})
    df = ts.from_arrow(src, npartitions=8)
    r = df.compute()
    ours = r._buffer_addresses()
    t = pa.table(r)
    assert t.num_rows == n
    theirs = [[chunk.buffers()[-1].address for chunk in (col.chunks[i] for col in t.columns)] for i in range(t.column(0).num_chunks)]
    assert theirs == ours, "pyarrow holds copies, not the engine's buffers"
    # The frame made from pyarrow data read the table's own buffers (no copy on the way
    # in): every partition's values lie inside the source column's buffer.
    for part in ours:
        for addr, col in zip(part, src.columns):
            buf = col.chunks[0].buffers()[-1]
            assert buf.address <= addr < buf.address + buf.size


def test_import_from_pyarrow_shares_the_buffers():
    pa = pytest.importorskip("pyarrow")
    src = pa.table({"x": np.arange(1_000_000, dtype="int64")})
    r = ts.from_arrow(src).compute()  # one partition per batch, nothing to recompute
    src_addr = src.column("x").chunks[0].buffers()[-1].address
    assert r._buffer_addresses()[0][0] == src_addr


def test_polars_reads_the_engines_buffers():
    pl = pytest.importorskip("polars")
    r = ts.from_arrow(pl.DataFrame({"x": np.arange(100_000, dtype="float64")}), npartitions=1).compute()
    p = pl.DataFrame(r)
    assert p["x"].to_numpy().__array_interface__["data"][0] == r._buffer_addresses()[0][0]
