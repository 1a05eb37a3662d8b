"""``import tessera.array as da``: code written for ``dask.array`` run twice, once with each
module, gives the same answer (values, dtype, shape and, where Dask fixes them, chunks).
``map_blocks`` (extra arguments, ``drop_axis``, ``new_axis``), ``map_overlap`` (every
boundary, depths as int, tuple and dict) and ``reduction`` are checked on chunkings that
put block edges everywhere; the namespace invents no names Dask lacks."""

import dask.array as dask_da
import numpy as np
import pytest

import tessera as ts
import tessera.array as ts_da

MODULES = [pytest.param(dask_da, id="dask"), pytest.param(ts_da, id="tessera")]
A = np.random.default_rng(0).normal(size=(13, 17))


def both(program):
    """``program(module)`` with dask.array and with tessera.array, computed."""
    want = program(dask_da)
    got = program(ts_da)
    want = want.compute() if hasattr(want, "compute") else want
    got = got.compute() if hasattr(got, "compute") else got
    return np.asarray(got), np.asarray(want)


PROGRAMS = {
    "ufuncs and a reduction": lambda m: (m.sin(m.from_array(A, chunks=(5, 7))) + 1).sum(axis=0),
    "nan-reductions": lambda m: m.nanmean(m.where(m.from_array(A, chunks=4) > 1, np.nan, m.from_array(A, chunks=4)), axis=1),
    "concatenate and stack": lambda m: m.stack([m.concatenate([m.from_array(A, chunks=5)] * 2, axis=1)] * 2).mean(axis=(0, 2)),
    "cumsum": lambda m: m.cumsum(m.from_array(A, chunks=(4, 6)), axis=1),
    "take and isin": lambda m: m.isin(m.take(m.from_array(A.round(), chunks=5), [3, 0, 12], axis=0), [0.0, 1.0]),
    "tril, flip, diff": lambda m: m.diff(m.flip(m.tril(m.from_array(A, chunks=6), k=1), axis=0), n=2, axis=1),
    "matmul": lambda m: m.matmul(m.from_array(A, chunks=5), m.from_array(A.T, chunks=5)),
    "rechunk and transpose": lambda m: m.transpose(m.rechunk(m.from_array(A, chunks=3), (13, 2))),
    "map_blocks with arguments": lambda m: m.map_blocks(lambda b, k, *, s: b * k + s, m.from_array(A, chunks=(4, 5)), 3.0, s=1.0),
    "map_blocks drop_axis": lambda m: m.map_blocks(np.max, m.from_array(A, chunks=(4, 5)), axis=1, drop_axis=1, dtype=A.dtype),
    "map_blocks new_axis": lambda m: m.map_blocks(lambda b: np.stack([b, -b], axis=1), m.from_array(A, chunks=(4, 5)), new_axis=1, chunks=((4, 4, 4, 1), (2,), (5, 5, 5, 2))),
    "reduction": lambda m: m.reduction(m.from_array(A, chunks=(4, 5)), np.sum, np.sum, axis=1, dtype=A.dtype),
    "reduction keepdims combine": lambda m: m.reduction(m.from_array(A, chunks=(4, 5)), np.max, np.max, combine=np.max, axis=0, keepdims=True, dtype=A.dtype),
    "reduction of everything": lambda m: m.reduction(m.from_array(A, chunks=(4, 5)), np.min, np.min, dtype=A.dtype),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_dask_program_gives_the_same_answer(name):
    got, want = both(PROGRAMS[name])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def stencil(b):
    # A 3x3 box sum: needs one neighbour each side along both axes.
    out = np.zeros_like(b)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            out += np.roll(np.roll(b, dy, axis=0), dx, axis=1)
    return out


@pytest.mark.parametrize("boundary", ["none", "reflect", "periodic", "nearest", 0.0, -2.5])
@pytest.mark.parametrize("depth", [1, (1, 2), {0: 2, 1: 1}, {1: 1}])
def test_map_overlap_matches_dask(boundary, depth):
    def program(m):
        return m.map_overlap(stencil, m.from_array(A, chunks=(4, 6)), depth=depth, boundary=boundary)

    got, want = both(program)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_map_overlap_keeps_the_chunks_and_trim_false_returns_the_grown_blocks():
    x = ts_da.from_array(A, chunks=(4, 6))
    y = ts_da.map_overlap(stencil, x, depth=1, boundary="reflect")
    assert y.chunks == x.chunks
    grown = ts_da.map_overlap(lambda b: b, x, depth=1, boundary="reflect", trim=False)
    assert grown.chunks == ((6, 6, 6, 3), (8, 8, 7))  # each block one more on each side
    want = dask_da.map_overlap(lambda b: b, dask_da.from_array(A, chunks=(4, 6)), depth=1,
                               boundary="reflect", trim=False)
    np.testing.assert_array_equal(grown.compute(), want.compute())


def test_map_overlap_merges_blocks_shorter_than_the_depth_as_dask():
    def program(m):
        return m.map_overlap(stencil, m.from_array(A, chunks=(4, 6)), depth=2, boundary="reflect")

    assert program(ts_da).chunks == program(dask_da).chunks  # the last block of 1 row merged
    got, want = both(program)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_map_overlap_refuses_a_depth_over_the_axis_and_unknown_boundaries():
    x = ts_da.from_array(A, chunks=(4, 6))
    with pytest.raises(ValueError, match="larger than the axis"):
        ts_da.map_overlap(stencil, x, depth=14, boundary="reflect")
    with pytest.raises(ValueError, match="boundary"):
        ts_da.map_overlap(stencil, ts_da.from_array(A, chunks=6), depth=1, boundary="wrap-ish")


def test_store_and_from_array_through_the_namespace():
    target = np.zeros_like(A)
    ts_da.store(ts_da.from_array(A, chunks=5) * 2, target)
    np.testing.assert_array_equal(target, A * 2)


def test_random_and_linalg_are_the_namespaces_submodules():
    x = ts_da.random.default_rng(0).random((20, 4), chunks=(5, 4))
    assert isinstance(x, ts.Array)
    q, r = ts_da.linalg.qr(x)
    np.testing.assert_allclose((q @ r).compute(), x.compute(), atol=1e-12)


def test_every_name_is_one_dask_array_has():
    extra = sorted(set(ts_da.__all__) - set(dir(dask_da)))
    assert extra == [], f"names dask.array lacks: {extra}"
    assert len(ts_da.__all__) > 150
