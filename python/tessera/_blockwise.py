"""``blockwise`` and ``apply_gufunc``: a function of blocks named by index letters, as
``dask.array`` defines them, over tessera's ``map_blocks``.

Every letter of the inputs and the output becomes an axis of one grid: an input is
transposed to the grid's order and given length-1 axes for the letters it lacks (then
broadcast, a view), so all inputs share one block grid. Letters absent from the output
are contracted: their axis is first joined into one block, and the function sees the
whole of it (``concatenate=True``; without it, Dask's list of blocks along that letter, here
of one). Each block is handed to the function in the input's own letter order, and its
result is placed back in the grid, so chunks follow the inputs (or ``adjust_chunks``).

>>> import numpy as np, tessera as ts
>>> from tessera.array import blockwise
>>> a = ts.from_array(np.arange(6.0).reshape(2, 3), chunks=1)
>>> b = ts.from_array(np.ones((3, 4)), chunks=2)
>>> blockwise(np.dot, "ik", a, "ij", b, "jk", concatenate=True).compute()[1].tolist()
[12.0, 12.0, 12.0, 12.0]
"""

from __future__ import annotations

import re
import warnings

import numpy as _np

from . import _tessera
from ._tessera import Array

__all__ = ["apply_gufunc", "blockwise"]


def _letters(ind) -> tuple:
    """An index as a tuple of letters (a string's characters, or a tuple's items)."""
    return tuple(ind)


def lift(x, ind, grid):
    """``x`` (axes named by the letters ``ind``) with its axes in ``grid``'s letter order
    and a length-1 axis for each grid letter it lacks, ready to broadcast against the grid;
    and its letters in that order."""
    order = sorted(range(len(ind)), key=lambda k: grid.index(ind[k]))
    y = x.transpose(tuple(order)) if order != list(range(len(ind))) else x
    present = [ind[k] for k in order]
    return y.reshape(tuple(y.shape[present.index(l)] if l in present else 1 for l in grid)), present


def _sizes_of(adjust, sizes):
    """Output block sizes along a letter after ``adjust_chunks``."""
    if callable(adjust):
        return tuple(int(adjust(s)) for s in sizes)
    if isinstance(adjust, int):
        return (adjust,) * len(sizes)
    adjust = tuple(adjust)
    if len(adjust) != len(sizes):
        raise ValueError(f"adjust_chunks gives {len(adjust)} sizes for {len(sizes)} blocks")
    return adjust


def blockwise(func, out_ind, *args, name=None, token=None, dtype=None, adjust_chunks=None,
              new_axes=None, align_arrays=True, concatenate=None, meta=None, **kwargs):
    """``func`` applied block by block to arrays named by index letters, as
    ``dask.array.blockwise``: ``args`` alternate an array (or any other argument, with index
    ``None``) and its letters; ``out_ind`` names the result's axes. A letter in several
    inputs must have one length there (or 1: broadcast); letters missing from ``out_ind``
    are contracted (see the module docs); ``new_axes`` gives the length of output letters no
    input has, ``adjust_chunks`` new block sizes per output letter (a function of each
    size, an int, or a tuple). ``dtype`` (or ``meta``'s) declares the result's dtype, else
    ``func`` is tried on empty blocks.

    Raises ``ValueError`` for an output letter no input or ``new_axes`` gives, a repeated
    letter in one input, or lengths that do not broadcast.

    >>> import numpy as np, tessera as ts
    >>> from tessera.array import blockwise
    >>> x = ts.from_array(np.arange(12.0).reshape(3, 4), chunks=2)
    >>> blockwise(lambda b: b.T, "ji", x, "ij").compute().shape
    (4, 3)
    """
    if len(args) % 2:
        raise ValueError("blockwise takes pairs of (argument, index) after out_ind")
    out_ind = _letters(out_ind)
    new_axes = dict(new_axes or {})
    adjust_chunks = dict(adjust_chunks or {})
    pairs = []
    for value, ind in zip(args[::2], args[1::2]):
        if ind is None:
            pairs.append((value, None))
            continue
        x = value if isinstance(value, Array) else _tessera.from_array(_np.asarray(value))
        ind = _letters(ind)
        if len(ind) != x.ndim:
            raise ValueError(f"blockwise: index {''.join(map(str, ind))!r} for an array of {x.ndim} axes")
        if len(set(ind)) != len(ind):
            raise ValueError(f"blockwise: repeated letter in index {''.join(map(str, ind))!r}")
        pairs.append((x, ind))
    arrays = [(x, ind) for x, ind in pairs if ind is not None]
    if not arrays:
        raise ValueError("blockwise needs at least one array argument with an index")
    seen = [l for _, ind in arrays for l in ind]
    for l in out_ind:
        if l not in seen and l not in new_axes:
            raise ValueError(f"blockwise: output letter {l!r} is in no input; give its length in new_axes")
    contracted = list(dict.fromkeys(l for l in seen if l not in out_ind))
    grid = list(out_ind) + contracted
    # One length and one chunking per letter: the first input with the letter at a length
    # other than 1 sets them; contracted letters are joined into one block.
    length, chunks = {}, {}
    for x, ind in arrays:
        for l, n, c in zip(ind, x.shape, x.chunks):
            if l in new_axes:
                raise ValueError(f"blockwise: new_axes letter {l!r} is also an input's")
            if n != 1 and length.get(l, 1) == 1:
                length[l], chunks[l] = n, c
            elif n not in (1, length.get(l, n)):
                raise ValueError(f"blockwise: letter {l!r} has lengths {length[l]} and {n}")
            length.setdefault(l, n)
            chunks.setdefault(l, c)
    for l in contracted:
        chunks[l] = (length[l],)
    for l in new_axes:
        length[l], chunks[l] = 1, (1,)
    full = tuple(length[l] for l in grid)
    grid_chunks = tuple(chunks[l] for l in grid)

    lifted, views = [], []
    for x, ind in arrays:
        y, present = lift(x, ind, grid)
        y = _tessera.broadcast_to(y, full)
        lifted.append(y if y.chunks == grid_chunks else y.rechunk(grid_chunks))
        # How a grid block goes back to this input's block: the broadcast axes cut to
        # one element (those of letters it lacks then dropped), then the permutation to
        # the input's letter order.
        missing = tuple(k for k, l in enumerate(grid) if l not in ind)
        cut = tuple(k for k, l in enumerate(grid)
                    if l not in ind or (x.shape[ind.index(l)] == 1 and length[l] != 1))
        back = [present.index(l) for l in ind]
        wraps = sum(1 for l in ind if l in contracted)
        views.append((missing, cut, back, wraps))

    def to_input(b, view):
        missing, cut, back, wraps = view
        if cut:
            b = b[tuple(slice(0, 1) if k in cut else slice(None) for k in range(b.ndim))]
        if missing:
            b = b.reshape(tuple(n for k, n in enumerate(b.shape) if k not in missing))
        b = _np.transpose(b, back) if back != sorted(back) else b
        if not concatenate:
            for _ in range(wraps):
                b = [b]
        return b

    def call(*blocks):
        it = iter(zip(blocks, views))
        full_args = []
        for value, ind in pairs:
            if ind is None:
                full_args.append(value)
            else:
                b, view = next(it)
                full_args.append(to_input(b, view))
        return func(*full_args, **kwargs)

    def placed(*blocks):
        out = _np.asarray(call(*blocks))
        if out.ndim != len(out_ind):
            raise ValueError(
                f"blockwise: func returned {out.ndim} axes for the output index "
                f"{''.join(map(str, out_ind))!r}"
            )
        return out.reshape(out.shape + (1,) * len(contracted))

    out_chunks = []
    for l in grid:
        if l in contracted:
            out_chunks.append((1,))
        elif l in new_axes:
            out_chunks.append((int(new_axes[l]),))
        elif l in adjust_chunks:
            out_chunks.append(_sizes_of(adjust_chunks[l], chunks[l]))
        else:
            out_chunks.append(chunks[l])
    if dtype is None and meta is not None:
        dtype = getattr(meta, "dtype", None)
    if dtype is None:
        dtype = _infer(func, pairs, views, kwargs, concatenate) or arrays[0][0].dtype
    res = _tessera.map_blocks(placed, *lifted, dtype=dtype, chunks=tuple(out_chunks))
    if contracted:
        res = res[(slice(None),) * len(out_ind) + (0,) * len(contracted)]
    return res


def _infer(func, pairs, views, kwargs, concatenate):
    """Dask's meta inference: the dtype ``func`` returns on empty blocks, or ``None``."""
    try:
        it = iter(views)
        probe = []
        for value, ind in pairs:
            if ind is None:
                probe.append(value)
                continue
            view = next(it)
            b = _np.empty((0,) * len(ind), dtype=value.dtype)
            for _ in range(view[3] if not concatenate else 0):
                b = [b]
            probe.append(b)
        with warnings.catch_warnings(), _np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return _np.asarray(func(*probe, **kwargs)).dtype
    except Exception:  # noqa: BLE001 - any failure means "cannot tell"
        return None


_DIMS = re.compile(r"\(([^()]*)\)")


def _parse_signature(signature):
    """``"(i,j),(j)->(i)"`` as ([("i", "j"), ("j",)], [("i",)])."""
    sig = signature.replace(" ", "")
    if "->" not in sig:
        raise ValueError(f"not a valid gufunc signature: {signature!r}")
    ins, outs = sig.split("->")
    parse = lambda part: [tuple(d for d in m.split(",") if d) for m in _DIMS.findall(part)]  # noqa: E731
    return parse(ins), parse(outs)


def apply_gufunc(func, signature, *args, axes=None, axis=None, keepdims=False, output_dtypes=None,
                 output_sizes=None, vectorize=None, allow_rechunk=False, meta=None, **kwargs):
    """A generalized ufunc over chunked arrays, as ``dask.array.apply_gufunc``: ``func``
    takes arrays whose last axes are the core dimensions of ``signature``
    (``"(i),(i)->()"``) and broadcasts over the leading (loop) ones, which keep their
    chunks. A core dimension must be one block (``allow_rechunk=True`` joins it);
    ``axis``/``axes`` say where the core dimensions are when not last; ``output_sizes``
    gives the length of output core dimensions no input has; ``vectorize=True`` wraps
    ``func`` in ``numpy.vectorize``. Several outputs come back as a tuple.

    >>> import numpy as np, tessera as ts
    >>> from tessera.array import apply_gufunc
    >>> x = ts.from_array(np.arange(12.0).reshape(4, 3), chunks=(2, 3))
    >>> apply_gufunc(lambda a: a.mean(axis=-1), "(i)->()", x).compute().tolist()
    [1.0, 4.0, 7.0, 10.0]
    """
    ins, outs = _parse_signature(signature)
    if len(ins) != len(args):
        raise ValueError(f"apply_gufunc: the signature has {len(ins)} inputs, got {len(args)} arguments")
    if keepdims:
        raise ValueError("apply_gufunc(keepdims=True) is not supported; reshape the result")
    if vectorize:
        func = _np.vectorize(func, signature=signature)
    arrays = [a if isinstance(a, Array) else _tessera.from_array(_np.asarray(a)) for a in args]
    if axis is not None:
        if axes is not None:
            raise ValueError("apply_gufunc takes axis or axes, not both")
        axes = [(axis,) if len(core) == 1 else () for core in ins + outs]
    if axes is not None:
        axes = [tuple(a) if isinstance(a, (tuple, list)) else (a,) for a in axes]
        moved = []
        for x, core, ax in zip(arrays, ins, axes):
            if len(ax) != len(core):
                raise ValueError(f"apply_gufunc: axes {ax} for core dimensions {core}")
            src = [a % x.ndim for a in ax]
            moved.append(_np.moveaxis(x, src, list(range(x.ndim - len(core), x.ndim))) if src else x)
        arrays = moved
    loop_ndim = max(x.ndim - len(core) for x, core in zip(arrays, ins))
    loop = [f"_loop{k}" for k in range(loop_ndim)]
    pairs = []
    for x, core in zip(arrays, ins):
        n_loop = x.ndim - len(core)
        if n_loop < 0:
            raise ValueError(f"apply_gufunc: an input of {x.ndim} axes for core dimensions {core}")
        for k, d in enumerate(core):
            c = x.chunks[n_loop + k]
            if len(c) > 1:
                if not allow_rechunk:
                    raise ValueError(
                        f"Core dimension {d!r} consists of multiple chunks. To fix, rechunk into a "
                        f"single chunk along this dimension or set `allow_rechunk=True`, but "
                        f"beware that this may increase memory usage significantly."
                    )
                x = x.rechunk(tuple(-1 if j == n_loop + k else cc for j, cc in enumerate(x.chunks)))
        pairs += [x, tuple(loop[loop_ndim - n_loop:]) + core]
    known = {d for core in ins for d in core}
    sizes = dict(output_sizes or {})
    dtypes = output_dtypes
    if dtypes is not None and not isinstance(dtypes, (list, tuple)):
        dtypes = [dtypes]
    results = []
    for k, core in enumerate(outs):
        new = {d: sizes[d] for d in core if d not in known and d in sizes}
        missing = [d for d in core if d not in known and d not in sizes]
        if missing:
            raise ValueError(f"apply_gufunc: give the length of output dimension(s) {missing} in output_sizes")
        pick = func if len(outs) == 1 else (lambda *a, _k=k, **kw: func(*a, **kw)[_k])
        dtype = None if dtypes is None else dtypes[k]
        if dtype is None and meta is not None:
            dtype = getattr(meta[k] if isinstance(meta, (tuple, list)) else meta, "dtype", None)
        results.append(blockwise(pick, tuple(loop) + core, *pairs, dtype=dtype, new_axes=new,
                                 concatenate=True, **kwargs))
    if axes is not None:
        out_axes = axes[len(ins):]
        for k, (r, core, ax) in enumerate(zip(results, outs, out_axes)):
            if ax and core:
                results[k] = _np.moveaxis(r, list(range(r.ndim - len(core), r.ndim)), [a % r.ndim for a in ax])
    return results[0] if len(outs) == 1 else tuple(results)
