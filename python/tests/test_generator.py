"""``ts.random.default_rng`` / ``Generator``: NumPy's newer random API over tessera's
counter-based draws. The values are tessera's own stream (as Dask's are), so each
distribution is checked by its law: moments and quantiles of 400,000 draws against the
exact ones and against NumPy's generator of the same distribution; and by what makes a
stream usable: the same seed gives the same array whatever the chunking, seeds and
successive draws differ, the chunks asked for are the chunks made, and NumPy's errors."""

import numpy as np
import pytest

import tessera as ts

N = 400_000
QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])


def quantiles_close(ours, theirs, tol):
    a, b = np.quantile(ours, QS), np.quantile(theirs, QS)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


DISTRIBUTIONS = [
    ("random", (), {}),
    ("uniform", (-2.0, 5.0), {}),
    ("standard_normal", (), {}),
    ("normal", (3.0, 0.5), {}),
    ("standard_exponential", (), {}),
    ("exponential", (2.5,), {}),
    ("lognormal", (0.2, 0.4), {}),
    ("pareto", (3.0,), {}),
    ("power", (2.0,), {}),
    ("rayleigh", (1.5,), {}),
    ("weibull", (1.7,), {}),
    ("triangular", (-1.0, 0.5, 4.0), {}),
]


@pytest.mark.parametrize("name,args,kwargs", DISTRIBUTIONS, ids=[d[0] for d in DISTRIBUTIONS])
def test_each_distribution_has_numpys_law(name, args, kwargs):
    ours = getattr(ts.random.default_rng(11), name)(*args, size=N, chunks=N // 7, **kwargs)
    assert ours.chunks[0][0] == N // 7
    got = ours.compute()
    want = getattr(np.random.default_rng(11), name)(*args, size=N, **kwargs)
    assert got.dtype == want.dtype and got.shape == want.shape
    quantiles_close(got, want, 0.02)
    np.testing.assert_allclose(got.mean(), want.mean(), rtol=0.02, atol=0.01)


def test_the_cauchy_median_and_quartiles_are_the_laws():
    got = ts.random.default_rng(3).standard_cauchy(size=N, chunks=50_000).compute()
    np.testing.assert_allclose(np.quantile(got, [0.25, 0.5, 0.75]), [-1.0, 0.0, 1.0], atol=0.02)


def test_exact_moments_of_the_base_draws():
    rng = ts.random.default_rng(5)
    u = rng.random(N, chunks=100_000).compute()
    z = rng.standard_normal(N, chunks=100_000).compute()
    e = rng.standard_exponential(N, chunks=100_000).compute()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.003 and abs(u.var() - 1 / 12) < 0.001
    assert abs(z.mean()) < 0.006 and abs(z.std() - 1.0) < 0.006
    assert e.min() >= 0.0 and abs(e.mean() - 1.0) < 0.01


def test_integers_cover_the_range_with_endpoint_and_dtype():
    rng = ts.random.default_rng(9)
    a = rng.integers(-3, 4, size=(300, 300), chunks=128).compute()
    assert a.dtype == np.int64 and a.min() == -3 and a.max() == 3
    counts = np.bincount(a.ravel() + 3) / a.size
    np.testing.assert_allclose(counts, 1 / 7, atol=0.005)
    b = rng.integers(5, size=1000, dtype=np.uint8, endpoint=True, chunks=100).compute()
    assert b.dtype == np.uint8 and b.max() == 5 and b.min() == 0


def test_the_same_seed_gives_the_same_array_whatever_the_chunks():
    a = ts.random.default_rng(123).normal(size=(60, 40), chunks=(7, 9)).compute()
    b = ts.random.default_rng(123).normal(size=(60, 40), chunks=(60, 40)).compute()
    np.testing.assert_array_equal(a, b)
    rng = ts.random.default_rng(123)
    first, second = rng.random(100, chunks=10).compute(), rng.random(100, chunks=10).compute()
    assert not np.array_equal(first, second)  # successive draws differ
    other = ts.random.default_rng(124).random(100, chunks=10).compute()
    assert not np.array_equal(first, other)


def test_seeds_as_numpy_takes_them():
    assert ts.random.default_rng(np.random.SeedSequence(4)).random(3).compute().shape == (3,)
    np.testing.assert_array_equal(
        ts.random.default_rng([1, 2]).random(5).compute(),
        ts.random.default_rng([1, 2]).random(5).compute(),
    )
    g = ts.random.default_rng(0)
    assert ts.random.default_rng(g) is g
    fresh = ts.random.default_rng().random(5).compute(), ts.random.default_rng().random(5).compute()
    assert not np.array_equal(*fresh)  # None: OS entropy each time
    with pytest.raises(ValueError):
        ts.random.default_rng(-1)
    with pytest.raises(TypeError, match="seed"):
        ts.random.default_rng(1.5)


def test_array_parameters_broadcast_as_numpy():
    loc = ts.from_array(np.array([0.0, 100.0, -100.0]))
    x = ts.random.default_rng(2).normal(loc, 1.0, size=(20_000, 3), chunks=(5_000, 3)).compute()
    np.testing.assert_allclose(x.mean(axis=0), [0.0, 100.0, -100.0], atol=0.05)
    y = ts.random.default_rng(2).uniform(np.zeros(4), np.arange(1.0, 5.0)).compute()
    assert y.shape == (4,) and (y < np.arange(1.0, 5.0)).all() and (y >= 0).all()


def test_float32_draws():
    x = ts.random.default_rng(8).random((10, 10), dtype=np.float32, chunks=5)
    assert x.dtype == np.float32
    assert ts.random.default_rng(8).standard_normal(4, dtype="float32").dtype == np.float32


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda g: g.normal(0.0, -1.0, 3), ValueError, "scale < 0"),
        (lambda g: g.exponential(-1.0, 3), ValueError, "scale < 0"),
        (lambda g: g.integers(5, 5), ValueError, "low >= high"),
        (lambda g: g.integers(0, 300, dtype=np.uint8), ValueError, "outside the range of uint8"),
        (lambda g: g.random(3, dtype=np.int32), TypeError, "Unsupported dtype"),
        (lambda g: g.pareto(0.0, 3), ValueError, "a <= 0"),
        (lambda g: g.triangular(2.0, 1.0, 3.0, 3), ValueError, "left > mode"),
        (lambda g: g.random(3, out=np.empty(3)), TypeError, "out="),
    ],
)
def test_numpys_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(ts.random.default_rng(0))
    if match != "out=":  # NumPy writes into out=; a lazy array has nothing to write
        with pytest.raises(error):
            call(np.random.default_rng(0))


def test_a_distribution_without_an_exact_transform_is_absent_not_faked():
    g = ts.random.default_rng(0)
    for name in ("gamma", "beta", "binomial", "poisson", "choice", "permutation"):
        assert not hasattr(g, name), name
