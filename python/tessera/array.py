"""``dask.array``'s names over tessera: ``import tessera.array as da`` in code written for
Dask, and what it calls builds lazy tessera plans.

Each name takes Dask's (and so NumPy's) parameters: the NumPy functions tessera
implements (``da.sum``, ``da.concatenate``, ``da.where``, ...) are the same functions NumPy
dispatches to (NEP 18), creation and I/O (``da.ones``, ``da.from_array``, ``da.store``,
``da.from_zarr``) and the ufuncs are tessera's own, and ``map_blocks``, ``map_overlap`` and
``reduction`` follow Dask's signatures and rules. A ``dask.array`` name tessera lacks is
absent here (``AttributeError``), never approximated.

>>> import numpy as np
>>> import tessera.array as da
>>> x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
>>> da.map_blocks(lambda b, k: b * k, x, 10).sum().compute()
np.float64(660.0)
>>> da.map_overlap(lambda b: b - np.roll(b, 1, axis=1), x, depth={1: 1}, boundary="periodic").compute()[0]
array([-3.,  1.,  1.,  1.])
>>> da.reduction(x, np.sum, np.sum, axis=0).compute()
array([12., 15., 18., 21.])
"""

from __future__ import annotations

import numpy as _np

import builtins as _builtins

from . import _numpy_functions as _nf
from . import _tessera, linalg, random  # noqa: F401 - dask.array's submodules
from . import array_api as _xp
from ._blockwise import apply_gufunc, blockwise  # noqa: F401 - dask.array's names
from ._store import store  # noqa: F401 - dask.array.store
from ._tessera import Array

# Names tessera's top level has with dask.array's meaning (creation, I/O, ufuncs, scans,
# the nan-reductions, sorting and statistics).
_TOP = [
    "arange", "broadcast_arrays", "broadcast_to", "compute", "concatenate", "cumprod",
    "cumsum", "empty", "eye", "from_array", "from_zarr", "full", "isin",
    "linspace", "median", "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmedian",
    "nanmin", "nanprod", "nanstd", "nansum", "nanvar", "ones", "percentile", "quantile",
    "stack", "take", "to_zarr", "where", "zeros",
]

# NumPy functions tessera implements that dask.array does not have (tessera's own
# namespace and NumPy dispatch still offer them): left out, so this module holds only
# names Dask code can call.
_NOT_DASK = {
    "amax", "amin", "argsort", "array_equal", "astype", "cumulative_prod", "cumulative_sum",
    "matrix_transpose", "size", "sort", "take_along_axis",
}


def _numpy_function(np_func):
    """``np_func`` on tessera arrays: NumPy's signature, tessera's lazy implementation
    (the one ``Array.__array_function__`` dispatches to)."""
    name = np_func.__name__
    return _nf.numpy_function(np_func, f"``numpy.{name}`` on tessera arrays, lazily (``dask.array.{name}``).")


def _names():
    import tessera as ts

    out = {n: getattr(ts, n) for n in _TOP}
    for n in ts._UFUNCS + ts._UFUNC_ALIASES:
        out[n] = getattr(ts, n)
    for np_func in _nf.HANDLED:
        name = getattr(np_func, "__name__", None)
        if (
            name
            and not name.startswith("_")
            and name not in out
            and name not in _NOT_DASK
            and getattr(_np, name, None) is np_func
        ):
            out[name] = _numpy_function(np_func)
    for name in _nf.COMPOSED_UFUNCS:
        out["conj" if name == "conjugate" else name] = _ufunc(getattr(_np, name))
    out["mod"], out["true_divide"] = ts.remainder, ts.divide
    return out


def _ufunc(np_ufunc):
    """``np_ufunc`` called on tessera arrays (NumPy's dispatch builds the plan)."""

    def apply(*args):
        return np_ufunc(*args)

    apply.__name__ = apply.__qualname__ = np_ufunc.__name__
    apply.__doc__ = f"Elementwise ``numpy.{np_ufunc.__name__}`` on tessera arrays, lazily."
    return apply


globals().update(_names())

bool = _np.bool_  # noqa: A001 - dask.array's dtype names are NumPy's
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64 = _np.float32, _np.float64
newaxis, nan, inf, pi, e = None, _np.nan, _np.inf, _np.pi, _np.e


def asarray(a, dtype=None, chunks=None, **kwargs):
    """``a`` as a tessera array (a tessera array as it is, cast to ``dtype``)."""
    x = a if isinstance(a, Array) else _tessera.from_array(_np.asarray(a, dtype=dtype), chunks=chunks)
    return x if dtype is None or x.dtype == _np.dtype(dtype) else x.astype(dtype)


array = asanyarray = asarray


def tri(N, M=None, k=0, dtype=float, chunks="auto", **kwargs):
    """Ones at and below the ``k``-th diagonal of an ``N`` x ``M`` array, zeros above."""
    M = N if M is None else M
    rows = _tessera.arange(N, dtype="int64", chunks=chunks)
    cols = _tessera.arange(M, dtype="int64", chunks=chunks)
    return (cols[None, :] - rows[:, None] <= k).astype(dtype)


def indices(dimensions, dtype=int, chunks="auto"):
    """The index along each axis of a grid of shape ``dimensions``, stacked: an array of
    shape ``(len(dimensions), *dimensions)``."""
    dimensions = tuple(dimensions)
    grids = []
    for k, n in enumerate(dimensions):
        shape = [1] * len(dimensions)
        shape[k] = n
        axis = _tessera.arange(n, dtype=dtype, chunks=chunks).reshape(tuple(shape))
        grids.append(_tessera.broadcast_to(axis, dimensions))
    if not grids:
        return _tessera.zeros((0,), dtype=dtype)
    return _tessera.stack(grids, axis=0)


def rechunk(x, chunks="auto"):
    """``x`` in new blocks (``Array.rechunk``)."""
    return x.rechunk(chunks)


def tril(m, k=0):
    """``m`` with the elements above the ``k``-th diagonal zeroed."""
    return _xp.tril(m, k=k)


def triu(m, k=0):
    """``m`` with the elements below the ``k``-th diagonal zeroed."""
    return _xp.triu(m, k=k)


def flip(m, axis=None):
    """``m`` with the order along ``axis`` (every axis when ``None``) reversed."""
    return _xp.flip(m, axis=axis)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``axis``."""
    return _xp.diff(a, axis=axis, n=n, prepend=prepend, append=append)


def matmul(a, b):
    """The matrix product."""
    return _xp.matmul(a, b)


def square(x):
    """``x * x``."""
    return _xp.square(x)


def reciprocal(x):
    """``1 / x``."""
    return _xp.reciprocal(x)


def positive(x):
    """``+x``."""
    return _xp.positive(x)


def isinf(x):
    """True where ``x`` is infinite."""
    return _xp.isinf(x)


def logical_xor(a, b):
    """Logical exclusive or."""
    return _xp.logical_xor(a, b)


def result_type(*arrays_and_dtypes):
    """NumPy's ``result_type`` of tessera arrays, NumPy arrays, dtypes and scalars."""
    return _np.result_type(*[a.dtype if isinstance(a, Array) else a for a in arrays_and_dtypes])


# map_blocks, map_overlap and reduction: Dask's signatures over tessera's map_blocks.
# (The builtins any/sum/min/max are spelled out below: this module's own names shadow them.)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise _np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    return tuple(sorted(set(out)))


def _declared(chunks, counts, what):
    """Dask's ``chunks=`` for a result: per axis a tuple of block sizes, or an int for
    every block along it (``counts[k]`` blocks)."""
    if len(chunks) != len(counts):
        raise ValueError(f"{what} chunks= has {len(chunks)} axes; the result has {len(counts)}")
    return [(c,) * n if isinstance(c, int) else tuple(c) for c, n in zip(chunks, counts)]


def map_blocks(func, *args, dtype=None, chunks=None, drop_axis=None, new_axis=None, meta=None, **kwargs):
    """``func`` applied to every block, as ``dask.array.map_blocks``: tessera arrays among
    ``args`` are passed block by block (aligned), other arguments and ``kwargs`` as they
    are. ``dtype`` (or ``meta``'s) declares the result's dtype, else it is inferred from
    ``func`` on empty blocks; ``chunks`` declares the result's block sizes. ``drop_axis``
    names axes ``func`` removes (their blocks are first joined into one, as Dask does);
    ``new_axis`` the positions in the result of axes it adds (length 1 unless ``chunks``
    says otherwise). One of the two per call.

    >>> import numpy as np, tessera.array as da
    >>> x = da.ones((4, 6), chunks=(2, 3))
    >>> da.map_blocks(np.sum, x, axis=1, drop_axis=1, dtype=float).compute()
    array([6., 6., 6., 6.])
    >>> da.map_blocks(lambda b: b[:, None, :] * [[1], [2]], x, new_axis=1, chunks=(2, 2, 3)).shape
    (4, 2, 6)
    """
    arrays = [a for a in args if isinstance(a, Array)]
    if not arrays:
        raise TypeError("map_blocks needs at least one tessera array among its arguments")
    if dtype is None and meta is not None:
        dtype = getattr(meta, "dtype", None)
    at = [i for i, a in enumerate(args) if isinstance(a, Array)]
    ndim = arrays[0].ndim

    def call(*blocks):
        full = list(args)
        for i, b in zip(at, blocks):
            full[i] = b
        return func(*full, **kwargs)

    if drop_axis is None and new_axis is None:
        return _tessera.map_blocks(call, *arrays, dtype=dtype, chunks=chunks)
    if drop_axis is not None and new_axis is not None:
        raise ValueError("map_blocks takes drop_axis or new_axis per call; call it twice for both")
    if _builtins.any(a.ndim != ndim for a in arrays):
        raise ValueError("map_blocks with drop_axis or new_axis needs array arguments of one rank")
    if drop_axis is not None:
        drop = _axes(drop_axis, ndim)
        arrays = [a.rechunk(tuple(-1 if k in drop else c for k, c in enumerate(a.chunks))) for a in arrays]
        grid = list(arrays[0].chunks)
        if chunks is not None:
            kept = [k for k in range(ndim) if k not in drop]
            for k, c in zip(kept, _declared(chunks, [len(grid[k]) for k in kept], "map_blocks")):
                grid[k] = c
        for k in drop:
            grid[k] = (1,)

        def dropped(*blocks):
            return _np.expand_dims(_np.asarray(call(*blocks)), drop)

        out = _tessera.map_blocks(dropped, *arrays, dtype=dtype, chunks=tuple(grid))
        return out[tuple(0 if k in drop else slice(None) for k in range(ndim))]
    new = sorted({new_axis} if isinstance(new_axis, int) else set(new_axis))
    out_ndim = ndim + len(new)
    new = [n % out_ndim for n in new]
    lifted = arrays
    for pos in sorted(new):
        lifted = [_nf._expand_dims(a, pos) for a in lifted]
    grid = list(lifted[0].chunks)
    if chunks is not None:
        grid = _declared(chunks, [len(c) for c in grid], "map_blocks")

    def added(*blocks):
        return call(*[_np.squeeze(b, axis=tuple(new)) for b in blocks])

    return _tessera.map_blocks(added, *lifted, dtype=dtype if dtype is not None else arrays[0].dtype,
                               chunks=tuple(grid))


def _minimum_chunks(depth, sizes):
    """Block sizes along an axis with every block at least ``depth`` long, blocks too
    short merged into their neighbours as Dask's ``ensure_minimum_chunksize`` merges
    them (so the result has Dask's chunks)."""
    if depth <= _builtins.min(sizes):
        return tuple(sizes)
    out, new = [], 0
    for c in sizes:
        if c < depth:
            if new > depth + (depth - c):
                out.append(new - (depth - c))
                new = depth
            else:
                new += c
        if new >= depth:
            out.append(new)
            new = 0
        if c >= depth:
            new += c
    if new >= depth:
        out.append(new)
    elif out:
        out[-1] += new
    else:
        raise ValueError(
            f"map_overlap: depth {depth} is larger than the axis ({_builtins.sum(sizes)} elements)"
        )
    return tuple(out)


def _overlap_axis(x, axis, depth, boundary):
    """``x`` with every block along ``axis`` extended by ``depth`` elements of its
    neighbours (the array's edges per ``boundary``)."""
    sizes = x.chunks[axis]
    n = x.shape[axis]

    def take(lo, hi):
        index = [slice(None)] * x.ndim
        index[axis] = slice(lo, hi)
        return x[tuple(index)]

    def edge(side):
        if boundary == "none":
            return None
        if boundary == "periodic":
            return take(n - depth, n) if side == "lo" else take(0, depth)
        if boundary == "reflect":
            return flip(take(0, depth), axis) if side == "lo" else flip(take(n - depth, n), axis)
        if boundary == "nearest":
            piece = take(0, 1) if side == "lo" else take(n - 1, n)
            shape = list(piece.shape)
            shape[axis] = depth
            return _tessera.broadcast_to(piece, tuple(shape))
        if isinstance(boundary, (int, float, _np.number)) and not isinstance(boundary, _builtins.bool):
            shape = list(x.shape)
            shape[axis] = depth
            return _tessera.full(tuple(shape), boundary, dtype=x.dtype, backend=x.backend)
        raise ValueError(
            f"map_overlap: boundary {boundary!r}; use 'none', 'reflect', 'periodic', 'nearest' or a number"
        )

    pieces, out_sizes, start = [], [], 0
    for i, s in enumerate(sizes):
        lo = edge("lo") if i == 0 else take(start - depth, start)
        hi = edge("hi") if i == len(sizes) - 1 else take(start + s, start + s + depth)
        block = [p for p in (lo, take(start, start + s), hi) if p is not None]
        pieces += block
        out_sizes.append(_builtins.sum(p.shape[axis] for p in block))
        start += s
    joined = _tessera.concatenate(pieces, axis=axis)
    chunks = list(joined.chunks)
    chunks[axis] = tuple(out_sizes)
    return joined.rechunk(tuple(chunks))


def _trim_axis(y, axis, depth, in_sizes, boundary):
    """The inverse of :func:`_overlap_axis` on a result of the same block sizes."""
    pieces, start = [], 0
    last = len(in_sizes) - 1
    for i, s in enumerate(y.chunks[axis]):
        lo = 0 if (boundary == "none" and i == 0) else depth
        hi = 0 if (boundary == "none" and i == last) else depth
        index = [slice(None)] * y.ndim
        index[axis] = slice(start + lo, start + s - hi)
        pieces.append(y[tuple(index)])
        start += s
    joined = _tessera.concatenate(pieces, axis=axis)
    chunks = list(joined.chunks)
    chunks[axis] = tuple(in_sizes)
    return joined.rechunk(tuple(chunks))


def map_overlap(func, *args, depth=None, boundary="none", trim=True, dtype=None, chunks=None, **kwargs):
    """``func`` applied to every block extended by ``depth`` elements of its neighbours,
    then the extension cut off again, as ``dask.array.map_overlap``: for stencils,
    filters and finite differences across block edges.

    ``depth`` is an int (every axis), a tuple (one per axis) or a dict ``{axis: depth}``;
    ``boundary`` says what lies beyond the array's edges: ``'none'`` (nothing: the edge
    blocks are extended inwards only), ``'reflect'``, ``'periodic'``, ``'nearest'`` or a
    constant. With ``trim=False`` the extended result is returned as ``func`` made it.

    >>> import numpy as np, tessera.array as da
    >>> x = da.from_array(np.array([1.0, 2.0, 4.0, 7.0, 11.0, 16.0]), chunks=2)
    >>> smooth = da.map_overlap(lambda b: (np.roll(b, 1) + b + np.roll(b, -1)) / 3, x,
    ...                         depth=1, boundary="nearest")
    >>> smooth.compute().round(3).tolist()
    [1.333, 2.333, 4.333, 7.333, 11.333, 14.333]
    """
    arrays = [a for a in args if isinstance(a, Array)]
    if not arrays:
        raise TypeError("map_overlap needs at least one tessera array among its arguments")
    ndim = arrays[0].ndim
    if depth is None:
        depth = 0
    if isinstance(depth, dict):
        depths = {(_axes(k, ndim)[0]): int(v) for k, v in depth.items()}
    elif isinstance(depth, (tuple, list)):
        if len(depth) != ndim:
            raise ValueError(f"map_overlap: {len(depth)} depths for {ndim} axes")
        depths = dict(enumerate(int(d) for d in depth))
    else:
        depths = {k: int(depth) for k in range(ndim)}
    if _builtins.any(d < 0 for d in depths.values()):
        raise ValueError("map_overlap: a depth must not be negative")
    depths = {k: d for k, d in depths.items() if d > 0}
    grown, in_chunks = [], None
    for a in args:
        if isinstance(a, Array):
            if a.ndim != ndim:
                raise ValueError("map_overlap: every array argument needs the same number of axes")
            a = a.rechunk(tuple(_minimum_chunks(depths[k], c) if k in depths else c
                                for k, c in enumerate(a.chunks)))
            in_chunks = in_chunks or a.chunks
            for k, d in depths.items():
                a = _overlap_axis(a, k, d, boundary)
        grown.append(a)
    out = map_blocks(func, *grown, dtype=dtype, chunks=chunks, **kwargs)
    if not trim:
        return out
    first = next(a for a in grown if isinstance(a, Array))
    if out.chunks != first.chunks:
        raise ValueError(
            "map_overlap with trim=True needs func to keep each block's shape; pass trim=False"
        )
    for k, d in depths.items():
        out = _trim_axis(out, k, d, in_chunks[k], boundary)
    return out


def reduction(x, chunk, aggregate, axis=None, keepdims=False, dtype=None, split_every=None,
              combine=None, name=None, out=None, concatenate=True, output_size=1, meta=None):
    """A reduction from two functions, as ``dask.array.reduction``: ``chunk(block, axis=,
    keepdims=True)`` reduces every block, the partial results of each lane along ``axis``
    are joined, and ``aggregate(joined, axis=, keepdims=)`` gives the result. ``combine``
    (``chunk``'s partials to fewer) runs once on the joined partials before
    ``aggregate``; ``split_every`` only tunes Dask's tree, so here it is accepted and the
    answer is the same.

    >>> import numpy as np, tessera.array as da
    >>> x = da.from_array(np.arange(10.0), chunks=3)
    >>> da.reduction(x, np.max, np.max).compute()
    np.float64(9.0)
    """
    if out is not None:
        raise TypeError("reduction(out=...) is not supported: tessera arrays are lazy")
    if not concatenate:
        raise TypeError("reduction(concatenate=False) is not supported; aggregate takes the joined partials")
    axes = _axes(axis, x.ndim)
    if dtype is None and meta is not None:
        dtype = getattr(meta, "dtype", None)
    sizes = tuple((output_size,) * len(c) if k in axes else c for k, c in enumerate(x.chunks))
    partial = _tessera.map_blocks(lambda b: _np.asarray(chunk(b, axis=axes, keepdims=True)), x,
                                  dtype=dtype, chunks=sizes)
    joined = partial.rechunk(tuple(-1 if k in axes else c for k, c in enumerate(partial.chunks)))
    out_chunks = tuple((1,) if k in axes else c for k, c in enumerate(joined.chunks))

    def finish(b):
        if combine is not None:
            b = _np.asarray(combine(b, axis=axes, keepdims=True))
        return _np.asarray(aggregate(b, axis=axes, keepdims=True))

    res = _tessera.map_blocks(finish, joined, dtype=dtype, chunks=out_chunks)
    if keepdims:
        return res
    return res[tuple(0 if k in axes else slice(None) for k in range(x.ndim))]


__all__ = sorted(n for n in globals() if not n.startswith("_") and n != "annotations")
