"""``x[key] = value`` on a lazy tessera array: the array becomes a new plan, the old one
with the selection replaced, as ``dask.array``'s ``__setitem__`` makes it. Nothing is
computed; the chunks stay those of ``x``.

The update is elementwise: per axis, a lazy map from each position of ``x`` to the
position of ``value`` that lands there and whether one does (from ``arange``, so no
index is held on the host for a slice), ``value`` gathered along those maps with
``take``, and ``where(selected, gathered, x)``. Keys are those NumPy assigns through:
ints, slices (any step), ``...``, ``None``, one integer array or boolean mask along an
axis, or a boolean mask of ``x``'s shape. A lazy tessera boolean mask of ``x``'s shape
follows Dask (``value`` broadcast against ``x``, as ``where``); a NumPy one follows
NumPy (a scalar, or one value per selected element in C order).

>>> import numpy as np, tessera as ts
>>> x = ts.zeros((3, 4), chunks=2)
>>> x[1, ::2] = 7
>>> x[x > 5] = 1
>>> x.compute().tolist()
[[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
"""

from __future__ import annotations

import operator

import numpy as _np

from . import _tessera
from ._tessera import Array


def _value(x: Array, value) -> Array:
    """``value`` as a tessera array of ``x``'s dtype, on ``x``'s backend."""
    if isinstance(value, Array):
        return value if value.dtype == x.dtype else value.astype(x.dtype)
    v = _np.asarray(value)
    if v.dtype != x.dtype:
        if v.dtype.kind == "f" and x.dtype.kind in "iub" and not _np.isfinite(v).all():
            raise ValueError(f"cannot convert float NaN or infinity to {x.dtype}")
        v = v.astype(x.dtype)
    return _tessera.from_array(v, backend=x.backend)


def _broadcast(v: Array, shape: tuple, what: str) -> Array:
    """``v`` broadcast to ``shape`` by NumPy's assignment rule (leading 1-axes of a value
    with more axes dropped)."""
    while v.ndim > len(shape) and v.shape[0] == 1:
        v = v.reshape(v.shape[1:])
    try:
        return _tessera.broadcast_to(v, shape)
    except ValueError:
        raise ValueError(
            f"could not broadcast input array from shape {tuple(v.shape)} into shape {shape}"
            f" ({what})"
        ) from None


def _mask_assign(x: Array, mask, value) -> Array:
    if tuple(mask.shape) != tuple(x.shape):
        for axis, (n, m) in enumerate(zip(x.shape, mask.shape)):
            if n != m:
                break
        else:
            axis, n, m = len(mask.shape), None, None
        raise IndexError(
            f"boolean index did not match indexed array along axis {axis}; size of axis is "
            f"{n} but size of corresponding boolean axis is {m}"
        )
    if isinstance(mask, Array):
        # As `where` (Dask takes a scalar here; NumPy, where it assigns at all, agrees).
        v = _broadcast(_value(x, value), tuple(x.shape), "a boolean mask of the array's shape")
        return _tessera.where(mask, v, x)
    count = int(mask.sum())
    v = _value(x, value)
    lazy_mask = _tessera.from_array(mask, chunks=x.chunks, backend=x.backend)
    size = 1
    for n in v.shape:
        size *= n
    if size == 1:
        return _tessera.where(lazy_mask, v.reshape(()), x)
    if v.ndim != 1 or v.shape[0] != count:
        raise ValueError(
            f"NumPy boolean array indexing assignment cannot assign {size} input values to the "
            f"{count} output values where the mask is true"
        )
    # The k-th selected element (C order) takes value k.
    j = _np.clip(_np.cumsum(mask.ravel()) - 1, 0, max(count - 1, 0))
    placed = _tessera.take(v, _tessera.from_array(j, backend=x.backend), axis=0)
    return _tessera.where(lazy_mask, placed.reshape(tuple(x.shape)), x)


def _axis_items(x: Array, items: list):
    """Per axis of ``x``: ``("slice", start, step, length)``, ``("int", i)`` or
    ``("array", positions)``; and the value's shape, each entry ``("new",)`` or
    ``("axis", k)``, in NumPy's order."""
    if sum(1 for it in items if it is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    if used > x.ndim:
        raise IndexError(
            f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed"
        )
    if any(it is Ellipsis for it in items):
        at = next(i for i, it in enumerate(items) if it is Ellipsis)
        items = items[:at] + [slice(None)] * (x.ndim - used) + items[at + 1 :]
    else:
        items = items + [slice(None)] * (x.ndim - used)
    axes, sel, advanced, k = [], [], [], 0
    for pos, it in enumerate(items):
        if it is None:
            sel.append(("new",))
            continue
        n = x.shape[k]
        if isinstance(it, Array):
            raise IndexError(
                "assignment through a lazy tessera index is supported for a boolean mask of "
                "the array's shape; compute other index arrays first (np.asarray(index))"
            )
        if isinstance(it, slice):
            start, stop, step = it.indices(n)
            axes.append(("slice", start, step, len(range(start, stop, step))))
            sel.append(("axis", k))
        elif isinstance(it, (bool, _np.bool_)):
            raise IndexError("a boolean scalar index cannot be assigned through; use a mask")
        elif hasattr(it, "__index__") and _np.ndim(it) == 0:
            i = operator.index(it)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {k} with size {n}")
            axes.append(("int", i % n))
            advanced.append(pos)
        else:
            arr = _np.asarray(it)
            if arr.dtype == bool:
                if arr.shape != (n,):
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {k}; size of "
                        f"axis is {n} but size of corresponding boolean axis is {arr.shape}"
                    )
                arr = _np.flatnonzero(arr)
            if arr.dtype.kind not in "iu" or arr.ndim != 1:
                raise IndexError(
                    "arrays used as indices must be of integer (or boolean) type; assignment "
                    f"takes one 1-d integer array per key, got {arr.dtype} of shape {arr.shape}"
                )
            bad = (arr < -n) | (arr >= n)
            if bad.any():
                raise IndexError(
                    f"index {int(arr[bad][0])} is out of bounds for axis {k} with size {n}"
                )
            if any(a[0] == "array" for a in axes):
                raise IndexError(
                    "assignment takes at most one integer-array index per key; assign once "
                    "per array"
                )
            axes.append(("array", _np.where(arr < 0, arr + n, arr)))
            sel.append(("axis", k))
            advanced.append(pos)
        k += 1
    # NumPy: advanced indices apart from each other put their axis first.
    arrays = [s for s in sel if s[0] == "axis" and axes[s[1]][0] == "array"]
    if arrays and advanced and advanced[-1] - advanced[0] + 1 != len(advanced):
        sel = arrays + [s for s in sel if s not in arrays]
    return axes, sel


def _lengths(axes) -> list:
    return [
        a[3] if a[0] == "slice" else 1 if a[0] == "int" else len(a[1]) for a in axes
    ]


def _axis_map(x: Array, k: int, spec):
    """(positions of the value along axis ``k`` for each position of ``x``, whether one
    lands there), both lazy and chunked as ``x`` along ``k``; ``None`` for an axis the
    key takes whole and in order."""
    n = x.shape[k]
    chunks = (x.chunks[k],)
    if spec[0] == "array":
        j = _np.full(n, -1, dtype=_np.int64)
        j[spec[1]] = _np.arange(len(spec[1]))  # a repeated index: the last value wins
        hit = _tessera.from_array(j >= 0, chunks=chunks, backend=x.backend)
        where = _tessera.from_array(_np.maximum(j, 0), chunks=chunks, backend=x.backend)
        return where, hit
    start, step, length = (spec[1], 1, 1) if spec[0] == "int" else spec[1:]
    if start == 0 and step == 1 and length == n:
        return None
    d = _tessera.arange(n, dtype="int64", chunks=chunks, backend=x.backend) - start
    q = d // step
    hit = ((d % step) == 0) & (q >= 0) & (q < length)
    return q.clip(0, max(length - 1, 0)), hit


def assign(x: Array, key, value) -> Array:
    """The lazy array ``x`` with ``x[key] = value`` applied (see the module docs).

    Raises ``IndexError`` for a key NumPy would refuse or one outside what assignment
    takes, and ``ValueError`` for a value that does not broadcast to the selection.
    """
    items = list(key) if isinstance(key, tuple) else [key]
    if len(items) == 1:
        only = items[0]
        if isinstance(only, Array) and only.dtype == bool:
            return _mask_assign(x, only, value)
        if not isinstance(only, (Array, slice, int, type(None), type(Ellipsis))):
            arr = _np.asarray(only)
            if arr.dtype == bool and arr.ndim == x.ndim and arr.ndim > 1:
                return _mask_assign(x, arr, value)
    axes, sel = _axis_items(x, items)
    lengths = _lengths(axes)
    sel_shape = tuple(1 if s[0] == "new" else lengths[s[1]] for s in sel)
    v = _broadcast(_value(x, value), sel_shape, f"the selection of shape {sel_shape}")
    if 0 in lengths:
        return x
    # The value with one axis per axis of x, in x's order (1 where an int is assigned).
    kept = [s[1] for s in sel if s[0] == "axis"]
    v = v.reshape(tuple(lengths[k] for k in kept))
    order = sorted(range(len(kept)), key=lambda i: kept[i])
    if order != list(range(len(kept))):
        v = v.transpose(tuple(order))
    v = v.reshape(tuple(lengths))
    selected = None
    for k, spec in enumerate(axes):
        m = _axis_map(x, k, spec)
        if m is None:
            continue
        where, hit = m
        v = _tessera.take(v, where, axis=k)
        shape = [1] * x.ndim
        shape[k] = x.shape[k]
        hit = hit.reshape(tuple(shape))
        selected = hit if selected is None else selected & hit
    if selected is None:
        out = _tessera.broadcast_to(v, tuple(x.shape))
    else:
        out = _tessera.where(selected, v, x)
    return out if out.chunks == x.chunks else out.rechunk(x.chunks)
