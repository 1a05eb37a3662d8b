"""NumPy functions (and ufuncs) that are exact compositions of tessera's lazy ops, for
NumPy's dispatch (``np.roll(x, 3)`` on a tessera array builds a plan) and for
``tessera.array``'s Dask names.

Each follows NumPy's definition step for step (``nan_to_num``'s replacements, ``sinc``'s
guarded zero, ``modf``'s signed fractions, ``rot90``'s flips and transposes), so the
answers are NumPy's; what needs data-dependent shapes (``nonzero``, ``unique``) or a
kernel tessera lacks is not here.

>>> import numpy as np, tessera as ts
>>> x = ts.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
>>> np.roll(x, 1, axis=1).compute()[0].tolist()
[3.0, 0.0, 1.0, 2.0]
>>> np.trace(x).compute()
np.float64(15.0)
>>> np.fmax(x, np.nan).compute()[1].tolist()
[4.0, 5.0, 6.0, 7.0]
"""

from __future__ import annotations

import numpy as _np

from . import _tessera
from . import array_api as _xp
from ._numpy_functions import COMPOSED_UFUNCS, _array, _axis_error, _first_array, implements
from ._tessera import Array

__all__: list = []


def _composes(np_ufunc):
    """Registers the decorated function as ``np_ufunc`` on tessera arrays."""

    def register(impl):
        COMPOSED_UFUNCS[np_ufunc.__name__] = impl
        return impl

    return register


def _axis(axis, ndim):
    if not -ndim <= axis < ndim:
        _axis_error(axis, ndim)
    return axis % ndim


# Shapes and joins.


def _atleast(arys, ndim, place):
    out = []
    for a in arys:
        x = _array(a)
        if x.ndim < ndim:
            x = x.reshape(place(tuple(x.shape)))
        out.append(x)
    return out[0] if len(out) == 1 else tuple(out)


@implements(_np.atleast_1d)
def _atleast_1d(*arys):
    return _atleast(arys, 1, lambda s: (1,))


@implements(_np.atleast_2d)
def _atleast_2d(*arys):
    return _atleast(arys, 2, lambda s: (1,) + s if len(s) == 1 else (1, 1))


@implements(_np.atleast_3d)
def _atleast_3d(*arys):
    def place(s):
        return {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)]

    return _atleast(arys, 3, place)


def _joined(tup, at_least, axis_of, dtype):
    parts = [at_least(a) for a in tup]
    if dtype is not None:
        parts = [p.astype(dtype) for p in parts]
    return _tessera.concatenate(parts, axis=axis_of(parts[0]))


@implements(_np.vstack)
def _vstack(tup, *, dtype=None, casting="same_kind"):
    return _joined(tup, _atleast_2d, lambda p: 0, dtype)


@implements(_np.hstack)
def _hstack(tup, *, dtype=None, casting="same_kind"):
    return _joined(tup, _atleast_1d, lambda p: 0 if p.ndim == 1 else 1, dtype)


@implements(_np.dstack)
def _dstack(tup):
    return _joined(tup, _atleast_3d, lambda p: 2, None)


@implements(_np.append)
def _append(arr, values, axis=None):
    like = _first_array((arr, values))
    a, v = _array(arr, like), _array(values, like)
    if axis is None:
        return _tessera.concatenate([a.reshape(-1), v.reshape(-1)], axis=0)
    return _tessera.concatenate([a, v], axis=axis)


def _index(ndim, axis, s):
    key = [slice(None)] * ndim
    key[axis] = s
    return tuple(key)


@implements(_np.roll)
def _roll(a, shift, axis=None):
    x = _array(a)
    if axis is None:
        return _roll(x.reshape(-1), shift, 0).reshape(tuple(x.shape))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, int) else tuple(shift)
    if len(shifts) != len(axes):
        shifts, axes = _np.broadcast_arrays(shifts, axes)
    total = {}
    for s, ax in zip(shifts, axes):
        ax = _axis(int(ax), x.ndim)
        total[ax] = total.get(ax, 0) + int(s)
    for ax, s in total.items():
        n = x.shape[ax]
        s = s % n if n else 0
        if s:
            x = _tessera.concatenate(
                [x[_index(x.ndim, ax, slice(n - s, n))], x[_index(x.ndim, ax, slice(0, n - s))]], axis=ax
            )
    return x


def _pairs(value, ndim, what):
    """NumPy's per-axis ``(before, after)`` pairs from a scalar, a pair or one pair per axis."""
    a = _np.asarray(value)
    if a.ndim > 2 or (a.ndim == 2 and a.shape[1] != 2) or (a.ndim == 1 and a.shape[0] not in (1, 2)):
        raise ValueError(f"pad: {what} must be a scalar, a (before, after) pair or one pair per axis")
    try:
        return _np.broadcast_to(a.reshape(-1, 2) if a.ndim == 2 else a, (ndim, 2)).tolist()
    except ValueError:
        raise ValueError(f"pad: {what} of shape {a.shape} for an array of {ndim} axes") from None


def _periodic(n, lo, hi, mode):
    """The source position of every padded position along an axis of length ``n``: the
    axis extended periodically (``wrap``: period ``n``; ``symmetric``: mirrored about the
    edges, period ``2n``; ``reflect``: mirrored about the edge elements, period ``2n - 2``),
    as NumPy's pad gives for any width."""
    i = _np.arange(-lo, n + hi)
    if mode == "wrap":
        return i % n
    period = 2 * n if mode == "symmetric" else 2 * n - 2
    if period == 0:  # reflect of one element: the element repeated
        return _np.zeros_like(i)
    k = i % period
    return _np.where(k < n, k, period - k - (1 if mode == "symmetric" else 0))


@implements(_np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    x = _array(array)
    if callable(mode) or mode not in ("constant", "edge", "reflect", "symmetric", "wrap", "empty"):
        return NotImplemented  # NumPy then raises TypeError naming np.pad
    if kwargs.pop("reflect_type", "even") != "even":
        return NotImplemented
    constants = _pairs(kwargs.pop("constant_values", 0), x.ndim, "constant_values")
    if kwargs:
        raise TypeError(f"pad: unexpected keyword(s) {sorted(kwargs)} for mode {mode!r}")
    widths = _pairs(pad_width, x.ndim, "pad_width")
    for axis, ((lo, hi), (c_lo, c_hi)) in enumerate(zip(widths, constants)):
        lo, hi, n = int(lo), int(hi), x.shape[axis]
        if lo < 0 or hi < 0:
            raise ValueError("index can't contain negative values")
        if not (lo or hi):
            continue
        if mode in ("constant", "empty"):
            # ``empty`` leaves the padding undefined in NumPy; zeros are one such value.
            if mode == "empty":
                c_lo = c_hi = 0
            sides = [(lo, c_lo, 0), (hi, c_hi, 2)]
            parts = [x]
            for width, value, at in sides:
                if width:
                    shape = tuple(width if k == axis else s for k, s in enumerate(x.shape))
                    parts.insert(at and len(parts), _tessera.full(shape, value, dtype=x.dtype))
            x = _tessera.concatenate(parts, axis=axis)
            continue
        if n == 0:
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
        positions = _np.clip(_np.arange(-lo, n + hi), 0, n - 1) if mode == "edge" else _periodic(n, lo, hi, mode)
        x = _tessera.take(x, _tessera.from_array(positions.astype(_np.int64)), axis=axis)
    return x


def _windows_along(x, ax, w):
    """The length-``w`` windows of ``x`` along ``ax`` as a new last axis, block by block:
    each block's windows need the ``w - 1`` elements after it, which one ``take`` gathers
    for every block at once; a task joins them to its block and takes NumPy's windows (a
    view). The blocks stay the input's, however small (a padded edge), so no block is
    rechunked; the windows that start past the end are cut off."""
    n = x.shape[ax]
    count = n - w + 1
    lifted = x.reshape(tuple(x.shape) + (1,))
    if w == 1:
        return lifted
    ends = _np.cumsum(x.chunks[ax])
    after = _np.minimum(ends[:, None] + _np.arange(w - 1)[None, :], n - 1).ravel()
    tail = _tessera.take(x, _tessera.from_array(after.astype(_np.int64)), axis=ax)
    tail = tail.rechunk(tuple((w - 1,) * len(ends) if k == ax else c for k, c in enumerate(x.chunks)))
    tail = tail.reshape(tuple(tail.shape) + (1,))

    def windows(block, following):
        b, t = block[..., 0], following[..., 0]
        joined = _np.concatenate([b, t], axis=ax)
        return _np.lib.stride_tricks.sliding_window_view(joined, w, axis=ax)

    out = _tessera.map_blocks(windows, lifted, tail, dtype=x.dtype, chunks=tuple(x.chunks) + ((w,),))
    return out[_index(out.ndim, ax, slice(0, count))]


@implements(_np.lib.stride_tricks.sliding_window_view)
def _sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    if writeable:
        raise ValueError("sliding_window_view(writeable=True): tessera arrays are immutable plans")
    a = _array(x)
    windows = (window_shape,) if _np.isscalar(window_shape) else tuple(window_shape)
    if axis is None:
        axes = tuple(range(a.ndim))
        if len(windows) != a.ndim:
            raise ValueError(f"Since axis is `None`, must provide window_shape for all dimensions of `x`; "
                             f"got {len(windows)} window_shape elements and `x.ndim` is {a.ndim}.")
    else:
        axes = (axis,) if _np.isscalar(axis) else tuple(axis)
        if len(windows) != len(axes):
            raise ValueError(f"Must provide matching length window_shape and axis; got {len(windows)} "
                             f"window_shape elements and {len(axes)} axes elements.")
    out = a
    for w, ax in zip(windows, axes):
        ax, w = _axis(int(ax), a.ndim), int(w)
        if w < 0:
            raise ValueError("`window_shape` cannot contain negative values")
        if a.shape[ax] < w:
            raise ValueError("window shape cannot be larger than input array shape")
        if w == 0:
            shape = tuple(a.shape[ax] + 1 if k == ax else s for k, s in enumerate(out.shape)) + (0,)
            out = _tessera.zeros(shape, dtype=out.dtype)
            continue
        # Windows of earlier axes are trailing axes now; ``ax`` still names this one.
        out = _windows_along(out, ax, w)
    return out


def _flip_axis(np_func, axis):
    """``np_func`` (``flipud``, ``fliplr``): ``x`` reversed along ``axis``, which it must have."""

    @implements(np_func)
    def apply(m):
        x = _array(m)
        if x.ndim <= axis:
            raise ValueError(f"Input must be >= {axis + 1}-d.")
        return _xp.flip(x, axis=axis)

    apply.__name__ = apply.__qualname__ = f"_{np_func.__name__}"
    return apply


_flip_axis(_np.flipud, 0)
_flip_axis(_np.fliplr, 1)


@implements(_np.rot90)
def _rot90(m, k=1, axes=(0, 1)):
    x = _array(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == x.ndim:
        raise ValueError("Axes must be different.")
    if not (-x.ndim <= axes[0] < x.ndim and -x.ndim <= axes[1] < x.ndim):
        raise ValueError(f"Axes={axes} out of range for array of ndim={x.ndim}.")
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return _xp.flip(_xp.flip(x, axis=axes[0]), axis=axes[1])
    perm = list(range(x.ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return _xp.flip(x, axis=axes[1]).transpose(tuple(perm))
    return _xp.flip(x.transpose(tuple(perm)), axis=axes[1])


def _take_positions(a, axis, positions):
    """``a`` (flattened when ``axis`` is ``None``) at ``positions(arange(n))`` along the
    axis: NumPy computes which positions, tessera reads only the chunks they touch."""
    x = _array(a)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim)
    return _tessera.take(x, positions(_np.arange(x.shape[axis])), axis=axis)


@implements(_np.repeat)
def _repeat(a, repeats, axis=None):
    return _take_positions(a, axis, lambda n: _np.repeat(n, repeats))


@implements(_np.tile)
def _tile(A, reps):
    x = _array(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    if len(reps) > x.ndim:
        x = x.reshape((1,) * (len(reps) - x.ndim) + tuple(x.shape))
    reps = (1,) * (x.ndim - len(reps)) + reps
    for ax, r in enumerate(reps):
        if r != 1:
            x = _tessera.take(x, _np.tile(_np.arange(x.shape[ax]), r), axis=ax)
    return x


@implements(_np.delete)
def _delete(arr, obj, axis=None):
    return _take_positions(arr, axis, lambda n: _np.delete(n, obj))


# Products and diagonals.


@implements(_np.outer)
def _outer(a, b, out=None):
    if out is not None:
        raise TypeError("outer(out=...) is not supported: tessera arrays are lazy")
    like = _first_array((a, b))
    return _array(a, like).reshape(-1)[:, None] * _array(b, like).reshape(-1)[None, :]


@implements(_np.vdot)
def _vdot(a, b):
    like = _first_array((a, b))
    x, y = _array(a, like).reshape(-1), _array(b, like).reshape(-1)
    if x.shape != y.shape:
        raise ValueError("cannot reshape array of size %d into shape (%d,)" % (x.shape[0], y.shape[0]))
    return (x * y).sum()


@implements(_np.tensordot)
def _tensordot(a, b, axes=2):
    like = _first_array((a, b))
    x, y = _array(a, like), _array(b, like)
    if isinstance(axes, int):
        ax_a, ax_b = list(range(x.ndim - axes, x.ndim)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    if len(ax_a) != len(ax_b):
        raise ValueError("shape-mismatch for sum")
    ax_a = [_axis(i, x.ndim) for i in ax_a]
    ax_b = [_axis(i, y.ndim) for i in ax_b]
    for i, j in zip(ax_a, ax_b):
        if x.shape[i] != y.shape[j]:
            raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(x.ndim) if i not in ax_a]
    free_b = [j for j in range(y.ndim) if j not in ax_b]
    k = int(_np.prod([x.shape[i] for i in ax_a]))
    xa = x.transpose(tuple(free_a + ax_a)).reshape((-1, k))
    yb = y.transpose(tuple(ax_b + free_b)).reshape((k, -1))
    shape = tuple(x.shape[i] for i in free_a) + tuple(y.shape[j] for j in free_b)
    return (xa @ yb).reshape(shape)


def _diagonal_mask(x, offset, axis1, axis2):
    """True on the ``offset`` diagonal of the (``axis1``, ``axis2``) planes, shaped to
    broadcast against ``x``."""
    n1, n2 = x.shape[axis1], x.shape[axis2]
    rows = _tessera.arange(n1, dtype="int64", chunks=(x.chunks[axis1],), backend=x.backend)
    cols = _tessera.arange(n2, dtype="int64", chunks=(x.chunks[axis2],), backend=x.backend)
    shape1 = [1] * x.ndim
    shape1[axis1] = n1
    shape2 = [1] * x.ndim
    shape2[axis2] = n2
    return cols.reshape(tuple(shape2)) - rows.reshape(tuple(shape1)) == offset


@implements(_np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    x = _array(a)
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1, axis2 = _axis(axis1, x.ndim), _axis(axis2, x.ndim)
    if axis1 == axis2:
        raise ValueError("axis1 and axis2 cannot be the same")
    n1, n2 = x.shape[axis1], x.shape[axis2]
    rest = tuple(n for k, n in enumerate(x.shape) if k not in (axis1, axis2))
    lo, hi = max(0, -offset), max(max(0, -offset), min(n1, n2 - offset))
    if hi <= lo or n2 == 0:
        return _tessera.zeros(rest + (0,), dtype=x.dtype, backend=x.backend)
    # Each row of the plane holds at most one diagonal element: the largest of it and
    # values below every element picks it exactly (its sign of zero and NaN kept).
    if x.dtype.kind == "f":
        floor = _np.asarray(-_np.inf, dtype=x.dtype)
    elif x.dtype.kind == "b":
        floor = _np.asarray(False)
    else:
        floor = _np.asarray(_np.iinfo(x.dtype).min, dtype=x.dtype)
    picked = _tessera.where(_diagonal_mask(x, offset, axis1, axis2), x, floor).max(axis=axis2)
    a1 = axis1 - 1 if axis1 > axis2 else axis1  # axis1's place once axis2 is reduced away
    picked = picked[_index(picked.ndim, a1, slice(lo, hi))]
    return _np.moveaxis(picked, a1, -1)


@implements(_np.trace)
def _trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        raise TypeError("trace(out=...) is not supported: tessera arrays are lazy")
    return _np.sum(_diagonal(_array(a), offset, axis1, axis2), axis=-1, dtype=dtype)


@implements(_np.diag)
def _diag(v, k=0):
    x = _array(v)
    if x.ndim == 2:
        return _diagonal(x, k)
    if x.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = x.shape[0] + abs(k)
    pad = _tessera.zeros((abs(k),), dtype=x.dtype, backend=x.backend)
    by_row = x if k == 0 else _tessera.concatenate([x, pad] if k > 0 else [pad, x], axis=0)
    rows = _tessera.arange(n, dtype="int64", backend=x.backend)
    mask = rows[None, :] - rows[:, None] == k
    return _tessera.where(mask, by_row[:, None], _np.zeros((), dtype=x.dtype))


@implements(_np.meshgrid)
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    like = _first_array(xi)
    arrays = [_array(a, like).reshape(-1) for a in xi]
    ndim = len(arrays)
    shapes = []
    for i, a in enumerate(arrays):
        s = [1] * ndim
        s[i] = a.shape[0]
        shapes.append(s)
    if indexing == "xy" and ndim > 1:
        for s in shapes:
            s[0], s[1] = s[1], s[0]
    out = [a.reshape(tuple(s)) for a, s in zip(arrays, shapes)]
    if sparse:
        return tuple(out)
    full = tuple(max(s[i] for s in shapes) for i in range(ndim))
    return tuple(_tessera.broadcast_to(o, full) for o in out)


# Elementwise compositions.


def _is_float(x):
    return x.dtype.kind == "f"


@implements(_np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    a = _array(x)
    if not _is_float(a):
        return a
    info = _np.finfo(a.dtype)
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    out = _tessera.where(_np.isnan(a), _np.asarray(nan, dtype=a.dtype), a)
    out = _tessera.where(out == _np.inf, _np.asarray(big, dtype=a.dtype), out)
    return _tessera.where(out == -_np.inf, _np.asarray(small, dtype=a.dtype), out)


def _nan_scan(np_func, scan, identity):
    """``np_func`` (``nancumsum``): ``scan`` with NaN read as ``identity``, NumPy's
    definition."""
    name = np_func.__name__

    @implements(np_func)
    def apply(a, axis=None, dtype=None, out=None):
        if out is not None:
            raise TypeError(f"{name}(out=...) is not supported: tessera arrays are lazy")
        x = _array(a)
        if _is_float(x):
            x = _tessera.where(_np.isnan(x), _np.asarray(identity, dtype=x.dtype), x)
        return scan(x, axis=axis, dtype=dtype)

    apply.__name__ = apply.__qualname__ = f"_{name}"
    return apply


_nan_scan(_np.nancumsum, _np.cumsum, 0)
_nan_scan(_np.nancumprod, _np.cumprod, 1)


@implements(_np.ptp)
def _ptp(a, axis=None, out=None, keepdims=False):
    if out is not None:
        raise TypeError("ptp(out=...) is not supported: tessera arrays are lazy")
    x = _array(a)
    return x.max(axis=axis, keepdims=keepdims) - x.min(axis=axis, keepdims=keepdims)


@implements(_np.average)
def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    x = _array(a)
    if weights is None:
        avg = x.mean(axis=axis, keepdims=keepdims)
        scl = avg.dtype.type(_np.prod(x.shape) / max(_np.prod(avg.shape), 1))
        return (avg, scl) if returned else avg
    w = _array(weights, x)
    if w.shape != x.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.ndim != 1:
            raise TypeError("1D weights expected when shapes of a and weights differ.")
        ax = _axis(axis, x.ndim)
        if w.shape[0] != x.shape[ax]:
            raise ValueError("Length of weights not compatible with specified axis.")
        shape = [1] * x.ndim
        shape[ax] = w.shape[0]
        w = _tessera.broadcast_to(w.reshape(tuple(shape)), tuple(x.shape))
    kind = _np.result_type(x.dtype, w.dtype, _np.float64 if x.dtype.kind in "iub" else x.dtype)
    x, w = x.astype(kind), w.astype(kind)
    scl = w.sum(axis=axis, keepdims=keepdims)
    avg = (x * w).sum(axis=axis, keepdims=keepdims) / scl
    return (avg, scl) if returned else avg


@implements(_np.fix)
def _fix(x, out=None):
    if out is not None:
        raise TypeError("fix(out=...) is not supported: tessera arrays are lazy")
    a = _array(x)
    return _np.trunc(a) if _is_float(a) else a


@implements(_np.isneginf)
def _isneginf(x, out=None):
    a = _array(x)
    return a == -_np.inf if _is_float(a) else _tessera.zeros(a.shape, dtype=bool, chunks=a.chunks, backend=a.backend)


@implements(_np.isposinf)
def _isposinf(x, out=None):
    a = _array(x)
    return a == _np.inf if _is_float(a) else _tessera.zeros(a.shape, dtype=bool, chunks=a.chunks, backend=a.backend)


@implements(_np.iscomplex)
def _iscomplex(x):
    a = _array(x)  # tessera's dtypes are real
    return _tessera.zeros(a.shape, dtype=bool, chunks=a.chunks, backend=a.backend)


@implements(_np.isreal)
def _isreal(x):
    a = _array(x)
    return _tessera.ones(a.shape, dtype=bool, chunks=a.chunks, backend=a.backend)


@implements(_np.real)
def _real(val):
    return _array(val)


@implements(_np.imag)
def _imag(val):
    a = _array(val)
    return _tessera.zeros(a.shape, dtype=a.dtype, chunks=a.chunks, backend=a.backend)


@implements(_np.angle)
def _angle(z, deg=False):
    a = _array(z)
    a = a if _is_float(a) else a.astype("float64")
    out = _np.arctan2(_tessera.zeros(a.shape, dtype=a.dtype, chunks=a.chunks, backend=a.backend), a)
    return out * (180.0 / _np.pi) if deg else out


@implements(_np.sinc)
def _sinc(x):
    a = _array(x)
    a = a if _is_float(a) else a.astype("float64")
    y = _np.pi * _tessera.where(a == 0, _np.asarray(1.0e-20, dtype=a.dtype), a)
    return _np.sin(y) / y


def _gradient_axis(f, axis, spacing, edge_order):
    """``np.gradient`` of ``f`` along one axis: second-order central differences inside,
    first- or second-order one-sided ones at the two ends, for a uniform ``spacing`` (a
    scalar) or the coordinates along the axis (NumPy's formulas for uneven steps)."""
    n = f.shape[axis]
    if n < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, "
                         "at least (edge_order + 1) elements are required.")
    at = lambda s: f[_index(f.ndim, axis, s)]  # noqa: E731
    shape = [1] * f.ndim

    def along(c):
        c = _np.asarray(c, dtype=_np.float64)
        if c.ndim == 0:
            return float(c)
        shape[axis] = c.shape[0]
        return _tessera.from_array(c.reshape(shape))

    if _np.ndim(spacing) == 0:
        h = float(spacing)
        inner = (at(slice(2, None)) - at(slice(None, -2))) / (2.0 * h)
        if edge_order == 1:
            first = (at(slice(1, 2)) - at(slice(0, 1))) / h
            last = (at(slice(n - 1, n)) - at(slice(n - 2, n - 1))) / h
        else:
            first = (-1.5 * at(slice(0, 1)) + 2.0 * at(slice(1, 2)) - 0.5 * at(slice(2, 3))) / h
            last = (0.5 * at(slice(n - 3, n - 2)) - 2.0 * at(slice(n - 2, n - 1)) + 1.5 * at(slice(n - 1, n))) / h
    else:
        x = _np.asarray(spacing, dtype=_np.float64)
        if x.ndim != 1 or x.shape[0] != n:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        dx = _np.diff(x)
        d1, d2 = dx[:-1], dx[1:]
        a, b, c = -d2 / (d1 * (d1 + d2)), (d2 - d1) / (d1 * d2), d1 / (d2 * (d1 + d2))
        inner = along(a) * at(slice(None, -2)) + along(b) * at(slice(1, -1)) + along(c) * at(slice(2, None))
        if edge_order == 1:
            first = (at(slice(1, 2)) - at(slice(0, 1))) / dx[0]
            last = (at(slice(n - 1, n)) - at(slice(n - 2, n - 1))) / dx[-1]
        else:
            d1, d2 = dx[0], dx[1]
            a, b, c = -(2 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
            first = a * at(slice(0, 1)) + b * at(slice(1, 2)) + c * at(slice(2, 3))
            d1, d2 = dx[-2], dx[-1]
            a, b, c = d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2 * d2 + d1) / (d2 * (d1 + d2))
            last = a * at(slice(n - 3, n - 2)) + b * at(slice(n - 2, n - 1)) + c * at(slice(n - 1, n))
    parts = [first, inner, last] if n > 2 else [first, last]
    # NumPy writes every piece into an array of the input's float dtype.
    return _tessera.concatenate([p.astype(f.dtype) for p in parts], axis=axis).rechunk(f.chunks)


@implements(_np.gradient)
def _gradient(f, *varargs, axis=None, edge_order=1):
    x = _array(f)
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    axes = tuple(range(x.ndim)) if axis is None else ((axis,) if _np.isscalar(axis) else tuple(axis))
    axes = tuple(_axis(int(a), x.ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    if not varargs:
        spacings = [1.0] * len(axes)
    elif len(varargs) == 1 and _np.ndim(varargs[0]) == 0:
        spacings = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        # Spacings are scalars or 1-d coordinates (xarray passes NumPy's); a tessera
        # coordinate is computed, as the step coefficients are NumPy arrays.
        spacings = [v.compute() if isinstance(v, Array) else _np.asarray(v) for v in varargs]
    else:
        raise TypeError("invalid number of arguments")
    if x.dtype.kind != "f":
        x = x.astype(_np.float64)
    out = [_gradient_axis(x, a, h, edge_order) for a, h in zip(axes, spacings)]
    return out[0] if len(out) == 1 else tuple(out)


@implements(_np.ediff1d)
def _ediff1d(ary, to_end=None, to_begin=None):
    x = _array(ary).reshape(-1)
    parts = []
    if to_begin is not None:
        parts.append(_array(_np.asarray(to_begin, dtype=x.dtype).reshape(-1), x))
    parts.append(x[1:] - x[:-1])
    if to_end is not None:
        parts.append(_array(_np.asarray(to_end, dtype=x.dtype).reshape(-1), x))
    return parts[0] if len(parts) == 1 else _tessera.concatenate(parts, axis=0)


@implements(_np.select)
def _select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError("select with an empty condition list is not possible")
    like = _first_array(list(condlist) + list(choicelist))
    choices = [_array(c, like) if not _np.isscalar(c) else c for c in choicelist]
    kinds = [c.dtype if isinstance(c, Array) else c for c in choices] + [default]
    dtype = _np.result_type(*kinds)
    shape = _np.broadcast_shapes(*[tuple(_array(c, like).shape) for c in condlist],
                                 *[tuple(c.shape) for c in choices if isinstance(c, Array)])
    out = _tessera.broadcast_to(_array(_np.asarray(default, dtype=dtype), like), shape)
    for cond, choice in reversed(list(zip(condlist, choices))):
        c = _array(cond, like)
        if c.dtype != bool:
            raise TypeError(f"invalid entry in condlist: should be boolean ndarray, got {c.dtype}")
        value = choice.astype(dtype) if isinstance(choice, Array) else _np.asarray(choice, dtype=dtype)
        out = _tessera.where(c, value, out)
    return out


@implements(_np.digitize)
def _digitize(x, bins, right=False):
    b = _np.asarray(bins)
    if b.ndim != 1:
        raise ValueError("object too deep for desired array")
    a = _array(x)
    if len(b) > 1 and b[0] > b[-1]:
        flipped = _tessera.from_array(b[::-1].copy(), backend=a.backend)
        side = "left" if right else "right"
        return len(b) - _tessera.searchsorted(flipped, a, side=side)
    side = "left" if right else "right"
    return _tessera.searchsorted(_tessera.from_array(b, backend=a.backend), a, side=side)


@implements(_np.apply_along_axis)
def _apply_along_axis(func1d, axis, arr, *args, **kwargs):
    from . import array as _da

    x = _array(arr)
    axis = _axis(axis, x.ndim)
    probe = _np.asarray(func1d(_np.ones(x.shape[axis], dtype=x.dtype), *args, **kwargs))
    if probe.ndim > 1:
        raise ValueError("apply_along_axis here takes a func1d that returns a scalar or a 1-d array")
    x = x.rechunk(tuple(-1 if k == axis else c for k, c in enumerate(x.chunks)))

    def block(b):
        return _np.apply_along_axis(func1d, axis, b, *args, **kwargs).astype(probe.dtype, copy=False)

    if probe.ndim == 0:
        return _da.map_blocks(block, x, drop_axis=axis, dtype=probe.dtype)
    chunks = tuple((probe.shape[0],) if k == axis else c for k, c in enumerate(x.chunks))
    return _tessera.map_blocks(block, x, dtype=probe.dtype, chunks=chunks)


# Ufuncs NumPy defines that are exact compositions of tessera's.


@_composes(_np.fmax)
def _fmax(a, b):
    return _tessera.where(_np.isnan(b), a, _tessera.where(_np.isnan(a), b, _np.maximum(a, b)))


@_composes(_np.fmin)
def _fmin(a, b):
    return _tessera.where(_np.isnan(b), a, _tessera.where(_np.isnan(a), b, _np.minimum(a, b)))


@_composes(_np.fabs)
def _fabs(a):
    return _np.absolute(a if _is_float(a) else a.astype("float64"))


def _scaled(factor):
    def apply(a):
        return (a if _is_float(a) else a.astype("float64")) * factor

    return apply


for _u, _f in ((_np.deg2rad, _np.pi / 180.0), (_np.radians, _np.pi / 180.0),
               (_np.rad2deg, 180.0 / _np.pi), (_np.degrees, 180.0 / _np.pi)):
    _composes(_u)(_scaled(_f))


@_composes(_np.modf)
def _modf(a):
    a = a if _is_float(a) else a.astype("float64")
    whole = _np.trunc(a)
    frac = _tessera.where(_xp.isinf(a), _np.zeros((), dtype=a.dtype), a - whole)
    return _np.copysign(frac, a), whole


@_composes(_np.divmod)
def _divmod(a, b):
    return _np.floor_divide(a, b), _np.remainder(a, b)


@_composes(_np.conjugate)
def _conjugate(a):
    return a  # tessera's dtypes are real


# Contractions and counts, block by block.


def _einsum_letters(subscripts, operands):
    """``subscripts`` as explicit letter lists: one per operand and the output's, with
    ``...`` spelled out as letters the subscripts do not use (right-aligned across
    operands, as NumPy broadcasts them)."""
    import string

    sub = subscripts.replace(" ", "")
    ins, arrow, out = sub.partition("->")
    ins = ins.split(",")
    if len(ins) != len(operands):
        raise ValueError(f"einsum: {len(ins)} operands in the subscripts, {len(operands)} given")
    free = [c for c in string.ascii_letters if c not in sub]
    ell = 0
    for term, x in zip(ins, operands):
        if "..." in term:
            ell = max(ell, x.ndim - (len(term) - 3))
    dots = free[:ell]
    lists = []
    for term, x in zip(ins, operands):
        if "..." in term:
            head, _, tail = term.partition("...")
            n = x.ndim - len(head) - len(tail)
            letters = list(head) + dots[ell - n:] + list(tail)
        else:
            letters = list(term)
        if len(letters) != x.ndim:
            raise ValueError(f"einsum: operand {term!r} has {x.ndim} axes")
        lists.append(letters)
    if arrow:
        out = list(out.replace("...", "".join(dots)))
    else:
        counts = {}
        for letters in lists:
            for c in letters:
                counts[c] = counts.get(c, 0) + 1
        out = dots + sorted(c for c, k in counts.items() if k == 1 and c not in dots)
    return lists, out


def _einsum_by_broadcast(xs, lists, letters, out_letters):
    """An einsum whose largest operand has every letter (``"tyx,y->t"``: a weighted
    sum, xarray's ``dot``): the operands broadcast against it, multiplied and summed
    over the contracted letters, in one fused pass that never makes the broadcast
    operands whole; the product is no larger than that operand, so nothing is lost
    against NumPy's contraction."""
    from ._blockwise import lift

    product = None
    for x, own in zip(xs, lists):
        y, _ = lift(x, own, letters)
        product = y if product is None else product * y
    contracted = tuple(k for k, l in enumerate(letters) if l not in out_letters)
    kept = [l for l in letters if l in out_letters]
    out = product.sum(axis=contracted) if contracted else product
    perm = tuple(kept.index(l) for l in out_letters)
    return out.transpose(perm) if perm != tuple(range(len(perm))) else out


@implements(_np.einsum)
def _einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """``np.einsum`` block by block: each output block is ``np.einsum`` of the input
    blocks it needs, contracted letters joined into one block; a letter repeated in one
    operand (a diagonal) is taken with ``diagonal`` first."""
    from ._blockwise import blockwise

    if out is not None:
        raise TypeError("einsum(out=...) is not supported: tessera arrays are lazy")
    if not isinstance(subscripts, str):
        raise TypeError("einsum here takes the subscripts as a string ('ij,jk->ik')")
    like = _first_array(operands)
    xs = [_array(o, like) for o in operands]
    lists, out_letters = _einsum_letters(subscripts, xs)
    for k, letters in enumerate(lists):
        while len(set(letters)) != len(letters):
            c = next(c for c in letters if letters.count(c) > 1)
            p = letters.index(c)
            q = letters.index(c, p + 1)
            xs[k] = _diagonal(xs[k], 0, p, q)
            letters = [l for j, l in enumerate(letters) if j not in (p, q)] + [c]
        lists[k] = letters
    explicit = ",".join("".join(l) for l in lists) + "->" + "".join(out_letters)
    kind = dtype if dtype is not None else _np.result_type(*[x.dtype for x in xs])
    whole = max(range(len(xs)), key=lambda k: len(lists[k]))
    letters = lists[whole]
    if (dtype is None and _np.dtype(kind).kind == "f" and len(xs) > 1
            and all(set(l) <= set(letters) for l in lists)):
        return _einsum_by_broadcast(xs, lists, letters, out_letters)

    def block(*bs):
        return _np.einsum(explicit, *bs, dtype=dtype, casting=casting, optimize=optimize)

    pairs = [v for x, letters in zip(xs, lists) for v in (x, tuple(letters))]
    return blockwise(block, tuple(out_letters), *pairs, dtype=_np.dtype(kind), concatenate=True)


@implements(_np.histogram)
def _histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 - NumPy's name
    """``np.histogram`` from per-block counts: each block is counted by NumPy against the
    same edges, and the counts summed. Without ``range`` the edges come from the data's
    min and max, lazily (the edges are then a lazy array too)."""
    from ._blockwise import blockwise

    x = _array(a).reshape(-1)
    w = None if weights is None else _array(weights, x).reshape(-1)
    if w is not None and w.shape != x.shape:
        raise ValueError("weights should have the same shape as a.")
    explicit = not _np.isscalar(bins) and _np.ndim(bins) == 1
    if isinstance(bins, str):
        raise ValueError(f"histogram: bins={bins!r} (an estimator) is not supported; give a count or edges")
    if explicit:
        edges = _np.asarray(bins)
        if (_np.diff(edges) < 0).any():
            raise ValueError("`bins` must increase monotonically, when an array")
        nbins = len(edges) - 1
    else:
        nbins = int(bins)
        if nbins < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if range is not None:
            lo, hi = range
            if lo > hi:
                raise ValueError("max must be larger than min in range parameter.")
            if not (_np.isfinite(lo) and _np.isfinite(hi)):
                raise ValueError(f"supplied range of [{lo}, {hi}] is not finite")
            edges = _np.histogram_bin_edges(_np.empty(0), nbins, range=(lo, hi))
        else:
            edges = None
    counts_dtype = _np.dtype(_np.intp) if w is None else _np.result_type(w.dtype)
    nblocks = len(x.chunks[0])

    def count(block, *rest):
        wb = rest[0] if w is not None else None
        if edges is not None:
            c, _ = _np.histogram(block, bins=edges, weights=wb)
        else:
            lo, hi = rest[-2], rest[-1]
            c, _ = _np.histogram(block, bins=nbins, range=(float(lo), float(hi)), weights=wb)
        return c.astype(counts_dtype, copy=False)

    args = [x, "i"] + ([w, "i"] if w is not None else [])
    if edges is None:
        lo, hi = x.min(), x.max()
        args += [lo, (), hi, ()]
    per_block = blockwise(count, "i", *args, dtype=counts_dtype,
                          adjust_chunks={"i": lambda n: nbins})
    counts = per_block.reshape((nblocks, nbins)).sum(axis=0)
    if edges is None:
        def edge_values(lo_, hi_):
            return _np.histogram_bin_edges(_np.empty(0), nbins, range=(float(lo_), float(hi_)))

        lazy_edges = blockwise(edge_values, "e", lo, (), hi, (), new_axes={"e": nbins + 1},
                               dtype=_np.float64)
    if density:
        widths = _np.diff(edges) if edges is not None else lazy_edges[1:] - lazy_edges[:-1]
        counts = counts / widths / counts.sum()
    return counts, (edges if edges is not None else lazy_edges)
