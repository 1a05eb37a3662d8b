"""Code written for ``dask.dataframe`` runs on ``tessera.dataframe`` with the import
changed, and gives the same answer.

Every idiom below (taken from Dask's and pandas' documentation) is a function of a
module and a frame built by that module's ``from_pandas``; it runs once with
``dask.dataframe`` (or, where Dask departs from pandas, with pandas itself) and once
with ``tessera.dataframe``, on frames of 1, 3 and 7 partitions holding nulls, text and
datetimes. Values, index and dtypes must agree. The reference is named per idiom:
``dask`` where Dask and pandas agree, ``pandas`` where Dask's answer differs from
pandas' (Dask keeps null groupby keys, estimates describe()'s and quantile()'s
percentiles, gives ``value_counts`` an ``int64[pyarrow]`` dtype, and restarts the index
in each partition after ``merge``, ``melt`` and ``reset_index``); tessera follows pandas
there.
"""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
dd_dask = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

import tessera.dataframe as dd  # noqa: E402

N = 300


def _base() -> "pd.DataFrame":
    rng = np.random.default_rng(20261203)
    words = np.array(["apple", "Banana", " cherry ", "date", "elder", "fig"], dtype=object)
    k = rng.choice(np.array(["a", "b", "c", "d"], dtype=object), N)
    k[rng.random(N) < 0.05] = None
    x = rng.normal(10.0, 3.0, N)
    x[rng.random(N) < 0.1] = np.nan
    s = words[rng.integers(0, len(words), N)]
    s[rng.random(N) < 0.05] = None
    return pd.DataFrame(
        {
            "k": pd.array(k, dtype="string[pyarrow]"),
            "g": rng.integers(0, 5, N),
            "i": rng.integers(-50, 50, N),
            "x": x,
            "y": rng.uniform(0.0, 1.0, N),
            "b": rng.random(N) < 0.4,
            "t": pd.date_range("2024-01-30", periods=N, freq="53min"),
            "s": pd.array(s, dtype="string[pyarrow]"),
        }
    )


BASE = _base()
RIGHT = pd.DataFrame(
    {
        "g": np.arange(0, 7),
        "label": pd.array([f"L{v}" for v in range(7)], dtype="string[pyarrow]"),
        "w": np.linspace(0.5, 3.5, 7),
    }
)


class _Pandas:
    """pandas behind Dask's module functions, for the idioms whose reference is pandas."""

    __name__ = "pandas"

    @staticmethod
    def from_pandas(pdf, npartitions=None, **kwargs):
        return pdf.copy()

    concat = staticmethod(pd.concat)
    merge = staticmethod(pd.merge)
    to_datetime = staticmethod(pd.to_datetime)


IDIOMS: list = []


def idiom(ref: str = "dask", order: str = "exact", rtol: float = 1e-9, family: str = "misc"):
    """Registers an idiom: ``ref`` the reference (``dask`` or ``pandas``), ``order``
    how results are lined up before comparing (``exact``, ``index``: sorted by the
    index, ``rows``: sorted by every column with the index dropped)."""

    def register(fn):
        IDIOMS.append(pytest.param(fn, ref, order, rtol, id=f"{family}-{fn.__name__}"))
        return fn

    return register


def _value(x):
    """A lazy result computed (pandas' results are already)."""
    return x.compute() if hasattr(x, "compute") else x


def _run(fn, mod, nparts):
    if mod is _Pandas:
        d = BASE.copy()
        r = RIGHT.copy()
    else:
        d = mod.from_pandas(BASE, npartitions=nparts)
        r = mod.from_pandas(RIGHT, npartitions=min(nparts, 2))
    out = fn(mod, d, r)
    return out.compute() if hasattr(out, "compute") else out


def _strings_alike(obj):
    """Text columns and index as ``string[pyarrow]``, for comparing with pandas."""
    def fix(x):
        return x.astype("string[pyarrow]") if (x.dtype == object or isinstance(x.dtype, pd.StringDtype)) else x

    def fix_index(index):
        if isinstance(index, pd.MultiIndex):
            levels = [fix_index(index.get_level_values(i)) for i in range(index.nlevels)]
            return pd.MultiIndex.from_arrays(levels, names=index.names)
        if index.dtype == object or isinstance(index.dtype, pd.StringDtype):
            return pd.Index(index.astype("string[pyarrow]"), name=index.name)
        return index

    if isinstance(obj, pd.DataFrame):
        obj = obj.apply(fix) if len(obj.columns) else obj
    elif isinstance(obj, pd.Series):
        obj = fix(obj)
    else:
        return obj
    obj.index = fix_index(obj.index)
    return obj


def _line_up(obj, order):
    if order == "index":
        return obj.sort_index(kind="stable")
    if order == "rows":
        if isinstance(obj, pd.Series):
            return obj.sort_values(kind="stable").reset_index(drop=True)
        obj = obj.reset_index(drop=True)
        return obj.sort_values(list(obj.columns), kind="stable").reset_index(drop=True)
    return obj


def _compare(ours, theirs, order, rtol, ref):
    if isinstance(theirs, (pd.DataFrame, pd.Series, pd.Index)):
        kind = pd.Index if isinstance(theirs, pd.Index) else type(theirs)
        assert isinstance(ours, kind), f"{type(ours).__name__} where the reference gives {type(theirs).__name__}"
        if ref == "pandas":
            ours, theirs = _strings_alike(ours), _strings_alike(theirs)
        if isinstance(theirs, pd.Index):
            pd.testing.assert_index_equal(ours, theirs, exact=False, rtol=rtol)
            return
        ours, theirs = _line_up(ours, order), _line_up(theirs, order)
        if isinstance(theirs, pd.DataFrame):
            pd.testing.assert_frame_equal(ours, theirs, rtol=rtol, check_freq=False)
        else:
            pd.testing.assert_series_equal(ours, theirs, rtol=rtol, check_freq=False)
        return
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _compare(a, b, order, rtol, ref)
        return
    if isinstance(theirs, (float, np.floating)):
        assert isinstance(ours, (float, np.floating)), f"{ours!r} is not a float like {theirs!r}"
        np.testing.assert_allclose(ours, theirs, rtol=rtol, equal_nan=True)
        return
    assert ours == theirs, f"{ours!r} != {theirs!r}"
    assert type(ours) is type(theirs) or (np.isscalar(ours) and np.asarray(ours).dtype == np.asarray(theirs).dtype)


# --- construction and metadata -------------------------------------------------------


@idiom(family="meta")
def columns(m, d, r):
    return tuple(d.columns)


@idiom(family="meta")
def dtypes(m, d, r):
    return d.dtypes


@idiom(family="meta")
def length(m, d, r):
    return len(d)


@idiom(family="meta")
def npartitions(m, d, r):
    return d.npartitions


@idiom(family="meta")
def divisions(m, d, r):
    return tuple(d.divisions)


@idiom(family="meta")
def known_divisions(m, d, r):
    return d.known_divisions


@idiom(family="meta")
def head(m, d, r):
    return d.head(5)


@idiom(family="meta")
def head_series(m, d, r):
    return d.x.head(3)


@idiom(family="meta")
def shape_rows(m, d, r):
    return d.shape[0].compute(), d.shape[1]


@idiom(family="meta")
def compute_frame(m, d, r):
    return d


@idiom(family="meta")
def series_name_dtype(m, d, r):
    return d.x.name, str(d.x.dtype), str(d.k.dtype)


@idiom(family="meta")
def persist_then_sum(m, d, r):
    return d.persist().x.sum()


@idiom(family="meta")
def repartition(m, d, r):
    return d.repartition(npartitions=2)


@idiom(family="meta")
def index_compute(m, d, r):
    return d.index


# --- selecting rows and columns -------------------------------------------------------


@idiom(family="select")
def column_by_key(m, d, r):
    return d["x"]


@idiom(family="select")
def column_by_attribute(m, d, r):
    return d.y


@idiom(family="select")
def column_list(m, d, r):
    return d[["k", "x"]]


@idiom(family="select")
def boolean_filter(m, d, r):
    return d[d.x > 10]


@idiom(family="select")
def filter_and(m, d, r):
    return d[(d.x > 8) & (d.k == "a")]


@idiom(family="select")
def filter_or_not(m, d, r):
    return d[(d.i < -40) | ~d.b]


@idiom(family="select")
def filter_isin(m, d, r):
    return d[d.g.isin([1, 3])]


@idiom(family="select")
def filter_then_column(m, d, r):
    return d[d.y > 0.5].x


@idiom(family="select")
def filter_notna(m, d, r):
    return d[d.x.notnull()]


@idiom(family="select")
def filter_string(m, d, r):
    return d[d.s.str.startswith("a")]


@idiom(family="select")
def query_simple(m, d, r):
    return d.query("x > 12")


@idiom(family="select")
def query_and_string(m, d, r):
    return d.query("i > 0 and k == 'b'")


@idiom(family="select")
def query_local(m, d, r):
    limit = 0.25
    return d.query("y < @limit", local_dict={"limit": limit})


@idiom(family="select")
def query_in(m, d, r):
    return d.query("g in [0, 4]")


@idiom(family="select")
def drop_column(m, d, r):
    return d.drop(columns=["s", "t"])


@idiom(family="select")
def select_dtypes(m, d, r):
    return d.select_dtypes(include="number")


# --- element-wise -------------------------------------------------------------------------


@idiom(family="elementwise")
def add_columns(m, d, r):
    return d.x + d.y


@idiom(family="elementwise")
def arithmetic_mix(m, d, r):
    return (d.x * 2 - d.i) / 3


@idiom(family="elementwise")
def int_division(m, d, r):
    return d.i / 4


@idiom(family="elementwise")
def floordiv(m, d, r):
    return d.x // 3


@idiom(family="elementwise")
def modulo(m, d, r):
    return d.i % 7


@idiom(family="elementwise")
def power(m, d, r):
    return d.y**2


@idiom(family="elementwise")
def negate_abs(m, d, r):
    return abs(-d.i)


@idiom(family="elementwise")
def reflected(m, d, r):
    return 100 - d.x


@idiom(family="elementwise")
def compare(m, d, r):
    return d.x >= d.y * 20


@idiom(family="elementwise")
def compare_string(m, d, r):
    return d.k == "c"


@idiom(family="elementwise")
def round_two(m, d, r):
    return d.x.round(2)


@idiom(family="elementwise")
def clip(m, d, r):
    return d.x.clip(5, 15)


@idiom(family="elementwise")
def clip_lower(m, d, r):
    return d.i.clip(lower=0)


@idiom(family="elementwise")
def between(m, d, r):
    return d.x.between(8, 12)


@idiom(family="elementwise")
def between_neither(m, d, r):
    return d.i.between(-10, 10, inclusive="neither")


@idiom(family="elementwise")
def isin(m, d, r):
    return d.k.isin(["a", "d"])


@idiom(family="elementwise")
def where(m, d, r):
    return d.x.where(d.x > 10)


@idiom(family="elementwise")
def where_other(m, d, r):
    return d.x.where(d.x > 10, 0.0)


@idiom(family="elementwise")
def mask(m, d, r):
    return d.i.mask(d.i < 0, 0)


@idiom(family="elementwise")
def fillna_value(m, d, r):
    return d.x.fillna(-1.0)


@idiom(family="elementwise")
def fillna_string(m, d, r):
    return d.k.fillna("none")


@idiom(family="elementwise")
def isna(m, d, r):
    return d.x.isna()


@idiom(family="elementwise")
def notnull(m, d, r):
    return d.k.notnull()


@idiom(family="elementwise")
def astype_float(m, d, r):
    return d.i.astype("float64")


@idiom(family="elementwise")
def astype_int(m, d, r):
    return d.y.mul(100).astype("int64")


@idiom(family="elementwise")
def astype_str(m, d, r):
    return d.g.astype(str)


@idiom(family="elementwise")
def map_dict(m, d, r):
    return d.g.map({0: "zero", 1: "one", 2: "two"})


@idiom(family="elementwise")
def assign_new(m, d, r):
    return d.assign(z=d.x * d.y)


@idiom(family="elementwise")
def assign_lambda(m, d, r):
    return d.assign(z=lambda df: df.i + 1)


@idiom(family="elementwise")
def assign_replace(m, d, r):
    return d.assign(x=d.x.fillna(0))


@idiom(family="elementwise")
def setitem(m, d, r):
    d["z"] = d.i * 2
    return d


@idiom(family="elementwise")
def eval_expression(m, d, r):
    return d.eval("x * 2 + y")


@idiom(ref="pandas", family="elementwise")
def eval_assignment(m, d, r):
    step = 3
    return d.eval("z = i * @step + y", local_dict={"step": step})


@idiom(ref="pandas", family="reduce")
def series_quantiles_and_agg_list(m, d, r):
    return _value(d.x.quantile([0.1, 0.5])), _value(d.y.agg(["sum", "std", "count"]))


@idiom(family="elementwise")
def frame_isna(m, d, r):
    return d[["k", "x"]].isna()


@idiom(family="elementwise")
def frame_fillna_dict(m, d, r):
    return d.fillna({"x": 0.0, "k": "?"})


@idiom(family="elementwise")
def frame_astype_dict(m, d, r):
    return d.astype({"g": "float64"})


@idiom(family="elementwise")
def frame_round(m, d, r):
    return d[["x", "y"]].round(1)


@idiom(family="elementwise")
def rename_columns(m, d, r):
    return d.rename(columns={"x": "value", "k": "key"})


# --- text ---------------------------------------------------------------------------------


@idiom(family="str")
def str_lower(m, d, r):
    return d.s.str.lower()


@idiom(family="str")
def str_upper(m, d, r):
    return d.s.str.upper()


@idiom(family="str")
def str_len(m, d, r):
    return d.s.str.len()


@idiom(family="str")
def str_strip(m, d, r):
    return d.s.str.strip()


@idiom(family="str")
def str_contains(m, d, r):
    return d.s.str.contains("an", regex=False)


@idiom(family="str")
def str_endswith(m, d, r):
    return d.s.str.endswith("e")


@idiom(family="str")
def str_replace(m, d, r):
    return d.s.str.replace("a", "A", regex=False)


@idiom(family="str")
def str_slice(m, d, r):
    return d.s.str.slice(0, 3)


@idiom(family="str")
def str_filter_contains(m, d, r):
    return d[d.s.str.contains("e", regex=False)]


# --- datetimes ---------------------------------------------------------------------------


@idiom(family="dt")
def dt_year_month(m, d, r):
    return d.t.dt.year * 100 + d.t.dt.month


@idiom(family="dt")
def dt_day(m, d, r):
    return d.t.dt.day


@idiom(family="dt")
def dt_hour(m, d, r):
    return d.t.dt.hour


@idiom(family="dt")
def dt_minute(m, d, r):
    return d.t.dt.minute


@idiom(family="dt")
def dt_dayofweek(m, d, r):
    return d.t.dt.dayofweek


@idiom(family="dt")
def dt_quarter(m, d, r):
    return d.t.dt.quarter


@idiom(family="dt")
def dt_dayofyear(m, d, r):
    return d.t.dt.dayofyear


@idiom(family="dt")
def dt_floor(m, d, r):
    return d.t.dt.floor("h")


@idiom(family="dt")
def dt_floor_15min(m, d, r):
    return d.t.dt.floor("15min")


@idiom(family="dt")
def dt_normalize(m, d, r):
    return d.t.dt.normalize()


@idiom(family="dt")
def dt_filter(m, d, r):
    return d[d.t.dt.hour < 6]


@idiom(family="dt")
def dt_compare_timestamp(m, d, r):
    return d[d.t > pd.Timestamp("2024-02-05")]


@idiom(family="dt")
def dt_groupby_hour(m, d, r):
    return d.groupby(d.t.dt.hour).x.mean()


@idiom(family="dt")
def to_datetime_text(m, d, r):
    return m.to_datetime(d.t.astype(str))


# --- reductions ----------------------------------------------------------------------------


@idiom(family="reduce")
def series_sum(m, d, r):
    return d.x.sum()


@idiom(family="reduce")
def series_int_sum(m, d, r):
    return d.i.sum()


@idiom(family="reduce")
def series_mean(m, d, r):
    return d.x.mean()


@idiom(family="reduce")
def series_min_max(m, d, r):
    return d.x.min().compute(), d.i.max().compute()


@idiom(family="reduce")
def series_count(m, d, r):
    return d.x.count()


@idiom(family="reduce")
def series_std(m, d, r):
    return d.x.std()


@idiom(family="reduce")
def series_var_ddof0(m, d, r):
    return d.y.var(ddof=0)


@idiom(family="reduce")
def series_nunique(m, d, r):
    return d.k.nunique()


@idiom(ref="pandas", family="reduce")
def series_quantile(m, d, r):
    return d.x.quantile(0.9)


@idiom(ref="pandas", family="reduce")
def series_median(m, d, r):
    return d.y.median()


@idiom(family="reduce")
def scalar_arithmetic(m, d, r):
    return d.x.sum() / d.x.count()


@idiom(family="reduce")
def scalar_broadcast(m, d, r):
    return d.x - d.x.mean()


@idiom(family="reduce")
def string_min(m, d, r):
    return d.k.min()


@idiom(family="reduce")
def datetime_max(m, d, r):
    return d.t.max()


@idiom(family="reduce")
def bool_any_all(m, d, r):
    return bool(d.b.any().compute()), bool((d.y >= 0).all().compute())


@idiom(family="reduce")
def frame_sum(m, d, r):
    return d[["i", "x", "y"]].sum()


@idiom(family="reduce")
def frame_mean_numeric_only(m, d, r):
    return d[["g", "i", "x", "y"]].mean()


@idiom(family="reduce")
def frame_max(m, d, r):
    return d[["i", "x", "t"]].max()


@idiom(family="reduce")
def frame_count(m, d, r):
    return d.count()


@idiom(family="reduce")
def frame_std(m, d, r):
    return d[["x", "y"]].std()


@idiom(family="reduce")
def frame_nunique(m, d, r):
    return d[["k", "g", "s"]].nunique()


@idiom(ref="pandas", family="reduce")
def describe(m, d, r):
    return d[["i", "x", "y"]].describe()


@idiom(ref="pandas", order="index", family="reduce")
def value_counts(m, d, r):
    return d.k.value_counts()


@idiom(ref="pandas", family="reduce")
def value_counts_sorted(m, d, r):
    return d.g.value_counts()


@idiom(ref="pandas", order="index", family="reduce")
def value_counts_normalize(m, d, r):
    return d.k.value_counts(normalize=True)


@idiom(order="rows", family="reduce")
def unique(m, d, r):
    return d.k.unique()


@idiom(family="reduce")
def nlargest_series(m, d, r):
    return d.x.nlargest(5)


@idiom(family="reduce")
def nsmallest_series(m, d, r):
    return d.i.nsmallest(4)


@idiom(family="reduce")
def nlargest_frame(m, d, r):
    return d.nlargest(5, "y")


@idiom(family="reduce")
def compute_many(m, d, r):
    return (d.x.min().compute(), d.x.max().compute(), len(d[d.b]))


# --- groupby ---------------------------------------------------------------------------------


@idiom(order="index", family="groupby")
def gb_mean(m, d, r):
    return d.groupby("g").x.mean()


@idiom(order="index", family="groupby")
def gb_sum_frame(m, d, r):
    return d.groupby("g")[["i", "x"]].sum()


@idiom(order="index", family="groupby")
def gb_min_max(m, d, r):
    return d.groupby("g").i.min().compute(), d.groupby("g").i.max().compute()


@idiom(order="index", family="groupby")
def gb_count(m, d, r):
    return d.groupby("g").x.count()


@idiom(order="index", family="groupby")
def gb_std(m, d, r):
    return d.groupby("g").x.std()


@idiom(order="index", family="groupby")
def gb_var(m, d, r):
    return d.groupby("g").y.var()


@idiom(order="index", family="groupby")
def gb_std_population(m, d, r):
    return d.groupby("g").x.std(ddof=0)


@idiom(ref="pandas", order="index", family="groupby")
def gb_var_ddof(m, d, r):
    return d.groupby("k").y.var(ddof=3)


@idiom(order="index", family="groupby")
def gb_frame_std_population(m, d, r):
    return d[["g", "i", "x", "y"]].groupby("g").std(ddof=0)


@idiom(order="index", family="groupby")
def gb_nunique(m, d, r):
    return d.groupby("g").k.nunique()


@idiom(order="index", family="groupby")
def gb_first_last(m, d, r):
    return d.groupby("g").x.first().compute(), d.groupby("g").x.last().compute()


@idiom(order="index", family="groupby")
def gb_size(m, d, r):
    return d.groupby("g").size()


@idiom(ref="pandas", order="index", family="groupby")
def gb_median(m, d, r):
    return d.groupby("g").x.median()


@idiom(ref="pandas", order="index", family="groupby")
def gb_string_key(m, d, r):
    return d.groupby("k").y.mean()


@idiom(ref="pandas", order="index", family="groupby")
def gb_string_key_sum(m, d, r):
    return d.groupby("k").i.sum()


@idiom(order="index", family="groupby")
def gb_dropna_false(m, d, r):
    return d.groupby("k", dropna=False).i.sum()


@idiom(order="index", family="groupby")
def gb_multi_key(m, d, r):
    return d.groupby(["g", "b"]).x.mean()


@idiom(order="index", family="groupby")
def gb_multi_key_frame(m, d, r):
    return d.groupby(["g", "b"])[["i", "y"]].max()


@idiom(order="index", family="groupby")
def gb_agg_string(m, d, r):
    return d.groupby("g")[["x", "y"]].agg("mean")


@idiom(order="index", family="groupby")
def gb_agg_dict(m, d, r):
    return d.groupby("g").agg({"x": "sum", "i": "max"})


@idiom(order="index", family="groupby")
def gb_agg_dict_lists(m, d, r):
    return d.groupby("g").agg({"x": ["min", "max"], "y": "mean"})


@idiom(order="index", family="groupby")
def gb_agg_list(m, d, r):
    return d.groupby("g")[["x", "i"]].agg(["sum", "count"])


@idiom(order="index", family="groupby")
def gb_agg_named(m, d, r):
    return d.groupby("g").agg(total=("x", "sum"), biggest=("i", "max"))


@idiom(order="index", family="groupby")
def gb_series_agg_list(m, d, r):
    return d.groupby("g").x.agg(["mean", "std"])


@idiom(order="index", family="groupby")
def gb_by_series(m, d, r):
    return d.groupby(d.g).y.sum()


@idiom(order="index", family="groupby")
def gb_series_groupby(m, d, r):
    return d.x.groupby(d.g).max()


@idiom(order="index", family="groupby")
def gb_filter_then(m, d, r):
    return d[d.x > 9].groupby("g").y.mean()


@idiom(order="index", family="groupby")
def gb_cumsum(m, d, r):
    return d.groupby("g").i.cumsum()


@idiom(order="index", family="groupby")
def gb_cumcount(m, d, r):
    return d.groupby("g").cumcount()


@idiom(order="index", family="groupby")
def gb_shift(m, d, r):
    return d.groupby("g").x.shift(1)


@idiom(ref="pandas", order="index", family="groupby")
def gb_diff(m, d, r):
    return d.groupby("g").i.diff()


@idiom(order="index", family="groupby")
def gb_transform_mean(m, d, r):
    return d.groupby("g").x.transform("mean", meta=("x", "f8")) if m is dd_dask else d.groupby("g").x.transform("mean")


@idiom(ref="pandas", order="index", family="groupby")
def gb_rank(m, d, r):
    return d.groupby("g").i.rank(method="min")


@idiom(order="index", family="groupby")
def gb_apply(m, d, r):
    return d.groupby("g").apply(lambda df: df.x.max() - df.x.min(), meta=(None, "f8"))


@idiom(order="index", family="groupby")
def gb_series_apply(m, d, r):
    return d.groupby("g").y.apply(lambda s: (s > 0.5).sum(), meta=("y", "i8"))


@idiom(ref="pandas", order="index", family="groupby")
def gb_value_counts(m, d, r):
    return d.groupby("g").b.value_counts()


@idiom(ref="pandas", order="index", family="groupby")
def gb_head(m, d, r):
    return d.groupby("g").head(2)


@idiom(order="index", family="groupby")
def gb_then_reset_index(m, d, r):
    return d.groupby("g").x.sum().reset_index()


@idiom(ref="pandas", order="index", family="groupby")
def gb_then_sort(m, d, r):
    return d.groupby("g").y.sum().sort_values()


# --- windows ---------------------------------------------------------------------------------


@idiom(family="window")
def cumsum(m, d, r):
    return d.i.cumsum()


@idiom(family="window")
def cumsum_nan(m, d, r):
    return d.x.cumsum()


@idiom(family="window")
def cumprod(m, d, r):
    return (d.y + 0.5).cumprod()


@idiom(family="window")
def cummin_cummax(m, d, r):
    return d.x.cummin().compute(), d.i.cummax().compute()


@idiom(family="window")
def shift(m, d, r):
    return d.x.shift(2)


@idiom(family="window")
def shift_back(m, d, r):
    return d.i.shift(-1)


@idiom(family="window")
def diff(m, d, r):
    return d.x.diff()


@idiom(family="window")
def rolling_mean(m, d, r):
    return d.x.rolling(5).mean()


@idiom(family="window")
def rolling_sum_min_periods(m, d, r):
    return d.y.rolling(4, min_periods=1).sum()


@idiom(family="window")
def rolling_min_max(m, d, r):
    return d.i.rolling(3).min().compute(), d.i.rolling(3).max().compute()


@idiom(family="window", rtol=1e-7)
def rolling_std(m, d, r):
    return d.y.rolling(6).std()


@idiom(family="window", rtol=1e-7)
def rolling_var_nan(m, d, r):
    return d.x.rolling(5, min_periods=2).var()


@idiom(family="window")
def rolling_centered_mean(m, d, r):
    return d.y.rolling(5, center=True).mean()


@idiom(family="window", rtol=1e-7)
def rolling_centered_std(m, d, r):
    return d.x.rolling(4, center=True).std()


@idiom(family="window")
def rolling_centered_frame(m, d, r):
    return d[["i", "y"]].rolling(3, center=True).max()


@idiom(family="window")
def rolling_count(m, d, r):
    return d.x.rolling(4).count()


@idiom(family="window")
def rolling_frame(m, d, r):
    return d[["x", "y"]].rolling(3).mean()


@idiom(ref="pandas", family="window")
def frame_cumsum(m, d, r):
    return d[["i", "y"]].cumsum()


@idiom(family="window")
def frame_shift(m, d, r):
    return d[["k", "x"]].shift(1)


@idiom(ref="pandas", family="window")
def expanding_mean(m, d, r):
    return d.x.expanding().mean()


@idiom(ref="pandas", family="window")
def expanding_sum_count(m, d, r):
    return _value(d.x.expanding(min_periods=3).sum()), _value(d.x.expanding().count())


@idiom(ref="pandas", family="window")
def expanding_min_max(m, d, r):
    return _value(d.i.expanding().min()), _value(d.x.expanding().max())


@idiom(ref="pandas", family="window")
def expanding_frame(m, d, r):
    return d[["x", "y"]].expanding().mean()


@idiom(family="window")
def ffill(m, d, r):
    return d.x.ffill()


@idiom(family="window")
def bfill(m, d, r):
    return d.k.bfill()


@idiom(ref="pandas", family="window")
def rank(m, d, r):
    return d.y.rank()


# --- the index ---------------------------------------------------------------------------------


def _set_index(m, d, column, **kwargs):
    """``set_index``, sorted by the new index as Dask sorts it (pandas keeps the
    order), ties in row order."""
    out = d.set_index(column, **kwargs)
    return out.sort_index(kind="stable") if m is _Pandas else out


@idiom(ref="pandas", family="index")
def set_index_column(m, d, r):
    return _set_index(m, d, "i")


@idiom(family="index")
def set_index_time(m, d, r):
    return d.set_index("t").x


@idiom(family="index")
def set_index_divisions_len(m, d, r):
    return len(d.set_index("y").divisions) - 1 <= d.npartitions


@idiom(ref="pandas", family="index")
def set_index_keep(m, d, r):
    return _set_index(m, d, "g", drop=False)


@idiom(family="index")
def loc_label(m, d, r):
    return d.loc[5]


@idiom(family="index")
def loc_slice(m, d, r):
    return d.loc[10:20]


@idiom(family="index")
def loc_slice_columns(m, d, r):
    return d.loc[100:120, ["x", "k"]]


@idiom(family="index")
def loc_list(m, d, r):
    return d.loc[[3, 7, 250]]


@idiom(family="index")
def loc_time_day(m, d, r):
    return d.set_index("t").loc["2024-02-03"]


@idiom(family="index")
def loc_time_range(m, d, r):
    return d.set_index("t").loc["2024-02-01 06:00":"2024-02-02 12:00"]


@idiom(family="index")
def loc_time_month(m, d, r):
    return d.set_index("t").loc["2024-02"].y


@idiom(family="index")
def loc_mask(m, d, r):
    return d.loc[d.x > 14]


@idiom(ref="pandas", family="index")
def reset_index(m, d, r):
    return d.set_index("t").reset_index()


@idiom(ref="pandas", family="index")
def reset_index_drop(m, d, r):
    return d[d.g == 1].reset_index(drop=True)


@idiom(ref="pandas", family="index")
def sort_index(m, d, r):
    out = d.set_index("i")
    return out.sort_index(kind="stable") if m is _Pandas else out.sort_index()


@idiom(ref="pandas", family="index")
def resample_mean(m, d, r):
    return d.set_index("t").x.resample("1h").mean()


@idiom(ref="pandas", family="index")
def resample_sum_frame(m, d, r):
    return d.set_index("t")[["i", "y"]].resample("6h").sum()


@idiom(ref="pandas", family="index")
def resample_count(m, d, r):
    return d.set_index("t").x.resample("D").count()


@idiom(ref="pandas", family="index")
def resample_max_15min(m, d, r):
    return d.set_index("t").y.resample("15min").max()


@idiom(ref="pandas", family="index")
def resample_month_end(m, d, r):
    return d.set_index("t").i.resample("ME").sum()


@idiom(ref="pandas", family="index")
def resample_month_start(m, d, r):
    return d.set_index("t").y.resample("MS").mean()


@idiom(ref="pandas", family="index")
def resample_week(m, d, r):
    return d.set_index("t").y.resample("W").min()


@idiom(family="index")
def index_aligned_same_frame(m, d, r):
    e = d.set_index("t")
    return e.x + e.y


@idiom(order="index", family="index")
def join_on_index(m, d, r):
    left = d.set_index("t")[["x"]]
    right = d[d.g > 1].set_index("t")[["y"]]
    return left.join(right, how="inner")


@idiom(ref="pandas", order="rows", family="index")
def merge_on_index(m, d, r):
    return d[["g", "x"]].merge(r.set_index("g"), left_on="g", right_index=True)


# --- joins and reshaping -------------------------------------------------------------------


@idiom(ref="pandas", order="rows", family="reshape")
def merge_inner(m, d, r):
    return d.merge(r, on="g")


@idiom(ref="pandas", order="rows", family="reshape")
def merge_left(m, d, r):
    return d[d.g < 3].merge(r[r.g > 1], on="g", how="left")


@idiom(ref="pandas", order="rows", family="reshape")
def merge_outer(m, d, r):
    return d[["g", "x"]][d.g > 2].merge(r[["g", "w"]], on="g", how="outer")


@idiom(ref="pandas", order="rows", family="reshape")
def merge_left_on_right_on(m, d, r):
    return d[["g", "i"]].merge(r.rename(columns={"g": "gid"}), left_on="g", right_on="gid")


@idiom(ref="pandas", order="rows", family="reshape")
def merge_suffixes(m, d, r):
    return d[["g", "y"]].merge(r.rename(columns={"w": "y"}), on="g", suffixes=("_left", "_right"))


@idiom(ref="pandas", order="rows", family="reshape")
def merge_indicator(m, d, r):
    return d[["g"]].drop_duplicates().merge(r[["g"]], on="g", how="outer", indicator=True)


@idiom(ref="pandas", order="rows", family="reshape")
def merge_then_groupby(m, d, r):
    return d.merge(r, on="g").groupby("label").w.sum().reset_index()


@idiom(ref="pandas", order="rows", family="reshape")
def module_merge(m, d, r):
    return m.merge(d[["g", "x"]], r, on="g", how="inner")


@idiom(family="reshape")
def concat_rows(m, d, r):
    return m.concat([d[d.g == 1], d[d.g == 2]])


@idiom(ref="pandas", family="reshape")
def concat_outer_columns(m, d, r):
    return m.concat([d[["g", "x"]], d[["g", "y"]]])


@idiom(ref="pandas", family="reshape")
def melt(m, d, r):
    return d[["k", "x", "y"]].melt(id_vars="k")


@idiom(ref="pandas", family="reshape")
def melt_named(m, d, r):
    return d[["g", "i", "x"]].melt(id_vars=["g"], value_vars=["i"], var_name="what", value_name="v")


@idiom(order="index", family="reshape")
def drop_duplicates_subset(m, d, r):
    return d.drop_duplicates(subset=["g", "b"])


@idiom(order="index", family="reshape")
def drop_duplicates_keep_last(m, d, r):
    return d.drop_duplicates(subset=["g"], keep="last")


@idiom(order="index", family="reshape")
def drop_duplicates_all(m, d, r):
    return d[["g", "b"]].drop_duplicates()


@idiom(family="reshape")
def dropna_any(m, d, r):
    return d.dropna()


@idiom(family="reshape")
def dropna_subset(m, d, r):
    return d.dropna(subset=["x"])


@idiom(family="reshape")
def dropna_all(m, d, r):
    return d[["k", "s"]].dropna(how="all")


@idiom(family="reshape")
def sort_values(m, d, r):
    return d.sort_values("x")


@idiom(family="reshape")
def sort_values_multi(m, d, r):
    return d.sort_values(["g", "i"], ascending=[True, False])


@idiom(ref="pandas", family="reshape")
def pivot_table(m, d, r):
    out = d.pivot_table(index="g", columns="b", values="y", aggfunc="sum")
    out = out.compute() if hasattr(out, "compute") else out
    out.columns = [str(c).lower() for c in out.columns]
    out.columns.name = None
    return out


# --- Python functions -----------------------------------------------------------------------


@idiom(family="python")
def map_partitions_assign(m, d, r):
    return d.map_partitions(lambda p: p.assign(z=p.x * 2))


@idiom(family="python")
def map_partitions_series(m, d, r):
    return d.map_partitions(lambda p: p.x + p.y)


@idiom(family="python")
def map_partitions_len(m, d, r):
    return d.map_partitions(len).compute().sum()


@idiom(family="python")
def apply_rows(m, d, r):
    return d.apply(lambda row: row.i * 2 + row.g, axis=1, meta=(None, "i8"))


@idiom(family="python")
def series_apply(m, d, r):
    return d.g.apply(lambda v: v * v, meta=("g", "i8"))


@idiom(family="python")
def series_map_function(m, d, r):
    return d.i.map(lambda v: abs(v) % 3, meta=("i", "i8"))


@idiom(family="python")
def series_map_partitions(m, d, r):
    return d.x.map_partitions(lambda s: s.fillna(0).cumsum())


# --- the seeds' taxi questions, as Dask's documentation writes them -------------------------


@idiom(ref="pandas", family="taxi")
def taxi_groupby_mean(m, d, r):
    df = d.rename(columns={"g": "passenger_count", "y": "tip_amount"})
    df = df[df.tip_amount > 0.1]
    return df.groupby("passenger_count").tip_amount.mean()


@idiom(ref="pandas", family="taxi")
def taxi_resample(m, d, r):
    df = d.rename(columns={"t": "tpep_pickup_datetime", "y": "tip_amount"})
    df = df.set_index("tpep_pickup_datetime")
    return df.tip_amount.resample("1h").mean()


@idiom(ref="pandas", family="taxi")
def taxi_value_counts(m, d, r):
    df = d.rename(columns={"g": "passenger_count"})
    return df.passenger_count.value_counts()


IDIOM_COUNT = len(IDIOMS)


@pytest.mark.parametrize("nparts", [1, 3, 7])
@pytest.mark.parametrize("fn,ref,order,rtol", IDIOMS)
def test_idiom(fn, ref, order, rtol, nparts):
    theirs = _run(fn, _Pandas if ref == "pandas" else dd_dask, nparts)
    ours = _run(fn, dd, nparts)
    _compare(ours, theirs, order, rtol, ref)


def test_at_least_150_idioms():
    assert IDIOM_COUNT >= 150, IDIOM_COUNT


def test_the_package_readme_example_runs(tmp_path):
    """The ``tessera.dataframe`` example of ``python/README.md`` runs as written on CSV
    files of the columns it reads, and its resample agrees with pandas'."""
    import pathlib
    import re

    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    code = next(b for b in blocks if "import tessera.dataframe as dd" in b)
    rng = np.random.default_rng(7)
    parts = []
    for k in range(3):
        n = 4_000
        pdf = pd.DataFrame(
            {
                "tpep_pickup_datetime": pd.Timestamp("2015-01-09") + pd.to_timedelta(rng.integers(0, 86_400 * 6, n), unit="s"),
                "passenger_count": rng.integers(1, 7, n),
                "fare_amount": rng.gamma(2.0, 6.0, n).round(2),
                "tip_amount": np.where(rng.random(n) < 0.4, 0.0, rng.random(n) * 4).round(2),
            }
        )
        pdf.to_csv(tmp_path / f"trips-{k}.csv", index=False)
        parts.append(pdf)
    ns: dict = {}
    exec(compile(code.replace("trips-*.csv", str(tmp_path / "trips-*.csv")), "README.md", "exec"), ns)
    everything = pd.concat(parts)
    ours = ns["df"].tip_amount.resample("1h").mean().compute()
    theirs = everything.set_index("tpep_pickup_datetime").sort_index().tip_amount.resample("1h").mean()
    pd.testing.assert_series_equal(ours, theirs, check_freq=False, check_index_type=False, rtol=1e-12)
    ours = ns["df"].loc["2015-01-10":"2015-01-12"].fare_amount.describe().compute()
    theirs = everything.set_index("tpep_pickup_datetime").sort_index().loc["2015-01-10":"2015-01-12"].fare_amount.describe()
    pd.testing.assert_series_equal(ours, theirs, check_index_type=False, rtol=1e-12)


@pytest.mark.parametrize("ddof", [0, 1, 2, -1])
def test_variance_of_one_value_and_of_too_few_follows_pandas(ddof):
    """A Series' and a groupby's var/std with ``ddof`` where the count is 1 or at most
    ``ddof``: pandas gives 0 for one value at ddof 0 and NaN where ``n <= ddof``."""
    pdf = pd.DataFrame({"g": [1, 2, 2, 3, 3, 3], "x": [5.0, 1.0, np.nan, 4.0, 6.0, 9.0]})
    d = dd.from_pandas(pdf, npartitions=2)
    one = pdf[pdf.g == 1]
    for func in ("var", "std"):
        got = getattr(dd.from_pandas(one, npartitions=1).x, func)(ddof=ddof).compute()
        np.testing.assert_allclose(got, getattr(one.x, func)(ddof=ddof), equal_nan=True)
        got = getattr(d.groupby("g").x, func)(ddof=ddof).compute()
        want = getattr(pdf.groupby("g").x, func)(ddof=ddof)
        pd.testing.assert_series_equal(got, want, check_dtype=False)

