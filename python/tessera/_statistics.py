"""Order statistics as NumPy computes them: ``quantile``, ``percentile``, ``median`` and
their NaN-skipping forms, on the engine's exact chunked selection.

Each lane is sorted chunk by chunk and only the order statistics a quantile needs are
read from it (with the axis length known, only the sorted chunks holding those ranks
are merged); nothing is approximated, unlike ``dask.array.percentile``. Results match
NumPy 2 to the bit: its ``linear`` method, its dtypes (``float32`` kept for a
``float32`` array and a Python scalar ``q``), NaN for a lane holding NaN (the ``nan``
forms skip it; a lane of NaN only gives NaN). ``np.quantile(x, ...)`` on a tessera
array dispatches here.

>>> import numpy as np, tessera as ts
>>> x = ts.from_array(np.array([[7.0, 1.0, 4.0], [9.0, np.nan, 3.0]]), chunks=2)
>>> ts.quantile(x, [0.25, 0.5], axis=1).compute().tolist()
[[2.5, nan], [4.0, nan]]
>>> ts.nanmedian(x, axis=1).compute().tolist()
[4.0, 6.0]
"""

from __future__ import annotations

import numpy as _np

from . import _tessera

__all__ = ["median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile"]


def _one_axis(name, axis, ndim):
    if axis is None or isinstance(axis, (int, _np.integer)):
        return axis
    axes = tuple(axis)
    if len(axes) == 1:
        return axes[0]
    if sorted(a % ndim for a in axes) == list(range(ndim)):
        return None
    raise TypeError(f"{name}: tessera takes axis=None or one axis; got {axis!r}")


def _check_method(name, method, weights, interpolation, overwrite_input):
    if interpolation is not None:
        raise TypeError(f"{name}(..., interpolation=...) is NumPy's old spelling of method=; pass method='linear'")
    if method != "linear":
        raise TypeError(f"{name}(..., method={method!r}): tessera computes NumPy's default method='linear' only")
    if weights is not None:
        raise TypeError(f"{name}(..., weights=...) is not supported by tessera")
    del overwrite_input  # tessera never writes into its input


def _select(name, x, q, axis, keepdims, skip_nan, scale):
    weak = type(q) in (int, float)
    qa = _np.asarray(q) if scale == 1 else _np.true_divide(q, scale)
    if qa.size == 0:
        raise ValueError(f"{name}: no quantiles asked for")
    if not (_np.all(qa >= 0) and _np.all(qa <= 1)):
        what = "Percentiles" if scale == 100 else "Quantiles"
        raise ValueError(f"{what} must be in the range [0, {scale}]")
    axis = _one_axis(name, axis, x.ndim)
    if qa.dtype.kind in "iub":
        # An integer q is a position (0 the first, 1 the last of the sorted lane): NumPy
        # takes the elements themselves, in the array's dtype, with no interpolation.
        ends = [x.nanmin if skip_nan else x.min, x.nanmax if skip_nan else x.max]
        parts = [ends[int(v)](axis=axis, keepdims=_keep(keepdims)) for v in qa.ravel()]
        out = _tessera.stack(parts, 0)
    else:
        float32 = weak and x.dtype == _np.float32
        values = [float(v) for v in qa.ravel()]
        out = _tessera.quantile(x, values, axis, _keep(keepdims), skip_nan, float32)
    if qa.ndim == 0:
        return out[0]
    if qa.ndim > 1:
        return out.reshape(*qa.shape, *out.shape[1:])
    return out


def _as_array(a):
    return a if isinstance(a, _tessera.Array) else _tessera.from_array(_np.asarray(a))


def _keep(keepdims):
    # NumPy's nan-functions default to its `_NoValue` sentinel, which is truthy.
    return False if keepdims is _np._NoValue else bool(keepdims)


def _quantile_function(name, skip_nan, scale, doc):
    """One of NumPy's four quantile functions, with NumPy's signature."""

    def f(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None, interpolation=None):
        if out is not None:
            raise TypeError(f"{name}(..., out=...) is not supported; tessera arrays are lazy and immutable")
        _check_method(name, method, weights, interpolation, overwrite_input)
        return _select(name, _as_array(a), q, axis, keepdims, skip_nan, scale)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


quantile = _quantile_function(
    "quantile",
    False,
    1,
    """The ``q``-th quantiles (``q`` in ``[0, 1]``, a scalar or a sequence) along
    ``axis`` as ``np.quantile``; a sequence's axes come first in the result.

    >>> import tessera as ts
    >>> ts.quantile(ts.arange(10, chunks=3), 0.3).compute()
    np.float64(2.6999999999999997)
    """,
)
nanquantile = _quantile_function(
    "nanquantile",
    True,
    1,
    """``quantile`` ignoring NaN, as ``np.nanquantile`` (NaN for a lane of NaN only).""",
)
percentile = _quantile_function(
    "percentile",
    False,
    100,
    """The ``q``-th percentiles (``q`` in ``[0, 100]``) along ``axis``, as
    ``np.percentile``.

    >>> import tessera as ts
    >>> ts.percentile(ts.arange(10, chunks=3), [50, 90]).compute().tolist()
    [4.5, 8.1]
    """,
)
nanpercentile = _quantile_function(
    "nanpercentile",
    True,
    100,
    """``percentile`` ignoring NaN, as ``np.nanpercentile``.""",
)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along ``axis`` as ``np.median``: the middle element of the sorted
    lane, or the mean of the middle two.

    >>> import tessera as ts
    >>> ts.median(ts.arange(10, chunks=3)).compute()
    np.float64(4.5)
    """
    if out is not None:
        raise TypeError("median(..., out=...) is not supported; tessera arrays are lazy and immutable")
    x = _as_array(a)
    return _tessera.median(x, _one_axis("median", axis, x.ndim), _keep(keepdims), False)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """``median`` ignoring NaN, as ``np.nanmedian`` (NaN for a lane of NaN only)."""
    if out is not None:
        raise TypeError("nanmedian(..., out=...) is not supported; tessera arrays are lazy and immutable")
    x = _as_array(a)
    return _tessera.median(x, _one_axis("nanmedian", axis, x.ndim), _keep(keepdims), True)
