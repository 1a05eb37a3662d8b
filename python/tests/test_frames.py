"""Dataframes against pandas (and Dask where installed) on the same inputs: filters and
expressions, groupby aggregations, joins, sorts, windows, IO."""

import numpy as np
import pytest

import tessera as ts

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


@pytest.fixture
def trips(rng):
    n = 5000
    return pd.DataFrame(
        {
            "zone": rng.integers(0, 40, n),
            "vendor": rng.choice(["a", "b", "c"], n),
            "fare": np.round(rng.gamma(2.0, 7.0, n), 2),
            "tip": np.where(rng.random(n) < 0.1, np.nan, np.round(rng.random(n) * 5, 2)),
            "passengers": rng.integers(1, 6, n),
        }
    )


def frame(df, n=7):
    return ts.from_pandas(df, npartitions=n)


def same(ours, theirs, by):
    """Equal as tables after sorting by `by` (row order of a groupby is unspecified): the
    same columns (none dropped, none added), each of pandas' dtype, with pandas' values."""
    assert sorted(ours.columns) == sorted(theirs.columns), (
        f"columns {list(ours.columns)}, pandas has {list(theirs.columns)}"
    )
    ours = ours.sort_values(by).reset_index(drop=True)
    theirs = theirs.sort_values(by).reset_index(drop=True)[list(ours.columns)]
    pd.testing.assert_frame_equal(ours, theirs, check_dtype=True, rtol=1e-9, atol=1e-9)


def test_filter_and_expressions(trips):
    df = frame(trips)
    got = df[(df.fare > 20) & (df.vendor != "b") | ts.col("tip").isnull()].compute().to_pandas()
    want = trips[(trips.fare > 20) & (trips.vendor != "b") | trips.tip.isnull()]
    same(got, want, ["zone", "fare", "vendor", "passengers"])
    got = (
        df.assign(share=df.tip / df.fare, big=ts.col("passengers") >= 3)
        .filter(ts.col("zone").isin([1, 2, 3]))
        .compute()
        .to_pandas()
    )
    want = trips.assign(share=trips.tip / trips.fare, big=trips.passengers >= 3)
    want = want[want.zone.isin([1, 2, 3])]
    same(got, want, ["zone", "fare", "vendor", "passengers"])


def test_when_then_otherwise_and_fillna(trips):
    df = frame(trips)
    got = (
        df.with_column("band", ts.when(df.fare < 10).then("low").when(df.fare < 30).then("mid").otherwise("high"))
        .fillna({"tip": 0.0})
        .compute()
        .to_pandas()
    )
    want = trips.assign(
        band=np.select([trips.fare < 10, trips.fare < 30], ["low", "mid"], "high"), tip=trips.tip.fillna(0.0)
    )
    same(got, want, ["zone", "fare", "vendor", "passengers"])


@pytest.mark.parametrize("func", ["sum", "mean", "min", "max", "count", "std", "var", "median", "nunique"])
def test_groupby_aggregations_match_pandas(trips, func):
    got = frame(trips).groupby(["zone", "vendor"]).agg({"fare": func, "tip": func}).compute().to_pandas()
    want = trips.groupby(["zone", "vendor"]).agg({"fare": func, "tip": func}).reset_index()
    same(got, want, ["zone", "vendor"])


def test_groupby_named_and_list_aggregations(trips):
    df = frame(trips)
    got = df.groupby("vendor").agg(total=("fare", "sum"), n=("tip", "count"), top=("fare", "max")).compute().to_pandas()
    want = trips.groupby("vendor").agg(total=("fare", "sum"), n=("tip", "count"), top=("fare", "max")).reset_index()
    same(got, want, ["vendor"])
    got = df.groupby("zone")["fare"].sum().compute().to_pandas()
    want = trips.groupby("zone")[["fare"]].sum().reset_index()
    same(got, want, ["zone"])
    got = df.groupby("zone").agg({"fare": ["min", "max"]}).compute().to_pandas()
    want = trips.groupby("zone").fare.agg(["min", "max"]).add_prefix("fare_").reset_index()
    same(got, want, ["zone"])


def test_groupby_cov_and_corr_match_pandas(trips):
    df = frame(trips)
    for f in ["cov", "corr"]:
        got = getattr(df.groupby("zone"), f)("fare", "tip").compute().to_pandas()
        want = trips.groupby("zone").apply(
            lambda g: getattr(g["fare"], f)(g["tip"]), include_groups=False
        ).rename(f"fare_tip_{f}").reset_index()
        same(got, want, ["zone"])


def test_groupby_head_matches_pandas(trips):
    got = frame(trips).groupby("zone").head(2).compute().to_pandas()
    want = trips.groupby("zone").head(2)
    assert len(got) == len(want)
    same(got, want, ["zone", "fare", "vendor", "passengers"])


def test_groupby_nlargest_matches_pandas(trips):
    got = frame(trips).groupby("zone").nlargest(2, "fare").compute().to_pandas()
    want = trips.groupby("zone")["fare"].nlargest(2).reset_index(level=0).reset_index(drop=True)
    same(got, want, ["zone", "fare"])


def test_categorical_columns_match_pandas(trips):
    df = frame(trips)
    cat = df.assign(vendor=ts.col("vendor").astype("category"))
    out = cat.compute().to_pandas()
    assert isinstance(out["vendor"].dtype, pd.CategoricalDtype)
    got = cat.groupby("vendor").agg({"fare": "sum"}).compute().to_pandas()
    want = trips.assign(vendor=trips.vendor.astype("category")).groupby("vendor", observed=True).agg({"fare": "sum"}).reset_index()
    got["vendor"] = got["vendor"].astype(str)
    want["vendor"] = want["vendor"].astype(str)
    same(got, want, ["vendor"])


def test_groupby_keeps_null_keys_with_dropna_false():
    df = pd.DataFrame({"k": [1.0, None, 1.0, None, 2.0], "x": [1, 2, 3, 4, 5]})
    got = ts.from_pandas(df, npartitions=2).groupby("k", dropna=False).agg({"x": "sum"}).compute().to_pandas()
    want = df.groupby("k", dropna=False).agg({"x": "sum"}).reset_index()
    same(got, want, ["k"])


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer"])
def test_merge_matches_pandas(trips, how):
    zones = pd.DataFrame({"zone": np.arange(0, 50, 2), "borough": [f"b{i % 5}" for i in range(25)]})
    got = frame(trips).merge(ts.from_pandas(zones, npartitions=2), on="zone", how=how).compute().to_pandas()
    want = trips.merge(zones, on="zone", how=how)
    assert len(got) == len(want)
    same(got, want, ["zone", "fare", "vendor", "passengers", "borough"])


def test_merge_on_differently_named_keys(trips):
    zones = pd.DataFrame({"id": np.arange(40), "size": np.arange(40) * 1.5})
    got = frame(trips).merge(ts.from_pandas(zones), left_on="zone", right_on="id").compute().to_pandas()
    want = trips.merge(zones, left_on="zone", right_on="id")
    same(got, want, ["zone", "fare", "vendor", "passengers"])


def test_sort_values_matches_pandas(trips):
    got = frame(trips).sort_values(["vendor", "fare"], ascending=[True, False]).compute().to_pandas()
    want = trips.sort_values(["vendor", "fare"], ascending=[True, False], kind="stable", na_position="last")
    np.testing.assert_array_equal(got.vendor.to_numpy(), want.vendor.to_numpy())
    np.testing.assert_array_equal(got.fare.to_numpy(), want.fare.to_numpy())
    top = frame(trips).nlargest(5, "fare").compute().to_pandas()
    np.testing.assert_array_equal(np.sort(top.fare.to_numpy()), np.sort(trips.nlargest(5, "fare").fare.to_numpy()))


def test_windows_match_pandas(trips):
    df = frame(trips)
    got = df.groupby("vendor").transform("fare", "cumsum", output="running").compute().to_pandas()
    want = trips.assign(running=trips.groupby("vendor").fare.cumsum())
    pd.testing.assert_series_equal(got.running, want.running.reset_index(drop=True), check_names=False)
    got = df.transform("fare", "shift", output="prev", periods=2).compute().to_pandas()
    pd.testing.assert_series_equal(got.prev, trips.fare.shift(2).reset_index(drop=True), check_names=False)
    got = df.transform("fare", "rolling_mean", output="r", window=3).compute().to_pandas()
    pd.testing.assert_series_equal(got.r, trips.fare.rolling(3).mean().reset_index(drop=True), check_names=False)


def test_whole_frame_reductions(trips):
    got = frame(trips).sum().compute().to_pandas()
    np.testing.assert_allclose(got.fare[0], trips.fare.sum(), rtol=1e-12)
    np.testing.assert_allclose(got.tip[0], trips.tip.sum(), rtol=1e-12)
    assert len(frame(trips)) == len(trips)


def test_csv_and_parquet_round_trips(tmp_path, trips):
    df = frame(trips, 3)
    written = df.to_parquet(str(tmp_path / "p" / "part-*.parquet"))
    assert len(written) == 3
    back = ts.read_parquet(str(tmp_path / "p")).compute().to_pandas()
    same(back, trips, ["zone", "fare", "vendor", "passengers"])
    df.to_csv(str(tmp_path / "c" / "part-*.csv"))
    back = ts.read_csv(str(tmp_path / "c" / "*.csv")).compute().to_pandas()
    same(back, trips, ["zone", "fare", "vendor", "passengers"])
    # pandas reads what tessera wrote; one file without a `*`.
    df.to_parquet(str(tmp_path / "one.parquet"))
    pd_back = pd.read_parquet(tmp_path / "one.parquet")
    same(pd_back, trips, ["zone", "fare", "vendor", "passengers"])


def test_read_csv_options(tmp_path):
    (tmp_path / "x.csv").write_text("a;b;when\n1;x;2024-01-02 03:04:05\n2;;2024-02-03 00:00:00\n")
    got = ts.read_csv(str(tmp_path / "x.csv"), sep=";", parse_dates=["when"], dtype={"a": "float64"}).compute()
    p = got.to_pandas()
    assert p.a.dtype == np.float64 and p.b.isnull().tolist() == [False, True]
    assert p.when.dt.hour.tolist() == [3, 0]


def test_against_dask_dataframe(trips):
    dd = pytest.importorskip("dask.dataframe")
    ours = frame(trips).groupby("zone").agg({"fare": "mean", "tip": "sum"}).compute().to_pandas()
    theirs = dd.from_pandas(trips, npartitions=7).groupby("zone").agg({"fare": "mean", "tip": "sum"}).compute()
    same(ours, theirs.reset_index(), ["zone"])


def test_results_convert_to_polars_and_duckdb(trips):
    pl = pytest.importorskip("polars")
    r = frame(trips).filter(ts.col("zone") < 5).compute()
    p = pl.DataFrame(r)
    assert p.height == int((trips.zone < 5).sum())
    assert r.to_polars().columns == r.columns
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql("select count(*) as n from r").fetchall()[0][0]
    assert got == p.height


def test_from_arrow_takes_polars_and_duckdb():
    pl = pytest.importorskip("polars")
    src = pl.DataFrame({"k": [1, 2, 1, 2], "s": ["a", "b", "c", "d"], "x": [1.0, 2.0, 3.0, 4.0]})
    got = ts.from_arrow(src).groupby("k").agg({"x": "sum"}).compute().to_pandas()
    assert sorted(got.x.tolist()) == [4.0, 6.0]
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql("select range as i, range % 3 as m from range(100)")
    got = ts.from_arrow(rel).groupby("m").agg({"i": "count"}).compute().to_pandas()
    assert sorted(got.i.tolist()) == [33, 33, 34]


def test_bad_frame_arguments_are_typed_errors(trips):
    df = frame(trips)
    with pytest.raises(ts.InvalidArgumentError, match="no key column 'nope'"):
        df.groupby("nope")
    with pytest.raises(ValueError, match="unknown aggregation"):
        df.groupby("zone").agg({"fare": "average"})
    with pytest.raises(KeyError):
        df["nope"]
    with pytest.raises(TypeError, match="truth value"):
        bool(df.fare > 1)


def test_map_partitions_calls_python_with_pandas_partitions(trips):
    seen = []

    def f(part):
        seen.append(len(part))
        return part.assign(fare_cents=(part.fare * 100).round().astype("int64"))[["zone", "fare_cents"]]

    df = frame(trips, 5).map_partitions(f)
    assert df.columns == ["zone", "fare_cents"]
    seen.clear()
    got = df.compute().to_pandas()
    assert sorted(seen) == sorted(len(p) for p in np.array_split(trips, 5))
    want = trips.assign(fare_cents=(trips.fare * 100).round().astype("int64"))[["zone", "fare_cents"]]
    same(got, want, ["zone", "fare_cents"])
    pa = pytest.importorskip("pyarrow")
    n = frame(trips, 3).map_partitions(lambda t: t.select(["zone"]), arrow=True).compute()
    assert isinstance(pa.table(n), pa.Table) and len(n) == len(trips)


def test_an_exception_in_map_partitions_surfaces_as_itself(trips):
    def f(part):
        if len(part) and part.zone.iloc[0] >= 0:
            raise LookupError("partition refused")
        return part

    with pytest.raises(LookupError, match="partition refused"):
        frame(trips, 3).map_partitions(f).compute()


def test_a_lazy_frame_exports_the_arrow_stream(trips):
    pl = pytest.importorskip("polars")
    df = frame(trips).filter(ts.col("zone") == 3)
    assert pl.DataFrame(df).height == int((trips.zone == 3).sum())


@pytest.mark.parametrize("how", ["semi", "anti"])
def test_semi_and_anti_merges_match_pandas_membership(trips, how):
    zones = pd.DataFrame({"zone": np.arange(0, 50, 3), "borough": [f"b{i % 5}" for i in range(17)]})
    got = frame(trips).merge(ts.from_pandas(zones, npartitions=2), on="zone", how=how).compute().to_pandas()
    member = trips.zone.isin(zones.zone)
    want = trips[member if how == "semi" else ~member]
    assert len(got) == len(want)
    same(got, want, ["zone", "fare", "vendor", "passengers"])


@pytest.mark.parametrize("keep", ["first", "last", False])
def test_drop_duplicates_matches_pandas(trips, keep):
    got = frame(trips).drop_duplicates(subset=["zone", "vendor"], keep=keep).compute().to_pandas()
    want = trips.drop_duplicates(subset=["zone", "vendor"], keep=keep)
    same(got, want, ["zone", "vendor", "fare", "passengers"])
    got = frame(trips[["zone", "vendor"]]).drop_duplicates().compute().to_pandas()
    same(got, trips[["zone", "vendor"]].drop_duplicates(), ["zone", "vendor"])


def test_dropna_matches_pandas(trips):
    df = trips.assign(extra=np.where(np.arange(len(trips)) % 7 == 0, np.nan, 1.0))
    for kwargs in [{}, {"subset": ["tip"]}, {"subset": ["tip", "extra"], "how": "all"}]:
        got = frame(df).dropna(**kwargs).compute().to_pandas()
        same(got, df.dropna(**kwargs), ["zone", "fare", "vendor", "passengers"])


def test_rename_tail_repartition_and_to_backend(trips):
    df = frame(trips)
    got = df.rename({"fare": "amount", "zone": "area"}).compute().to_pandas()
    same(got, trips.rename(columns={"fare": "amount", "zone": "area"}), ["area", "amount", "vendor", "passengers"])
    # tail keeps row order: the last rows of the last partitions.
    pd.testing.assert_frame_equal(df.tail(7).to_pandas(), trips.tail(7).reset_index(drop=True))
    re = df.repartition(3)
    assert re.npartitions == 3
    pd.testing.assert_frame_equal(re.compute().to_pandas(), trips.reset_index(drop=True))
    moved = df.to_backend("cpu")
    assert moved.backend == "cpu"
    pd.testing.assert_frame_equal(moved.compute().to_pandas(), trips.reset_index(drop=True))


def test_string_functions_match_pandas():
    s = pd.DataFrame({"name": ["Alpha", "beta", "GAMMA", "delta-x", "", "alphabet"], "i": range(6)})
    df = ts.from_pandas(s, npartitions=2)
    n = df.name
    got = df.assign(
        has=n.str.contains("ta"),
        starts=n.str.startswith("al"),
        ends=n.str.endswith("a"),
        low=n.str.lower(),
        up=n.str.upper(),
        length=n.str.len(),
    ).compute().to_pandas()
    want = s.assign(
        has=s.name.str.contains("ta", regex=False),
        starts=s.name.str.startswith("al"),
        ends=s.name.str.endswith("a"),
        low=s.name.str.lower(),
        up=s.name.str.upper(),
        length=s.name.str.len(),
    )
    same(got, want, ["i"])


def test_read_csv_na_values_and_blocksize_match_pandas(tmp_path, rng):
    n = 3000
    text = ["id,code,x"]
    for i in range(n):
        code = "NA" if i % 11 == 0 else ("-" if i % 13 == 0 else f"c{i % 5}")
        text.append(f"{i},{code},{'' if i % 17 == 0 else i * 0.5}")
    path = tmp_path / "coded.csv"
    path.write_text("\n".join(text) + "\n")
    df = ts.read_csv(str(path), na_values=["NA", "-"], blocksize=4096)
    assert df.npartitions > 4, "a 4 KiB blocksize splits the file"
    got = df.compute().to_pandas()
    want = pd.read_csv(path, na_values=["NA", "-"])
    same(got, want, ["id"])


def test_the_comparison_catches_a_dropped_column_and_a_wrong_dtype(trips):
    # What `same` guards against: a result that lost a column, or changed one's dtype,
    # passed the comparison of only tessera's own columns without dtypes.
    got = frame(trips).compute().to_pandas()
    same(got, trips, ["zone", "fare", "vendor", "passengers"])
    with pytest.raises(AssertionError, match="columns"):
        same(got.drop(columns=["tip"]), trips, ["zone", "fare", "vendor", "passengers"])
    with pytest.raises(AssertionError, match="dtype"):
        same(got.astype({"passengers": "float64"}), trips, ["zone", "fare", "vendor", "passengers"])
