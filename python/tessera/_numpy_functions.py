"""NumPy's dispatch protocols on tessera arrays: NEP 18 (``__array_function__``) and the
ufunc methods and keywords of NEP 13 (``__array_ufunc__``) that the extension's fast path
leaves to Python.

``np.mean(x)``, ``np.concatenate([x, y])``, ``np.cumsum(x)``, ``np.add.reduce(x)`` on a
tessera array build lazy tessera arrays, so libraries written against NumPy (xarray,
scikit-learn, SciPy's array-agnostic functions) keep tessera's chunks and backend. A NumPy
function tessera does not implement returns ``NotImplemented``, and NumPy raises
``TypeError: no implementation found for 'numpy.<name>' ...`` instead of converting the
array behind the caller's back; ``np.asarray(x)`` (or ``x.compute()``) is the explicit
way to NumPy.

>>> import numpy as np, tessera as ts
>>> x = ts.from_array(np.arange(6.0).reshape(2, 3), chunks=1)
>>> m = np.mean(x, axis=0)
>>> type(m).__name__, m.compute().tolist()
('Array', [1.5, 2.5, 3.5])
>>> np.cumsum(x, axis=1).compute().tolist()
[[0.0, 1.0, 3.0], [3.0, 7.0, 12.0]]
"""

from __future__ import annotations

import numpy as _np

from . import _statistics, _tessera
from ._tessera import Array

__all__ = ["HANDLED", "array_function", "array_ufunc", "implements"]

#: The NumPy functions tessera implements, each mapped to its lazy implementation.
HANDLED: dict = {}

#: NumPy ufuncs (by name) that are exact compositions of tessera's ops
#: (``_numpy_compositions`` fills it), called on tessera operands.
COMPOSED_UFUNCS: dict = {}


def implements(*numpy_functions):
    """Registers the decorated function as tessera's implementation of each of
    ``numpy_functions`` (a function, or a name under ``numpy``; names NumPy lacks in the
    installed version are skipped)."""

    def register(impl):
        for f in numpy_functions:
            if isinstance(f, str):
                target = _np
                for part in f.split("."):
                    target = getattr(target, part, None)
                    if target is None:
                        break
                if target is None:
                    continue
                f = target
            HANDLED[f] = impl
        return impl

    return register


def numpy_function(np_func, doc):
    """``np_func`` as a function of tessera arrays for a namespace (``tessera.array``,
    ``tessera.array_api``): the implementation NumPy's dispatch reaches, looked up per call
    (compositions register after the namespaces are made), with NumPy's ``TypeError``
    where tessera has none or declines the arguments. ``doc`` is its docstring."""
    name = np_func.__name__

    def apply(*args, **kwargs):
        impl = HANDLED.get(np_func)
        out = NotImplemented if impl is None else impl(*args, **kwargs)
        if out is NotImplemented:
            raise TypeError(f"no implementation found for 'numpy.{name}' on tessera arrays "
                            "with these arguments")
        return out

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = doc
    return apply


def array_function(func, types, args, kwargs):
    """``Array.__array_function__``: tessera's implementation of ``func``, or
    ``NotImplemented`` (NumPy then raises ``TypeError`` naming ``func``)."""
    impl = HANDLED.get(func)
    if impl is None:
        return NotImplemented
    if not all(issubclass(t, (Array, _np.ndarray)) for t in types):
        return NotImplemented
    return impl(*args, **kwargs)


def _no_out(name, out):
    if out is not None:
        raise TypeError(
            f"numpy.{name}(..., out=...) cannot write into a lazy tessera array; "
            "use the returned array (or np.asarray(result) for NumPy data)"
        )


def _no_where(name, where):
    if where is not True and where is not _np._NoValue:
        raise TypeError(f"numpy.{name}(..., where=...) is not supported on tessera arrays; use tessera.where first")


def _array(x, like=None):
    """``x`` as a tessera array (NumPy data and scalars are wrapped; chunked like
    ``like`` when the shapes agree)."""
    if isinstance(x, Array):
        return x
    a = _np.asarray(x)
    chunks = like.chunks if like is not None and tuple(a.shape) == tuple(like.shape) else None
    backend = like.backend if like is not None else None
    return _tessera.from_array(a, chunks=chunks, backend=backend)


def _first_array(seq):
    return next((a for a in seq if isinstance(a, Array)), None)


def _cast(x, dtype):
    return x if dtype is None or _np.dtype(dtype) == x.dtype else x.astype(dtype)


def _keep(keepdims):
    return False if keepdims is _np._NoValue else bool(keepdims)


# Reductions: NumPy's signatures, `out` and `where` refused unless they are defaults.
def _reduction(name, method, cast_input):
    def impl(a, axis=None, dtype=None, out=None, keepdims=_np._NoValue, initial=_np._NoValue, where=_np._NoValue):
        _no_out(name, out)
        _no_where(name, where)
        if initial is not _np._NoValue:
            raise TypeError(f"numpy.{name}(..., initial=...) is not supported on tessera arrays")
        x = _array(a)
        if cast_input:
            x = _cast(x, dtype)
        r = getattr(x, method)(axis=axis, keepdims=_keep(keepdims))
        return r if cast_input else _cast(r, dtype)

    impl.__name__ = name
    return impl


HANDLED[_np.sum] = _reduction("sum", "sum", True)
HANDLED[_np.prod] = _reduction("prod", "prod", True)
HANDLED[_np.nansum] = _reduction("nansum", "nansum", True)
HANDLED[_np.nanprod] = _reduction("nanprod", "nanprod", True)


def _extremum(name):
    def impl(a, axis=None, out=None, keepdims=_np._NoValue, initial=_np._NoValue, where=_np._NoValue):
        _no_out(name, out)
        _no_where(name, where)
        if initial is not _np._NoValue:
            raise TypeError(f"numpy.{name}(..., initial=...) is not supported on tessera arrays")
        return getattr(_array(a), name)(axis=axis, keepdims=_keep(keepdims))

    impl.__name__ = name
    return impl


implements(_np.min, "amin")(_extremum("min"))
implements(_np.max, "amax")(_extremum("max"))
implements(_np.nanmin)(_extremum("nanmin"))
implements(_np.nanmax)(_extremum("nanmax"))


@implements(_np.mean)
def _mean(a, axis=None, dtype=None, out=None, keepdims=_np._NoValue, *, where=_np._NoValue):
    _no_out("mean", out)
    _no_where("mean", where)
    return _cast(_array(a), dtype).mean(axis=axis, keepdims=_keep(keepdims))


def _nan_arg(name):
    def impl(a, axis=None, out=None, *, keepdims=_np._NoValue):
        _no_out(name, out)
        return getattr(_array(a), name)(axis=axis, keepdims=_keep(keepdims))

    return impl


implements(_np.nanargmax)(_nan_arg("nanargmax"))
implements(_np.nanargmin)(_nan_arg("nanargmin"))


@implements(_np.nanmean)
def _nanmean(a, axis=None, dtype=None, out=None, keepdims=_np._NoValue, *, where=_np._NoValue):
    _no_out("nanmean", out)
    _no_where("nanmean", where)
    return _cast(_array(a), dtype).nanmean(axis=axis, keepdims=_keep(keepdims))


def _moment(name):
    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=_np._NoValue, *, where=_np._NoValue, mean=_np._NoValue, correction=_np._NoValue):
        _no_out(name, out)
        _no_where(name, where)
        if mean is not _np._NoValue:
            raise TypeError(f"numpy.{name}(..., mean=...) is not supported on tessera arrays")
        if correction is not _np._NoValue:
            ddof = correction
        return getattr(_cast(_array(a), dtype), name)(axis=axis, ddof=int(ddof), keepdims=_keep(keepdims))

    impl.__name__ = name
    return impl


HANDLED[_np.var] = _moment("var")
HANDLED[_np.std] = _moment("std")
HANDLED[_np.nanvar] = _moment("nanvar")
HANDLED[_np.nanstd] = _moment("nanstd")


@implements(_np.any)
def _any(a, axis=None, out=None, keepdims=_np._NoValue, *, where=_np._NoValue):
    _no_out("any", out)
    _no_where("any", where)
    return _array(a).any(axis=axis, keepdims=_keep(keepdims))


@implements(_np.all)
def _all(a, axis=None, out=None, keepdims=_np._NoValue, *, where=_np._NoValue):
    _no_out("all", out)
    _no_where("all", where)
    return _array(a).all(axis=axis, keepdims=_keep(keepdims))


@implements(_np.argmin)
def _argmin(a, axis=None, out=None, *, keepdims=_np._NoValue):
    _no_out("argmin", out)
    return _array(a).argmin(axis=axis, keepdims=_keep(keepdims))


@implements(_np.argmax)
def _argmax(a, axis=None, out=None, *, keepdims=_np._NoValue):
    _no_out("argmax", out)
    return _array(a).argmax(axis=axis, keepdims=_keep(keepdims))


@implements(_np.count_nonzero)
def _count_nonzero(a, axis=None, *, keepdims=False):
    x = _array(a)
    return (x != 0).sum(axis=axis, keepdims=keepdims)


# Scans.
@implements(_np.cumsum)
def _cumsum(a, axis=None, dtype=None, out=None):
    _no_out("cumsum", out)
    return _tessera.cumulative(_array(a), "sum", axis, dtype)


@implements(_np.cumprod)
def _cumprod(a, axis=None, dtype=None, out=None):
    _no_out("cumprod", out)
    return _tessera.cumulative(_array(a), "prod", axis, dtype)


@implements("cumulative_sum")
def _cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    _no_out("cumulative_sum", out)
    x = _array(x)
    if axis is None and x.ndim > 1:
        raise ValueError("cumulative_sum of an array of more than one dimension needs an axis")
    return _tessera.cumulative(x, "sum", axis if axis is not None else 0, dtype, include_initial)


@implements("cumulative_prod")
def _cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    _no_out("cumulative_prod", out)
    x = _array(x)
    if axis is None and x.ndim > 1:
        raise ValueError("cumulative_prod of an array of more than one dimension needs an axis")
    return _tessera.cumulative(x, "prod", axis if axis is not None else 0, dtype, include_initial)


# Sorting.
@implements(_np.sort)
def _sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise TypeError("numpy.sort(..., order=...) sorts structured arrays, which tessera does not have")
    # Every tessera sort is stable, so each `kind` gives NumPy's values.
    return _tessera.sort(_array(a), axis)


@implements(_np.argsort)
def _argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise TypeError("numpy.argsort(..., order=...) sorts structured arrays, which tessera does not have")
    # Stable whatever the kind: ties come out in NumPy's kind="stable" order.
    return _tessera.argsort(_array(a), axis)


# Order statistics (the implementations are tessera's public ones).
for _name in _statistics.__all__:
    implements(getattr(_np, _name))(getattr(_statistics, _name))


# Searching.
@implements(_np.searchsorted)
def _searchsorted(a, v, side="left", sorter=None):
    like = _first_array((a, v))
    a = _array(a, like)
    if sorter is not None:
        a = _tessera.take(a, sorter, 0)
    return _tessera.searchsorted(a, _array(v, like), side)


@implements(_np.isin)
def _isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    # `assume_unique` and `kind` choose NumPy's algorithm, not the answer.
    like = _first_array((element, test_elements))
    return _tessera.isin(_array(element, like), _array(test_elements), invert)


# Indexing.
@implements(_np.take)
def _take(a, indices, axis=None, out=None, mode="raise"):
    _no_out("take", out)
    if mode != "raise":
        raise TypeError(f"numpy.take(..., mode={mode!r}): tessera takes mode='raise' (an index out of bounds is an IndexError)")
    return _tessera.take(_array(a), indices, axis)


@implements(_np.take_along_axis)
def _take_along_axis(arr, indices, axis=-1):
    return _tessera.take_along_axis(_array(arr), indices, axis)


# Joining, selecting and reshaping.
@implements(_np.concatenate)
def _concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("concatenate", out)
    arrays = list(arrays)
    like = _first_array(arrays)
    parts = [_cast(_array(a, like), dtype) for a in arrays]
    if axis is None:
        parts = [p.reshape(-1) for p in parts]
        axis = 0
    return _tessera.concatenate(parts, axis=axis)


@implements(_np.stack)
def _stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    _no_out("stack", out)
    arrays = list(arrays)
    like = _first_array(arrays)
    return _tessera.stack([_cast(_array(a, like), dtype) for a in arrays], axis=axis)


@implements(_np.broadcast_to)
def _broadcast_to(array, shape, subok=False):
    return _tessera.broadcast_to(_array(array), shape)


@implements(_np.broadcast_arrays)
def _broadcast_arrays(*args, subok=False):
    like = _first_array(args)
    return tuple(_tessera.broadcast_arrays(*[_array(a, like) for a in args]))


@implements(_np.where)
def _where(condition, x=_np._NoValue, y=_np._NoValue):
    if x is _np._NoValue or y is _np._NoValue:
        raise TypeError(
            "numpy.where(condition) with one argument (nonzero) has a data-dependent shape, "
            "which tessera arrays do not support yet; pass x and y"
        )
    cond = _array(condition)
    return _tessera.where(cond, x, y)


@implements(_np.clip)
def _clip(a, a_min=_np._NoValue, a_max=_np._NoValue, out=None, *, min=_np._NoValue, max=_np._NoValue, **kwargs):
    _no_out("clip", out)
    if kwargs:
        raise TypeError(f"numpy.clip(..., {', '.join(kwargs)}=...) is not supported on tessera arrays")
    lo = min if min is not _np._NoValue else a_min
    hi = max if max is not _np._NoValue else a_max
    lo = None if lo is _np._NoValue else lo
    hi = None if hi is _np._NoValue else hi
    return _array(a).clip(lo, hi)


@implements(_np.round, "around")
def _round(a, decimals=0, out=None):
    _no_out("round", out)
    return _array(a).round(decimals)


@implements(_np.transpose)
def _transpose(a, axes=None):
    x = _array(a)
    return x.transpose() if axes is None else x.transpose(tuple(axes))


@implements("permute_dims")
def _permute_dims(a, /, axes=None):
    return _transpose(a, axes)


@implements("matrix_transpose")
def _matrix_transpose(x, /):
    return _array(x).mT


@implements(_np.reshape)
def _reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise ValueError(f"tessera reshapes in C order only; order={order!r} is not supported")
    shape = newshape if shape is None else shape
    if isinstance(shape, int):
        shape = (shape,)
    return _array(a).reshape(tuple(shape))


@implements(_np.ravel)
def _ravel(a, order="C"):
    if order != "C":
        raise ValueError(f"tessera ravels in C order only; order={order!r} is not supported")
    return _array(a).reshape(-1)


@implements(_np.squeeze)
def _squeeze(a, axis=None):
    return _array(a).squeeze(axis)


@implements(_np.expand_dims)
def _expand_dims(a, axis):
    x = _array(a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    norm = sorted(ax % ndim if -ndim <= ax < ndim else _axis_error(ax, ndim) for ax in axes)
    if len(set(norm)) != len(norm):
        raise ValueError("repeated axis in expand_dims")
    for ax in norm:
        x = x[(slice(None),) * ax + (None,)]
    return x


def _axis_error(axis, ndim):
    raise _np.exceptions.AxisError(axis, ndim)


@implements(_np.swapaxes)
def _swapaxes(a, axis1, axis2):
    x = _array(a)
    n = x.ndim
    perm = list(range(n))
    i, j = (axis1 if axis1 >= 0 else axis1 + n), (axis2 if axis2 >= 0 else axis2 + n)
    if not (0 <= i < n) or not (0 <= j < n):
        _axis_error(axis1 if not (0 <= i < n) else axis2, n)
    perm[i], perm[j] = perm[j], perm[i]
    return x.transpose(tuple(perm))


@implements(_np.moveaxis)
def _moveaxis(a, source, destination):
    x = _array(a)
    n = x.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    src = [s if s >= 0 else s + n for s in src]
    dst = [d if d >= 0 else d + n for d in dst]
    for ax in src + dst:
        if not 0 <= ax < n:
            _axis_error(ax, n)
    order = [ax for ax in range(n) if ax not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.transpose(tuple(order))


@implements(_np.dot)
def _dot(a, b, out=None):
    _no_out("dot", out)
    x = _first_array((a, b))
    return _array(a, x) @ _array(b, x)


@implements(_np.isclose)
def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    like = _first_array((a, b))
    x, y = _array(a, like), _array(b, like)
    close = abs(x - y) <= (atol + rtol * abs(y))
    # Equal infinities are close; `inf - inf` is NaN above.
    close = close | (x == y)
    if equal_nan:
        from . import isnan

        close = close | (isnan(x) & isnan(y))
    return close


@implements(_np.allclose)
def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(_isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan).all().compute())


@implements(_np.array_equal)
def _array_equal(a1, a2, equal_nan=False):
    like = _first_array((a1, a2))
    x, y = _array(a1, like), _array(a2, like)
    if tuple(x.shape) != tuple(y.shape):
        return False
    return bool(_isclose(x, y, rtol=0.0, atol=0.0, equal_nan=equal_nan).all().compute())


def _like(name, fill):
    def impl(a, dtype=None, order="K", subok=True, shape=None, *, device=None, fill_value=None):
        x = _array(a)
        shape = tuple(x.shape) if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
        dtype = x.dtype if dtype is None else dtype
        chunks = x.chunks if shape == tuple(x.shape) else None
        value = fill_value if fill is None else fill
        return _tessera.full(shape, value, dtype=dtype, chunks=chunks, backend=x.backend)

    impl.__name__ = name
    return impl


HANDLED[_np.zeros_like] = _like("zeros_like", 0)
HANDLED[_np.ones_like] = _like("ones_like", 1)
HANDLED[_np.empty_like] = _like("empty_like", 0)


@implements(_np.full_like)
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like("full_like", None)(a, dtype, order, subok, shape, fill_value=fill_value)


@implements(_np.shape)
def _shape(a):
    return tuple(_array(a).shape)


@implements(_np.ndim)
def _ndim(a):
    return _array(a).ndim


@implements(_np.size)
def _size(a, axis=None):
    x = _array(a)
    return x.size if axis is None else x.shape[axis]


@implements("astype")
def _astype(x, dtype, /, *, copy=True, device=None):
    return _array(x).astype(dtype)


@implements(_np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    if ord not in (None, 2, "fro") or keepdims:
        raise TypeError("numpy.linalg.norm on tessera arrays takes the 2-norm or Frobenius norm without keepdims")
    return _tessera.norm(_array(x), axis=axis)


@implements(_np.linalg.qr)
def _qr(a, mode="reduced"):
    if mode != "reduced":
        raise ValueError(f"tessera's qr is the reduced factorisation (TSQR); mode={mode!r} is not supported")
    return _tessera.qr(_array(a))


@implements(_np.linalg.svd)
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    if full_matrices or not compute_uv or hermitian:
        raise ValueError("tessera's svd is the thin factorisation: call it with full_matrices=False")
    return _tessera.svd(_array(a))


@implements(_np.linalg.lstsq)
def _lstsq(a, b, rcond=None):
    # The engine solves through a TSQR of ``a``; ``rcond`` tunes NumPy's SVD rank cutoff,
    # which a full-rank tall system (what the engine solves) does not reach.
    del rcond
    like = _first_array((a, b))
    return _tessera.lstsq(_array(a, like), _array(b, like))


# NEP 13: the ufunc methods and keywords the extension's fast path does not take.
_REDUCE = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}
_ACCUMULATE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}


def array_ufunc(ufunc, method, inputs, kwargs):
    """``Array.__array_ufunc__`` for what its plain-call path leaves: ``out`` (``None``
    only: a lazy array is never written into), ``dtype``, ``where=True``, and the methods
    ``reduce``, ``accumulate`` and ``outer``."""
    kwargs = dict(kwargs or {})
    out = kwargs.pop("out", None)
    if out is not None and not (isinstance(out, tuple) and all(o is None for o in out)):
        return NotImplemented
    where = kwargs.pop("where", True)
    if where is not True:
        return NotImplemented
    dtype = kwargs.pop("dtype", None)
    name = ufunc.__name__
    if method == "__call__":
        if kwargs.pop("casting", "same_kind") != "same_kind" or kwargs:
            return NotImplemented
        like = _first_array(inputs)
        if name == "matmul" and len(inputs) == 2:
            r = _array(inputs[0], like) @ _array(inputs[1], like)
            return _cast(r, dtype)
        if name in COMPOSED_UFUNCS:
            r = COMPOSED_UFUNCS[name](*[_array(i, like) for i in inputs])
            return tuple(_cast(o, dtype) for o in r) if isinstance(r, tuple) else _cast(r, dtype)
        if dtype is None:
            # The extension's fast path has tried this call already: a ufunc tessera
            # does not have.
            return NotImplemented
        args = [_cast(_array(i, like), dtype) if isinstance(i, Array) or dtype is not None else i for i in inputs]
        r = ufunc(*args)
        return _cast(r, dtype) if isinstance(r, Array) else r
    if method == "reduce" and name in _REDUCE and len(inputs) == 1:
        axis = kwargs.pop("axis", 0)
        keepdims = kwargs.pop("keepdims", False)
        if kwargs.pop("initial", _np._NoValue) is not _np._NoValue or kwargs:
            return NotImplemented
        x = _array(inputs[0])
        if dtype is not None and _REDUCE[name] in ("sum", "prod"):
            x = _cast(x, dtype)
        return getattr(x, _REDUCE[name])(axis=axis, keepdims=keepdims)
    if method == "accumulate" and name in _ACCUMULATE and len(inputs) == 1:
        axis = kwargs.pop("axis", 0)
        if kwargs:
            return NotImplemented
        x = _array(inputs[0])
        return _tessera.cumulative(x, _ACCUMULATE[name], axis, dtype)
    if method == "outer" and len(inputs) == 2 and not kwargs:
        like = _first_array(inputs)
        a, b = _array(inputs[0], like), _array(inputs[1], like)
        a = a[(...,) + (None,) * b.ndim]
        return ufunc(_cast(a, dtype), _cast(b, dtype))
    return NotImplemented
