"""NumPy's dispatch protocols on tessera arrays: NumPy functions (NEP 18) and ufunc
methods and keywords (NEP 13) give lazy tessera arrays equal to NumPy's answers; a NumPy
function tessera lacks raises NumPy's TypeError naming it instead of computing eagerly."""

import numpy as np
import pytest

import tessera as ts


def data(shape=(5, 7), seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10).astype(dtype)


def lazy(a, chunks=(2, 3)):
    return ts.from_array(a, chunks=chunks)


def check(got, want):
    assert isinstance(got, ts.Array), f"{type(got)} is not a lazy tessera array"
    out = got.compute()
    # A chunked scan adds a chunk's carry after its own running sum: float32 rounds
    # differently from NumPy's one sequential loop, within a few ulps.
    rtol = 1e-5 if np.asarray(want).dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.asarray(out), want, rtol=rtol, atol=1e-12)
    assert np.asarray(out).dtype == np.asarray(want).dtype, (np.asarray(out).dtype, np.asarray(want).dtype)


@pytest.mark.parametrize(
    "call",
    [
        lambda m, a: m.mean(a),
        lambda m, a: m.mean(a, axis=0, keepdims=True),
        lambda m, a: m.mean(a, dtype=np.float32),
        lambda m, a: m.sum(a, axis=1),
        lambda m, a: m.prod(a[:2, :3], axis=(0, 1)),
        lambda m, a: m.std(a, ddof=1),
        lambda m, a: m.var(a, axis=1),
        lambda m, a: m.min(a, axis=0),
        lambda m, a: m.max(a),
        lambda m, a: m.argmax(a, axis=1),
        lambda m, a: m.cumsum(a),
        lambda m, a: m.cumsum(a, axis=0),
        lambda m, a: m.cumsum(a, axis=1, dtype=np.float32),
        lambda m, a: m.cumprod(a[:, :3] / 10, axis=1),
        lambda m, a: m.sort(a),
        lambda m, a: m.sort(a, axis=0),
        lambda m, a: m.sort(a, axis=None),
        lambda m, a: m.concatenate([a, a], axis=1),
        lambda m, a: m.concatenate([a, a], axis=None),
        lambda m, a: m.stack([a, a], axis=1),
        lambda m, a: m.where(a > 0, a, 0.0),
        lambda m, a: m.clip(a, -3, 3),
        lambda m, a: m.transpose(a),
        lambda m, a: m.moveaxis(a[None], 0, -1),
        lambda m, a: m.swapaxes(a, 0, 1),
        lambda m, a: m.expand_dims(a, (0, 2)),
        lambda m, a: m.reshape(a, (7, 5)),
        lambda m, a: m.ravel(a),
        lambda m, a: m.round(a),
        lambda m, a: m.zeros_like(a),
        lambda m, a: m.full_like(a, 2.5),
        lambda m, a: m.isclose(a, a + 1e-9),
        lambda m, a: m.count_nonzero(a > 0, axis=0),
        lambda m, a: m.dot(a, a.T),
        lambda m, a: m.matmul(a, a.T),
    ],
)
def test_numpy_functions_on_tessera_arrays_are_lazy_and_equal_numpys(call):
    a = data()
    check(call(np, lazy(a)), call(np, a))


def test_numpy_data_mixed_into_a_numpy_function_is_wrapped_not_computed():
    a = data()
    check(np.concatenate([lazy(a), a]), np.concatenate([a, a]))


def test_numpy_2_cumulative_sum_with_include_initial():
    a = data((9,))
    if not hasattr(np, "cumulative_sum"):
        pytest.fail("NumPy >= 2.1 is what .ci/run installs; it has cumulative_sum")
    check(np.cumulative_sum(lazy(a, 4), include_initial=True), np.cumulative_sum(a, include_initial=True))


@pytest.mark.parametrize("fn", [np.unique, np.nonzero, np.fft.fft])
def test_a_numpy_function_tessera_lacks_raises_typeerror_naming_it(fn):
    x = lazy(data())
    args = (x,)
    with pytest.raises(TypeError, match=fn.__name__):
        fn(*args)


def test_reductions_refuse_out_and_where_instead_of_ignoring_them():
    a = data()
    x = lazy(a)
    with pytest.raises(TypeError, match="out="):
        np.sum(x, out=np.empty(()))
    with pytest.raises(TypeError, match="where="):
        np.mean(x, where=a > 0)


def test_ufunc_reduce_accumulate_outer_and_dtype():
    a = data()
    x = lazy(a)
    check(np.add.reduce(x, axis=1), np.add.reduce(a, axis=1))
    check(np.maximum.reduce(x), np.maximum.reduce(a))
    check(np.add.accumulate(x, axis=1), np.add.accumulate(a, axis=1))
    check(np.minimum.accumulate(x), np.minimum.accumulate(a))
    check(np.multiply.outer(x[0], x[1]), np.multiply.outer(a[0], a[1]))
    i = np.arange(6, dtype=np.int8)
    check(np.add(lazy(i, 4), lazy(i, 4), dtype=np.int64), np.add(i, i, dtype=np.int64))
    check(np.sqrt(x * x, out=None), np.sqrt(a * a, out=None))


def test_a_ufunc_writing_into_an_out_array_is_refused():
    x = lazy(data())
    with pytest.raises(TypeError):
        np.add(x, 1.0, out=np.empty(x.shape))


def test_integer_scans_accumulate_in_numpys_dtype_and_wrap_as_numpy_does():
    for dtype in (np.bool_, np.int8, np.uint16, np.int32, np.uint64):
        a = (np.arange(40) * 37 % 251).astype(dtype)
        check(np.cumsum(lazy(a, 7)), np.cumsum(a))
        check(np.cumprod(lazy(a[:9] % 3 + 1, 4)), np.cumprod(a[:9] % 3 + 1))


def test_scans_propagate_nan_and_keep_negative_zero():
    a = np.array([-0.0, -0.0, np.nan, 1.0, -0.0])
    got = np.asarray(np.cumsum(lazy(a, 2)).compute())
    want = np.cumsum(a)
    np.testing.assert_array_equal(got, want)
    assert np.signbit(got[:2]).all()
    got = np.asarray(np.maximum.accumulate(lazy(a, 2)).compute())
    np.testing.assert_array_equal(got, np.maximum.accumulate(a))


def test_a_scan_on_an_axis_out_of_range_is_numpys_axis_error():
    with pytest.raises(np.exceptions.AxisError):
        np.cumsum(lazy(data()), axis=2)


def test_scans_of_many_chunks_against_dask():
    da = pytest.importorskip("dask.array")
    a = data((300, 40), seed=3)
    x = ts.from_array(a, chunks=(17, 9))
    d = da.from_array(a, chunks=(17, 9))
    for axis in (0, 1):
        np.testing.assert_allclose(np.asarray(x.cumsum(axis=axis).compute()), d.cumsum(axis=axis).compute(), rtol=1e-12)
        np.testing.assert_allclose(
            np.asarray(x.cumprod(axis=axis).compute()), d.cumprod(axis=axis).compute(), rtol=1e-9
        )


def test_sort_of_many_chunks_with_nans_matches_numpy():
    a = data((200, 30), seed=5)
    a[a > 12] = np.nan
    x = ts.from_array(a, chunks=(23, 7))
    for axis in (0, 1, -1, None):
        got = np.asarray(np.sort(x, axis=axis).compute())
        np.testing.assert_array_equal(got, np.sort(a, axis=axis))
    assert np.sort(x).chunks == x.chunks


@pytest.mark.parametrize("fn", [np.nanmax, np.nanmin, np.nanprod, np.nanvar, np.nanstd, np.nanmean, np.nansum])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nan_reductions_match_numpy(fn, axis):
    import warnings

    a = data((9, 8), seed=7) / 10
    a[a > 0.6] = np.nan
    a[:, 3] = np.nan  # an all-NaN column: NaN from nanmax/nanmin/nanvar (NumPy also warns)
    x = ts.from_array(a, chunks=(4, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(a, axis=axis)
    got = fn(x, axis=axis)
    assert isinstance(got, ts.Array)
    np.testing.assert_allclose(np.asarray(got.compute()), want, rtol=1e-10, equal_nan=True)
