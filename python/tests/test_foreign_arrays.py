"""Arrays of other libraries read and written block by block, as ``dask.array`` does:
``from_array`` of any object with ``shape``, ``dtype`` and ``__getitem__`` (h5py, zarr-python,
netCDF4 variables, xarray's backend arrays) is lazy, one read per block when a plan needs
it; ``store`` writes each block into any object with ``__setitem__``, region by region.
Checked against ``dask.array.from_array`` / ``dask.array.store`` on the same objects."""

import threading

import dask.array as da
import numpy as np
import pytest
import zarr

import tessera as ts


class Recording:
    """A duck array over a NumPy array that records every key it is read with."""

    def __init__(self, data):
        self.data = data
        self.shape = data.shape
        self.ndim = data.ndim
        self.dtype = data.dtype
        self.keys = []

    def __getitem__(self, key):
        self.keys.append(key)
        return self.data[key]


class Target:
    """A duck target that records every region it is written with."""

    def __init__(self, shape, dtype):
        self.data = np.zeros(shape, dtype)
        self.shape = shape
        self.ndim = len(shape)
        self.dtype = np.dtype(dtype)
        self.keys = []

    def __getitem__(self, key):
        return self.data[key]

    def __setitem__(self, key, value):
        self.keys.append(key)
        self.data[key] = value


A = np.arange(48.0).reshape(6, 8)


def test_from_array_of_a_duck_array_reads_nothing_until_computed():
    src = Recording(A)
    x = ts.from_array(src, chunks=(3, 4))
    assert src.keys == []
    assert x.shape == (6, 8) and x.dtype == np.float64 and x.chunks == ((3, 3), (4, 4))
    np.testing.assert_array_equal(x.compute(), A)
    assert sorted(src.keys, key=repr) == sorted(
        [(slice(r, r + 3), slice(c, c + 4)) for r in (0, 3) for c in (0, 4)], key=repr
    )


def test_a_slice_of_a_duck_array_reads_only_the_blocks_it_touches():
    src = Recording(A)
    x = ts.from_array(src, chunks=(3, 4))
    np.testing.assert_array_equal((x[4:, 5:] * 2).compute(), A[4:, 5:] * 2)
    assert src.keys == [(slice(3, 6), slice(4, 8))]


def test_a_duck_array_matches_dask_through_a_reduction():
    src = Recording(np.random.default_rng(3).normal(size=(50, 30)).astype(np.float32))
    ours = ts.from_array(src, chunks=(7, 11))
    theirs = da.from_array(src, chunks=(7, 11))
    for f in (lambda a: a.sum(axis=0), lambda a: (a - a.mean()).std(axis=1), lambda a: a.T[3:9]):
        got, want = f(ours).compute(), f(theirs).compute()
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # float32 sums


def test_a_zarr_array_is_read_lazily_in_multiples_of_its_stored_chunks(tmp_path):
    z = zarr.create_array(str(tmp_path / "a.zarr"), shape=(100, 40), chunks=(10, 8), dtype="i4")
    z[:] = np.arange(4000, dtype=np.int32).reshape(100, 40)
    x = ts.from_array(z)
    assert all(c % 10 == 0 for c in x.chunks[0][:-1]) and all(c % 8 == 0 for c in x.chunks[1][:-1])
    np.testing.assert_array_equal(x.compute(), z[:])
    np.testing.assert_array_equal(ts.from_array(z, chunks=(30, 40))[95:].compute(), z[95:])
    small = ts.from_array(z, chunks="auto")
    assert small.chunks == x.chunks


def test_auto_chunks_of_a_stored_array_are_whole_multiples_under_a_small_target(tmp_path):
    z = zarr.create_array(str(tmp_path / "b.zarr"), shape=(64, 64), chunks=(4, 4), dtype="f8")
    z[:] = np.ones((64, 64))
    with ts.config.set({"array.chunk-size": "2KiB"}):
        x = ts.from_array(z)
    assert x.chunks[0][0] % 4 == 0 and x.chunks[1][0] % 4 == 0
    assert x.chunks[0][0] * x.chunks[1][0] * 8 <= 2048
    assert len(x.chunks[0]) > 1


def test_an_exception_in_a_read_reaches_the_caller_with_its_type():
    class Failing(Recording):
        def __getitem__(self, key):
            if key[0].start >= 3:
                raise KeyError("block missing on the server")
            return super().__getitem__(key)

    x = ts.from_array(Failing(A), chunks=(3, 8))
    np.testing.assert_array_equal(x[:3].compute(), A[:3])
    with pytest.raises(KeyError, match="block missing"):
        x.compute()


def test_a_read_of_the_wrong_shape_or_dtype_is_a_clear_error():
    class Short(Recording):
        def __getitem__(self, key):
            return super().__getitem__(key)[:1]

    with pytest.raises(ValueError, match=r"returned shape \(1, 8\).*\(3, 8\)"):
        ts.from_array(Short(A), chunks=(3, 8)).compute()

    class Widened(Recording):
        def __getitem__(self, key):
            return super().__getitem__(key).astype(np.float32)

    with pytest.raises(ValueError, match="float32.*float64"):
        ts.from_array(Widened(A), chunks=(3, 8)).compute()


def test_an_object_without_a_dtype_numpy_knows_is_refused_when_made():
    odd = Recording(A)
    odd.dtype = "not a dtype"
    with pytest.raises(TypeError, match="dtype"):
        ts.from_array(odd)
    strings = Recording(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="dtype"):
        ts.from_array(strings)


def test_a_lock_is_held_around_every_read():
    class Checked(Recording):
        def __init__(self, data, lock):
            super().__init__(data)
            self.lock = lock

        def __getitem__(self, key):
            assert self.lock.locked(), "read without the lock"
            return super().__getitem__(key)

    lock = threading.Lock()
    x = ts.from_array(Checked(A, lock), chunks=(1, 2), lock=lock)
    np.testing.assert_array_equal(x.compute(), A)
    with pytest.raises(AssertionError, match="without the lock"):
        ts.from_array(Checked(A, threading.Lock()), chunks=(1, 2)).compute()


def test_from_array_of_a_tessera_array_keeps_it_lazy_and_rechunks_it():
    x = ts.from_array(A, chunks=2)
    y = ts.from_array(x, chunks=(3, 4))
    assert y.chunks == ((3, 3), (4, 4))
    assert ts.from_array(x) is not None and ts.from_array(x).chunks == x.chunks
    np.testing.assert_array_equal(y.compute(), A)


def test_store_writes_every_block_into_a_numpy_target_as_dask_does():
    x = ts.from_array(A, chunks=(4, 3))
    ours, theirs = np.zeros_like(A), np.zeros_like(A)
    assert ts.store(x, ours) is None
    da.store(da.from_array(A, chunks=(4, 3)), theirs)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours, A)


def test_store_writes_one_region_per_block():
    t = Target((6, 8), np.float64)
    ts.from_array(A, chunks=(3, 8)).store(t)
    assert sorted(t.keys, key=repr) == [(slice(0, 3), slice(0, 8)), (slice(3, 6), slice(0, 8))]
    np.testing.assert_array_equal(t.data, A)


def test_store_of_several_sources_runs_one_plan():
    src = Recording(A)
    x = ts.from_array(src, chunks=(6, 8))
    a, b = np.zeros_like(A), np.zeros_like(A)
    ts.store([x + 1, x * 2], [a, b])
    assert len(src.keys) == 1  # the shared read ran once
    np.testing.assert_array_equal(a, A + 1)
    np.testing.assert_array_equal(b, A * 2)


def test_store_into_regions_of_a_larger_target_matches_dask():
    x = ts.from_array(A, chunks=(2, 5))
    ours, theirs = np.full((10, 20), -1.0), np.full((10, 20), -1.0)
    region = (slice(3, 9), slice(10, 18))
    ts.store([x], [ours], regions=[region])
    da.store([da.from_array(A, chunks=(2, 5))], [theirs], regions=[region])
    np.testing.assert_array_equal(ours, theirs)
    with pytest.raises(ValueError, match="region"):
        ts.store(x, np.zeros((10, 20)), regions=(slice(0, 5), slice(0, 8)))


def test_store_into_a_zarr_array_round_trips(tmp_path):
    z = zarr.create_array(str(tmp_path / "t.zarr"), shape=A.shape, chunks=(3, 4), dtype="f8")
    ts.from_array(A, chunks=(3, 4)).store(z)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "t.zarr"))[:], A)


def test_store_with_compute_false_writes_only_when_computed():
    t = np.zeros_like(A)
    pending = ts.store(ts.from_array(A, chunks=3), t, compute=False)
    assert not t.any()
    ts.compute(*pending)
    np.testing.assert_array_equal(t, A)


def test_store_with_return_stored_gives_lazy_arrays_over_the_targets():
    t = Target((6, 8), np.float64)
    (back,) = ts.store([ts.from_array(A, chunks=3)], [t], return_stored=True)
    assert isinstance(back, ts.Array) and back.chunks == ((3, 3), (3, 3, 2))
    t.data[0, 0] = 99.0  # read from the target when computed, not kept from the write
    assert back.compute()[0, 0] == 99.0


def test_store_refuses_what_it_cannot_write_before_computing():
    x = ts.from_array(A, chunks=3)
    with pytest.raises(TypeError, match="__setitem__"):
        ts.store(x, object())
    with pytest.raises(ValueError, match="2 sources.*1 target"):
        ts.store([x, x], [np.zeros_like(A)])
    with pytest.raises(ValueError, match=r"shape \(6, 8\).*\(6, 7\)"):
        ts.store(x, np.zeros((6, 7)))


def test_an_exception_in_a_write_reaches_the_caller():
    class Full(Target):
        def __setitem__(self, key, value):
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        ts.store(ts.from_array(A, chunks=3), Full((6, 8), np.float64))
