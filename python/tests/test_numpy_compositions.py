"""NumPy functions and ufuncs that tessera builds from its own ops, called through NumPy's
dispatch on chunked tessera arrays: each result is a lazy tessera array equal to NumPy's
(values, dtype, shape), NaN, infinities and signed zeros included, and the same names
through ``tessera.array`` give Dask's answers."""

import dask.array as dask_da
import numpy as np
import pytest

import tessera as ts
import tessera.array as ts_da

RNG = np.random.default_rng(1)
A = RNG.normal(size=(5, 7))
B = RNG.normal(size=(7, 3))
C = RNG.normal(size=(4, 5, 6))
SPECIAL = np.array([[0.0, -0.0, np.nan, np.inf], [-np.inf, 2.5, -3.0, 1e-30]])
INTS = np.arange(-6, 6).reshape(3, 4)


def chunked(a):
    return ts.from_array(a, chunks=tuple(max(1, n // 2) for n in a.shape) or None)


CASES = {
    "atleast_1d": (np.atleast_1d, (np.float64(3.0),)),
    "atleast_2d of 1-d": (np.atleast_2d, (np.arange(4.0),)),
    "atleast_3d of 2-d": (np.atleast_3d, (A,)),
    "roll flat": (lambda x: np.roll(x, 3), (A,)),
    "roll axes": (lambda x: np.roll(x, (2, -9), axis=(0, 1)), (A,)),
    "roll negative": (lambda x: np.roll(x, -1, axis=2), (C,)),
    "flipud": (np.flipud, (A,)),
    "fliplr": (np.fliplr, (A,)),
    "rot90 k=1": (np.rot90, (A,)),
    "rot90 k=2": (lambda x: np.rot90(x, 2), (A,)),
    "rot90 k=3 axes": (lambda x: np.rot90(x, -1, axes=(2, 0)), (C,)),
    "repeat": (lambda x: np.repeat(x, [1, 0, 2, 1, 3], axis=0), (A,)),
    "repeat flat": (lambda x: np.repeat(x, 2), (INTS,)),
    "tile": (lambda x: np.tile(x, (2, 1, 3)), (A,)),
    "delete": (lambda x: np.delete(x, [0, 3], axis=1), (A,)),
    "pad constant": (lambda x: np.pad(x, ((1, 2), (0, 3)), constant_values=((7, -1), (0, 4))), (A,)),
    "pad int constant casts": (lambda x: np.pad(x, 2, constant_values=2.7), (INTS,)),
    "pad edge": (lambda x: np.pad(x, (2, 1), mode="edge"), (C,)),
    "pad reflect": (lambda x: np.pad(x, ((3, 4), (1, 6)), mode="reflect"), (A,)),
    "pad reflect past the axis": (lambda x: np.pad(x, ((9, 11), (0, 0)), mode="reflect"), (A,)),
    "pad symmetric past the axis": (lambda x: np.pad(x, ((7, 12), (2, 0)), mode="symmetric"), (A,)),
    "pad wrap past the axis": (lambda x: np.pad(x, ((6, 13), (8, 1)), mode="wrap"), (A,)),
    "pad reflect of one element": (lambda x: np.pad(x, (3, 2), mode="reflect"), (np.array([4.0]),)),
    "gradient": (np.gradient, (A,)),
    "gradient of ints, one axis": (lambda x: np.gradient(x, axis=1), (INTS,)),
    "gradient spacing and order 2": (lambda x: np.gradient(x, 0.5, edge_order=2), (C,)),
    "gradient on uneven coordinates": (
        lambda x: np.gradient(x, np.array([0.0, 0.5, 2.0, 2.25, 4.0]), axis=0), (A,)),
    "gradient on uneven coordinates, order 2": (
        lambda x: np.gradient(x, np.array([0.0, 0.5, 2.0, 2.25, 4.0]), np.cumsum(np.arange(1.0, 8.0)),
                              edge_order=2), (A,)),
    "gradient of float32": (lambda x: np.gradient(x, np.array([0.0, 1.0, 3.0, 3.5]), axis=0),
                            (C[:4, 0, :].astype(np.float32),)),
    "sliding windows on one axis": (lambda x: np.lib.stride_tricks.sliding_window_view(x, 3, axis=1), (A,)),
    "sliding windows on two axes": (
        lambda x: np.lib.stride_tricks.sliding_window_view(x, (2, 4), axis=(2, 0)), (C,)),
    "sliding windows everywhere": (lambda x: np.lib.stride_tricks.sliding_window_view(x, (5, 7)), (A,)),
    "outer": (np.outer, (np.arange(4.0), np.arange(3.0))),
    "vdot": (np.vdot, (A, A)),
    "tensordot 1": (lambda a, b: np.tensordot(a, b, axes=1), (A, B)),
    "tensordot pairs": (lambda a, b: np.tensordot(a, b, axes=([0, 1], [1, 0])), (C, RNG.normal(size=(5, 4, 2)))),
    "trace": (np.trace, (A,)),
    "trace offset": (lambda x: np.trace(x, offset=-2, axis1=2, axis2=0), (C,)),
    "trace ints": (np.trace, (INTS,)),
    "diagonal": (np.diagonal, (A,)),
    "diagonal offset axes": (lambda x: np.diagonal(x, 1, axis1=2, axis2=1), (C,)),
    "diagonal of a NaN plane": (lambda x: np.diagonal(x, 1), (SPECIAL,)),
    "diag of 1-d": (lambda v: np.diag(v, -2), (np.arange(1.0, 4.0),)),
    "diag of 2-d": (lambda m: np.diag(m, 2), (A,)),
    "meshgrid xy": (lambda a, b: np.meshgrid(a, b), (np.arange(3.0), np.arange(4.0))),
    "meshgrid ij sparse": (lambda a, b: np.meshgrid(a, b, indexing="ij", sparse=True), (np.arange(3.0), np.arange(4.0))),
    "vstack": (lambda a: np.vstack([a, a[:2]]), (A,)),
    "hstack": (lambda a: np.hstack([a, a[:, :1]]), (A,)),
    "dstack": (lambda a: np.dstack([a, a]), (A,)),
    "append": (lambda a: np.append(a, a[:1], axis=0), (A,)),
    "nan_to_num": (np.nan_to_num, (SPECIAL,)),
    "nan_to_num given": (lambda x: np.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0), (SPECIAL,)),
    "nancumsum": (lambda x: np.nancumsum(x, axis=1), (SPECIAL,)),
    "nancumprod": (np.nancumprod, (SPECIAL,)),
    "ptp": (lambda x: np.ptp(x, axis=0), (A,)),
    "average": (lambda x: np.average(x, axis=1, weights=np.arange(1.0, 8.0)), (A,)),
    "average ints": (np.average, (INTS,)),
    "fix": (np.fix, (SPECIAL * 1.7,)),
    "isneginf": (np.isneginf, (SPECIAL,)),
    "isposinf": (np.isposinf, (SPECIAL,)),
    "iscomplex": (np.iscomplex, (A,)),
    "isreal": (np.isreal, (A,)),
    "real": (np.real, (A,)),
    "imag": (np.imag, (A,)),
    "angle": (np.angle, (SPECIAL,)),
    "angle deg": (lambda x: np.angle(x, deg=True), (A,)),
    "sinc": (np.sinc, (SPECIAL,)),
    "ediff1d": (lambda x: np.ediff1d(x, to_begin=[-1.0], to_end=[5.0, 6.0]), (A,)),
    "select": (lambda x: np.select([x < -1, x > 1], [x * 10, -x], default=0.5), (A,)),
    "digitize": (lambda x: np.digitize(x, [-1.0, 0.0, 0.5]), (A,)),
    "digitize right decreasing": (lambda x: np.digitize(x, [2.0, 0.0, -1.0], right=True), (A,)),
    "apply_along_axis scalar": (lambda x: np.apply_along_axis(np.median, 1, x), (A,)),
    "apply_along_axis vector": (lambda x: np.apply_along_axis(lambda r: np.sort(r)[:2], 0, x), (A,)),
    "fmax": (lambda x: np.fmax(x, np.flipud(x)), (SPECIAL,)),
    "fmin scalar nan": (lambda x: np.fmin(x, np.nan), (SPECIAL,)),
    "fabs ints": (np.fabs, (INTS,)),
    "deg2rad": (np.deg2rad, (A,)),
    "rad2deg": (np.rad2deg, (INTS,)),
    "degrees": (np.degrees, (A,)),
    "radians": (np.radians, (A,)),
    "modf": (np.modf, (SPECIAL * -1.5,)),
    "divmod": (lambda x: np.divmod(x, 4), (INTS,)),
    "conj": (np.conj, (A,)),
}


def check(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
        return
    assert isinstance(got, ts.Array), type(got)
    g = got.compute()
    w = np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=1e-13, atol=0, equal_nan=True)
    zeros = (w == 0) & ~np.isnan(w) if w.dtype.kind == "f" else None
    if zeros is not None and zeros.any():
        assert (np.signbit(g[zeros]) == np.signbit(w[zeros])).all(), "signed zeros differ"


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on inf and NaN
@pytest.mark.parametrize("name", CASES)
def test_a_numpy_function_on_tessera_arrays_is_lazy_and_numpys(name):
    f, args = CASES[name]
    want = f(*args)
    got = f(*[chunked(np.asarray(a)) if np.ndim(a) else ts.from_array(np.asarray(a)) for a in args])
    check(got, want)


@pytest.mark.parametrize("chunks", [((1, 2, 1, 3, 1, 1, 2), (4,)), ((11,), (2, 2)), ((3, 8), (1, 3))])
@pytest.mark.parametrize("w", [1, 4, 11])
def test_windows_need_no_block_as_large_as_the_window(chunks, w):
    # Blocks shorter than the window (a padded edge) take their windows' ends from the
    # blocks after them, however many.
    a = np.arange(44.0).reshape(11, 4)
    x = ts.from_array(a, chunks=chunks)
    got = np.lib.stride_tricks.sliding_window_view(x, w, axis=0)
    check(got, np.lib.stride_tricks.sliding_window_view(a, w, axis=0))


def test_lstsq_through_numpy_is_numpys_solution():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(40, 3)), rng.normal(size=(40, 5))
    x, res, rank, sv = np.linalg.lstsq(ts.from_array(a, chunks=(10, 3)), ts.from_array(b, chunks=(10, 5)))
    want = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(x.compute(), want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.compute(), want[1], rtol=1e-10)
    assert rank == want[2]
    np.testing.assert_allclose(sv.compute(), want[3], rtol=1e-10)
    # A NumPy left-hand side with a tessera right-hand side, as xarray's polyfit calls it.
    x2 = np.linalg.lstsq(a, ts.from_array(b, chunks=(10, 5)), rcond=None)[0]
    np.testing.assert_allclose(x2.compute(), want[0], rtol=1e-10, atol=1e-12)


def test_gradient_refuses_what_numpy_refuses():
    x = chunked(A)
    with pytest.raises(ValueError, match="too small"):
        np.gradient(chunked(np.arange(2.0)), edge_order=2)
    with pytest.raises(ValueError, match="must match the length"):
        np.gradient(x, np.arange(3.0), axis=0)
    with pytest.raises(TypeError, match="invalid number"):
        np.gradient(x, 1.0, 2.0, 3.0)


def test_pad_and_windows_refuse_what_numpy_refuses():
    x = chunked(A)
    with pytest.raises(ValueError, match="negative"):
        np.pad(x, -1)
    with pytest.raises(TypeError, match="numpy.pad"):
        np.pad(x, 1, mode="linear_ramp")  # a mode tessera lacks: NumPy's TypeError names it
    with pytest.raises(ValueError, match="larger than input"):
        np.lib.stride_tricks.sliding_window_view(x, 6, axis=0)
    with pytest.raises(ValueError, match="matching length"):
        np.lib.stride_tricks.sliding_window_view(x, (2, 2), axis=0)


def test_reshape_takes_numpys_order_keyword():
    x = chunked(A)
    np.testing.assert_array_equal(x.reshape((7, 5), order="C").compute(), A.reshape((7, 5)))
    with pytest.raises(NotImplementedError, match="C order"):
        x.reshape((7, 5), order="F")


def test_errors_are_numpys():
    x = chunked(A)
    with pytest.raises(ValueError, match="2-d"):
        np.fliplr(chunked(np.arange(3.0)))
    with pytest.raises(ValueError, match="Axes must be different"):
        np.rot90(x, axes=(0, 0))
    with pytest.raises(ValueError, match="shape-mismatch"):
        np.tensordot(x, x, axes=([0], [0, 1]))
    with pytest.raises(np.exceptions.AxisError):
        np.roll(x, 1, axis=4)
    with pytest.raises(ValueError, match="same length"):
        np.select([x > 0], [x, x])


DASK_PROGRAMS = {
    "tri": lambda m: m.tri(5, 7, k=1, chunks=3),
    "indices": lambda m: m.indices((3, 4), chunks=2),
    "roll and hstack": lambda m: m.hstack([m.roll(m.from_array(A, chunks=2), 2, axis=1), m.from_array(A, chunks=3)]),
    "nancumsum": lambda m: m.nancumsum(m.from_array(SPECIAL, chunks=1), axis=1),
    "fmax and mod": lambda m: m.mod(m.fmax(m.from_array(A, chunks=2), 0.1), 0.3),
    "diag and trace": lambda m: m.trace(m.diag(m.from_array(np.arange(5.0), chunks=2))),
    "tensordot": lambda m: m.tensordot(m.from_array(A, chunks=3), m.from_array(B, chunks=3), axes=1),
    "apply_along_axis": lambda m: m.apply_along_axis(np.max, 0, m.from_array(A, chunks=2)),
}


@pytest.mark.parametrize("name", DASK_PROGRAMS)
def test_the_dask_names_give_dasks_answers(name):
    want = np.asarray(DASK_PROGRAMS[name](dask_da).compute())
    got = DASK_PROGRAMS[name](ts_da).compute()
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, equal_nan=True)


EINSUMS = [
    ("ij,jk->ik", (A, B)),
    ("ij,jk", (A, B)),
    ("ii->i", (A[:5, :5],)),
    ("ii", (A[:5, :5],)),
    ("iij->j", (RNG.normal(size=(3, 3, 4)),)),
    ("...j,jk->...k", (C[:, :, :5], RNG.normal(size=(5, 2)))),
    ("ij->", (A,)),
    ("ij,ij->i", (A, A)),
    ("i,j->ij", (np.arange(3.0), np.arange(4.0))),
    ("bij,bjk->bik", (C, RNG.normal(size=(4, 6, 2)))),
    ("ij,j", (INTS, np.arange(4))),
    # The largest operand has every letter: a broadcast product summed (xarray's dot).
    ("tyx,y->t", (C.astype(np.float32), np.cos(np.arange(5.0)))),
    ("ijk,ik->ji", (C, C[:, 0, :])),
    ("ijk,j,k->", (C, np.arange(5.0), np.arange(6.0) - 2)),
    ("ij,ij->j", ((A > 0), A)),
    ("ij,ji->", (A, A.T)),
]


@pytest.mark.parametrize("sub,ops", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_matches_numpy_block_by_block(sub, ops):
    got = np.einsum(sub, *[chunked(o) for o in ops])
    check(got, np.einsum(sub, *ops))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"bins": 7, "range": (-1.0, 2.0)}, {"bins": [-3.0, -0.5, 0.0, 0.1, 4.0]},
     {"bins": 6, "weights": "self"}, {"bins": 4, "density": True}, {"bins": [-1.0, 0.0, 2.0], "density": True}],
    ids=repr,
)
def test_histogram_counts_per_block_as_numpy(kwargs):
    data = RNG.normal(size=(40, 30))
    kw = dict(kwargs)
    ours_kw = dict(kw)
    if kw.get("weights") == "self":
        kw["weights"], ours_kw["weights"] = data, chunked(data)
    counts, edges = np.histogram(chunked(data), **ours_kw)
    want_counts, want_edges = np.histogram(data, **kw)
    check(counts, want_counts)
    np.testing.assert_allclose(np.asarray(edges.compute() if isinstance(edges, ts.Array) else edges),
                               want_edges, rtol=1e-15)


def test_histogram_and_einsum_give_dasks_answers():
    data = RNG.normal(size=(40, 30))
    for m in (dask_da, ts_da):
        x = m.from_array(data, chunks=(7, 11))
        c, e = m.histogram(x, bins=9, range=(-2.0, 2.0))
        if m is dask_da:
            want_c, want_e = c.compute(), e
        else:
            got_c, got_e = c.compute(), e
    np.testing.assert_array_equal(got_c, want_c)
    np.testing.assert_array_equal(got_e, want_e)
    want = dask_da.einsum("ij,kj->ik", dask_da.from_array(A, chunks=3), dask_da.from_array(A, chunks=2)).compute()
    got = ts_da.einsum("ij,kj->ik", ts_da.from_array(A, chunks=3), ts_da.from_array(A, chunks=2)).compute()
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_histogram_errors_are_numpys():
    x = chunked(A)
    with pytest.raises(ValueError, match="monotonically"):
        np.histogram(x, bins=[1.0, 0.0])
    with pytest.raises(ValueError, match="max must be larger"):
        np.histogram(x, bins=3, range=(1.0, 0.0))
    with pytest.raises(ValueError, match="same shape"):
        np.histogram(x, weights=chunked(A[:2]))
