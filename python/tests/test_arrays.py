"""Arrays against NumPy 2 (and Dask where it is installed) on the same inputs: every
creation function, operators with NEP 50 scalars, slicing, reductions, linalg,
map_blocks."""

import numpy as np
import pytest

import tessera as ts
from conftest import assert_same


# -- creation ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int8", "uint16", "bool"])
def test_ones_zeros_full_empty(dtype):
    assert_same(ts.ones((7, 5), dtype=dtype, chunks=3).compute(), np.ones((7, 5), dtype=dtype))
    assert_same(ts.zeros((7, 5), dtype=dtype, chunks=(2, -1)).compute(), np.zeros((7, 5), dtype=dtype))
    assert_same(ts.empty(4, dtype=dtype).compute(), np.zeros(4, dtype=dtype))
    assert_same(ts.full((3, 4), 1, dtype=dtype, chunks=2).compute(), np.full((3, 4), 1, dtype=dtype))


def test_full_takes_the_dtype_of_its_value_as_numpy():
    assert_same(ts.full((3,), 7).compute(), np.full((3,), 7))
    assert_same(ts.full((3,), 2.5).compute(), np.full((3,), 2.5))
    assert_same(ts.full((3,), True).compute(), np.full((3,), True))
    assert_same(ts.full((2,), np.float32(1.5)).compute(), np.full((2,), np.float32(1.5)))


@pytest.mark.parametrize(
    "args",
    [(10,), (2, 11), (3, 20, 4), (0.5, 3.0, 0.25), (10, 0, -3), (-5, 5)],
)
def test_arange_matches_numpy(args):
    assert_same(ts.arange(*args, chunks=3).compute(), np.arange(*args))


def test_arange_with_a_dtype():
    assert_same(ts.arange(0, 10, dtype="float32", chunks=4).compute(), np.arange(0, 10, dtype="float32"))


@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_matches_numpy(endpoint):
    assert_same(
        ts.linspace(-1.5, 2.0, 17, endpoint=endpoint, chunks=5).compute(),
        np.linspace(-1.5, 2.0, 17, endpoint=endpoint),
        rtol=1e-15,
    )


@pytest.mark.parametrize("n,m,k", [(5, None, 0), (4, 7, 2), (6, 3, -1)])
def test_eye_matches_numpy(n, m, k):
    assert_same(ts.eye(n, chunks=2, M=m, k=k).compute(), np.eye(n, m, k))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8", "bool"])
def test_from_array_round_trips(rng, dtype):
    a = (rng.standard_normal((9, 6)) * 10).astype(dtype)
    x = ts.from_array(a, chunks=(4, 5))
    assert x.chunks == ((4, 4, 1), (5, 1))
    assert x.dtype == a.dtype and x.shape == a.shape
    assert_same(x.compute(), a)
    assert_same(np.asarray(x), a)


def test_from_array_of_a_non_contiguous_view(rng):
    a = rng.standard_normal((10, 8))[::2, ::-3]
    assert_same(ts.from_array(a, chunks=2).compute(), a)


def test_random_states_are_reproducible_and_shaped():
    a = ts.random.RandomState(7).normal(3.0, 2.0, size=(400, 300), chunks=(100, 150))
    b = ts.random.RandomState(7).normal(3.0, 2.0, size=(400, 300), chunks=(50, 300))
    va, vb = a.compute(), b.compute()
    assert va.dtype == np.float64 and va.shape == (400, 300)
    # Counter-based: the same values whatever the chunking.
    np.testing.assert_array_equal(va, vb)
    assert abs(va.mean() - 3.0) < 0.05 and abs(va.std() - 2.0) < 0.05
    u = ts.random.RandomState(1).uniform(-2, 5, size=10_000, chunks=999).compute()
    assert u.min() >= -2 and u.max() < 5 and abs(u.mean() - 1.5) < 0.1
    r = ts.random.RandomState(1).randint(3, 9, size=(50, 50), chunks=20).compute()
    assert r.dtype == np.int64 and r.min() == 3 and r.max() == 8
    f = ts.random.RandomState(2).normal(size=100, dtype="float32").compute()
    assert f.dtype == np.float32


# -- operators and NEP 50 ---------------------------------------------------------------

OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "max": np.maximum,
}


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("scalar", [3, 2.5, True])
@pytest.mark.parametrize("op", sorted(OPS))
def test_operators_with_python_scalars_follow_nep50(dtype, scalar, op):
    a = (np.arange(1, 13) % 5 + 1).astype(dtype).reshape(3, 4)
    x = ts.from_array(a, chunks=2)
    f = OPS[op]
    try:
        want_left, want_right = f(a, scalar), f(scalar, a)
    except Exception as e:  # NumPy refuses: tessera must refuse too
        with pytest.raises(type(e) if not isinstance(e, OverflowError) else (OverflowError, ValueError)):
            f(x, scalar).compute()
        return
    assert_same(f(x, scalar).compute(), want_left, rtol=1e-6 if dtype == "float32" else 1e-12)
    assert_same(f(scalar, x).compute(), want_right, rtol=1e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("left", ["int8", "uint8", "int64", "float32"])
@pytest.mark.parametrize("right", ["int16", "uint32", "float64"])
def test_array_array_promotion_matches_numpy(left, right):
    a = np.arange(1, 7).astype(left).reshape(2, 3)
    b = np.arange(2, 8).astype(right).reshape(2, 3)
    x, y = ts.from_array(a, chunks=2), ts.from_array(b, chunks=(1, 3))
    for f in (OPS["+"], OPS["*"], OPS["/"], OPS["<"]):
        assert_same(f(x, y).compute(), f(a, b), rtol=1e-6)


def test_numpy_scalars_are_strong():
    a = np.arange(5, dtype="float32")
    x = ts.from_array(a)
    assert_same((x + np.float64(1.5)).compute(), a + np.float64(1.5))
    assert_same((x * np.float32(2)).compute(), a * np.float32(2))


def test_broadcasting_and_numpy_operands(rng):
    a = rng.standard_normal((6, 4))
    v = rng.standard_normal(4)
    x = ts.from_array(a, chunks=(4, 2))
    assert_same((x - ts.from_array(v)).compute(), a - v)
    assert_same((x * v).compute(), a * v)
    assert_same((v + x).compute(), v + a)
    assert_same((x[:, None, :] + x[None, :, :]).compute(), a[:, None, :] + a[None, :, :])


@pytest.mark.parametrize(
    "name", ["sqrt", "exp", "log", "sin", "cos", "tanh", "abs", "floor", "ceil", "trunc", "isnan", "isfinite"]
)
def test_unary_functions_match_numpy(rng, name):
    a = np.abs(rng.standard_normal((5, 7))) * 3 + 0.1
    a[1, 2] = np.nan
    x = ts.from_array(a, chunks=3)
    ours = getattr(ts, name)(x).compute()
    assert_same(ours, getattr(np, name)(a), rtol=1e-15)
    # NumPy's own ufunc on a tessera array stays lazy.
    lazy = getattr(np, name if name != "abs" else "absolute")(x)
    assert isinstance(lazy, ts.Array)
    assert_same(lazy.compute(), getattr(np, name)(a), rtol=1e-15)


def test_round_is_half_to_even_and_astype_casts_as_numpy():
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.7, 3.49])
    x = ts.from_array(a)
    assert_same(ts.round(x).compute(), np.round(a))
    assert_same(x.round().compute(), np.round(a))
    assert_same(x.astype("int32").compute(), a.astype("int32"))
    assert_same((x > 0).astype("uint8").compute(), (a > 0).astype("uint8"))


def test_where_and_clip(rng):
    a = rng.standard_normal((8, 3))
    x = ts.from_array(a, chunks=3)
    assert_same(ts.where(x > 0, x, 0.0).compute(), np.where(a > 0, a, 0.0))
    assert_same(ts.where(x > 0, 1, -1).compute(), np.where(a > 0, 1, -1))
    assert_same(x.clip(-0.5, 0.5).compute(), a.clip(-0.5, 0.5))
    assert_same(x.clip(min=0).compute(), a.clip(min=0))


def test_logical_operators_on_bool_arrays():
    a = np.array([True, False, True, False])
    b = np.array([True, True, False, False])
    x, y = ts.from_array(a), ts.from_array(b)
    assert_same((x & y).compute(), a & b)
    assert_same((x | y).compute(), a | b)
    assert_same((~x).compute(), ~a)
    assert_same((x ^ y).compute(), a ^ b)
    # On integers the same operators are bitwise, as NumPy's; on floats a TypeError.
    assert_same((~ts.arange(3)).compute(), ~np.arange(3))
    with pytest.raises(TypeError, match="integer"):
        ~ts.from_array(np.array([1.0]))


# -- indexing ---------------------------------------------------------------------------

INDICES = [
    (slice(None, None, 2), slice(None, None, 2)),
    (slice(1, -1), slice(None, None, -1)),
    (3,),
    (-1, slice(2, 9, 3)),
    (Ellipsis, 1),
    (None, slice(None), None, 2),
    (slice(10, 2, -2), Ellipsis),
    (slice(100, 200),),
    (slice(None, None, -7), None),
    (2, 3),
]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i) for i in INDICES])
def test_getitem_matches_numpy(rng, index):
    a = rng.standard_normal((13, 11))
    x = ts.from_array(a, chunks=(4, 5))
    assert_same(x[index].compute(), a[index])


def test_out_of_range_indices_are_refused_with_numpys_message():
    x = ts.arange(10, chunks=3)
    with pytest.raises(IndexError, match="index 12 is out of bounds for axis 0 with size 10"):
        x[[1, 12]]
    # Past the end is IndexError at indexing time, with NumPy's message, as NumPy raises.
    for key in (10, -11, (slice(None), 3)):
        with pytest.raises(IndexError) as err:
            (x.reshape(5, 2) if isinstance(key, tuple) else x)[key]
        with pytest.raises(IndexError) as want:
            (np.arange(10).reshape(5, 2) if isinstance(key, tuple) else np.arange(10))[key]
        assert str(err.value) == str(want.value)


def test_iterating_an_array_yields_its_rows_as_numpy_does(rng):
    a = rng.standard_normal((5, 3))
    x = ts.from_array(a, chunks=(2, 3))
    rows = list(x)
    assert len(rows) == 5
    for got, want in zip(rows, a):
        assert_same(got.compute(), want)
    assert [int(v) for v in ts.arange(4, chunks=3)] == [0, 1, 2, 3]
    assert list(ts.from_array(np.zeros((0, 2)))) == []


@pytest.mark.parametrize("dtype", [">f8", ">i4", ">u2", "<f4", "=i8"])
def test_from_array_converts_any_byte_order(rng, dtype):
    # NetCDF and FITS data arrive big-endian; the values are what NumPy reads.
    a = (rng.standard_normal((6, 4)) * 100).astype(dtype)
    x = ts.from_array(a, chunks=(4, 3))
    got = x.compute()
    assert got.dtype == a.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, a)
    assert_same((x * 2).sum(axis=0).compute(), (a.astype(a.dtype.newbyteorder("=")) * 2).sum(axis=0), rtol=1e-5)


@pytest.mark.parametrize("func, axis", [("concatenate", 2), ("concatenate", 5), ("concatenate", -3),
                                        ("stack", 3), ("stack", -4)])
def test_an_out_of_range_axis_is_numpys_axis_error(func, axis):
    a = np.ones((2, 3))
    x = ts.from_array(a)
    with pytest.raises(np.exceptions.AxisError) as err:
        getattr(ts, func)([x, x], axis=axis)
    with pytest.raises(np.exceptions.AxisError) as want:
        getattr(np, func)([a, a], axis=axis)
    assert str(err.value) == str(want.value)
    with pytest.raises(np.exceptions.AxisError):
        x.sum(axis=2)


# -- reductions --------------------------------------------------------------------------

AXES = [None, 0, 1, -1, (0, 2), (0, 1, 2)]


@pytest.mark.parametrize("axis", AXES, ids=repr)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean", "any", "all"])
def test_reductions_match_numpy(rng, name, axis, keepdims):
    a = rng.uniform(0.5, 1.5, (6, 5, 4))
    x = ts.from_array(a, chunks=(4, 2, 3))
    ours = getattr(x, name)(axis=axis, keepdims=keepdims).compute()
    assert_same(ours, getattr(a, name)(axis=axis, keepdims=keepdims), rtol=1e-12)


@pytest.mark.parametrize("axis", [None, 0, (1, 2)], ids=repr)
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_and_std_match_numpy(rng, axis, ddof):
    a = rng.standard_normal((7, 6, 5)) * 1e3 + 1e6  # a large mean: the moments must merge stably
    x = ts.from_array(a, chunks=(3, 4, 2))
    assert_same(x.var(axis=axis, ddof=ddof).compute(), a.var(axis=axis, ddof=ddof), rtol=1e-9)
    assert_same(x.std(axis=axis, ddof=ddof).compute(), a.std(axis=axis, ddof=ddof), rtol=1e-9)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_argmin_argmax_match_numpy(rng, axis):
    a = rng.standard_normal((9, 7))
    x = ts.from_array(a, chunks=(4, 3))
    assert_same(x.argmin(axis=axis).compute(), a.argmin(axis=axis))
    assert_same(x.argmax(axis=axis).compute(), a.argmax(axis=axis))


def test_integer_sums_and_means_take_numpys_dtypes():
    a = np.arange(24, dtype="int8").reshape(4, 6)
    x = ts.from_array(a, chunks=2)
    assert_same(x.sum().compute(), a.sum())
    assert_same(x.sum(axis=0).compute(), a.sum(axis=0))
    assert_same(x.mean(axis=1).compute(), a.mean(axis=1))


def test_structure_methods(rng):
    a = rng.standard_normal((6, 4))
    x = ts.from_array(a, chunks=(4, 3))
    assert_same(x.T.compute(), a.T)
    assert_same(x.transpose(1, 0).compute(), a.transpose(1, 0))
    assert_same(x.reshape(3, 8).compute(), a.reshape(3, 8))
    assert_same(x.reshape((-1,)).compute(), a.reshape(-1))
    assert_same(x.rechunk((5, -1)).compute(), a)
    assert x.rechunk((5, -1)).chunks == ((5, 1), (4,))
    assert_same(x[:, :1].squeeze(axis=1).compute(), a[:, :1].squeeze(axis=1))
    assert_same(ts.concatenate([x, x], axis=1).compute(), np.concatenate([a, a], axis=1))
    assert_same(ts.stack([x, x + 1], axis=0).compute(), np.stack([a, a + 1], axis=0))
    assert_same((x @ x.T).compute(), a @ a.T, rtol=1e-12)
    assert_same(x.dot(x.T).compute(), a.dot(a.T), rtol=1e-12)
    assert len(x) == 6 and x.ndim == 2 and x.size == 24 and x.nbytes == 192


def test_python_scalar_conversions():
    x = ts.arange(10, chunks=3)
    assert float(x.sum()) == 45.0
    assert int(x.max()) == 9
    assert bool(x.any())
    with pytest.raises(TypeError, match="one element"):
        float(x)


def test_compute_many_shares_the_plan(rng):
    a = rng.standard_normal((20, 20))
    x = ts.from_array(a, chunks=5)
    s, m = ts.compute(x.sum(), x.mean(axis=0))
    assert_same(s, a.sum())
    assert_same(m, a.mean(axis=0))


# -- linalg -----------------------------------------------------------------------------

def test_svd_of_a_tall_skinny_array_matches_numpy(rng):
    a = rng.standard_normal((1000, 8))
    x = ts.from_array(a, chunks=(125, 8))
    u, s, vt = ts.linalg.svd(x)
    s_np = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s.compute(), s_np, rtol=1e-10)
    np.testing.assert_allclose((u.compute() * s.compute()) @ vt.compute(), a, atol=1e-10)


def test_qr_and_lstsq_match_numpy(rng):
    a = rng.standard_normal((300, 5))
    b = rng.standard_normal(300)
    x = ts.from_array(a, chunks=(100, 5))
    q, r = ts.linalg.qr(x)
    np.testing.assert_allclose(q.compute() @ r.compute(), a, atol=1e-10)
    np.testing.assert_allclose(q.compute().T @ q.compute(), np.eye(5), atol=1e-10)
    sol, res, rank, sv = ts.linalg.lstsq(x, ts.from_array(b, chunks=100))
    want = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(sol.compute(), want[0], rtol=1e-9)
    np.testing.assert_allclose(res.compute(), want[1], rtol=1e-9)
    assert rank == want[2]
    np.testing.assert_allclose(sv.compute(), want[3], rtol=1e-10)
    np.testing.assert_allclose(float(ts.linalg.norm(x)), np.linalg.norm(a), rtol=1e-12)


def test_svd_compressed_finds_the_leading_singular_values(rng):
    left, right = rng.standard_normal((400, 5)), rng.standard_normal((5, 300))
    a = left @ right  # rank 5
    x = ts.from_array(a, chunks=(100, 100))
    u, s, vt = ts.linalg.svd_compressed(x, k=5, n_power_iter=2, seed=3)
    np.testing.assert_allclose(s.compute(), np.linalg.svd(a, compute_uv=False)[:5], rtol=1e-8)


# -- map_blocks -------------------------------------------------------------------------

def test_map_blocks_calls_python_with_numpy_blocks(rng):
    a = rng.standard_normal((10, 6))
    x = ts.from_array(a, chunks=(4, 3))
    seen = []

    def f(block):
        seen.append(block.shape)
        return np.cumsum(block, axis=1)

    y = x.map_blocks(f)
    assert y.dtype == np.float64  # inferred from empty blocks, as Dask does
    seen.clear()
    want = np.concatenate(
        [np.concatenate([np.cumsum(a[i:i + 4, j:j + 3], axis=1) for j in (0, 3)], axis=1) for i in (0, 4, 8)]
    )
    assert_same(y.compute(), want)
    assert sorted(seen) == sorted([(4, 3)] * 4 + [(2, 3)] * 2)
    z = ts.map_blocks(lambda p, q: (p > q).astype("int8"), x, x.T.T * 0)
    assert z.dtype == np.int8
    assert_same(z.compute(), (a > 0).astype("int8"))


def test_an_exception_in_map_blocks_surfaces_as_itself():
    class Mine(Exception):
        pass

    def f(block):
        if block[0] >= 10:
            raise Mine(f"block starting at {block[0]}")
        return block

    x = ts.arange(20, chunks=5).map_blocks(f, dtype="int64")
    with pytest.raises(Mine, match="block starting at 1[05]"):
        x.compute()
    # The process is still usable and the same plan runs when the function is fixed.
    assert int(ts.arange(20, chunks=5).map_blocks(lambda b: b, dtype="int64").sum()) == 190


def test_map_blocks_wrong_shape_is_a_typed_error():
    x = ts.arange(20, chunks=5).map_blocks(lambda b: b[:2], dtype="int64")
    with pytest.raises(ts.UserFunctionError, match="declared"):
        x.compute()


# -- against Dask on the same inputs ----------------------------------------------------

def test_the_seed_headline_equals_dask_on_the_same_input(rng):
    da = pytest.importorskip("dask.array")
    a = rng.standard_normal((600, 500)) + 10
    ours = ((ts.from_array(a, chunks=100) + 1)[::2, ::2]).sum().compute()
    theirs = ((da.from_array(a, chunks=100) + 1)[::2, ::2]).sum().compute()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    v_ours = ts.from_array(a, chunks=(64, 128)).var(axis=0, ddof=1).compute()
    v_theirs = da.from_array(a, chunks=(64, 128)).var(axis=0, ddof=1).compute()
    np.testing.assert_allclose(v_ours, v_theirs, rtol=1e-10)
    assert ts.from_array(a, chunks=(64, 128)).chunks == da.from_array(a, chunks=(64, 128)).chunks


# -- reprs ------------------------------------------------------------------------------

def test_repr_and_html_show_the_chunk_table():
    x = ts.ones((1000, 800), chunks=(250, 400))
    assert "shape=[1000, 800]" in repr(x) and "backend=cpu" in repr(x)
    html = x._repr_html_()
    assert "<table>" in html and "(1000, 800)" in html and "(250, 400)" in html
    assert "8 blocks" in html and "float64" in html
    assert "fused" in x.sum().explain() or "program" in x.sum().explain()


# -- storage ----------------------------------------------------------------------------

def test_npy_round_trip_with_numpy(tmp_path, rng):
    a = rng.standard_normal((30, 7)).astype("float32")
    np.save(tmp_path / "a.npy", a)
    x = ts.from_npy(str(tmp_path / "a.npy"), chunks=(8, -1))
    assert x.chunks == ((8, 8, 8, 6), (7,))
    assert_same(x.compute(), a)
    assert ts.from_npy(str(tmp_path / "a.npy"), chunks=-1).chunks == ((30,), (7,))
    ts.to_npy(x * 2, str(tmp_path / "b.npy"))
    assert_same(np.load(tmp_path / "b.npy"), a * 2)


def test_zarr_round_trip_with_zarr_python(tmp_path, rng):
    zarr = pytest.importorskip("zarr")
    a = rng.standard_normal((40, 12))
    ts.to_zarr(ts.from_array(a, chunks=(10, 6)), str(tmp_path / "s.zarr"), "x")
    z = zarr.open_array(str(tmp_path / "s.zarr"), path="x", mode="r")
    assert_same(z[:], a)
    back = ts.from_zarr(str(tmp_path / "s.zarr"), "x")
    assert back.chunks == ((10, 10, 10, 10), (6, 6))
    assert_same(back[::3].sum(axis=0).compute(), a[::3].sum(axis=0), rtol=1e-12)


def test_to_zarr_overwrite_of_the_store_root_keeps_the_old_array_when_a_block_fails(tmp_path):
    # Dask's `to_zarr(x, url, overwrite=True)` writes the store's root node; a failed
    # overwrite used to erase the old array first ("array metadata is missing").
    zarr = pytest.importorskip("zarr")
    url = str(tmp_path / "root.zarr")
    old = np.arange(48.0).reshape(8, 6)
    ts.to_zarr(ts.from_array(old, chunks=(2, 6)), url)

    class Full(Exception):
        pass

    def fail_late(block):
        if block[0, 0] >= 24:
            raise Full("the disk is full")
        return block + 1000

    failing = ts.from_array(old, chunks=(2, 6)).map_blocks(fail_late)
    with pytest.raises(Full):
        ts.to_zarr(failing, url, overwrite=True)
    assert_same(ts.from_zarr(url).compute(), old)
    assert_same(zarr.open_array(url, mode="r")[:], old)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["root.zarr"], "nothing staged is left"
    new = ts.from_array(old * 2, chunks=(4, 3))
    ts.to_zarr(new, url, overwrite=True)
    assert_same(zarr.open_array(url, mode="r")[:], old * 2)
    assert ts.from_zarr(url).chunks == ((4, 4), (3, 3))
