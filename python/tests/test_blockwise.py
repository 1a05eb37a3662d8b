"""``blockwise`` and ``apply_gufunc`` against ``dask.array``'s on the same programs:
contractions, transposes, broadcasting of length-1 letters, new axes, adjusted chunks,
lists of blocks without ``concatenate``, signatures with several inputs and outputs, core
dimensions elsewhere than last, and Dask's errors."""

import dask.array as dask_da
import numpy as np
import pytest

import tessera.array as ts_da

RNG = np.random.default_rng(4)
A = RNG.normal(size=(6, 8))
B = RNG.normal(size=(8, 5))
V = RNG.normal(size=(8,))
C = RNG.normal(size=(5, 4, 6))


def run(program):
    want = program(dask_da)
    got = program(ts_da)
    if isinstance(want, tuple):
        return [(np.asarray(g.compute()), np.asarray(w.compute()), g, w) for g, w in zip(got, want)]
    return [(np.asarray(got.compute()), np.asarray(want.compute()), got, want)]


PROGRAMS = {
    "matmul by contraction": lambda m: m.blockwise(
        np.dot, "ik", m.from_array(A, chunks=(2, 3)), "ij", m.from_array(B, chunks=(3, 2)), "jk",
        concatenate=True, dtype=float),
    "transpose": lambda m: m.blockwise(lambda b: b.T, "ji", m.from_array(A, chunks=(4, 3)), "ij", dtype=float),
    "outer by letters": lambda m: m.blockwise(
        np.multiply.outer, "ij", m.from_array(A[:, 0], chunks=4), "i", m.from_array(V, chunks=3), "j", dtype=float),
    "broadcast a length-1 letter": lambda m: m.blockwise(
        np.add, "ij", m.from_array(A, chunks=(3, 4)), "ij", m.from_array(A[:1], chunks=(1, 4)), "ij", dtype=float),
    "a constant argument and kwargs": lambda m: m.blockwise(
        lambda b, c, *, s: b * c + s, "ij", m.from_array(A, chunks=3), "ij", 2.0, None, s=0.5, dtype=float),
    "new axis": lambda m: m.blockwise(
        lambda b: np.repeat(b[..., None], 3, axis=-1), "ijk", m.from_array(A, chunks=3), "ij",
        new_axes={"k": 3}, dtype=float),
    "adjust chunks": lambda m: m.blockwise(
        lambda b: b[::2], "ij", m.from_array(A, chunks=(2, 4)), "ij", adjust_chunks={"i": lambda n: n // 2},
        dtype=float),
    "sum over blocks without concatenate": lambda m: m.blockwise(
        lambda bs: sum(b.sum(axis=1) for b in bs), "i", m.from_array(A, chunks=(3, 2)), "ij", dtype=float),
    "dtype inferred": lambda m: m.blockwise(lambda b: b > 0, "ij", m.from_array(A, chunks=3), "ij"),
    "gufunc inner product": lambda m: m.apply_gufunc(
        lambda a, b: np.einsum("...i,...i->...", a, b), "(i),(i)->()",
        m.from_array(A, chunks=(2, 8)), m.from_array(V, chunks=8), output_dtypes=float),
    "gufunc two outputs": lambda m: m.apply_gufunc(
        lambda a: (a.mean(axis=-1), a.std(axis=-1)), "(i)->(),()", m.from_array(C, chunks=(2, 2, 6)),
        output_dtypes=(float, float)),
    "gufunc axis": lambda m: m.apply_gufunc(
        lambda a: np.sort(a, axis=-1), "(i)->(i)", m.from_array(C, chunks=(5, 2, 3)), axis=0,
        output_dtypes=float),
    "gufunc new output size": lambda m: m.apply_gufunc(
        lambda a: np.stack([a.min(axis=-1), a.max(axis=-1)], axis=-1), "(i)->(j)",
        m.from_array(A, chunks=(3, 8)), output_sizes={"j": 2}, output_dtypes=float),
    "gufunc allow_rechunk vectorize": lambda m: m.apply_gufunc(
        lambda r: r.max() - r.min(), "(i)->()", m.from_array(A, chunks=(3, 3)), allow_rechunk=True,
        vectorize=True, output_dtypes=float),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_same_program_gives_dasks_answer(name):
    for got, want, g, w in run(PROGRAMS[name]):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        # Dask's rechunk for allow_rechunk also splits the loop axis to one row a block;
        # tessera keeps the loop axis's chunks.
        if name != "gufunc allow_rechunk vectorize":
            assert g.chunks == w.chunks, (g.chunks, w.chunks)


def test_dasks_errors():
    x = ts_da.from_array(A, chunks=3)
    with pytest.raises(ValueError, match="multiple chunks"):
        ts_da.apply_gufunc(np.sum, "(i)->()", x)
    with pytest.raises(ValueError, match="new_axes"):
        ts_da.blockwise(lambda b: b, "ijk", x, "ij")
    with pytest.raises(ValueError, match="repeated letter"):
        ts_da.blockwise(lambda b: b, "i", ts_da.from_array(np.eye(3)), "ii")
    with pytest.raises(ValueError, match="lengths 6 and 8"):
        ts_da.blockwise(np.add, "ij", x, "ij", x.T, "ij")
    with pytest.raises(ValueError, match="output_sizes"):
        ts_da.apply_gufunc(lambda a: a, "(i)->(j)", ts_da.from_array(A, chunks=(3, 8)))
