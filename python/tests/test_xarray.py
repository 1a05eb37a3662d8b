"""xarray on tessera: the ``tessera`` chunk manager against xarray on Dask.

Every operation class climate users run goes through xarray twice on the same generated
NetCDF-4 files (three yearly files, zlib-compressed, stored chunks that leave an irregular
last chunk, NaNs written through a ``_FillValue``, a ``time`` coordinate): once with
``chunked_array_type="dask"``, once with ``"tessera"``. The values must agree, and the
tessera result must still be a lazy tessera array until it is computed.
"""

from __future__ import annotations

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")
pytest.importorskip("netCDF4")
da = pytest.importorskip("dask.array")

import tessera as ts  # noqa: E402
from tessera.xarray import TesseraManager  # noqa: E402
from xarray.namedarray.parallelcompat import (  # noqa: E402
    get_chunked_array_type,
    guess_chunkmanager,
    list_chunkmanagers,
)

LAT = np.linspace(-89.0, 89.0, 18)
LON = np.arange(0.0, 360.0, 15.0)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """Three yearly NetCDF-4 files of daily fields, compressed and chunked on disk."""
    root = tmp_path_factory.mktemp("netcdf")
    rng = np.random.default_rng(7)
    out = []
    for year in (2000, 2001, 2002):
        time = pd.date_range(f"{year}-01-01", f"{year}-12-31", freq="D")
        season = np.sin(2 * np.pi * np.asarray(time.day_of_year) / 365.0)
        t = (280 + 15 * np.cos(np.deg2rad(LAT))[None, :, None] + 5 * season[:, None, None]
             + rng.normal(0, 1, (len(time), len(LAT), len(LON))))
        t[rng.random(t.shape) < 0.01] = np.nan
        ds = xr.Dataset(
            {"t2m": (("time", "lat", "lon"), t.astype("float32")),
             "pr": (("time", "lat", "lon"), rng.gamma(1.0, 2.0, t.shape))},
            coords={"time": time, "lat": LAT, "lon": LON},
        )
        path = root / f"t_{year}.nc"
        ds.to_netcdf(path, encoding={
            "t2m": {"zlib": True, "chunksizes": (50, 18, 24), "_FillValue": -999.0},
            "pr": {"zlib": True, "chunksizes": (50, 9, 12)},
        })
        out.append(str(path))
    return out


def open_both(paths, **kwargs):
    kwargs.setdefault("chunks", {"time": 100})
    ref = xr.open_mfdataset(paths, chunked_array_type="dask", combine="by_coords", **kwargs)
    got = xr.open_mfdataset(paths, chunked_array_type="tessera", combine="by_coords", **kwargs)
    return ref, got


def assert_same(expected, actual):
    """Values equal to float32 resolution of the data (~280 K: 3e-5): tessera's float32
    sums are pairwise, Dask's partial sums sequential, so the last bits differ."""
    assert expected.dims == actual.dims
    assert expected.shape == actual.shape
    for name in expected.coords:
        np.testing.assert_array_equal(expected[name].values, actual[name].values)
    np.testing.assert_allclose(np.asarray(actual.values, dtype=np.float64),
                               np.asarray(expected.values, dtype=np.float64),
                               rtol=1e-5, atol=5e-4, equal_nan=True)


# --- the chunk manager as xarray finds it ---------------------------------------------


def test_the_manager_is_registered_under_its_entry_point():
    managers = list_chunkmanagers()
    assert isinstance(managers["tessera"], TesseraManager)
    assert isinstance(guess_chunkmanager("tessera"), TesseraManager)


def test_xarray_picks_the_manager_from_the_array_type():
    x = ts.ones((4, 6), chunks=2)
    assert isinstance(get_chunked_array_type(x), TesseraManager)
    v = xr.Variable(("a", "b"), x)
    assert v.chunks == ((2, 2), (2, 2, 2))
    assert isinstance(v.data, ts.Array)


def test_an_unknown_name_still_names_tessera_among_the_choices():
    with pytest.raises(ValueError, match="tessera"):
        guess_chunkmanager("no-such-manager")


def test_chunk_takes_the_manager_by_name_and_passes_from_array_kwargs():
    arr = xr.DataArray(np.arange(24.0).reshape(4, 6), dims=("t", "x"))
    lazy = arr.chunk({"t": 3}, chunked_array_type="tessera", from_array_kwargs={"backend": "cpu"})
    assert isinstance(lazy.data, ts.Array) and lazy.data.backend == "cpu"
    assert lazy.chunks == ((3, 1), (6,))
    np.testing.assert_array_equal(lazy.values, arr.values)
    with pytest.raises(TypeError, match="unexpected keyword"):
        arr.chunk({"t": 3}, chunked_array_type="tessera", from_array_kwargs={"no_such": 1})


@pytest.mark.parametrize("chunks, shape, previous", [
    ({0: 3}, (7, 2), None),
    ((3, -1), (7, 5), None),
    (((4, 3), 2), (7, 4), None),
    ((2, None), (5, 3), None),
    ("auto", (1000, 100), ((50,) * 20, (100,))),
])
def test_normalize_chunks_matches_dask_on_explicit_specs(chunks, shape, previous):
    ours = TesseraManager().normalize_chunks(chunks, shape=shape, dtype=np.float64, previous_chunks=previous)
    if chunks == "auto":
        # "auto" follows the engine's chunk size, in whole stored chunks along each axis.
        assert all(sum(c) == n for c, n in zip(ours, shape))
        assert all(b % 50 == 0 for b in ours[0][:-1]) and ours[1] == (100,)
    else:
        assert ours == da.core.normalize_chunks(chunks, shape=shape, dtype=np.float64)


def test_normalize_chunks_reads_byte_sizes_and_refuses_a_bad_spec():
    m = TesseraManager()
    assert m.normalize_chunks("800B", shape=(1000,), dtype=np.float64) == ((100,) * 10,)
    with pytest.raises(ValueError, match="byte size"):
        m.normalize_chunks("lots", shape=(10,), dtype=np.float64)
    with pytest.raises(ValueError):
        m.normalize_chunks((3, 3), shape=(10,), dtype=np.float64)
    assert m.get_auto_chunk_size() > 0


def test_unify_chunks_cuts_where_any_array_does():
    m = TesseraManager()
    a, b = ts.ones((6, 4), chunks=(3, 4)), ts.ones((6,), chunks=2)
    chunkss, (ua, ub) = m.unify_chunks(a, "ij", b, "i")
    dchunkss, (da_, db_) = da.core.unify_chunks(da.ones((6, 4), chunks=(3, 4)), "ij", da.ones(6, chunks=2), "i")
    assert chunkss == dchunkss
    assert ua.chunks == da_.chunks and ub.chunks == db_.chunks


def test_scan_carries_each_block_into_the_next_as_cumreduction_does():
    m = TesseraManager()
    x = np.random.default_rng(1).normal(size=(10, 7))
    x[x > 0.8] = np.nan
    t = ts.from_array(x, chunks=(3, 2))
    d = da.from_array(x, chunks=(3, 2))
    got = m.scan(np.cumsum, np.add, 0, t, axis=0, dtype=x.dtype)
    assert isinstance(got, ts.Array)
    np.testing.assert_allclose(got.compute(), da.reductions.cumreduction(np.cumsum, np.add, 0, d, axis=0).compute())

    # xarray's ffill: a fill within blocks, then the last valid value carried forward.
    def push(b, axis, dtype=None):
        out = b.copy()
        for k in range(1, b.shape[axis]):
            prev, cur = np.take(out, k - 1, axis=axis), np.take(out, k, axis=axis)
            idx = [slice(None)] * b.ndim
            idx[axis] = k
            out[tuple(idx)] = np.where(np.isnan(cur), prev, cur)
        return out

    def fill(a, b):
        return np.where(np.isnan(b), a, b)

    def nanlast(b, axis, keepdims=False):
        return np.take(push(b, axis), [b.shape[axis] - 1], axis=axis)

    got = m.scan(push, fill, np.nan, t, axis=1, dtype=x.dtype, preop=nanlast)
    want = push(x, 1)
    np.testing.assert_array_equal(got.compute(), want)


def test_persist_holds_the_values_in_the_same_blocks():
    m = TesseraManager()
    x = ts.arange(12, chunks=5) * 2
    (p,) = m.persist(x)
    assert isinstance(p, ts.Array) and p.chunks == x.chunks
    np.testing.assert_array_equal(p.compute(), np.arange(12) * 2)


def test_shuffle_puts_each_group_whole_in_one_block():
    m = TesseraManager()
    x = ts.from_array(np.arange(10.0), chunks=4)
    groups = [[0, 5, 9], [1, 2], [3, 4, 6, 7, 8]]
    out = m.shuffle(x, groups, axis=0, chunks="auto")
    np.testing.assert_array_equal(out.compute(), np.concatenate([np.arange(10.0)[g] for g in groups]))
    # Groups joined into blocks up to the largest input block (4): none is split.
    assert out.chunks == ((3, 2, 5),)


# --- opening files -----------------------------------------------------------------------


def test_open_mfdataset_gives_lazy_tessera_variables_on_the_asked_chunks(paths):
    ref, got = open_both(paths)
    assert isinstance(got.t2m.data, ts.Array)
    assert got.t2m.chunks == ref.t2m.chunks
    assert got.t2m.dtype == ref.t2m.dtype == np.float32
    assert got.t2m.attrs == ref.t2m.attrs
    assert_same(ref.t2m, got.t2m)


def test_open_dataset_auto_chunks_follow_the_stored_chunks(paths):
    ds = xr.open_dataset(paths[0], chunks={}, chunked_array_type="tessera")
    assert isinstance(ds.pr.data, ts.Array)
    # chunks={} asks for the stored chunks (50, 9, 12), the last time chunk irregular.
    assert ds.pr.chunks == ((50,) * 7 + (16,), (9, 9), (12, 12))


# --- the operations climate users run ------------------------------------------------------

OPS = {
    "area_weighted_mean": lambda ds: ds.t2m.weighted(np.cos(np.deg2rad(ds.lat))).mean(("lat", "lon")),
    "monthly_climatology": lambda ds: ds.t2m.groupby("time.month").mean("time"),
    "anomalies": lambda ds: ds.t2m.groupby("time.month") - ds.t2m.groupby("time.month").mean("time"),
    "resample_monthly": lambda ds: ds.pr.resample(time="MS").sum(),
    "label_and_positional_slices": lambda ds: ds.t2m.sel(time=slice("2001-03", "2001-06"),
                                                         lat=slice(-30, 30)).isel(lon=slice(2, 10)),
    "rolling_across_blocks": lambda ds: ds.t2m.rolling(time=7, center=True).mean(),
    "hot_days_counted": lambda ds: (ds.t2m > 290).sum("time"),
    "quantile_after_rechunk": lambda ds: ds.t2m.chunk(time=-1).quantile(0.9, dim="time"),
    "polyfit_trend": lambda ds: ds.pr.polyfit("time", deg=1).polyfit_coefficients,
    "std_over_time": lambda ds: ds.pr.std("time"),
    "masked_max": lambda ds: ds.t2m.where(ds.lat > 0).max(("lat", "lon")),
    "cumulative_sum": lambda ds: ds.pr.cumsum("time"),
    "meridional_gradient": lambda ds: ds.t2m.differentiate("lat"),
    "tendency_per_day": lambda ds: ds.pr.differentiate("time", datetime_unit="D"),
    "correlation_over_time": lambda ds: xr.corr(ds.t2m, ds.pr, dim="time"),
    "coarsened_grid": lambda ds: ds.t2m.coarsen(lat=3, lon=4).mean(),
    "seasonal_means": lambda ds: ds.t2m.groupby("time.season").mean(),
    "rolling_box_on_the_grid": lambda ds: ds.pr.rolling(lat=3, lon=3, center=True).sum(),
    "july_mean_by_mask": lambda ds: ds.t2m.sel(time=ds.time.dt.month == 7).mean("time"),
    "shifted_difference": lambda ds: ds.t2m - ds.t2m.shift(time=3),
    "integral_over_lat": lambda ds: ds.pr.integrate("lat"),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_each_operation_gives_dasks_answer_and_stays_lazy(paths, name):
    # ``chunk_manager`` is the manager a later ``.chunk()`` without ``chunked_array_type``
    # uses (xarray's default: Dask), so one setting keeps a whole script on tessera.
    with xr.set_options(use_flox=False):
        ref, got = open_both(paths)
        with xr.set_options(chunk_manager="dask"):
            expected = OPS[name](ref).compute()
        with xr.set_options(chunk_manager="tessera"):
            result = OPS[name](got)
    assert isinstance(result.data, ts.Array), f"{name} computed before compute(): {type(result.data)}"
    assert_same(expected, result.compute())


def test_ffill_gives_dasks_answer(paths):
    pytest.importorskip("bottleneck")
    # xarray forward-fills chunked arrays lazily for Dask only (its push asks for a Dask
    # array); on any other chunk manager it fills in memory: the answer is still Dask's.
    ref, got = open_both(paths)
    assert_same(ref.t2m.ffill("time").compute(), got.t2m.ffill("time").compute())


def test_several_results_compute_as_one_plan(paths, monkeypatch):
    ref, got = open_both(paths)
    calls = []
    real = ts._tessera.compute
    monkeypatch.setattr(ts._tessera, "compute", lambda *a: calls.append(len(a)) or real(*a))
    both = xr.Dataset({"mean": got.pr.mean("time"), "std": got.pr.std("time")}).compute()
    assert calls == [2], "the two variables were not computed in one plan"
    assert_same(ref.pr.mean("time").compute(), both["mean"])
    assert_same(ref.pr.std("time").compute(), both["std"])


def test_to_netcdf_writes_block_by_block_and_reads_back(paths, tmp_path):
    ref, got = open_both(paths)
    with xr.set_options(use_flox=False):
        anomalies = OPS["anomalies"](got).rename("anomaly")
        expected = OPS["anomalies"](ref).compute().rename("anomaly")
    assert isinstance(anomalies.data, ts.Array)
    out = tmp_path / "anomalies.nc"
    anomalies.to_netcdf(out)
    back = xr.open_dataarray(out)
    assert_same(expected, back)


def test_to_zarr_writes_block_by_block_and_reads_back(paths, tmp_path):
    pytest.importorskip("zarr")
    ref, got = open_both(paths)
    with xr.set_options(use_flox=False):
        monthly = got.pr.resample(time="MS").sum().to_dataset(name="pr")
        expected = ref.pr.resample(time="MS").sum().compute()
    monthly = monthly.chunk({"time": 4}, chunked_array_type="tessera")
    assert isinstance(monthly.pr.data, ts.Array)
    monthly.to_zarr(tmp_path / "monthly.zarr")
    back = xr.open_zarr(tmp_path / "monthly.zarr")
    assert_same(expected, back.pr)


def test_the_module_examples_run():
    import doctest

    import tessera.xarray as tx

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(tx, "tessera.xarray", extraglobs={"ts": ts})
    assert sum(len(t.examples) for t in tests) >= 5
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


def test_explain_shows_the_plan_of_an_xarray_result(paths):
    _, got = open_both(paths)
    with xr.set_options(use_flox=False):
        anomalies = OPS["anomalies"](got)
    text = anomalies.data.explain()
    assert isinstance(text, str) and "chunk" in text.lower()


def test_rechunk_by_axis_keeps_the_axes_it_is_not_given():
    m = TesseraManager()
    x = ts.ones((6, 8), chunks=(2, 4))
    assert m.rechunk(x, {0: 3}).chunks == ((3, 3), (4, 4))
    assert m.rechunk(x, {1: None, 0: -1}).chunks == ((6,), (4, 4))
    assert m.rechunk(x, ((1, 5), 8)).chunks == ((1, 5), (8,))
