"""``DataFrameGroupBy`` and ``SeriesGroupBy``: ``df.groupby(keys)`` as in Dask.

Aggregations run as one engine aggregation (partial states per partition, merged);
the result is indexed by the keys and sorted by them, as pandas and Dask give it. NaN
in float columns counts as missing, as in pandas, and so does a NaN key (dropped unless
``dropna=False``). Window methods (``cumsum``, ``shift``, ``rank``) keep the frame's
rows and index. ``apply`` with a Python function sorts the frame by the keys, so every
group lies in one partition, and runs the function on pandas partitions.
"""

from __future__ import annotations

import numpy as np

from .. import col, lit, when
from ._ddof import rescaled_expr
from ._lineage import Rows
from ._scalar import _VALUE as _SCALAR
from ._series import Series, fresh_name
from ._window import WindowAggregates

_NAMES = ("sum", "mean", "min", "max", "count", "std", "var", "median", "nunique", "first", "last", "size")


class DataFrameGroupBy:
    """A frame grouped by key columns (see the module docs).

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> pdf = pd.DataFrame({"k": [1, 2, 1, 2], "x": [1.0, 2.0, 3.0, 5.0]})
    >>> out = dd.from_pandas(pdf, npartitions=2).groupby("k").agg({"x": ["min", "max"]}).compute()
    >>> out.columns.tolist()
    [('x', 'min'), ('x', 'max')]
    >>> out.to_numpy().tolist()
    [[1.0, 3.0], [2.0, 5.0]]
    """

    def __init__(self, df, keys, dropna: bool = True, sort=None, selection=None, labels=None):
        self._df = df
        self._keys = list(keys)
        # The index names of results: a key given as a Series is named by it.
        self._labels = list(labels) if labels is not None else list(keys)
        self._dropna = dropna
        self._sort = sort is None or bool(sort)
        self._selection = selection

    # -- selection ----------------------------------------------------------------

    def _columns(self) -> list:
        if self._selection is not None:
            return list(self._selection)
        return [c for c in self._df._visible() if c not in self._keys]

    def __getitem__(self, key):
        if isinstance(key, (list, tuple)):
            missing = [k for k in key if k not in self._df._visible()]
            if missing:
                raise KeyError(f"groupby: no columns {missing}")
            return DataFrameGroupBy(self._df, self._keys, self._dropna, self._sort, list(key), self._labels)
        if key not in self._df._visible():
            raise KeyError(f"groupby: no column {key!r}; columns: {self._df._visible()}")
        return SeriesGroupBy(self, key, key)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._df._visible():
            return self[name]
        raise AttributeError(f"DataFrameGroupBy has no attribute or column {name!r}")

    def select_series(self, column: str, name) -> "SeriesGroupBy":
        """The groupby of one column, its results named ``name``."""
        return SeriesGroupBy(self, column, name)

    # -- the engine aggregation -------------------------------------------------------

    def _grouped_frame(self):
        """The engine frame with NaN keys as nulls, and its groupby."""
        frame = self._df._frame
        for k in self._keys:
            if self._df._kind(k) == "f":
                frame = frame.with_column(k, when(col(k).isnan()).then(None).otherwise(col(k)))
        return frame, frame.groupby(self._keys, dropna=self._dropna)

    def _value(self, c: str):
        e = col(c)
        if self._df._kind(c) == "f":
            e = when(e.isnan()).then(None).otherwise(e)
        return e

    def _aggregate(self, specs, labels=None):
        """One engine aggregation of ``specs`` (``(column or None, func, output)``; a
        ``None`` column counts rows), as a frame indexed by the keys."""
        from ._frame import DataFrame

        _, gb = self._grouped_frame()
        aggs = []
        for c, func, out in specs:
            if func == "size":
                aggs.append((lit(1), "count", out))
            else:
                aggs.append((self._value(c), _engine_name(func), out))
        frame = gb.agg_exprs(aggs)
        if self._sort:
            frame = frame.sort_values(self._keys)
        result = DataFrame(frame, tuple(self._keys), tuple(self._labels))
        if labels is not None:
            result._labels = labels
        return result

    def _all(self, func: str, numeric: bool):
        cols = self._columns()
        if numeric:
            cols = [c for c in cols if self._df._kind(c) in "iufb"]
        return self._aggregate([(c, func, c) for c in cols])

    def sum(self, numeric_only: bool = False, min_count: int = 0):
        """The sum per group of every numeric column."""
        return self._all("sum", True)

    def mean(self, numeric_only: bool = False):
        """The mean per group of every numeric column."""
        return self._all("mean", True)

    def min(self, numeric_only: bool = False):
        """The smallest value per group."""
        return self._all("min", False)

    def max(self, numeric_only: bool = False):
        """The largest value per group."""
        return self._all("max", False)

    def count(self):
        """The number of present values per group."""
        return self._all("count", False)

    def std(self, ddof: int = 1, numeric_only: bool = False):
        """The standard deviation per group, with ``ddof`` delta degrees of freedom."""
        return self._moment("std", ddof, self._numeric_columns())

    def var(self, ddof: int = 1, numeric_only: bool = False):
        """The variance per group, with ``ddof`` delta degrees of freedom."""
        return self._moment("var", ddof, self._numeric_columns())

    def _numeric_columns(self):
        return [c for c in self._columns() if self._df._kind(c) in "iufb"]

    def _moment(self, func: str, ddof: int, cols, names=None):
        """``func`` ("std" or "var") of ``cols`` per group with ``ddof``: the engine's
        sample variance and count per group, rescaled as ``_ddof`` says."""
        if not isinstance(ddof, (int, np.integer)) or isinstance(ddof, bool):
            raise TypeError(f"ddof must be an integer, got {type(ddof).__name__}")
        names = names or cols
        if ddof == 1:
            return self._aggregate([(c, func, o) for c, o in zip(cols, names)])
        counts = [fresh_name() for _ in cols]
        specs = [(c, "var", o) for c, o in zip(cols, names)]
        specs += [(c, "count", n) for c, n in zip(cols, counts)]
        out = self._aggregate(specs)
        frame = out._frame
        for o, n in zip(names, counts):
            var = rescaled_expr(o, n, ddof)
            frame = frame.with_column(o, var.sqrt() if func == "std" else var)
        return out._derive(frame.drop(counts))

    def median(self, numeric_only: bool = False, **kwargs):
        """The exact median per group."""
        return self._all("median", True)

    def quantile(self, q=0.5, numeric_only: bool = False):
        """The exact ``q`` quantile per group."""
        return self._all(f"quantile({float(q)})", True)

    def nunique(self, dropna: bool = True):
        """The number of distinct present values per group."""
        return self._all("nunique", False)

    def first(self, numeric_only: bool = False):
        """The first present value per group, in row order."""
        return self._all("first", False)

    def last(self, numeric_only: bool = False):
        """The last present value per group, in row order."""
        return self._all("last", False)

    def size(self):
        """The number of rows per group, a Series."""
        frame = self._aggregate([(None, "size", _SCALAR)])
        s = frame[_SCALAR]
        s.name = None
        return s

    def agg(self, arg=None, split_out=None, **named):
        """Aggregations by name, as pandas takes them: ``"sum"``, a list of names, a
        ``{column: name or [names]}`` dict (a list gives two-level columns), or named
        aggregations ``total=("x", "sum")``."""
        specs, labels = _parse_agg(self._columns(), arg, named)
        if all(isinstance(lab, str) for lab in labels):
            out = self._aggregate(specs)
            return out.rename(columns={s[2]: lab for s, lab in zip(specs, labels) if s[2] != lab})
        return self._aggregate(specs, labels=dict(zip((s[2] for s in specs), labels)))

    aggregate = agg

    # -- rows kept --------------------------------------------------------------------

    def _window(self, column: str, func: str, **kwargs):
        frame, gb = self._grouped_frame()
        name = fresh_name()
        base = frame.with_column(name, self._value(column))
        out = base.groupby(self._keys, dropna=self._dropna).transform(name, func, **kwargs)
        df = self._df
        return Series(out, col(name), column, df._index, df._index_names, df._rows)

    def cumsum(self):
        """The running sum within each group, in row order."""
        return self._chained("cumsum")

    def cumprod(self):
        """The running product within each group."""
        return self._chained("cumprod")

    def cummin(self):
        """The running minimum within each group."""
        return self._chained("cummin")

    def cummax(self):
        """The running maximum within each group."""
        return self._chained("cummax")

    def shift(self, periods: int = 1):
        """Each value ``periods`` rows earlier within its group."""
        return self._chained("shift", periods=periods)

    def diff(self, periods: int = 1):
        """Each value minus the one ``periods`` rows earlier within its group."""
        return self._chained("diff", periods=periods)

    def ffill(self):
        """Missing values filled from the last present one within each group."""
        return self._chained("ffill")

    def bfill(self):
        """Missing values filled from the next present one within each group."""
        return self._chained("bfill")

    def _chained(self, func: str, **kwargs):
        """A window function of every selected column within each group."""
        numeric = func not in ("shift", "ffill", "bfill")
        cols = [c for c in self._columns() if not numeric or self._df._kind(c) in "iufb"]
        keys, dropna = self._keys, self._dropna
        return self._per_column(cols, lambda f, n: f.groupby(keys, dropna=dropna).transform(n, func, **kwargs))

    def _per_column(self, cols, step):
        """``step(frame, name)``, a grouped window of the column ``name``, for each of
        ``cols`` (under a fresh name), chained on one engine frame: a frame of the
        results named as the columns, with the frame's index."""
        from ._frame import DataFrame

        df = self._df
        frame, _ = self._grouped_frame()
        names = {}
        for c in cols:
            names[c] = fresh_name()
            frame = step(frame.with_column(names[c], self._value(c)), names[c])
        frame = frame.select(list(df._index) + list(names.values())).rename({v: k for k, v in names.items()})
        return DataFrame(frame, df._index, df._index_names)

    def _rank_step(self, frame, name: str, method: str, ascending: bool):
        """The rank of column ``name`` within each group, in float64 as pandas gives it."""
        out = frame.groupby(self._keys, dropna=self._dropna).rank(name, method=method, ascending=ascending)
        return out.with_column(name, col(name).astype("float64"))

    def cumcount(self, ascending: bool = True):
        """Each row's number within its group from 0, a Series."""
        if not ascending:
            raise NotImplementedError("cumcount(ascending=False) is not supported")
        frame, gb = self._grouped_frame()
        out = gb.cumcount()
        df = self._df
        return Series(out, col("cumcount"), None, df._index, df._index_names, df._rows)

    def rank(self, method: str = "average", ascending: bool = True):
        """The rank of each value within its group."""
        cols = [c for c in self._columns() if self._df._kind(c) in "iufb"]
        return self._per_column(cols, lambda f, n: self._rank_step(f, n, method, ascending))

    def transform(self, func, *args, **kwargs):
        """A window function by name (``"cumsum"``, ``"shift"``, ...) of every
        selected column within each group, rows kept; an aggregation name
        (``"mean"``) gives each row its group's value."""
        if func in ("cumsum", "cumprod", "cummin", "cummax", "shift", "diff", "ffill", "bfill"):
            return getattr(self, func)(*args, **kwargs)
        if isinstance(func, str) and func in _NAMES:
            return self._broadcast(func)
        raise NotImplementedError(f"transform({func!r}): give a window or aggregation name")

    def _broadcast(self, func: str):
        """Each row's group aggregate ``func``, joined back in row order."""
        from ._frame import DataFrame

        df = self._df
        cols = [c for c in self._columns() if func in ("count", "nunique", "first", "last", "min", "max") or df._kind(c) in "iufb"]
        frame, _ = self._grouped_frame()
        # Number the rows, join the group values on the keys, and restore the order.
        position = fresh_name()
        base = frame.with_column(position, lit(1)).transform(position, "cumsum")
        aggs = [(self._value(c), _engine_name(func), c + "__agg__") for c in cols]
        agg = base.groupby(self._keys, dropna=self._dropna).agg_exprs(aggs)
        joined = base.select(list(df._index) + self._keys + [position]).merge(agg, on=self._keys, how="left")
        joined = joined.sort_values(position)
        joined = joined.select(list(df._index) + [c + "__agg__" for c in cols]).rename({c + "__agg__": c for c in cols})
        return DataFrame(joined, df._index, df._index_names)

    def head(self, n: int = 5):
        """The first ``n`` rows of each group, in row order."""
        df = self._df
        frame, gb = self._grouped_frame()
        return df._derive(gb.head(n).select(list(df._index) + df._visible()))

    def apply(self, func, *args, meta=None, **kwargs):
        """``func`` of each group's rows as a ``pandas.DataFrame``, in Python: the frame
        is sorted by the keys so that every group lies in one partition, and pandas'
        ``groupby(...).apply`` runs per partition."""
        keys = self._keys
        sel = self._selection
        df = self._df.sort_values(keys)

        def per_partition(pdf):
            g = pdf.groupby(keys, dropna=self._dropna, sort=True, group_keys=True)
            g = g[sel] if sel is not None else g
            return g.apply(func, *args, **kwargs)

        return df.map_partitions(per_partition, meta=meta, _sample_from=self._df)


class SeriesGroupBy:
    """One column of a grouped frame: ``df.groupby("k").x`` (see the module docs)."""

    def __init__(self, parent: DataFrameGroupBy, column: str, name):
        self._parent = parent
        self._column = column
        self._name = name

    def _one(self, func: str):
        out = self._parent._aggregate([(self._column, func, self._column)])
        s = out[self._column]
        s.name = self._name
        return s

    def sum(self, **kwargs):
        """The sum per group."""
        return self._one("sum")

    def mean(self, **kwargs):
        """The mean per group."""
        return self._one("mean")

    def min(self, **kwargs):
        """The smallest value per group."""
        return self._one("min")

    def max(self, **kwargs):
        """The largest value per group."""
        return self._one("max")

    def count(self):
        """The number of present values per group."""
        return self._one("count")

    def std(self, ddof: int = 1):
        """The standard deviation per group, with ``ddof`` delta degrees of freedom."""
        return self._moment("std", ddof)

    def var(self, ddof: int = 1):
        """The variance per group, with ``ddof`` delta degrees of freedom."""
        return self._moment("var", ddof)

    def _moment(self, func: str, ddof: int):
        out = self._parent._moment(func, ddof, [self._column])
        s = out[self._column]
        s.name = self._name
        return s

    def median(self, **kwargs):
        """The exact median per group."""
        return self._one("median")

    def quantile(self, q=0.5):
        """The exact ``q`` quantile per group."""
        return self._one(f"quantile({float(q)})")

    def nunique(self, dropna: bool = True):
        """The number of distinct present values per group."""
        return self._one("nunique")

    def first(self):
        """The first present value per group."""
        return self._one("first")

    def last(self):
        """The last present value per group."""
        return self._one("last")

    def size(self):
        """The number of rows per group."""
        return self._parent.size()

    def agg(self, arg=None, **named):
        """One aggregation by name (a Series), or a list of names (a frame with one
        column per name)."""
        if isinstance(arg, str):
            return getattr(self, arg)()
        names = list(arg) if arg is not None else []
        specs = [(self._column, f, f) for f in names]
        specs += [(self._column, f, out) for out, f in named.items()]
        return self._parent._aggregate(specs)

    aggregate = agg

    def value_counts(self):
        """How often each value occurs in each group: a Series indexed by the keys and
        the value, named ``count``."""
        parent = self._parent
        keys = parent._keys + [self._column]
        frame, _ = parent._grouped_frame()
        counted = frame.groupby(keys, dropna=True).agg_exprs([(lit(1), "count", "count")])
        counted = counted.sort_values(parent._keys + ["count", self._column], ascending=[True] * len(parent._keys) + [False, True])
        return Series(counted, col("count"), "count", tuple(keys), tuple(parent._labels + [self._column]), Rows())

    def unique(self):
        """Not supported: a list per group is not a frame column tessera returns."""
        raise NotImplementedError("groupby().unique() is not supported; use drop_duplicates on the key and value columns")

    def nlargest(self, n: int = 5):
        """The ``n`` largest values of each group."""
        return self._top(n, True)

    def nsmallest(self, n: int = 5):
        """The ``n`` smallest values of each group."""
        return self._top(n, False)

    def _top(self, n: int, largest: bool):
        frame, gb = self._parent._grouped_frame()
        out = gb.nlargest(n, self._column) if largest else gb.nsmallest(n, self._column)
        keys = self._parent._keys
        return Series(out, col(self._column), self._name, tuple(keys), tuple(self._parent._labels), Rows())

    def _window(self, func: str, **kwargs):
        s = self._parent._window(self._column, func, **kwargs)
        s.name = self._name
        return s

    def cumsum(self):
        """The running sum within each group."""
        return self._window("cumsum")

    def cumprod(self):
        """The running product within each group."""
        return self._window("cumprod")

    def cummin(self):
        """The running minimum within each group."""
        return self._window("cummin")

    def cummax(self):
        """The running maximum within each group."""
        return self._window("cummax")

    def shift(self, periods: int = 1):
        """Each value ``periods`` rows earlier within its group."""
        return self._window("shift", periods=periods)

    def diff(self, periods: int = 1):
        """Each value minus the one ``periods`` rows earlier within its group."""
        return self._window("diff", periods=periods)

    def ffill(self):
        """Missing values filled forward within each group."""
        return self._window("ffill")

    def bfill(self):
        """Missing values filled backward within each group."""
        return self._window("bfill")

    def rolling(self, window: int, min_periods=None):
        """A rolling window within each group (sum, mean, min, max)."""
        return _GroupRolling(self, window, window if min_periods is None else min_periods)

    def cumcount(self):
        """Each row's number within its group from 0."""
        return self._parent.cumcount()

    def rank(self, method: str = "average", ascending: bool = True):
        """The rank of each value within its group."""
        parent = self._parent
        frame, _ = parent._grouped_frame()
        name = fresh_name()
        out = parent._rank_step(frame.with_column(name, parent._value(self._column)), name, method, ascending)
        df = parent._df
        return Series(out, col(name), self._name, df._index, df._index_names, df._rows)

    def transform(self, func, *args, **kwargs):
        """A window function by name within each group, or an aggregation name that
        gives each row its group's value."""
        if func in ("cumsum", "cumprod", "cummin", "cummax", "shift", "diff", "ffill", "bfill"):
            return getattr(self, func)(*args, **kwargs)
        if isinstance(func, str) and func in _NAMES:
            p = self._parent
            out = DataFrameGroupBy(p._df, p._keys, p._dropna, True, [self._column], p._labels)
            s = out._broadcast(func)[self._column]
            s.name = self._name
            return s
        raise NotImplementedError(f"transform({func!r}): give a window or aggregation name")

    def apply(self, func, *args, meta=None, **kwargs):
        """``func`` of each group's values as a ``pandas.Series``, in Python (see
        ``DataFrameGroupBy.apply``)."""
        parent = self._parent
        keys = parent._keys
        column = self._column
        df = parent._df.sort_values(keys)

        def per_partition(pdf):
            return pdf.groupby(keys, dropna=parent._dropna, sort=True, group_keys=True)[column].apply(func, *args, **kwargs)

        return df.map_partitions(per_partition, meta=meta, _sample_from=parent._df)


class _GroupRolling(WindowAggregates):
    """``gb.x.rolling(n)``: a rolling window within each group, in row order."""

    def __init__(self, sgb: SeriesGroupBy, window: int, min_periods: int):
        self._sgb = sgb
        self._window = window
        self._min_periods = min_periods

    def _apply(self, agg: str):
        return self._sgb._window(f"rolling_{agg}", window=self._window, min_periods=self._min_periods)


def _engine_name(func: str) -> str:
    if func == "size":
        return "count"
    return func


def _parse_agg(columns, arg, named):
    """``(column, func, output)`` specs and the pandas column label of each output."""
    specs, labels = [], []

    def check(f):
        if not isinstance(f, str):
            raise NotImplementedError(f"agg: give aggregations by name, not {f!r}")
        return f

    if isinstance(arg, str):
        for c in columns:
            specs.append((c, check(arg), c))
            labels.append(c)
    elif isinstance(arg, (list, tuple)):
        for c in columns:
            for f in arg:
                out = fresh_name()
                specs.append((c, check(f), out))
                labels.append((c, f))
    elif isinstance(arg, dict):
        nested = any(isinstance(v, (list, tuple)) for v in arg.values())
        for c, fs in arg.items():
            for f in fs if isinstance(fs, (list, tuple)) else [fs]:
                out = fresh_name()
                specs.append((c, check(f), out))
                labels.append((c, f) if nested else c)
    elif arg is not None:
        raise NotImplementedError(f"agg: {arg!r} is not an aggregation name, list or dict")
    for out, spec in named.items():
        c, f = spec
        specs.append((c, check(f), out))
        labels.append(out)
    if not specs:
        raise ValueError("agg: no aggregations given")
    return specs, labels
