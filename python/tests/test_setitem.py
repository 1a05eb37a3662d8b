"""``x[key] = value`` against NumPy 2 (every key NumPy assigns through that tessera takes:
ints, slices of any step, ``...``, ``None``, one integer array or 1-d mask among them, a
mask of the array's shape) and against Dask for a lazy boolean mask; the update stays lazy
and keeps the chunks; the errors NumPy raises."""

import array_api_strict as xps
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tessera as ts
import tessera.array_api as xp

A = np.arange(60.0).reshape(3, 4, 5)

CASES = [
    ((1,), -1.0),
    ((slice(None), 2), np.arange(5.0)),
    ((Ellipsis, 0), 9.0),
    ((slice(None, None, -2), slice(1, 3)), np.array([[[1.0]], [[2.0]]])),
    ((0, slice(3, 0, -1), slice(None, None, 3)), np.array([[1.0, 2.0]])),
    ((None, 1, slice(None)), 5.0),
    ((slice(None), [3, 0, 3]), np.arange(15.0).reshape(3, 1, 5) * 10),
    ((0, slice(None), [4, 1]), np.array([[7.0], [8.0]])),  # int and array apart: array axis first
    ((1, [0, 2], slice(None)), np.arange(10.0).reshape(2, 5)),
    ((slice(None), np.array([True, False, True, False])), 3.5),
    ((Ellipsis,), np.arange(5.0)),
    ((slice(5, 9),), 1.0),  # an empty selection: nothing changes
    ((-1, -1, -1), 100),
    ((slice(None), [-1]), 2.0),
]


@pytest.mark.parametrize("key,value", CASES, ids=repr)
def test_an_assignment_matches_numpy(key, value):
    want = A.copy()
    want[key] = value
    x = ts.from_array(A, chunks=(2, 3, 2))
    x[key] = value
    assert x.chunks == ((2, 1), (3, 1), (2, 2, 1))
    got = x.compute()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_an_assignment_is_lazy_and_leaves_other_arrays_alone():
    x = ts.from_array(A, chunks=2)
    y = x
    before = x.num_tasks()
    x[0] = 0.0
    assert y is x  # the same object, updated in place as in Dask
    assert x.num_tasks() > before
    z = ts.from_array(A, chunks=2)
    w = z + 1
    z[0] = -1.0
    np.testing.assert_array_equal(w.compute(), A + 1)  # built before: unchanged


def test_a_value_is_cast_to_the_arrays_dtype_as_numpy_casts():
    base = np.arange(10, dtype=np.int32)
    want = base.copy()
    want[2:5] = np.array([1.9, -2.7, 3.0])
    x = ts.from_array(base, chunks=3)
    x[2:5] = np.array([1.9, -2.7, 3.0])
    got = x.compute()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="NaN"):
        x[0] = np.nan


def test_a_numpy_mask_of_the_arrays_shape_assigns_as_numpy():
    mask = A % 7 < 2
    want = A.copy()
    want[mask] = np.arange(mask.sum(), dtype=float)
    x = ts.from_array(A, chunks=(2, 2, 2))
    x[mask] = np.arange(mask.sum(), dtype=float)
    np.testing.assert_array_equal(x.compute(), want)
    x = ts.from_array(A, chunks=(2, 2, 2))
    x[mask] = -3.0
    want2 = A.copy()
    want2[mask] = -3.0
    np.testing.assert_array_equal(x.compute(), want2)
    with pytest.raises(ValueError, match="cannot assign 2 input values"):
        x[mask] = [1.0, 2.0]


def test_a_lazy_mask_assigns_as_dask():
    rng = np.random.default_rng(5)
    data = rng.normal(size=(40, 30))
    other = rng.normal(size=(40, 30))
    ours = ts.from_array(data, chunks=(16, 7))
    theirs = da.from_array(data, chunks=(16, 7))
    ours[ours > 0.5] = 0.0
    theirs[theirs > 0.5] = 0.0
    np.testing.assert_array_equal(ours.compute(), theirs.compute())
    assert ours.chunks == theirs.chunks
    # A value of the array's shape (Dask refuses it: the selection's length is unknown)
    # lands where the mask is true, as `where` puts it.
    before = ours.compute()
    ours[ours < 0] = ts.from_array(other, chunks=10)
    np.testing.assert_array_equal(ours.compute(), np.where(before < 0, other, before))
    with pytest.raises(ValueError, match="could not broadcast"):
        ours[ours < 0] = np.ones(7)


def test_the_array_api_namespace_assigns_in_place():
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    x[:, 1] = xp.asarray([10.0, 20.0])
    np.testing.assert_array_equal(np.asarray(x), [[0, 10, 2], [3, 20, 5]])


@pytest.mark.parametrize(
    "key,value,error,match",
    [
        ((0, 0, 0, 0), 1.0, IndexError, "too many indices"),
        ((Ellipsis, Ellipsis), 1.0, IndexError, "single ellipsis"),
        ((3,), 1.0, IndexError, "index 3 is out of bounds for axis 0 with size 3"),
        ((slice(None), [0, 4]), 1.0, IndexError, "index 4 is out of bounds for axis 1"),
        ((slice(None), np.array([True, False])), 1.0, IndexError, "boolean index did not match"),
        ((0,), np.ones(3), ValueError, r"could not broadcast input array from shape \(3,\)"),
        (([0], [1]), 1.0, IndexError, "at most one integer-array"),
        ((np.ones((3, 4), bool),), 1.0, IndexError, "boolean index did not match"),
    ],
    ids=repr,
)
def test_a_key_or_value_numpy_refuses_is_refused(key, value, error, match):
    x = ts.from_array(A, chunks=2)
    with pytest.raises(error, match=match):
        x[key] = value
    np.testing.assert_array_equal(x.compute(), A)  # the array is left as it was


def test_a_lazy_integer_index_is_refused_with_what_to_do():
    x = ts.from_array(A, chunks=2)
    with pytest.raises(IndexError, match="np.asarray"):
        x[ts.from_array(np.array([0, 1]))] = 1.0


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    data=st.data(),
)
def test_random_slice_assignments_match_numpy(shape, data):
    base = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    key = tuple(
        slice(
            data.draw(st.none() | st.integers(-n - 1, n + 1)),
            data.draw(st.none() | st.integers(-n - 1, n + 1)),
            data.draw(st.none() | st.sampled_from([-3, -2, -1, 1, 2, 3])),
        )
        for n in shape
    )
    want = base.copy()
    sel = want[key]
    value = -np.arange(sel.size, dtype=np.float64).reshape(sel.shape) - 1
    want[key] = value
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    x = ts.from_array(base, chunks=chunks)
    x[key] = value
    np.testing.assert_array_equal(x.compute(), want)


def test_broadcast_to_and_broadcast_arrays_match_numpy_and_stay_lazy():
    a = np.arange(3.0)
    b = np.arange(4.0).reshape(4, 1)
    x, y = ts.from_array(a, chunks=2), ts.from_array(b, chunks=3)
    got = np.broadcast_to(x, (2, 3))
    assert isinstance(got, ts.Array)
    assert got.chunks == da.broadcast_to(da.from_array(a, chunks=2), (2, 3)).chunks
    np.testing.assert_array_equal(got.compute(), np.broadcast_to(a, (2, 3)))
    for ours, want in zip(np.broadcast_arrays(x, y), np.broadcast_arrays(a, b)):
        assert isinstance(ours, ts.Array)
        np.testing.assert_array_equal(ours.compute(), want)
    for ours, want in zip(xp.broadcast_arrays(x, y), xps.broadcast_arrays(xps.asarray(a), xps.asarray(b))):
        np.testing.assert_array_equal(ours.compute(), np.asarray(want))
    np.testing.assert_array_equal(xp.broadcast_to(x, (4, 3)).compute(), np.broadcast_to(a, (4, 3)))
    with pytest.raises(ValueError, match="broadcast"):
        ts.broadcast_to(x, (2, 4))
