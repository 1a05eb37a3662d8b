"""``default_rng`` and ``Generator``: NumPy's (and ``dask.array.random``'s) newer random
API over tessera's counter-based draws.

Every draw is lazy and chunked: the uniform, normal and integer draws come from the
engine (Philox 4x32-10, so an array is the same whatever its chunking, backend or worker
count), and the other distributions are exact transforms of them (inverse CDFs, ratios of
normals), built as lazy elementwise plans. Distributions without such a transform here
(gamma, beta, binomial, Poisson, ``choice``, ``permutation``, ...) are absent, so code
that needs one fails with ``AttributeError`` naming it rather than drawing from another
distribution. The streams are tessera's own: ``default_rng(42)`` gives other values than
NumPy's ``default_rng(42)``, as Dask's does.

>>> import tessera as ts
>>> rng = ts.random.default_rng(42)
>>> x = rng.random((1000, 1000), chunks=250)
>>> x.chunks[0]
(250, 250, 250, 250)
>>> 0.49 < float(x.mean().compute()) < 0.51
True
>>> bool((ts.random.default_rng(42).random((1000, 1000), chunks=100) == x).all().compute())
True
"""

from __future__ import annotations

import numpy as _np

from ._tessera import Array, RandomState

__all__ = ["Generator", "default_rng"]


def _size(size, *params) -> tuple:
    """The draw's shape: ``size``, or the broadcast shape of array parameters."""
    if size is not None:
        return (int(size),) if _np.ndim(size) == 0 else tuple(int(n) for n in size)
    shapes = [tuple(p.shape) if isinstance(p, Array) else _np.shape(p) for p in params]
    return tuple(_np.broadcast_shapes(*shapes)) if shapes else ()


def _param(p, backend):
    """A distribution parameter: a scalar as a float, an array as a tessera array."""
    if isinstance(p, Array):
        return p
    a = _np.asarray(p, dtype=float)
    if a.ndim == 0:
        return float(a)
    from ._tessera import from_array

    return from_array(a, backend=backend)


def _check(name, value, ok, rule):
    if not isinstance(value, Array) and not bool(_np.all(ok(_np.asarray(value)))):
        raise ValueError(f"{name} {rule}")


def _no_out(name, out):
    if out is not None:
        raise TypeError(f"{name}(out=...) is not supported: tessera arrays are lazy")


def _float_dtype(dtype):
    d = _np.dtype(dtype)
    if d not in (_np.float32, _np.float64):
        raise TypeError(f"Unsupported dtype {d} for this draw; use float32 or float64")
    return d


class Generator:
    """Random draws from one seed, as ``numpy.random.Generator`` and
    ``dask.array.random.Generator``; every method takes ``chunks`` (a Dask chunk spec) and
    ``backend`` besides NumPy's parameters, and returns a lazy tessera array.

    >>> import tessera as ts
    >>> g = ts.random.Generator(7)
    >>> g.integers(0, 10, size=5, chunks=2).compute().min() >= 0
    np.True_
    """

    def __init__(self, seed: int = 0):
        self._seed = int(seed)
        self._state = RandomState(self._seed)

    def __repr__(self) -> str:
        return f"tessera.random.Generator(seed={self._seed})"

    def random(self, size=None, dtype=_np.float64, out=None, chunks="auto", backend=None):
        """Uniform floats in ``[0, 1)``."""
        _no_out("random", out)
        d = _float_dtype(dtype)
        return self._state.uniform(0.0, 1.0, size=_size(size), chunks=chunks, dtype=d, backend=backend)

    def uniform(self, low=0.0, high=1.0, size=None, chunks="auto", backend=None):
        """Uniform floats in ``[low, high)``."""
        shape = _size(size, low, high)
        low, high = _param(low, backend), _param(high, backend)
        if isinstance(low, float) and isinstance(high, float):
            return self._state.uniform(low, high, size=shape, chunks=chunks, backend=backend)
        return low + (high - low) * self.random(shape, chunks=chunks, backend=backend)

    def standard_normal(self, size=None, dtype=_np.float64, out=None, chunks="auto", backend=None):
        """Standard normal floats (mean 0, standard deviation 1)."""
        _no_out("standard_normal", out)
        d = _float_dtype(dtype)
        return self._state.normal(0.0, 1.0, size=_size(size), chunks=chunks, dtype=d, backend=backend)

    def normal(self, loc=0.0, scale=1.0, size=None, chunks="auto", backend=None):
        """Normal floats with mean ``loc`` and standard deviation ``scale``."""
        _check("scale", scale, lambda s: s >= 0, "< 0")
        shape = _size(size, loc, scale)
        loc, scale = _param(loc, backend), _param(scale, backend)
        if isinstance(loc, float) and isinstance(scale, float):
            return self._state.normal(loc, scale, size=shape, chunks=chunks, backend=backend)
        return loc + scale * self.standard_normal(shape, chunks=chunks, backend=backend)

    def integers(self, low, high=None, size=None, dtype=_np.int64, endpoint=False, chunks="auto", backend=None):
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint=True``;
        ``integers(high)`` draws from ``[0, high)``)."""
        if high is None:
            low, high = 0, low
        low, high = int(low), int(high) + int(bool(endpoint))
        if low >= high:
            raise ValueError("low > high" if endpoint else "low >= high")
        d = _np.dtype(dtype)
        if d.kind not in "iu":
            raise TypeError(f"Unsupported dtype {d} for integers")
        info = _np.iinfo(d)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"[{low}, {high}) is outside the range of {d}")
        return self._state.randint(low, high, size=_size(size), chunks=chunks, dtype=d, backend=backend)

    def standard_exponential(self, size=None, dtype=_np.float64, chunks="auto", backend=None):
        """Exponential floats of scale 1: ``-log(1 - U)`` for uniform ``U`` in ``[0, 1)``."""
        return -_np.log1p(-self.random(size, dtype=dtype, chunks=chunks, backend=backend))

    def exponential(self, scale=1.0, size=None, chunks="auto", backend=None):
        """Exponential floats of ``scale``."""
        _check("scale", scale, lambda s: s >= 0, "< 0")
        shape = _size(size, scale)
        return _param(scale, backend) * self.standard_exponential(shape, chunks=chunks, backend=backend)

    def lognormal(self, mean=0.0, sigma=1.0, size=None, chunks="auto", backend=None):
        """``exp`` of normal floats with ``mean`` and ``sigma``."""
        return _np.exp(self.normal(mean, sigma, size, chunks=chunks, backend=backend))

    def pareto(self, a, size=None, chunks="auto", backend=None):
        """Pareto II (Lomax) floats of shape ``a``, as NumPy's: ``expm1(E / a)``."""
        _check("a", a, lambda v: v > 0, "<= 0")
        shape = _size(size, a)
        e = self.standard_exponential(shape, chunks=chunks, backend=backend)
        return _np.expm1(e / _param(a, backend))

    def power(self, a, size=None, chunks="auto", backend=None):
        """Floats in ``[0, 1]`` with density ``a x^(a-1)``: ``U^(1/a)``."""
        _check("a", a, lambda v: v > 0, "<= 0")
        shape = _size(size, a)
        u = -_np.expm1(-self.standard_exponential(shape, chunks=chunks, backend=backend))
        return u ** (1.0 / _param(a, backend))

    def rayleigh(self, scale=1.0, size=None, chunks="auto", backend=None):
        """Rayleigh floats of ``scale``: ``scale * sqrt(2 E)``."""
        _check("scale", scale, lambda s: s >= 0, "< 0")
        shape = _size(size, scale)
        e = self.standard_exponential(shape, chunks=chunks, backend=backend)
        return _param(scale, backend) * _np.sqrt(2.0 * e)

    def standard_cauchy(self, size=None, chunks="auto", backend=None):
        """Cauchy floats (location 0, scale 1): the ratio of two standard normals."""
        shape = _size(size)
        z1 = self.standard_normal(shape, chunks=chunks, backend=backend)
        z2 = self.standard_normal(shape, chunks=chunks, backend=backend)
        return z1 / z2

    def weibull(self, a, size=None, chunks="auto", backend=None):
        """Weibull floats of shape ``a``: ``E^(1/a)`` (0 for ``a == 0``, as NumPy)."""
        _check("a", a, lambda v: v >= 0, "< 0")
        shape = _size(size, a)
        e = self.standard_exponential(shape, chunks=chunks, backend=backend)
        if not isinstance(a, Array) and _np.ndim(a) == 0 and float(a) == 0.0:
            return e * 0.0
        return e ** (1.0 / _param(a, backend))

    def triangular(self, left, mode, right, size=None, chunks="auto", backend=None):
        """Floats of the triangular distribution on ``[left, right]`` peaking at ``mode``,
        by its inverse CDF."""
        for p in (left, mode, right):
            if isinstance(p, Array) or _np.ndim(p) != 0:
                raise TypeError("triangular takes scalar left, mode and right here")
        left, mode, right = float(left), float(mode), float(right)
        if not left <= mode <= right:
            raise ValueError("left > mode" if left > mode else "mode > right")
        if left == right:
            raise ValueError("left == right")
        u = self.random(size, chunks=chunks, backend=backend)
        base, lb, rb = right - left, mode - left, right - mode
        from ._tessera import where

        lower = left + _np.sqrt(u * base * lb)
        upper = right - _np.sqrt((1.0 - u) * base * rb)
        return where(u <= lb / base, lower, upper)


def default_rng(seed=None) -> Generator:
    """A :class:`Generator`, as ``numpy.random.default_rng``: from an int seed (or a
    sequence of ints, or a ``numpy.random.SeedSequence``), fresh OS entropy when ``None``,
    or the generator itself when given one.

    >>> import tessera as ts
    >>> a = ts.random.default_rng(1).normal(size=(4, 4), chunks=2)
    >>> b = ts.random.default_rng(1).normal(size=(4, 4), chunks=4)
    >>> bool((a == b).all().compute())
    True
    """
    if isinstance(seed, Generator):
        return seed
    if isinstance(seed, _np.random.SeedSequence):
        seq = seed
    elif seed is None or isinstance(seed, (int, _np.integer)) or _np.ndim(seed) == 1:
        seq = _np.random.SeedSequence(seed)
    else:
        raise TypeError(f"default_rng: a seed must be an int, a sequence of ints or a SeedSequence, got {seed!r}")
    return Generator(int(seq.generate_state(1, _np.uint64)[0]))
