"""Random arrays, as ``dask.array.random``.

Draws are counter-based (Philox 4x32-10): a block's values depend only on the seed, the
draw and the block's position, so an array is the same on every backend, chunking and
worker count, and a slice generates only the elements it keeps. ``default_rng(seed)``
gives NumPy's newer ``Generator`` API (``random``, ``integers``, ``normal``, ...) over the
same draws.
"""

from ._generator import Generator, default_rng
from ._tessera import RandomState

__all__ = ["Generator", "RandomState", "default_rng", "normal", "uniform", "random", "randint"]

_default = RandomState(0)


def normal(loc=0.0, scale=1.0, size=None, chunks=None, dtype=None, backend=None):
    """Normal draws from the module's default generator (seed 0)."""
    return _default.normal(loc, scale, size=size, chunks=chunks, dtype=dtype, backend=backend)


def uniform(low=0.0, high=1.0, size=None, chunks=None, dtype=None, backend=None):
    """Uniform draws in ``[low, high)`` from the default generator."""
    return _default.uniform(low, high, size=size, chunks=chunks, dtype=dtype, backend=backend)


def random(size=None, chunks=None, backend=None):
    """Uniform draws in ``[0, 1)`` from the default generator."""
    return _default.random_sample(size=size, chunks=chunks, backend=backend)


def randint(low, high=None, size=None, chunks=None, dtype=None, backend=None):
    """Integers in ``[low, high)`` from the default generator."""
    return _default.randint(low, high, size=size, chunks=chunks, dtype=dtype, backend=backend)
