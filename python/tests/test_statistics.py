"""Order statistics against NumPy 2, bit for bit: ``quantile``, ``percentile``,
``median`` and their NaN-skipping forms through ``np.*`` dispatch and tessera's own
names, on every axis, irregular chunks, special values (NaN, ±inf, ±0), scalar and
array ``q`` (NumPy's ``float32`` rule), ``keepdims``, and NumPy's errors."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tessera as ts

from conftest import assert_same

FUNCS = ["quantile", "nanquantile", "percentile", "nanpercentile"]
DTYPES = ["int8", "uint16", "int64", "float32", "float64"]


def numpy(name, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return getattr(np, name)(*args, **kwargs)


def data(dtype, shape=(6, 7, 5), seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-50, 50, size=shape).astype(dtype)
    if a.dtype.kind == "f":
        a = a + rng.standard_normal(shape).astype(dtype)
        a.flat[::9] = np.nan
        a.flat[4::13] = np.inf
        a.flat[5::17] = -np.inf
        a.flat[6::19] = -0.0
    return a


def same_bits(got, want):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", FUNCS)
def test_quantiles_match_numpy_bit_for_bit(name, dtype):
    a = data(dtype)
    x = ts.from_array(a, chunks=(4, 3, 2))
    scale = 100 if "percentile" in name else 1
    for q in (0.3, 0, 1, [0.0, 0.25, 0.5, 1.0], [[0.1], [0.9]], 0.7316):
        q = np.asarray(q) * scale if isinstance(q, list) else q * scale
        for axis in (None, 0, 1, 2, -1):
            for keepdims in (False, True):
                got = getattr(np, name)(x, q, axis=axis, keepdims=keepdims)
                assert isinstance(got, ts.Array)
                same_bits(got.compute(), numpy(name, a, q, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_medians_match_numpy_bit_for_bit(name, dtype):
    for shape in [(6, 7, 5), (5, 4, 3)]:
        a = data(dtype, shape, seed=1)
        x = ts.from_array(a, chunks=(4, 3, 2))
        for axis in (None, 0, 1, 2):
            for keepdims in (False, True):
                got = getattr(ts, name)(x, axis=axis, keepdims=keepdims)
                same_bits(got.compute(), numpy(name, a, axis=axis, keepdims=keepdims))
                same_bits(getattr(np, name)(x, axis=axis).compute(), numpy(name, a, axis=axis))


def test_a_float32_array_with_a_scalar_q_stays_float32():
    a = data("float32")
    x = ts.from_array(a, chunks=3)
    assert np.quantile(x, 0.5).dtype == np.float32
    assert np.quantile(x, [0.5]).dtype == np.float64
    assert np.median(x).dtype == np.float32
    assert np.quantile(ts.from_array(np.arange(5)), 0.5).dtype == np.float64


def test_errors_are_numpys():
    x = ts.from_array(np.arange(6.0), chunks=4)
    with pytest.raises(ValueError, match=r"Quantiles must be in the range \[0, 1\]"):
        np.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
        np.percentile(x, [50, 101])
    with pytest.raises(TypeError):
        np.quantile(ts.from_array(np.array([True, False])), 0.5)
    with pytest.raises(TypeError, match="method='linear'"):
        np.quantile(x, 0.5, method="nearest")
    with pytest.raises(np.exceptions.AxisError):
        np.median(x, axis=1)
    with pytest.raises(TypeError, match="one axis"):
        np.median(ts.from_array(np.ones((2, 3, 4))), axis=(0, 1))


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 40),
    chunk=st.integers(1, 40),
    q=st.floats(0, 1),
    values=st.sampled_from(["ties", "wide", "specials"]),
    seed=st.integers(0, 2**16),
)
def test_random_lanes_match_numpy(n, chunk, q, values, seed):
    rng = np.random.default_rng(seed)
    if values == "ties":
        a = rng.integers(0, 3, n).astype(np.float64)
    elif values == "wide":
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    else:
        a = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5], n)
    x = ts.from_array(a, chunks=chunk)
    for name in ("quantile", "nanquantile"):
        same_bits(getattr(np, name)(x, q).compute(), numpy(name, a, q))
    for name in ("median", "nanmedian"):
        same_bits(getattr(np, name)(x).compute(), numpy(name, a))


@pytest.mark.parametrize("name", ["nanargmax", "nanargmin"])
def test_nanargmax_and_nanargmin_match_numpy_and_refuse_all_nan_lanes(name):
    a = data("float64", (6, 7, 5), seed=3)
    a[2, :, 1] = -np.inf  # an extremum equal to NaN's stand-in
    x = ts.from_array(a, chunks=(4, 3, 2))
    for axis in (None, 0, 1, 2):
        for keepdims in (False, True):
            got = getattr(np, name)(x, axis=axis, keepdims=keepdims)
            assert isinstance(got, ts.Array)
            same_bits(got.compute(), getattr(np, name)(a, axis=axis, keepdims=keepdims))
    b = a.copy()
    b[1, 2, :] = np.nan
    lazy = getattr(np, name)(ts.from_array(b, chunks=2), axis=2)
    with pytest.raises(ValueError, match="All-NaN slice encountered"):
        lazy.compute()
    ints = np.arange(12).reshape(3, 4) % 5
    same_bits(getattr(ts, name)(ts.from_array(ints, chunks=2), axis=1).compute(), getattr(np, name)(ints, axis=1))
