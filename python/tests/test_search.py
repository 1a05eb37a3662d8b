"""``searchsorted`` and ``isin`` against NumPy 2 and array-api-strict: both sides
chunked, both sides, ``sorter``, mixed dtypes, special values (NaN sorts last and is a
member of nothing, the zeros are one value), values of any shape, and the errors."""

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tessera as ts
import tessera.array_api as xp

from conftest import assert_same

SPECIAL = np.array([np.nan, -np.inf, -3.5, -0.0, 0.0, 1.0, 2.0, 2.0, np.inf])


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_matches_numpy_on_special_values(side):
    a = np.sort(np.concatenate([SPECIAL, np.arange(-5.0, 5.0)]))
    v = np.concatenate([SPECIAL, [2.5, -10.0, 10.0]]).reshape(3, 4)
    got = np.searchsorted(ts.from_array(a, chunks=4), ts.from_array(v, chunks=(2, 3)), side=side)
    assert isinstance(got, ts.Array)
    assert_same(got.compute(), np.searchsorted(a, v, side=side))


def test_searchsorted_takes_a_sorter_scalars_and_mixed_dtypes():
    a = np.array([5, 1, 9, 3, 7], dtype=np.int16)
    order = np.argsort(a)
    x = ts.from_array(a, chunks=2)
    assert_same(np.searchsorted(x, [4.5, 9.0, -1.0], sorter=order).compute(), np.searchsorted(a, [4.5, 9.0, -1.0], sorter=order))
    assert int(np.searchsorted(ts.from_array(np.sort(a), chunks=3), 7).compute()) == np.searchsorted(np.sort(a), 7)
    with pytest.raises(ValueError, match="side must be"):
        np.searchsorted(x, [1], side="middle")
    with pytest.raises(ts.InvalidArgumentError, match="1-d"):
        np.searchsorted(ts.from_array(np.ones((2, 2))), [1.0])


def test_the_array_api_searchsorted_matches_array_api_strict():
    a = np.sort(np.random.default_rng(0).integers(-20, 20, 50)).astype(np.int32)
    v = np.arange(-25, 25, 3, dtype=np.int32)
    for side in ("left", "right"):
        got = xp.searchsorted(xp.asarray(a).rechunk(7), xp.asarray(v).rechunk(4), side=side)
        want = xps.searchsorted(xps.asarray(a), xps.asarray(v), side=side)
        assert_same(got.compute(), np.asarray(want))


@pytest.mark.parametrize("invert", [False, True])
def test_isin_matches_numpy(invert):
    x = np.concatenate([SPECIAL, np.arange(-4.0, 4.0)])
    test = np.array([np.nan, 0.0, 2.0, -np.inf, 3.0, 100.0])
    got = np.isin(ts.from_array(x, chunks=5), ts.from_array(test, chunks=4), invert=invert)
    assert isinstance(got, ts.Array)
    assert_same(got.compute(), np.isin(x, test, invert=invert))
    # ints against floats compare in float64; a NumPy set, a list and ts.isin too.
    ints = np.arange(-3, 8).reshape(11, 1)
    assert_same(np.isin(ts.from_array(ints, chunks=3), [2.0, 2.5, 7.0], invert=invert).compute(),
                np.isin(ints, [2.0, 2.5, 7.0], invert=invert))
    assert_same(ts.isin(ints, np.array([[1, 5]]), invert=invert).compute(), np.isin(ints, [[1, 5]], invert=invert))
    assert_same(ts.isin(ints, [], invert=invert).compute(), np.isin(ints, [], invert=invert))


@settings(max_examples=60, deadline=None)
@given(
    a=st.lists(st.integers(-20, 20), min_size=1, max_size=40),
    v=st.lists(st.integers(-25, 25), min_size=1, max_size=30),
    ca=st.integers(1, 40),
    cv=st.integers(1, 30),
)
def test_random_searches_match_numpy(a, v, ca, cv):
    a = np.sort(np.array(a, dtype=np.int64))
    v = np.array(v, dtype=np.int64)
    xa, xv = ts.from_array(a, chunks=ca), ts.from_array(v, chunks=cv)
    for side in ("left", "right"):
        assert_same(np.searchsorted(xa, xv, side=side).compute(), np.searchsorted(a, v, side=side))
    assert_same(np.isin(xv, xa).compute(), np.isin(v, a))
