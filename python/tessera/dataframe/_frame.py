"""``DataFrame``: a lazy partitioned frame with the methods of ``dask.dataframe``.

It wraps an engine frame (``tessera.DataFrame``, the expression API) and an index: the
index lives in the engine as ordinary columns, hidden from ``columns`` and made the
pandas index again by ``compute()``. Every method that the engine runs builds an
engine plan; a Python function the user hands in (``map_partitions``, ``apply``) runs
on pandas partitions, as in Dask.
"""

from __future__ import annotations

import numpy as np

from .. import col, lit, when
from ._convert import INDEX, arrow_to_pandas, engine_kind, pandas_to_arrow, python_literal, with_index
from ._lineage import Rows, frame_for, unaligned
from ._scalar import Scalar
from ._series import Series, _missing, fresh_name
from ._windows_of import WindowMethods

_NUMERIC = "iuf"


class DataFrame(WindowMethods):
    """A lazy partitioned frame (see the module docs).

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> pdf = pd.DataFrame({"k": ["a", "b", "a"], "x": [1.0, 2.0, 4.0]})
    >>> df = dd.from_pandas(pdf, npartitions=2)
    >>> df.groupby("k").x.mean().compute()
    k
    a    2.5
    b    2.0
    Name: x, dtype: float64
    """

    def __init__(self, frame, index=(), index_names=None, rows=None):
        self._frame = frame
        self._index = tuple(index)
        self._index_names = tuple(index_names) if index_names is not None else self._index
        self._rows = rows if rows is not None else Rows()
        self._meta_cache = None
        # pandas column labels of engine columns where they are not the name (the
        # two-level labels of `groupby().agg({"x": ["min", "max"]})`).
        self._labels = None
        # A last step on the computed pandas frame (describe's text index).
        self._finish = None
        # pandas dtypes of columns whose Arrow type does not say it (see Series).
        self._hints = {}
        # Known divisions (from `from_pandas`), kept while the rows and partitions are.
        self._divisions = None

    def _derive(self, frame, rows=None, index=None, index_names=None):
        """A frame of the same index on another engine frame; ``rows`` says whether the
        rows are the same (``True``: keep the token), else a new token."""
        keep = self._rows if rows is True else (rows if isinstance(rows, Rows) else None)
        out = DataFrame(
            frame,
            self._index if index is None else index,
            self._index_names if index_names is None else index_names,
            keep,
        )
        if rows is True and index is None and frame.npartitions == self._frame.npartitions:
            out._divisions = self._divisions
        present = set(frame.columns)
        out._hints = {c: h for c, h in self._hints.items() if c in present}
        return out

    def copy(self, deep: bool = False):
        """The same lazy frame (frames are immutable; ``deep`` changes nothing)."""
        return self._derive(self._frame, rows=True)

    # -- metadata -----------------------------------------------------------------

    @property
    def columns(self):
        """The column names, a ``pandas.Index``."""
        import pandas as pd

        return pd.Index(self._visible())

    @columns.setter
    def columns(self, names):
        names = list(names)
        old = self._visible()
        if len(names) != len(old):
            raise ValueError(f"columns: {len(names)} names given for {len(old)} columns")
        renamed = self.rename(columns=dict(zip(old, names)))
        self._frame, self._rows, self._meta_cache = renamed._frame, renamed._rows, None

    def _visible(self) -> list:
        return [c for c in self._frame.columns if c not in self._index]

    @property
    def _meta(self):
        """An empty pandas frame of the result's columns, dtypes and index."""
        if self._meta_cache is None:
            pdf = arrow_to_pandas(self._frame.head(0))
            self._meta_cache = with_index(pdf, self._index, self._index_names, self._visible())
        return self._meta_cache

    @property
    def dtypes(self):
        """The pandas dtype of every column, a ``pandas.Series``."""
        return self._meta.dtypes

    def _numeric_columns(self) -> list:
        kinds = self._kinds()
        return [c for c in self._visible() if kinds[c] in _NUMERIC]

    def _kinds(self) -> dict:
        """Every column's NumPy kind, from the plan's schema (nothing runs)."""
        return {c: engine_kind(t) for c, t in self._frame.dtypes.items()}

    def _kind(self, c: str) -> str:
        return engine_kind(self._frame.dtypes[c])

    @property
    def npartitions(self) -> int:
        """The number of partitions."""
        return self._frame.npartitions

    @property
    def divisions(self) -> tuple:
        """The index value each partition starts at, and the last one's end, when the
        frame is sorted by a one-column index (after ``set_index`` or ``from_pandas``);
        ``None`` for each where they are not known. Computes the frame."""
        if self._divisions is not None:
            return self._divisions
        if len(self._index) == 1:
            d = self._frame.divisions()
            if d is not None:
                return tuple(_label(v) for v in d)
        return (None,) * (self.npartitions + 1)

    @property
    def known_divisions(self) -> bool:
        """Whether ``divisions`` are known (the frame is sorted by its index)."""
        return self._divisions is not None or (len(self._index) == 1 and self._frame.divisions() is not None)

    @property
    def index(self):
        """The index as a lazy :class:`Index`."""
        from ._index import Index

        if not self._index:
            raise AttributeError("this frame has no index to read lazily (a default RangeIndex); set_index() first")
        c = self._index[0]
        return Index(self._frame, col(c), self._index_names[0], self._index, self._index_names, self._rows)

    @property
    def shape(self) -> tuple:
        """``(rows, columns)``, the rows a lazy :class:`Scalar` as in Dask."""
        return (Scalar(lambda: len(self), "len"), len(self._visible()))

    @property
    def ndim(self) -> int:
        """2."""
        return 2

    @property
    def loc(self):
        """Selection by index labels: ``df.loc["2024-01-01":"2024-01-31", ["x"]]``."""
        from ._indexing import LocIndexer

        return LocIndexer(self)

    def __len__(self) -> int:
        return len(self._frame)

    def __iter__(self):
        return iter(self._visible())

    def __contains__(self, name) -> bool:
        return name in self._visible()

    def __repr__(self) -> str:
        cols = ", ".join(f"{c}: {t}" for c, t in self.dtypes.items())
        index = f", index={list(self._index_names)}" if self._index else ""
        return f"tessera.dataframe.DataFrame<npartitions={self.npartitions}{index}>\n  {cols}"

    def _repr_html_(self) -> str:
        return self.head()._repr_html_()

    def __dir__(self):
        return sorted(set(super().__dir__()) | {c for c in self._visible() if c.isidentifier()})

    # -- columns ------------------------------------------------------------------

    def _series(self, name: str) -> Series:
        return Series(self._frame, col(name), name, self._index, self._index_names, self._rows, self._hints.get(name))

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._visible():
            return self._series(name)
        raise AttributeError(f"DataFrame has no attribute or column {name!r}; columns: {self._visible()}")

    def __getitem__(self, key):
        if isinstance(key, Series):
            frame = self._frame_with(key, "df[mask]")
            kept = frame.filter(key._expr)
            if frame is not self._frame:
                kept = kept.select(list(self._index) + self._visible())
            return self._derive(kept)
        if isinstance(key, str) or np.isscalar(key):
            if key not in self._visible():
                raise KeyError(f"no column {key!r}; columns: {self._visible()}")
            return self._series(key)
        if isinstance(key, (list, tuple)) or hasattr(key, "tolist"):
            names = list(key.tolist() if hasattr(key, "tolist") else key)
            missing = [c for c in names if c not in self._visible()]
            if missing:
                raise KeyError(f"no columns {missing}; columns: {self._visible()}")
            return self._derive(self._frame.select(list(self._index) + names), rows=True)
        if isinstance(key, slice):
            raise TypeError("a frame is not sliced by position; use df.loc[...] with index labels, or head()")
        raise TypeError(f"a frame is indexed by a column name, a list of them, or a boolean Series, not {type(key).__name__}")

    def _frame_with(self, series: Series, what: str):
        """An engine frame of this frame's rows holding its columns and what
        ``series`` reads."""
        parts = [(series._expr, series._rows, series._frame)]
        if frame_for(self._frame, self._rows, parts) is not None:
            return self._frame
        needed = set(self._frame.columns)
        if series._rows is self._rows and needed <= set(series._frame.columns):
            return series._frame
        raise unaligned(what)

    def __setitem__(self, key, value):
        out = self.assign(**{key: value})
        self._frame, self._rows, self._meta_cache = out._frame, out._rows, None

    def assign(self, **columns):
        """The frame with columns added or replaced: Series of the same rows, scalars,
        or functions of the frame (``lambda df: df.x * 2``), taken in order as pandas
        takes them."""
        batch = self._assign_at_once(columns)
        if batch is not None:
            return batch
        out = self
        for name, value in columns.items():
            if callable(value) and not isinstance(value, (Series, Scalar)):
                value = value(out)
            out = out._assign_at_once({name: value})
            if out is None:
                raise unaligned(f"assign({name}=...)")
        return out

    def _assign_at_once(self, columns: dict):
        """``assign`` of values that are all read from this frame's engine frame (Series
        of it, scalars): each is added under a fresh name and renamed at the end, so
        a value that reads a column another one replaces sees the old values, as in
        pandas. ``None`` where a value needs the sequential path."""
        frame = self._frame
        fresh = {}
        hints = {}
        for name, value in columns.items():
            if callable(value) and not isinstance(value, (Series, Scalar)):
                return None
            if isinstance(value, Series):
                if frame_for(self._frame, self._rows, [(value._expr, value._rows, value._frame)]) is None:
                    if len(columns) == 1:
                        try:
                            frame = self._frame_with(value, f"assign({name}=...)")
                        except ValueError:
                            return None
                    else:
                        return None
                expr = value._expr
                if value._hint is not None:
                    hints[name] = value._hint
            else:
                v = value.compute() if isinstance(value, Scalar) else value
                e = python_literal(v)
                expr = e if hasattr(e, "columns") else lit(e)
            fresh[name] = fresh_name()
            frame = frame.with_column(fresh[name], expr)
        visible = self._visible()
        order = list(self._index) + [fresh[c] if c in fresh else c for c in visible] + [fresh[c] for c in fresh if c not in visible]
        frame = frame.select(order).rename({f: c for c, f in fresh.items()})
        # New rows token: a name now holds values another frame of these rows may hold
        # differently under it.
        out = self._derive(frame)
        out._hints = {c: h for c, h in self._hints.items() if c not in fresh}
        out._hints.update(hints)
        return out

    def rename(self, columns=None, index=None, mapper=None, axis=None):
        """Columns renamed by a dict or a function."""
        columns = mapper if columns is None and axis in (1, "columns") else columns
        if columns is None:
            return self.copy()
        pairs = {c: (columns(c) if callable(columns) else columns.get(c, c)) for c in self._visible()}
        pairs = {k: v for k, v in pairs.items() if k != v}
        if not pairs:
            return self.copy()
        out = self._derive(self._frame.rename(pairs))
        out._hints = {pairs.get(c, c): h for c, h in self._hints.items()}
        return out

    def drop(self, labels=None, axis=0, columns=None, errors: str = "raise"):
        """The frame without these columns (``columns=`` or ``labels`` with ``axis=1``)."""
        if columns is None:
            if axis not in (1, "columns"):
                raise NotImplementedError("drop: rows are not dropped by label; filter with a condition instead")
            columns = labels
        names = [columns] if isinstance(columns, str) else list(columns)
        missing = [c for c in names if c not in self._visible()]
        if missing and errors == "raise":
            raise KeyError(f"drop: no columns {missing}; columns: {self._visible()}")
        names = [c for c in names if c in self._visible()]
        return self._derive(self._frame.drop(names), rows=True) if names else self.copy()

    def select_dtypes(self, include=None, exclude=None):
        """The columns of these dtypes, chosen as pandas chooses them."""
        chosen = list(self._meta.select_dtypes(include=include, exclude=exclude).columns)
        return self[chosen]

    def astype(self, dtype):
        """Columns cast: one dtype for all, or ``{column: dtype}``."""
        mapping = dtype if isinstance(dtype, dict) else {c: dtype for c in self._visible()}
        return self.assign(**{c: self[c].astype(t) for c, t in mapping.items()})

    # -- computing ----------------------------------------------------------------

    def compute(self):
        """The rows as a ``pandas.DataFrame`` with the index and Dask's dtypes."""
        pdf = arrow_to_pandas(self._frame.compute())
        return self._labelled(with_index(pdf, self._index, self._index_names, self._visible()))

    def _labelled(self, pdf):
        import pandas as pd

        if self._labels:
            labels = [self._labels.get(c, c) for c in pdf.columns]
            if any(isinstance(lab, tuple) for lab in labels):
                pdf.columns = pd.MultiIndex.from_tuples([lab if isinstance(lab, tuple) else (lab, "") for lab in labels])
            else:
                pdf.columns = pd.Index(labels)
        hints = {c: h for c, h in self._hints.items() if c in pdf.columns}
        if hints:
            pdf = pdf.astype(hints)
        if self._finish is not None:
            pdf = self._finish(pdf)
        return pdf

    def to_arrow(self):
        """The rows as a ``pyarrow.Table`` of the engine's buffers, without a copy (the
        index as its columns)."""
        import pyarrow as pa

        return pa.table(self._frame.compute())

    def to_tessera(self):
        """The engine frame, for the expression API (``tessera.DataFrame``)."""
        return self._frame

    def persist(self):
        """The frame computed and kept in memory, its plan starting there."""
        return self._derive(self._frame.persist(), rows=True)

    def head(self, n: int = 5, npartitions: int = 1, compute: bool = True):
        """The first ``n`` rows as a ``pandas.DataFrame`` (from as many partitions as
        it takes)."""
        pdf = arrow_to_pandas(self._frame.head(n))
        return self._labelled(with_index(pdf, self._index, self._index_names, self._visible()))

    def tail(self, n: int = 5, compute: bool = True):
        """The last ``n`` rows as a ``pandas.DataFrame``."""
        import pandas as pd

        pdf = arrow_to_pandas(self._frame.tail(n))
        out = self._labelled(with_index(pdf, self._index, self._index_names, self._visible()))
        if not self._index:
            total = len(self)
            out.index = pd.RangeIndex(total - len(out), total)
        return out

    def explain(self) -> str:
        """The engine's optimized plan in words."""
        return self._frame.explain()

    def repartition(self, npartitions: int | None = None, partition_size=None, divisions=None):
        """The same rows in ``npartitions`` partitions of about equal rows."""
        if npartitions is None:
            raise NotImplementedError("repartition: give npartitions= (partition_size and divisions are not supported)")
        return self._derive(self._frame.repartition(int(npartitions)), rows=True)

    # -- rows ---------------------------------------------------------------------

    def sort_values(self, by, ascending=True, na_position: str = "last"):
        """Rows sorted by columns (stable; missing values last)."""
        if na_position != "last":
            raise NotImplementedError("sort_values: only na_position='last' is supported")
        by = [by] if isinstance(by, str) else list(by)
        return self._derive(self._frame.sort_values(by, ascending=ascending))

    def sort_index(self, ascending: bool = True):
        """Rows sorted by the index."""
        if not self._index:
            return self.copy()
        return self._derive(self._frame.sort_values(list(self._index), ascending=ascending))

    def nlargest(self, n: int = 5, columns=None):
        """The ``n`` rows with the largest ``columns``, largest first."""
        return self._derive(self._frame.nlargest(n, columns))

    def nsmallest(self, n: int = 5, columns=None):
        """The ``n`` rows with the smallest ``columns``, smallest first."""
        return self._derive(self._frame.nsmallest(n, columns))

    def drop_duplicates(self, subset=None, keep="first", ignore_index: bool = False, split_out=None):
        """Rows with distinct ``subset`` values (default: every column); ``keep``
        ``"first"``, ``"last"`` or ``False``."""
        subset = self._visible() if subset is None else ([subset] if isinstance(subset, str) else list(subset))
        out = self._derive(self._frame.drop_duplicates(subset, keep=keep))
        return out.reset_index(drop=True) if ignore_index else out

    def dropna(self, how: str = "any", subset=None, thresh=None):
        """Rows without missing values (null, or NaN in float columns) in ``subset``;
        ``how="all"`` drops only rows missing in every one."""
        if thresh is not None:
            raise NotImplementedError("dropna(thresh=) is not supported; use how= and subset=")
        subset = self._visible() if subset is None else ([subset] if isinstance(subset, str) else list(subset))
        present = [~_missing(col(c), self._kind(c) == "f") for c in subset]
        if not present:
            return self.copy()
        cond = present[0]
        for p in present[1:]:
            cond = (cond & p) if how == "any" else (cond | p)
        if how not in ("any", "all"):
            raise ValueError(f"dropna: how={how!r}; use 'any' or 'all'")
        return self._derive(self._frame.filter(cond))

    def fillna(self, value=None, method=None, axis=None):
        """Missing values replaced: one value for every column whose type it fits, a
        ``{column: value}`` dict, or ``method="ffill"``/``"bfill"``."""
        if method is not None:
            return self._columnwise(lambda s: s.fillna(method=method), self._visible())
        if isinstance(value, dict):
            mapping = value
        else:
            fits = _NUMERIC + "b" if isinstance(value, (int, float, np.number, bool)) else "OSUT"
            mapping = {c: value for c in self._visible() if self._kind(c) in fits}
        return self.assign(**{c: self[c].fillna(v) for c, v in mapping.items()})

    def ffill(self):
        """Missing values replaced by the last present one in each column."""
        return self.fillna(method="ffill")

    def bfill(self):
        """Missing values replaced by the next present one in each column."""
        return self.fillna(method="bfill")

    def isna(self):
        """A frame of booleans, True where a value is missing."""
        return self._elementwise(lambda s: s.isna())

    isnull = isna

    def notna(self):
        """A frame of booleans, True where a value is present."""
        return self._elementwise(lambda s: s.notna())

    notnull = notna

    def abs(self):
        """Absolute values of the numeric columns."""
        return self._elementwise(lambda s: s.abs(), self._numeric_columns())

    def round(self, decimals: int = 0):
        """Numeric columns rounded half to even at ``decimals`` places."""
        return self._elementwise(lambda s: s.round(decimals), self._numeric_columns(), keep=True)

    def clip(self, lower=None, upper=None):
        """Numeric columns limited to ``[lower, upper]``."""
        return self._elementwise(lambda s: s.clip(lower, upper), self._numeric_columns(), keep=True)

    def where(self, cond, other=np.nan):
        """Values where ``cond`` (a boolean Series) holds, ``other`` elsewhere."""
        if not isinstance(cond, Series):
            raise NotImplementedError("where: cond must be a boolean Series (a frame of conditions is not supported)")
        return self._elementwise(lambda s: s.where(cond, other), keep=True)

    def mask(self, cond, other=np.nan):
        """``other`` where ``cond`` (a boolean Series) holds, the values elsewhere."""
        if not isinstance(cond, Series):
            raise NotImplementedError("mask: cond must be a boolean Series (a frame of conditions is not supported)")
        return self._elementwise(lambda s: s.mask(cond, other), keep=True)

    def _elementwise(self, fn, columns=None, keep: bool = False):
        """``fn`` of each of ``columns`` (default all); with ``keep`` the other columns
        stay as they are."""
        columns = self._visible() if columns is None else columns
        out = self.assign(**{c: fn(self[c]) for c in columns})
        return out if keep else out[columns]

    def _columnwise(self, fn, columns):
        """Window functions ``fn`` of each column, chained on one engine frame."""
        frame = self._frame
        exprs = {}
        for c in columns:
            r = fn(self[c]._on(frame))
            frame = r._frame
            exprs[c] = r._expr
        names = {c: fresh_name() for c in exprs}
        for c, e in exprs.items():
            frame = frame.with_column(names[c], e)
        frame = frame.select(list(self._index) + list(names.values())).rename({v: k for k, v in names.items()})
        return self._derive(frame)

    def cumsum(self):
        """The running sum of every numeric column."""
        return self._columnwise(lambda s: s.cumsum(), self._numeric_columns())

    def cumprod(self):
        """The running product of every numeric column."""
        return self._columnwise(lambda s: s.cumprod(), self._numeric_columns())

    def cummin(self):
        """The running minimum of every numeric column."""
        return self._columnwise(lambda s: s.cummin(), self._numeric_columns())

    def cummax(self):
        """The running maximum of every numeric column."""
        return self._columnwise(lambda s: s.cummax(), self._numeric_columns())

    def shift(self, periods: int = 1):
        """Every column's value ``periods`` rows earlier."""
        return self._columnwise(lambda s: s.shift(periods), self._visible())

    def diff(self, periods: int = 1):
        """Every numeric column minus its value ``periods`` rows earlier."""
        return self._columnwise(lambda s: s.diff(periods), self._numeric_columns())

    def sample(self, frac=None, replace: bool = False, random_state=None):
        """About ``frac`` of the rows, the same rows for the same ``random_state``
        however the frame is partitioned."""
        if replace:
            raise NotImplementedError("sample(replace=True) is not supported")
        if frac is None:
            raise ValueError("sample: give frac= (Dask does not take n=)")
        seed = 0 if random_state is None else int(random_state)
        return self._derive(self._frame.sample(float(frac), seed))

    def query(self, expr: str, local_dict=None, **kwargs):
        """The rows where the pandas-style condition ``expr`` holds (``"x > 2 and k ==
        'a'"``, ``@name`` for a Python variable), run as one engine filter."""
        from ._query import caller_scope, parse

        scope = caller_scope(local_dict)
        cond = parse(expr, self, scope)
        return self[cond]

    def eval(self, expr: str, local_dict=None, **kwargs):
        """A Series from the pandas-style expression ``expr``, or with ``"z = ..."``
        the frame with that column."""
        from ._query import assignment, caller_scope, parse

        scope = caller_scope(local_dict)
        target, rhs = assignment(expr)
        if target is not None:
            return self.assign(**{target: parse(rhs, self, scope)})
        return parse(expr, self, scope)

    # -- reductions ---------------------------------------------------------------

    def _reduce(self, func: str, kinds: str | None, numeric_only: bool):
        import pandas as pd

        columns = self._visible()
        if kinds is not None:
            chosen = [c for c in columns if self._kind(c) in kinds]
            refused = [c for c in columns if c not in chosen]
            if refused and not numeric_only:
                raise TypeError(
                    f"{func}: columns {refused} are not numeric; pass numeric_only=True or select the numeric columns"
                )
            columns = chosen
        if not columns:
            return Scalar(lambda: pd.Series([], dtype="float64"), f"{func}()")
        aggs = [self[c]._agg_expr(func) for c in columns]
        return Scalar.of_many(self._frame, aggs, lambda *v: pd.Series(list(v), index=columns), f"{func}()")

    def sum(self, numeric_only: bool = False):
        """The sum of every numeric column, computed as a ``pandas.Series``."""
        return self._reduce("sum", _NUMERIC + "b", numeric_only)

    def mean(self, numeric_only: bool = False):
        """The mean of every numeric column."""
        return self._reduce("mean", _NUMERIC + "b", numeric_only)

    def std(self, numeric_only: bool = False):
        """The sample standard deviation of every numeric column."""
        return self._reduce("std", _NUMERIC, numeric_only)

    def var(self, numeric_only: bool = False):
        """The sample variance of every numeric column."""
        return self._reduce("var", _NUMERIC, numeric_only)

    def min(self, numeric_only: bool = False):
        """The smallest value of every column."""
        return self._reduce("min", None if not numeric_only else _NUMERIC, numeric_only)

    def max(self, numeric_only: bool = False):
        """The largest value of every column."""
        return self._reduce("max", None if not numeric_only else _NUMERIC, numeric_only)

    def count(self, numeric_only: bool = False):
        """The number of present values in every column."""
        return self._reduce("count", None, False)

    def nunique(self, dropna: bool = True):
        """The number of distinct present values in every column."""
        return self._reduce("nunique", None, False)

    def median(self, numeric_only: bool = False):
        """The exact median of every numeric column."""
        return self._reduce("median", _NUMERIC, numeric_only)

    def quantile(self, q=0.5, numeric_only: bool = True):
        """The exact ``q`` quantile of every numeric column."""
        if np.ndim(q) != 0:
            raise NotImplementedError("DataFrame.quantile takes one level; call it once per level")
        s = self._reduce(f"quantile({float(q)})", _NUMERIC, True)
        return s.map(lambda v: v.rename(float(q)))

    def describe(self, percentiles=None, include=None, exclude=None):
        """pandas' ``describe()`` of the numeric columns: count, mean, std, min, the
        percentiles (25%, 50%, 75%) and max, exact; returned as a frame."""
        import pandas as pd

        from ._io import from_pandas

        if include is not None or exclude is not None:
            raise NotImplementedError("describe: include= and exclude= are not supported; select the columns first")
        numeric = self._numeric_columns()
        if not numeric:
            raise ValueError("describe: the frame has no numeric columns")
        levels = [0.25, 0.5, 0.75] if percentiles is None else sorted(set(list(percentiles) + [0.5]))
        frame = self._frame.select(numeric)
        for c in numeric:
            if self._kind(c) == "f":
                frame = frame.with_column(c, when(col(c).isnan()).then(None).otherwise(col(c)))
        table = arrow_to_pandas(frame.describe(percentiles=levels))
        table = table.set_index("statistic")
        table.index.name = None
        out = from_pandas(table.astype("float64"), npartitions=1, sort=False)
        out._finish = lambda pdf: pdf.set_axis(pd.Index(list(pdf.index), dtype="str"), axis=0)
        return out

    # -- grouping, joining, reshaping ---------------------------------------------------

    def groupby(self, by, dropna: bool = True, sort=None, observed=None, group_keys: bool = True, **kwargs):
        """Groups by columns or Series of the same rows (see :class:`DataFrameGroupBy`)."""
        from ._groupby import DataFrameGroupBy

        keys = by if isinstance(by, list) else [by]
        frame = self
        names, labels = [], []
        for k in keys:
            if isinstance(k, Series):
                # Under a fresh name: a Series named like a column (`df.t.dt.hour` is
                # named `t`) must not take that column's place.
                name = fresh_name()
                frame = frame._assign_at_once({name: k})
                if frame is None:
                    raise unaligned("groupby")
                names.append(name)
                labels.append(k._name)
            elif k in self._visible():
                names.append(k)
                labels.append(k)
            elif self._index and k in self._index_names:
                name = fresh_name()
                frame = frame.assign(**{name: frame._series(self._index[self._index_names.index(k)])})
                names.append(name)
                labels.append(k)
            else:
                raise KeyError(f"groupby: no column {k!r}; columns: {self._visible()}")
        return DataFrameGroupBy(frame, names, dropna=dropna, sort=sort, labels=labels)

    def merge(
        self,
        right,
        how: str = "inner",
        on=None,
        left_on=None,
        right_on=None,
        left_index: bool = False,
        right_index: bool = False,
        suffixes=("_x", "_y"),
        indicator: bool = False,
        **kwargs,
    ):
        """A database-style join, pandas' ``merge``: on columns (``on``,
        ``left_on``/``right_on``) or on the index (``left_index``/``right_index``);
        ``how`` in inner, left, right, outer. Missing keys match each other, as NaN
        keys do in pandas."""
        if not isinstance(right, DataFrame):
            if isinstance(right, Series):
                right = right.to_frame()
            else:
                raise TypeError(f"merge: right must be a tessera.dataframe DataFrame, not {type(right).__name__}")
        lkeys, lframe = _join_side(self, on, left_on, left_index, "left")
        rkeys, rframe = _join_side(right, on, right_on, right_index, "right")
        indexed = left_index and right_index
        out = lframe.merge(
            rframe,
            left_on=lkeys,
            right_on=rkeys,
            how=how,
            suffixes=tuple(suffixes),
            indicator=indicator if indicator else None,
            # pandas matches missing keys with each other.
            nulls_equal=True,
        )
        result = DataFrame(out, tuple(lkeys), self._index_names) if indexed else DataFrame(out)
        if indicator:
            import pandas as pd

            name = indicator if isinstance(indicator, str) else "_merge"
            result._hints[name] = pd.CategoricalDtype(["left_only", "right_only", "both"])
        return result

    def join(self, other, on=None, how: str = "left", lsuffix: str = "", rsuffix: str = ""):
        """Columns of ``other`` joined on its index, matched to this frame's index (or
        the column ``on``), as pandas' ``join``."""
        if not other._index:
            raise ValueError("join: the other frame has no index; set_index() it, or use merge")
        if on is None and not self._index:
            raise ValueError("join: this frame has no index; pass on= or set_index() first")
        clash = set(self._visible()) & set(other._visible())
        if clash and not (lsuffix or rsuffix):
            raise ValueError(f"join: columns overlap {sorted(clash)}; give lsuffix= or rsuffix=")
        if on is None:
            return self.merge(other, how=how, left_index=True, right_index=True, suffixes=(lsuffix, rsuffix))
        return self.merge(other, how=how, left_on=on, right_index=True, suffixes=(lsuffix, rsuffix))

    def set_index(self, other, drop: bool = True, sorted: bool = False, npartitions=None, divisions=None, **kwargs):
        """The column ``other`` as the index, the rows sorted by it across partitions
        (the divisions), as Dask's ``set_index``; ``sorted=True`` says the rows already
        are in its order, and nothing is sorted."""
        if isinstance(other, Series):
            name = other._name if isinstance(other._name, str) else fresh_name()
            base = self.assign(**{name: other})
            return base.set_index(name, drop=True, sorted=sorted)
        if isinstance(other, list):
            raise NotImplementedError("set_index: one column only (Dask has no MultiIndex)")
        if other not in self._visible():
            raise KeyError(f"set_index: no column {other!r}; columns: {self._visible()}")
        keep = [c for c in self._visible() if c != other or not drop]
        frame = self._frame
        key = other
        if not drop:
            key = INDEX if INDEX not in keep else fresh_name()
            frame = frame.with_column(key, col(other))
        frame = frame.select([key] + keep)
        # Already in order (Dask's sorted=True): nothing moves; the divisions are then
        # not known, which only `divisions` and `loc`'s pruning would use.
        return DataFrame(frame if sorted else frame.set_index(key), (key,), (other,))

    def reset_index(self, drop: bool = False):
        """The index back as columns (named by it, ``index`` when unnamed) and a fresh
        ``RangeIndex``; with ``drop`` the index is dropped."""
        if not self._index:
            return self.copy()
        if drop:
            return DataFrame(self._frame.select(self._visible()))
        pairs = {}
        for i, (c, n) in enumerate(zip(self._index, self._index_names)):
            label = n if n is not None else ("index" if len(self._index) == 1 else f"level_{i}")
            if label in self._visible():
                raise ValueError(f"reset_index: cannot insert {label!r}, already exists")
            pairs[c] = label
        order = list(self._index) + self._visible()
        frame = self._frame.select(order)
        renames = {k: v for k, v in pairs.items() if k != v}
        if renames:
            frame = frame.rename(renames)
        return DataFrame(frame)

    def melt(self, id_vars=None, value_vars=None, var_name=None, value_name: str = "value"):
        """Wide to long, pandas' ``melt``: one row per id and value column, holding the
        column's name in ``var_name`` and its value in ``value_name``."""
        from .. import _tessera

        ids = [] if id_vars is None else ([id_vars] if isinstance(id_vars, str) else list(id_vars))
        values = (
            [c for c in self._visible() if c not in ids]
            if value_vars is None
            else ([value_vars] if isinstance(value_vars, str) else list(value_vars))
        )
        var_name = "variable" if var_name is None else var_name
        parts = []
        for v in values:
            f = self._frame.with_column(var_name, lit(v)).with_column(value_name, col(v))
            parts.append(f.select(ids + [var_name, value_name]))
        return DataFrame(_tessera.concat_frames(parts))

    def pivot_table(self, index, columns, values, aggfunc: str = "mean"):
        """pandas' ``pivot_table``: one row per ``index`` key (sorted), one column per
        distinct value of ``columns`` (sorted, named by the value as text)."""
        frame = self._frame.pivot_table(index, columns, values, aggfunc=aggfunc)
        idx = [index] if isinstance(index, str) else list(index)
        return DataFrame(frame, tuple(idx), tuple(idx))

    # -- Python functions -----------------------------------------------------------------

    def map_partitions(self, func, *args, meta=None, _sample_from=None, **kwargs):
        """``func`` applied to every partition as a ``pandas.DataFrame`` (with its index
        and dtypes), as Dask's ``map_partitions``: a frame, or a Series when ``func``
        returns one. The output's columns and types are those ``func`` gives on the
        first rows, with ``meta`` (an empty frame or Series, a dict of dtypes, or a
        ``(name, dtype)`` pair, as Dask takes it) deciding the dtypes when given;
        every partition's output is cast to them."""
        import pandas as pd

        from .. import _normalized_arrow

        index, names, visible = self._index, self._index_names, self._visible()
        # The first rows (of the frame this one reorders, when given: a sort need not
        # run for them).
        sample_in = (self if _sample_from is None else _sample_from).head(8)
        if len(sample_in) == 0:
            sample_in = self._meta
        try:
            sample = func(sample_in, *args, **kwargs)
        except Exception:
            if meta is None:
                raise
            sample = _meta_object(meta)
        if meta is not None:
            sample = _with_meta(sample, meta)
        is_series = not isinstance(sample, pd.DataFrame)
        series_name = sample.name if isinstance(sample, pd.Series) else None
        sample_frame = _as_frame(sample, series_name)
        table, idx, idx_names = pandas_to_arrow(sample_frame.iloc[:0])
        schema = _normalized_arrow(table).schema

        def run(part):
            pdf = with_index(arrow_to_pandas(part), index, names, visible)
            if len(pdf) == 0:
                out = sample_frame.iloc[:0]
            else:
                out = _as_frame(func(pdf, *args, **kwargs), series_name)
                if meta is not None:
                    out = _with_meta(out, _meta_object(meta) if not is_series else sample_frame)
            t, _, _ = pandas_to_arrow(out)
            t = _normalized_arrow(t)
            missing = [f.name for f in schema if f.name not in t.column_names]
            if missing:
                raise ValueError(
                    f"map_partitions: a partition's output lacks {missing} that the first rows gave; "
                    "return the same columns from every partition (or pass meta=)"
                )
            return t.select(schema.names).cast(schema)

        result = self._frame.map_partitions(run, arrow=True)
        df = DataFrame(result, idx, idx_names)
        if is_series:
            s = df[_series_column(series_name)]
            s.name = series_name
            return s
        return df

    def apply(self, func, axis=1, args=(), meta=None, **kwargs):
        """``func`` applied to every row (``axis=1``) in Python, on pandas partitions,
        as Dask's ``apply``."""
        if axis not in (1, "columns"):
            raise NotImplementedError("apply: only axis=1 is supported (Dask has no axis=0)")
        return self.map_partitions(lambda pdf: pdf.apply(func, axis=1, args=args, **kwargs), meta=meta)

    # -- writing ------------------------------------------------------------------------

    def to_parquet(self, path: str, write_index: bool | None = None, **kwargs):
        """Writes Parquet into the directory ``path`` (one ``part.N.parquet`` per
        partition, committed as a whole) or to the single file ``path`` ending in
        ``.parquet``; the index is written as its columns (read back by
        ``read_parquet``). Returns the paths written."""
        frame = self._frame if write_index in (None, True) else self._frame.select(self._visible())
        return frame.to_parquet(_output_pattern(path, "parquet"))

    def to_csv(self, filename: str, index: bool = False, single_file: bool = False, **kwargs):
        """Writes CSV: one file per partition where ``filename`` has a ``*`` or is a
        directory, or one file with ``single_file=True``; the index is written as a
        column with ``index=True``. Returns the paths written."""
        if index and self._index:
            frame = self.reset_index()._frame
        else:
            frame = self._frame.select(self._visible())
        target = filename if single_file or "*" in filename else _output_pattern(filename, "part")
        return frame.to_csv(target)


def _join_side(df: DataFrame, on, side_on, use_index: bool, side: str):
    """The key columns and the engine frame one side of a merge joins with."""
    if use_index:
        if not df._index:
            raise ValueError(f"merge: {side}_index=True but the {side} frame has no index")
        return list(df._index), df._frame.select(list(df._index) + df._visible())
    keys = side_on if side_on is not None else on
    if keys is None:
        raise ValueError("merge needs on=, left_on=/right_on=, or left_index=/right_index=")
    keys = [keys] if isinstance(keys, str) else list(keys)
    missing = [k for k in keys if k not in df._visible()]
    if missing:
        raise KeyError(f"merge: the {side} frame has no columns {missing}; columns: {df._visible()}")
    return keys, df._frame.select(df._visible())


def _label(v):
    """A division from the engine as pandas shows it."""
    import pandas as pd

    if isinstance(v, np.datetime64):
        return pd.Timestamp(v)
    return v


def _meta_object(meta):
    """An empty pandas object from Dask's forms of ``meta``: a frame or Series, a dict
    of dtypes, a list of ``(name, dtype)``, or a ``(name, dtype)`` pair."""
    import pandas as pd

    if isinstance(meta, (pd.DataFrame, pd.Series)):
        return meta.iloc[:0]
    if isinstance(meta, dict):
        return pd.DataFrame({k: pd.Series(dtype=v) for k, v in meta.items()})
    if isinstance(meta, list):
        return pd.DataFrame({k: pd.Series(dtype=v) for k, v in meta})
    if isinstance(meta, tuple) and len(meta) == 2:
        return pd.Series(dtype=meta[1], name=meta[0])
    return pd.Series(dtype=np.dtype(meta))


def _with_meta(out, meta):
    """``out`` with the dtypes ``meta`` declares (Dask's ``meta=``)."""
    import pandas as pd

    m = _meta_object(meta) if not isinstance(meta, (pd.DataFrame, pd.Series)) else meta
    if isinstance(out, pd.Series) and isinstance(m, pd.Series):
        return out.astype(m.dtype)
    if isinstance(out, pd.DataFrame) and isinstance(m, pd.DataFrame):
        common = {c: t for c, t in m.dtypes.items() if c in out.columns}
        return out.astype(common)
    if isinstance(out, pd.DataFrame) and isinstance(m, pd.Series) and out.shape[1] == 1:
        return out.astype({out.columns[0]: m.dtype})
    return out


def _as_frame(out, series_name):
    """A partition function's result as a pandas frame."""
    import pandas as pd

    if isinstance(out, pd.Series):
        return out.to_frame(_series_column(series_name))
    if isinstance(out, pd.DataFrame):
        return out.set_axis([str(c) for c in out.columns], axis=1)
    return pd.DataFrame({_series_column(series_name): [out]})


def _series_column(name) -> str:
    return "__series__" if name is None else str(name)


def _output_pattern(path: str, kind: str) -> str:
    """``path`` as the engine's output pattern: a name with ``*`` as it is, a file name
    of the format's suffix as it is, else a directory of ``part.*`` files."""
    import os

    if "*" in path or path.endswith((".parquet", ".csv")):
        return path
    suffix = ".parquet" if kind == "parquet" else ".csv"
    return os.path.join(path, f"part.*{suffix}")
