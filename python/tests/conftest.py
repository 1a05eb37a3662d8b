"""Shared fixtures: the optional reference packages are imported with
``pytest.importorskip``, so a missing one skips the tests that need it with its name."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261128)


def assert_same(ours, theirs, rtol=1e-12, atol=0.0):
    """Values and dtype equal to NumPy's (NaN in the same places)."""
    ours = np.asarray(ours)
    theirs = np.asarray(theirs)
    assert ours.dtype == theirs.dtype, f"dtype {ours.dtype} != NumPy's {theirs.dtype}"
    assert ours.shape == theirs.shape, f"shape {ours.shape} != NumPy's {theirs.shape}"
    if ours.dtype.kind in "fc":
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(ours, theirs)
