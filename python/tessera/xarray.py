"""tessera under xarray: the ``tessera`` chunk manager.

xarray builds chunked variables through a *chunk manager*, a class it finds under the
``xarray.chunkmanagers`` entry point; this package registers :class:`TesseraManager` there
as ``tessera``. Code written for xarray on Dask then runs on tessera with one argument::

    ds = xr.open_mfdataset(paths, chunks={"time": 365}, chunked_array_type="tessera")
    ds = ds.chunk({"time": 100}, chunked_array_type="tessera")

Each method maps onto the engine: ``from_array`` reads a lazily indexed backend array block
by block in the task that needs the block (the file is never read whole at open), ``compute``
of several arrays is one plan (what they share is computed once), ``store`` writes block by
block into xarray's targets (``to_netcdf``, ``to_zarr``), and the blocked functions
(``map_blocks``, ``blockwise``, ``apply_gufunc``, ``reduction``, ``scan``) are
:mod:`tessera.array`'s, which follow ``dask.array``'s. The arithmetic xarray does on the data
goes through the arrays' own NumPy and Array API protocols, so it stays lazy.

>>> import numpy as np, xarray as xr
>>> da = xr.DataArray(np.arange(12.0).reshape(3, 4), dims=("t", "x"))
>>> lazy = da.chunk({"t": 1}, chunked_array_type="tessera")
>>> type(lazy.data).__module__, lazy.chunks
('tessera', ((1, 1, 1), (4,)))
>>> lazy.mean("t").values.tolist()
[4.0, 5.0, 6.0, 7.0]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

try:
    from xarray.namedarray.parallelcompat import ChunkManagerEntrypoint
except ImportError as e:  # pragma: no cover - the module is only found through xarray
    raise ImportError("tessera.xarray needs xarray (pip install xarray)") from e

from . import _tessera
from . import array as _da
from ._store import store as _store
from ._tessera import Array

__all__ = ["TesseraManager"]

# Dask keywords that tune Dask's graph, not the answer: accepted and not needed here.
_GRAPH_ONLY = ("name", "token", "inline_array", "meta", "asarray", "fancy", "getitem", "flush",
               "split_every", "method", "enforce_ndim")


def _graph_only(kwargs, what):
    """``kwargs`` without Dask's graph-only keywords; anything else left is refused."""
    rest = {k: v for k, v in kwargs.items() if k not in _GRAPH_ONLY}
    if rest:
        raise TypeError(f"tessera chunk manager {what}() got unexpected keyword(s) {sorted(rest)}")


def _zero_size_chunks(data, chunks):
    """``data.shape`` for an ``"auto"`` spec of a zero-size array, as xarray's Dask
    manager does (there is nothing to size an automatic block by)."""
    autos = (isinstance(chunks, tuple) and "auto" in chunks) or (
        isinstance(chunks, Mapping) and "auto" in chunks.values())
    if autos and any(s == 0 for s in data.shape):
        return data.shape
    return chunks


def _boundaries(sizes):
    return set(itertools.accumulate(sizes))


def _common_chunks(options):
    """The coarsest block sizes that every chunking in ``options`` (tuples over one
    length) refines: the union of their block boundaries."""
    length = sum(options[0])
    cuts = sorted(set().union(*(_boundaries(c) for c in options)) | {0})
    sizes = tuple(b - a for a, b in zip(cuts, cuts[1:]))
    return sizes if sizes else (length,)


class TesseraManager(ChunkManagerEntrypoint):
    """xarray's chunk manager for tessera arrays (see the module docs); xarray makes one
    and calls it, users name it: ``chunked_array_type="tessera"``.

    >>> from xarray.namedarray.parallelcompat import guess_chunkmanager
    >>> type(guess_chunkmanager("tessera")).__name__
    'TesseraManager'
    """

    available = True

    def __init__(self) -> None:
        self.array_cls = Array

    def is_chunked_array(self, data) -> bool:
        """True for a tessera array."""
        return isinstance(data, Array)

    def chunks(self, data):
        """The block sizes per axis, as Dask's ``chunks``."""
        return data.chunks

    def normalize_chunks(self, chunks, shape=None, limit=None, dtype=None, previous_chunks=None):
        """Explicit block sizes for a Dask chunk spec (``"auto"``, ints, ``-1``, byte
        sizes, dicts by axis); ``"auto"`` blocks are whole multiples of
        ``previous_chunks`` (the stored chunks), so no task reads a stored chunk twice.

        Raises ``ValueError`` for a spec that does not fit ``shape``.

        >>> TesseraManager().normalize_chunks({0: 3}, shape=(7, 2))
        ((3, 3, 1), (2,))
        """
        return _tessera.normalize_chunks(chunks, tuple(shape), limit, dtype, previous_chunks)

    def from_array(self, data, chunks, **kwargs) -> Array:
        """A lazy tessera array over ``data`` (any object with ``shape``, ``dtype`` and
        ``__getitem__``: xarray's lazily indexed backend arrays, NumPy, h5py, zarr), each
        block read by the task that needs it. ``lock`` is held around each read;
        ``backend`` picks where the blocks live (default: the ``array.backend`` setting).
        """
        lock = kwargs.pop("lock", None)
        backend = kwargs.pop("backend", None)
        _graph_only(kwargs, "from_array")
        chunks = _zero_size_chunks(data, chunks)
        if isinstance(data, Array):
            return data.rechunk(chunks)
        return _tessera.from_array(data, chunks=chunks, lock=lock, backend=backend)

    def rechunk(self, data, chunks, **kwargs):
        """``data`` in new blocks."""
        _graph_only(kwargs, "rechunk")
        chunks = _zero_size_chunks(data, chunks)
        if isinstance(chunks, Mapping):
            # As Dask's rechunk: an axis left out, or given None, keeps its blocks.
            chunks = tuple(c if chunks.get(k) is None else chunks[k] for k, c in enumerate(data.chunks))
        return data.rechunk(chunks)

    def compute(self, *data, **kwargs):
        """NumPy arrays of ``data``, computed together as one plan."""
        _graph_only(kwargs, "compute")
        return _tessera.compute(*data)

    def persist(self, *data, **kwargs):
        """``data`` computed now and held in memory as tessera arrays of the same blocks
        and backend (one plan for all of them)."""
        _graph_only(kwargs, "persist")
        values = _tessera.compute(*data)
        return tuple(_tessera.from_array(np.asarray(v), chunks=a.chunks, backend=a.backend)
                     for v, a in zip(values, data))

    @property
    def array_api(self):
        """The ``dask.array``-shaped namespace, :mod:`tessera.array`."""
        return _da

    def reduction(self, arr, func, combine_func=None, aggregate_func=None, axis=None, dtype=None,
                  keepdims=False):
        """A reduction from a per-block ``func`` and an ``aggregate_func`` of the joined
        partials (:func:`tessera.array.reduction`)."""
        return _da.reduction(arr, func, aggregate_func, axis=axis, keepdims=keepdims, dtype=dtype,
                             combine=combine_func)

    def scan(self, func, binop, ident, arr, axis=None, dtype=None, **kwargs):
        """A cumulative scan, as ``dask.array.reductions.cumreduction``: ``func`` scans
        every block along ``axis``, then what the blocks before each block add is
        carried in with ``binop`` (``preop`` summarizes a block, else its last slice
        does). ``ident`` is ``binop``'s identity. ``xarray``'s ``ffill``/``bfill`` run on it.
        """
        preop = kwargs.pop("preop", None)
        _graph_only(kwargs, "scan")
        if axis is None:
            arr, axis = arr.reshape((arr.size,)), 0
        axis = axis % arr.ndim
        dtype = np.dtype(dtype if dtype is not None else arr.dtype)
        scanned = _tessera.map_blocks(lambda b: np.asarray(func(b, axis=axis, dtype=dtype)), arr,
                                      dtype=dtype)
        nblocks = len(arr.chunks[axis])
        if nblocks == 1:
            return scanned
        summary_chunks = tuple((1,) * nblocks if k == axis else c for k, c in enumerate(arr.chunks))
        if preop is not None:
            def summarize(b):
                return np.asarray(preop(b, axis=axis, keepdims=True), dtype=dtype)
            source = arr
        else:
            def summarize(b):
                return np.take(b, [b.shape[axis] - 1], axis=axis)
            source = scanned
        summaries = _tessera.map_blocks(summarize, source, dtype=dtype, chunks=summary_chunks)

        def carries(s):
            # Exclusive scan of the block summaries: what precedes each block.
            out = np.empty_like(s)
            acc = np.full_like(np.take(s, [0], axis=axis), ident)
            for k in range(s.shape[axis]):
                np.copyto(out[(slice(None),) * axis + (slice(k, k + 1),)], acc)
                acc = np.asarray(binop(acc, np.take(s, [k], axis=axis)), dtype=dtype)
            return out

        joined = summaries.rechunk(tuple(-1 if k == axis else c for k, c in enumerate(summary_chunks)))
        carried = _tessera.map_blocks(carries, joined, dtype=dtype).rechunk(summary_chunks)

        def combine(block, carry):
            return np.asarray(binop(carry, block), dtype=dtype)

        combined = _tessera.map_blocks(combine, scanned, carried, dtype=dtype)
        # The first block has nothing before it: keep it as scanned (``binop(ident, b)``
        # is ``b`` for a true identity, but a NaN identity is not one for every binop).
        head = scanned[tuple(slice(0, arr.chunks[axis][0]) if k == axis else slice(None)
                             for k in range(arr.ndim))]
        tail = combined[tuple(slice(arr.chunks[axis][0], None) if k == axis else slice(None)
                              for k in range(arr.ndim))]
        return _tessera.concatenate([head, tail], axis=axis).rechunk(arr.chunks)

    def apply_gufunc(self, func, signature, *args, axes=None, axis=None, keepdims=False,
                     output_dtypes=None, output_sizes=None, vectorize=None, allow_rechunk=False,
                     meta=None, **kwargs):
        """A generalized ufunc over the blocks (:func:`tessera.array.apply_gufunc`)."""
        return _da.apply_gufunc(func, signature, *args, axes=axes, axis=axis, keepdims=keepdims,
                                output_dtypes=output_dtypes, output_sizes=output_sizes,
                                vectorize=vectorize, allow_rechunk=allow_rechunk, meta=meta, **kwargs)

    def map_blocks(self, func, *args, dtype=None, chunks=None, drop_axis=None, new_axis=None,
                   **kwargs):
        """``func`` on every block (:func:`tessera.array.map_blocks`)."""
        for k in ("name", "token"):
            kwargs.pop(k, None)
        return _da.map_blocks(func, *args, dtype=dtype, chunks=chunks, drop_axis=drop_axis,
                              new_axis=new_axis, **kwargs)

    def blockwise(self, func, out_ind, *args, **kwargs):
        """``func`` on blocks named by index letters (:func:`tessera.array.blockwise`)."""
        return _da.blockwise(func, out_ind, *args, **kwargs)

    def unify_chunks(self, *args, **kwargs):
        """The arrays among ``args`` (alternating with their index letters, as
        ``blockwise`` takes them) rechunked to common blocks per letter: each letter's
        blocks are cut wherever any array's are (arrays of length 1 along it broadcast and
        keep theirs). Returns ``(chunks by letter, arguments)``, as ``dask.array.core.unify_chunks``.

        >>> import tessera as ts
        >>> chunkss, (a, b) = TesseraManager().unify_chunks(ts.ones(6, chunks=3), "i", ts.ones(6, chunks=2), "i")
        >>> chunkss["i"], a.chunks == b.chunks
        ((2, 1, 1, 2), True)
        """
        _graph_only(kwargs, "unify_chunks")
        if len(args) % 2:
            raise ValueError("unify_chunks takes pairs of (array, index)")
        pairs = list(zip(args[::2], args[1::2]))
        options = {}
        for a, ind in pairs:
            if ind is None or not isinstance(a, Array):
                continue
            if len(ind) != a.ndim:
                raise ValueError(f"unify_chunks: index {ind!r} for an array of {a.ndim} axes")
            for letter, n, c in zip(ind, a.shape, a.chunks):
                if n != 1:
                    options.setdefault(letter, []).append(c)
        for letter, cs in options.items():
            if len({sum(c) for c in cs}) > 1:
                raise ValueError(f"unify_chunks: letter {letter!r} has lengths {sorted({sum(c) for c in cs})}")
        chunkss = {letter: _common_chunks(cs) for letter, cs in options.items()}
        out = []
        for a, ind in pairs:
            if ind is None or not isinstance(a, Array):
                out.append(a)
                continue
            for letter, c in zip(ind, a.chunks):
                chunkss.setdefault(letter, c)
            want = tuple(chunkss[l] if n != 1 else c for l, n, c in zip(ind, a.shape, a.chunks))
            out.append(a if want == a.chunks else a.rechunk(want))
        return chunkss, out

    def store(self, sources, targets, **kwargs):
        """Each source written block by block into its target (``to_netcdf``,
        ``to_zarr``): :func:`tessera.store`."""
        lock = kwargs.pop("lock", True)
        regions = kwargs.pop("regions", None)
        compute = kwargs.pop("compute", True)
        return_stored = kwargs.pop("return_stored", False)
        _graph_only(kwargs, "store")
        if lock is None:
            lock = False
        return _store(sources, targets, lock=lock, regions=regions, compute=compute,
                      return_stored=return_stored)

    def shuffle(self, x, indexer, axis, chunks):
        """``x`` with the positions of each group in ``indexer`` (a list of lists of
        positions along ``axis``) brought together, each group whole in one block (groups
        joined into blocks up to the size of ``x``'s largest block), as Dask's ``shuffle``."""
        if chunks not in (None, "auto"):
            raise NotImplementedError("shuffle: only chunks='auto' is supported, as in Dask")
        order = np.concatenate([np.asarray(g, dtype=np.int64) for g in indexer]) if indexer else \
            np.zeros(0, dtype=np.int64)
        taken = _tessera.take(x, _tessera.from_array(order), axis)
        aim = max(x.chunks[axis]) if x.shape[axis] else 1
        sizes, current = [], 0
        for g in indexer:
            if current and current + len(g) > aim:
                sizes.append(current)
                current = 0
            current += len(g)
        if current or not sizes:
            sizes.append(current)
        return taken.rechunk(tuple(tuple(sizes) if k == axis else c for k, c in enumerate(taken.chunks)))

    def get_auto_chunk_size(self) -> int:
        """The bytes an ``"auto"`` block aims at: the ``array.chunk-size`` setting."""
        return _tessera.chunk_size_bytes()
