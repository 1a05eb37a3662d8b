"""Integer-array indexing and ``argsort`` against NumPy 2 and array-api-strict: ``x[key]``
with one integer array or boolean mask among slices, ints, ``None`` and ``...`` (NumPy's
rule for separated advanced indices included), ``np.take`` / ``np.take_along_axis`` /
``np.argsort`` through ``__array_function__``, the Array API's ``take``,
``take_along_axis`` and ``argsort`` (descending and stable), lazy tessera indices, the
chunks a known index reads, and the errors NumPy raises."""

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tessera as ts
import tessera.array_api as xp

from conftest import assert_same

A = np.arange(60.0).reshape(3, 4, 5)

KEYS = [
    np.array([2, 0, -1]),
    [1, 1],
    (slice(None), [3, 1]),
    (0, slice(None), [1, 2]),  # int and array apart: the array's axis goes first
    (0, [1, 2]),
    ([1, 2], slice(None), 0),
    (slice(None), [1, 2], 0),
    (Ellipsis, [4, 0]),
    (None, [2], Ellipsis, 1),
    (np.array([[0, 1], [2, 0]]),),
    (slice(None), np.array([True, False, True, True])),
    (slice(1, None), [], slice(None)),
    (slice(None, None, -1), np.int64(2)),
    (slice(None), np.array(3)),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_a_key_with_one_array_indexes_as_numpy(key):
    x = ts.from_array(A, chunks=2)
    got = x[key]
    assert isinstance(got, ts.Array)
    assert_same(got.compute(), A[key])


def test_a_known_index_reads_only_the_chunks_it_touches():
    a = np.arange(1000.0)
    x = ts.from_array(a, chunks=100)
    got = x[[512, 505, 599]]
    # One index chunk, one of the ten input chunks, one gather.
    assert got.num_tasks() == 3, got.explain()
    assert "take (gather from the blocks of a lane)" in got.explain()
    assert_same(got.compute(), a[[512, 505, 599]])


def test_a_lazy_tessera_index_stays_lazy_and_is_checked_when_it_runs():
    x = ts.from_array(A, chunks=2)
    idx = ts.from_array(np.array([4, -5, 2]), chunks=2) + 0
    assert_same(x[:, :, idx].compute(), A[:, :, [4, -5, 2]])
    assert_same(np.take(x, idx, axis=2).compute(), np.take(A, [4, -5, 2], axis=2))
    bad = np.take(x, ts.from_array(np.array([0, 7]), chunks=1) + 0, axis=2)
    with pytest.raises(ts.InvalidArgumentError, match="index 7 is out of bounds for axis 2 with size 5"):
        bad.compute()


def test_indexing_errors_are_numpys():
    x = ts.from_array(A, chunks=2)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        x[[0, 3]]
    with pytest.raises(IndexError, match="index -6 is out of bounds for axis 2 with size 5"):
        np.take(x, [-6], axis=2)
    with pytest.raises(IndexError, match="integer"):
        x[np.array([0.5])]
    with pytest.raises(IndexError, match="boolean index"):
        x[np.array([True, False])]
    with pytest.raises(IndexError, match="one array"):
        x[[0, 1], [0, 1]]
    with pytest.raises(IndexError, match="known only when it runs"):
        x[x > 3]
    with pytest.raises(IndexError, match="bool"):
        x[True]
    with pytest.raises(np.exceptions.AxisError):
        np.take(x, [0], axis=3)
    with pytest.raises(TypeError, match="mode='raise'"):
        np.take(x, [0], axis=0, mode="clip")


@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1])
def test_np_take_matches_numpy(axis):
    x = ts.from_array(A, chunks=(2, 3, 2))
    for idx in ([0, -1, 1, 0], [[0, 1], [1, 0]], 1, []):
        got = np.take(x, idx, axis=axis)
        assert isinstance(got, ts.Array)
        assert_same(got.compute(), np.take(A, idx, axis=axis))


DTYPES = ["bool", "int8", "uint16", "int64", "float32", "float64"]


def values(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, size=shape).astype(dtype)
    if a.dtype.kind == "f":
        a.flat[:: 7] = np.nan
        a.flat[1:: 11] = -0.0
    return a


@pytest.mark.parametrize("dtype", DTYPES)
def test_argsort_is_numpys_stable_argsort_on_every_axis(dtype):
    a = values(dtype, (7, 6, 5), 1)
    x = ts.from_array(a, chunks=(3, 4, 2))
    for axis in (0, 1, 2, -1, None):
        got = np.argsort(x, axis=axis)
        assert isinstance(got, ts.Array)
        assert_same(got.compute(), np.argsort(a, axis=axis, kind="stable"))


@pytest.mark.parametrize("dtype", DTYPES[1:])  # the standard sorts real numbers only
def test_the_array_api_argsort_matches_array_api_strict_both_ways(dtype):
    a = values(dtype, (9, 8), 2)
    x = xp.asarray(a).rechunk((4, 3))
    for axis in (0, 1):
        for descending in (False, True):
            want = xps.argsort(xps.asarray(a), axis=axis, descending=descending)
            got = xp.argsort(x, axis=axis, descending=descending)
            assert_same(got.compute(), np.asarray(want))


def test_take_along_axis_of_argsort_sorts_and_broadcasts_as_numpy():
    a = values("float64", (6, 7), 3)
    x = ts.from_array(a, chunks=(4, 3))
    for axis in (0, 1):
        order = np.argsort(x, axis=axis)
        got = np.take_along_axis(x, order, axis=axis)
        assert_same(got.compute(), np.sort(a, axis=axis))
    idx = np.array([[3, 0, -1]])
    assert_same(np.take_along_axis(x, idx, axis=1).compute(), np.take_along_axis(a, idx, axis=1))
    got = xp.take_along_axis(x, xp.asarray(idx), axis=1)
    want = xps.take_along_axis(xps.asarray(a), xps.asarray(idx), axis=1)
    assert_same(got.compute(), np.asarray(want))


def test_the_array_api_take_matches_array_api_strict():
    a = values("int32", (5, 4), 4)
    for axis in (0, 1):
        idx = [3, 0, 0, 2]
        got = xp.take(xp.asarray(a).rechunk(2), xp.asarray(idx), axis=axis)
        want = xps.take(xps.asarray(a), xps.asarray(idx), axis=axis)
        assert_same(got.compute(), np.asarray(want))
    with pytest.raises(ValueError, match="axis must be given"):
        xp.take(xp.asarray(a), xp.asarray([0]))


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    data=st.data(),
)
def test_random_keys_with_one_array_match_numpy(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    chunks = tuple(data.draw(st.integers(1, n)) for n in shape)
    x = ts.from_array(a, chunks=chunks)
    at = data.draw(st.integers(0, len(shape) - 1))
    key = []
    for d, n in enumerate(shape):
        if d == at:
            key.append(data.draw(st.lists(st.integers(-n, n - 1), max_size=7)))
        else:
            key.append(
                data.draw(
                    st.one_of(
                        st.integers(-n, n - 1),
                        st.builds(slice, st.none() | st.integers(-n, n), st.none() | st.integers(-n, n),
                                  st.sampled_from([None, 1, 2, -1])),
                    )
                )
            )
    key = tuple(key)
    assert_same(x[key].compute(), a[key])
