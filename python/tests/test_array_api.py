"""tessera's Array API namespace (2024.12) against the standard's strict reference,
``array-api-strict``, and against NumPy: dtypes, inspection, promotion, and the functions
the namespace defines, as a hypothesis-driven differential suite over values, dtypes,
shapes and chunkings."""

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tessera as ts

xp = ts.array_api

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"]
NUMERIC = DTYPES[1:]


def test_an_array_names_the_namespace_and_its_dtypes_are_the_arrays_dtypes():
    x = ts.arange(5, chunks=2)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    with pytest.raises(ValueError, match="2024.12"):
        x.__array_namespace__(api_version="2021.12")
    assert xp.__array_api_version__ == "2024.12"
    assert x.dtype == xp.int64
    for name in DTYPES:
        assert xp.asarray(np.zeros(2, dtype=name)).dtype == getattr(xp, name)


def test_inspection_declares_what_the_namespace_does_not_do():
    info = xp.__array_namespace_info__()
    caps = info.capabilities()
    assert caps["data-dependent shapes"] is False and caps["boolean indexing"] is False
    assert info.default_device() == "cpu" and "cpu" in info.devices()
    assert info.default_dtypes() == {"real floating": xp.float64, "integral": xp.int64, "indexing": xp.int64}
    assert set(info.dtypes(kind="integral")) == set(DTYPES[1:9])
    assert set(info.dtypes()) == set(DTYPES)


def test_devices_and_to_device():
    x = ts.ones((3, 2), chunks=2)
    assert x.device == "cpu"
    assert x.to_device("cpu") is not None
    with pytest.raises(ValueError, match="unknown device"):
        x.to_device("tpu:0")
    assert xp.zeros(3, device="cpu").device == "cpu"


@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_promotion_follows_the_standard_not_numpy(a, b):
    try:
        want = xps.result_type(getattr(xps, a), getattr(xps, b))
    except TypeError:
        with pytest.raises(TypeError):
            xp.result_type(getattr(xp, a), getattr(xp, b))
        assert not xp.can_cast(getattr(xp, a), getattr(xp, b)) or a == b
        return
    assert xp.result_type(getattr(xp, a), getattr(xp, b)).name == str(want).rsplit(".", 1)[-1]
    assert xp.can_cast(getattr(xp, a), getattr(xp, b)) == xps.can_cast(getattr(xps, a), getattr(xps, b))


@pytest.mark.parametrize("kind", ["bool", "signed integer", "unsigned integer", "integral", "real floating", "numeric"])
def test_isdtype_agrees_with_the_reference(kind):
    for name in DTYPES:
        assert xp.isdtype(getattr(xp, name), kind) == xps.isdtype(getattr(xps, name), kind), (name, kind)
    with pytest.raises(ValueError):
        xp.isdtype(xp.int8, "integer-ish")


# The differential suite: the same data through tessera (chunked at random) and through
# array-api-strict, compared value for value and dtype for dtype.
@st.composite
def arrays(draw, dtypes=NUMERIC, min_dims=1, max_dims=3):
    dtype = draw(st.sampled_from(dtypes))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=min_dims, max_size=max_dims)))
    n = int(np.prod(shape))
    if dtype == "bool":
        values = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    elif dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -50), min(int(info.max), 50)
        values = np.array(draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n)), dtype=dtype)
    else:
        element = st.floats(-1e3, 1e3, width=32) | st.just(float("nan"))
        values = np.array(draw(st.lists(element, min_size=n, max_size=n)), dtype=dtype)
    values = values.reshape(shape)
    chunks = tuple(draw(st.integers(1, s)) for s in shape)
    return values, chunks


def same(got, want):
    got = np.asarray(got.compute())
    want = np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5 if got.dtype == np.float32 else 1e-12, equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(arrays(), st.data())
def test_cumulative_sum_and_prod_against_the_reference(arr, data):
    a, chunks = arr
    axis = data.draw(st.integers(0, a.ndim - 1))
    initial = data.draw(st.booleans())
    x, r = xp.asarray(a), xps.asarray(a)
    x = ts.from_array(a, chunks=chunks)
    same(xp.cumulative_sum(x, axis=axis, include_initial=initial), xps.cumulative_sum(r, axis=axis, include_initial=initial))
    small = a % 3 if a.dtype.kind in "iu" else a / 100
    xs, rs = ts.from_array(small, chunks=chunks), xps.asarray(small)
    same(xp.cumulative_prod(xs, axis=axis, include_initial=initial), xps.cumulative_prod(rs, axis=axis, include_initial=initial))


@settings(max_examples=60, deadline=None)
@given(arrays(min_dims=2), st.integers(-3, 3))
def test_tril_and_triu_against_the_reference(arr, k):
    a, chunks = arr
    x, r = ts.from_array(a, chunks=chunks), xps.asarray(a)
    same(xp.tril(x, k=k), xps.tril(r, k=k))
    same(xp.triu(x, k=k), xps.triu(r, k=k))


@settings(max_examples=60, deadline=None)
@given(arrays(), st.data())
def test_structure_functions_against_the_reference(arr, data):
    a, chunks = arr
    x, r = ts.from_array(a, chunks=chunks), xps.asarray(a)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    same(xp.flip(x, axis=axis), xps.flip(r, axis=axis))
    same(xp.flip(x), xps.flip(r))
    same(xp.expand_dims(x, axis=axis), xps.expand_dims(r, axis=axis))
    same(xp.concat([x, x], axis=axis), xps.concat([r, r], axis=axis))
    same(xp.stack([x, x], axis=axis), xps.stack([r, r], axis=axis))
    same(xp.moveaxis(x, axis, 0), xps.moveaxis(r, axis, 0))
    for got, want in zip(xp.unstack(x, axis=axis), xps.unstack(r, axis=axis)):
        same(got, want)
    if a.dtype != bool and a.shape[axis] > 1:
        same(xp.diff(x, axis=axis), xps.diff(r, axis=axis))


@settings(max_examples=60, deadline=None)
@given(arrays(), st.data())
def test_reductions_against_the_reference(arr, data):
    a, chunks = arr
    x, r = ts.from_array(a, chunks=chunks), xps.asarray(a)
    axis = data.draw(st.integers(0, a.ndim - 1))
    keep = data.draw(st.booleans())
    same(xp.sum(x, axis=axis, keepdims=keep), xps.sum(r, axis=axis, keepdims=keep))
    same(xp.max(x, axis=axis, keepdims=keep), xps.max(r, axis=axis, keepdims=keep))
    same(xp.any(x, axis=axis), xps.any(r, axis=axis))
    if a.dtype.kind == "f":
        same(xp.mean(x, axis=axis), xps.mean(r, axis=axis))
        same(xp.var(x, axis=axis, correction=0), xps.var(r, axis=axis, correction=0))


@settings(max_examples=60, deadline=None)
@given(arrays(dtypes=["float32", "float64"]))
def test_composed_elementwise_functions_against_the_reference(arr):
    a, chunks = arr
    a = a.copy()
    a.flat[0] = np.inf
    x, r = ts.from_array(a, chunks=chunks), xps.asarray(a)
    same(xp.isinf(x), xps.isinf(r))
    same(xp.square(x), xps.square(r))
    same(xp.positive(x), xps.positive(r))
    same(xp.logical_xor(x > 0, x < 1), xps.logical_xor(r > 0, r < 1))


@settings(max_examples=60, deadline=None)
@given(arrays(), st.data())
def test_sort_against_the_reference(arr, data):
    a, chunks = arr
    x, r = ts.from_array(a, chunks=chunks), xps.asarray(a)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1))
    descending = data.draw(st.booleans())
    same(xp.sort(x, axis=axis, descending=descending), xps.sort(r, axis=axis, descending=descending))


def test_creation_functions_match_the_reference():
    same(xp.arange(2, 11, 3), xps.arange(2, 11, 3))
    same(xp.linspace(0.0, 1.0, 7), xps.linspace(0.0, 1.0, 7))
    same(xp.eye(3, 5, k=1), xps.eye(3, 5, k=1))
    same(xp.full((2, 3), 7, dtype=xp.int16), xps.full((2, 3), 7, dtype=xps.int16))
    same(xp.ones_like(xp.zeros((2, 2), dtype=xp.uint8)), xps.ones_like(xps.zeros((2, 2), dtype=xps.uint8)))
    same(xp.asarray([[1, 2], [3, 4]]), xps.asarray([[1, 2], [3, 4]]))


def test_functions_the_namespace_lacks_are_absent_not_approximated():
    for name in ["unique_values", "nonzero", "fft"]:
        assert not hasattr(xp, name), name


def test_numpys_names_that_numpy_written_libraries_ask_the_namespace_for():
    # xarray's duck_array_ops call these through an array's namespace, as they do CuPy's.
    a = np.arange(24.0).reshape(4, 6)
    x = ts.from_array(a, chunks=(2, 3))
    cases = {
        "einsum": (lambda m: m.einsum("ij->j", x), np.einsum("ij->j", a)),
        "tensordot": (lambda m: m.tensordot(x, x, axes=([1], [1])), np.tensordot(a, a, axes=([1], [1]))),
        "pad": (lambda m: m.pad(x, ((1, 0), (0, 2)), mode="constant", constant_values=np.nan),
                np.pad(a, ((1, 0), (0, 2)), mode="constant", constant_values=np.nan)),
        "transpose": (lambda m: m.transpose(x, (1, 0)), a.T),
        "quantile": (lambda m: m.quantile(x, 0.25, axis=0), np.quantile(a, 0.25, axis=0)),
        "concatenate": (lambda m: m.concatenate([x, x], axis=1), np.concatenate([a, a], axis=1)),
        "isin": (lambda m: m.isin(x, [3.0, 7.0]), np.isin(a, [3.0, 7.0])),
        "sliding_window_view": (lambda m: m.lib.stride_tricks.sliding_window_view(x, 3, axis=1),
                                np.lib.stride_tricks.sliding_window_view(a, 3, axis=1)),
    }
    for name, (call, want) in cases.items():
        got = call(xp)
        assert isinstance(got, ts.Array), name
        np.testing.assert_array_equal(got.compute(), want, err_msg=name)
    assert xp.bool_ == np.bool_
    # What tessera declines is NumPy's TypeError naming the function, not NotImplemented.
    with pytest.raises(TypeError, match="numpy.pad"):
        xp.pad(x, 1, mode="linear_ramp")
    # NumPy's callers pass out=None on; an output array is refused, not ignored.
    assert bool(xp.any(x > 20, out=None).compute())
    with pytest.raises(TypeError, match="out"):
        xp.all(x, out=np.zeros(()))
    # A Python scalar alone has no dtype under the standard: TypeError, as xarray expects.
    with pytest.raises(TypeError, match="at least one array or dtype"):
        xp.result_type(1.5)
