"""``store``: tessera arrays written block by block into objects of other libraries.

Any object that takes ``target[region] = block`` is a target: a NumPy array, a zarr-python
or h5py array, a memory map. Each block is written by one task as soon as it is computed
and dropped after, so an array larger than memory is stored in bounded memory, and
several sources stored together run as one plan (what they share is computed once).

>>> import numpy as np, tessera as ts
>>> target = np.zeros((4, 6))
>>> ts.store(ts.ones((4, 6), chunks=2), target)
>>> float(target.sum())
24.0
"""

from __future__ import annotations

import threading

from . import _tessera


def _as_list(x, what):
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"store: {what} must be an array or a list of them, got {type(x).__name__}")


def store(sources, targets, lock=True, regions=None, compute=True, return_stored=False):
    """Writes each source array into its target, block by block, as ``dask.array.store``.

    ``sources`` is one tessera array or a list of them; ``targets`` one object with
    ``__setitem__`` or a list of as many. ``regions`` (one tuple of slices for every
    target, or a list with one per target) places each source inside a larger target.
    ``lock`` is held around every write: ``True`` (the default) for one new
    ``threading.Lock``, ``False`` for none, or a lock of your own.

    With ``compute=True`` the writes run now and ``None`` is returned, or with
    ``return_stored=True`` a lazy array over each target (read back from it when
    computed). With ``compute=False`` nothing runs: the result is a tuple of lazy arrays,
    one per target, whose computation (``ts.compute(*plans)``) does the writes and gives
    the bytes written per block.

    Raises ``TypeError`` for a target without ``__setitem__`` and ``ValueError`` when the
    numbers of sources and targets, or a shape and its target or region, do not match,
    all before anything is written; an exception a write raises reaches the caller.

    >>> import numpy as np, tessera as ts
    >>> big = np.zeros((4, 10))
    >>> ts.store([ts.ones((2, 3), chunks=1)], [big], regions=[(slice(1, 3), slice(5, 8))])
    >>> int(big.sum()), float(big[1, 5]), float(big[0, 5])
    (6, 1.0, 0.0)
    """
    if isinstance(sources, _tessera.Array):
        sources, targets = [sources], [targets]
    else:
        sources = _as_list(sources, "sources")
        targets = _as_list(targets, "targets")
    for s in sources:
        if not isinstance(s, _tessera.Array):
            raise TypeError(f"store: sources must be tessera arrays, got {type(s).__name__}")
    if len(sources) != len(targets):
        raise ValueError(
            f"store: {len(sources)} sources and {len(targets)} targets; give one target per source"
        )
    if regions is None or isinstance(regions, (tuple, slice)):
        regions = [regions] * len(targets)
    elif len(regions) != len(targets):
        raise ValueError(f"store: {len(regions)} regions for {len(targets)} targets")
    if lock is True:
        lock = threading.Lock()
    elif lock is False:
        lock = None
    if return_stored and not compute:
        raise ValueError(
            "store: return_stored=True needs compute=True here; store with compute=False, "
            "compute the plans, then read each target back with ts.from_array(target)"
        )
    plans = [_tessera._store_plan(s, t, r, lock) for s, t, r in zip(sources, targets, regions)]
    if not compute:
        return tuple(plans)
    _tessera.compute(*plans)
    if not return_stored:
        return None
    stored = []
    for s, t, r in zip(sources, targets, regions):
        back = _tessera.from_array(t, lock=lock)
        if r is not None:
            back = back[r]
        stored.append(back.rechunk(s.chunks))
    return tuple(stored)
