"""``Series``: one lazy column bound to its frame, as ``dask.dataframe.Series``.

A Series is an engine expression over the columns of an engine frame, with a name and
the frame's index. Arithmetic, comparisons and element-wise methods build a larger
expression, so ``df[(df.x > 0) & df.k.isin([1, 2])]`` is one filter in the engine;
reductions give a lazy :class:`Scalar`; window methods (``cumsum``, ``shift``,
``rolling``) run the engine's window functions; ``compute()`` gives a
``pandas.Series`` with the index and the dtypes Dask gives.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import col, lit, when
from ._convert import arrow_to_pandas, engine_kind, indexed, python_literal
from ._ddof import rescaled_value
from ._lineage import Rows, common_frame, unaligned
from ._scalar import Scalar
from ._windows_of import WindowMethods

_VALUE = "__series_value__"
_fresh = itertools.count()


def fresh_name() -> str:
    """A column name no frame of this process uses yet, for intermediate values: two
    of them never collide, so same-named columns of frames with the same rows always
    hold the same values (see ``_lineage``)."""
    return f"__tessera_{next(_fresh)}__"


def _operand(x):
    """The expression parts of an operand: a Series, a Scalar (computed), or a value."""
    if isinstance(x, Series):
        return x._expr, x
    if isinstance(x, Scalar):
        return python_literal(x.compute()), None
    return python_literal(x), None


class Series(WindowMethods):
    """A lazy column (see the module docs).

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> df = dd.from_pandas(pd.DataFrame({"x": [1, 2, 3, 4]}), npartitions=2)
    >>> (df.x * 10 + 1).sum().compute()
    np.int64(104)
    """

    def __init__(self, frame, expr, name, index=(), index_names=(), rows=None, hint=None):
        self._frame = frame
        self._expr = expr
        self._name = name
        self._index = tuple(index)
        self._index_names = tuple(index_names)
        self._rows = rows if rows is not None else Rows()
        # The pandas dtype the result takes where the Arrow type alone does not say it
        # (pandas' nullable results of text methods: `boolean`, `Int64`).
        self._hint = hint
        self._meta_cache = None
        self._kind_cache = None

    # -- construction -------------------------------------------------------------

    def _derive(self, expr, name=None, frame=None, rows=None, hint=None):
        return type(self)(
            self._frame if frame is None else frame,
            expr,
            self._name if name is None else name,
            self._index,
            self._index_names,
            self._rows if rows is None else rows,
            hint,
        )

    def _kind(self) -> str:
        """The NumPy kind of the values, from the plan's schema (nothing runs)."""
        if self._kind_cache is None:
            name = fresh_name()
            self._kind_cache = engine_kind(self._frame.with_column(name, self._expr).dtypes[name])
        return self._kind_cache

    def _is_text(self) -> bool:
        return self._kind() == "O"

    def _on(self, frame):
        """This Series read from ``frame``, a frame of the same rows that has every
        column its expression reads (one a window function of it produced)."""
        return Series(frame, self._expr, self._name, self._index, self._index_names, self._rows)

    def _binary(self, other, op, what: str, reflected: bool = False):
        right, series = _operand(other)
        frame = self._frame
        if series is not None:
            frame = common_frame(
                [(self._expr, self._rows, self._frame), (series._expr, series._rows, series._frame)]
            )
            if frame is None:
                raise unaligned(what)
        left = self._expr
        expr = op(right, left) if reflected else op(left, right)
        name = self._name if series is None or series._name == self._name else None
        hint = None
        if what in _COMPARISONS:
            if self._is_text() or (series is not None and series._is_text()):
                # pandas' Arrow-backed text compares to bool[pyarrow], missing kept.
                hint = "bool[pyarrow]"
            else:
                # A missing number compares false (and unequal), as NaN does in pandas.
                expr = expr.fillna(what == "!=")
        return Series(frame, expr, name, self._index, self._index_names, self._rows, hint)

    def _column_frame(self):
        """The engine frame with this Series as a column of a fresh name, and the name."""
        name = fresh_name()
        return self._frame.with_column(name, self._expr), name

    def _window(self, func: str, **kwargs):
        """A window function of the engine over this Series, in row order."""
        frame, c = self._column_frame()
        out = frame.transform(c, func, **kwargs)
        return Series(out, col(c), self._name, self._index, self._index_names, self._rows)

    # -- metadata -----------------------------------------------------------------

    @property
    def name(self):
        """The Series' name (a column name, or ``None``)."""
        return self._name

    @name.setter
    def name(self, value):
        self._name = value

    @property
    def dtype(self):
        """The pandas dtype of the values, read from the engine's schema."""
        return self._meta().dtype

    @property
    def ndim(self) -> int:
        """1."""
        return 1

    @property
    def npartitions(self) -> int:
        """The number of partitions of the frame the Series is read from."""
        return self._frame.npartitions

    @property
    def index(self):
        """The index as a lazy :class:`Index`."""
        from ._index import Index

        if self._index:
            c = self._index[0]
            return Index(self._frame, col(c), self._index_names[0], self._index, self._index_names, self._rows)
        raise AttributeError("this Series has a default RangeIndex; compute() it, or set_index() the frame first")

    def _meta(self):
        import pandas as pd

        if self._meta_cache is None:
            frame, c = self._column_frame()
            pdf = arrow_to_pandas(frame.select([c]).head(0))
            meta = pd.Series(pdf[c].array, name=self._name)
            self._meta_cache = meta.astype(self._hint) if self._hint is not None else meta
        return self._meta_cache

    def __repr__(self) -> str:
        return f"tessera.dataframe.Series<name={self._name!r}, npartitions={self.npartitions}>\n  {self._expr!r}"

    def __len__(self) -> int:
        return len(self._frame)

    def __bool__(self):
        raise TypeError(
            "the truth value of a Series is ambiguous; combine conditions with & and | "
            "(not `and`/`or`), or compute() it first"
        )

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.compute(), dtype=dtype)

    # -- computing ------------------------------------------------------------------

    def compute(self):
        """The values as a ``pandas.Series`` with its index and name."""
        import pandas as pd

        frame, c = self._column_frame()
        pdf = arrow_to_pandas(frame.select(list(self._index) + [c]).compute())
        if self._index:
            pdf = indexed(pdf, self._index, self._index_names)
        s = self._hinted(pdf[c])
        s.name = self._name
        if not self._index:
            s.index = pd.RangeIndex(len(s))
        return s

    def _hinted(self, s):
        return s.astype(self._hint) if self._hint is not None else s

    def persist(self):
        """The Series with its frame computed and kept in memory."""
        frame, c = self._column_frame()
        kept = frame.select(list(self._index) + [c]).persist()
        return Series(kept, col(c), self._name, self._index, self._index_names)

    def head(self, n: int = 5, compute: bool = True):
        """The first ``n`` values, as a ``pandas.Series``."""
        frame, c = self._column_frame()
        part = Series(frame.select(list(self._index) + [c]), col(c), self._name, self._index, self._index_names)
        pdf = arrow_to_pandas(part._frame.head(n))
        out = indexed(pdf, self._index, self._index_names)[c] if self._index else pdf[c]
        out = self._hinted(out)
        out.name = self._name
        return out

    def tail(self, n: int = 5, compute: bool = True):
        """The last ``n`` values, as a ``pandas.Series``."""
        import pandas as pd

        frame, c = self._column_frame()
        pdf = arrow_to_pandas(frame.select(list(self._index) + [c]).tail(n))
        out = indexed(pdf, self._index, self._index_names)[c] if self._index else pdf[c]
        if not self._index:
            total = len(self)
            out.index = pd.RangeIndex(total - len(out), total)
        out = self._hinted(out)
        out.name = self._name
        return out

    def to_frame(self, name=None):
        """The Series as a one-column :class:`DataFrame`."""
        from ._frame import DataFrame

        name = self._name if name is None else name
        name = 0 if name is None else name
        frame = self._frame.with_column(str(name), self._expr).select(list(self._index) + [str(name)])
        out = DataFrame(frame, self._index, self._index_names, self._rows)
        if self._hint is not None:
            out._hints = {str(name): self._hint}
        return out

    def rename(self, name):
        """The Series under another name."""
        s = self._derive(self._expr, hint=self._hint)
        s._name = name
        return s

    def reset_index(self, drop: bool = False, name=None):
        """A frame with the index as columns and a fresh ``RangeIndex`` (with ``drop``,
        the Series without its index)."""
        if drop:
            return Series(self._frame, self._expr, self._name, (), (), self._rows)
        return self.to_frame(name).reset_index()

    # -- operators --------------------------------------------------------------------

    def __add__(self, o):
        return self._binary(o, lambda a, b: a + b, "+")

    def __radd__(self, o):
        return self._binary(o, lambda a, b: a + b, "+", True)

    def __sub__(self, o):
        return self._binary(o, lambda a, b: a - b, "-")

    def __rsub__(self, o):
        return self._binary(o, lambda a, b: a - b, "-", True)

    def __mul__(self, o):
        return self._binary(o, lambda a, b: a * b, "*")

    def __rmul__(self, o):
        return self._binary(o, lambda a, b: a * b, "*", True)

    def __truediv__(self, o):
        return self._binary(o, lambda a, b: _as_float(a) / b, "/")

    def __rtruediv__(self, o):
        return self._binary(o, lambda a, b: _as_float(a) / b, "/", True)

    def __floordiv__(self, o):
        return self._binary(o, lambda a, b: (_as_float(a) / b).floor(), "//")

    def __mod__(self, o):
        return self._binary(o, _floor_mod, "%")

    def __rmod__(self, o):
        return self._binary(o, _floor_mod, "%", True)

    def __pow__(self, o):
        return self._binary(o, lambda a, b: a**b, "**")

    def __and__(self, o):
        return self._binary(o, lambda a, b: a & b, "&")

    def __rand__(self, o):
        return self._binary(o, lambda a, b: a & b, "&", True)

    def __or__(self, o):
        return self._binary(o, lambda a, b: a | b, "|")

    def __ror__(self, o):
        return self._binary(o, lambda a, b: a | b, "|", True)

    def __xor__(self, o):
        return self._binary(o, lambda a, b: (a | b) & ~(a & b), "^")

    def __eq__(self, o):  # type: ignore[override]
        return self._binary(o, lambda a, b: a == b, "==")

    def __ne__(self, o):  # type: ignore[override]
        return self._binary(o, lambda a, b: a != b, "!=")

    def __lt__(self, o):
        return self._binary(o, lambda a, b: a < b, "<")

    def __le__(self, o):
        return self._binary(o, lambda a, b: a <= b, "<=")

    def __gt__(self, o):
        return self._binary(o, lambda a, b: a > b, ">")

    def __ge__(self, o):
        return self._binary(o, lambda a, b: a >= b, ">=")

    __hash__ = None  # type: ignore[assignment]

    def __invert__(self):
        return self._derive(~self._expr)

    def __neg__(self):
        return self._derive(-self._expr)

    def __abs__(self):
        return self._derive(abs(self._expr))

    def add(self, other):
        """``self + other``."""
        return self + other

    def sub(self, other):
        """``self - other``."""
        return self - other

    def mul(self, other):
        """``self * other``."""
        return self * other

    def div(self, other):
        """``self / other``."""
        return self / other

    truediv = div

    def eq(self, other):
        """``self == other``."""
        return self == other

    def ne(self, other):
        """``self != other``."""
        return self != other

    def lt(self, other):
        """``self < other``."""
        return self < other

    def le(self, other):
        """``self <= other``."""
        return self <= other

    def gt(self, other):
        """``self > other``."""
        return self > other

    def ge(self, other):
        """``self >= other``."""
        return self >= other

    # -- element-wise methods -----------------------------------------------------------

    def abs(self):
        """Absolute values."""
        return self._derive(abs(self._expr))

    def isna(self):
        """True where the value is missing (null or NaN), as pandas' ``isna``."""
        return self._derive(_missing(self._expr, self._is_float()))

    isnull = isna

    def notna(self):
        """True where the value is present."""
        return self._derive(~_missing(self._expr, self._is_float()))

    notnull = notna

    def _is_float(self) -> bool:
        return self._kind() == "f"

    def fillna(self, value=None, method=None):
        """Missing values (null, and NaN in a float Series) replaced by ``value``, or
        carried from the last present one (``method="ffill"``) or the next
        (``"bfill"``)."""
        if method is not None:
            return {"ffill": self.ffill, "pad": self.ffill, "bfill": self.bfill, "backfill": self.bfill}[method]()
        v, _ = _operand(value)
        e = self._expr
        if self._is_float():
            e = when(e.isnan()).then(None).otherwise(e)
        return self._derive(e.fillna(v))

    def ffill(self):
        """Missing values replaced by the last present one before them."""
        return self._null_nan()._window("ffill")

    def bfill(self):
        """Missing values replaced by the first present one after them."""
        return self._null_nan()._window("bfill")

    def _null_nan(self):
        if self._is_float():
            return self._derive(when(self._expr.isnan()).then(None).otherwise(self._expr))
        return self

    def dropna(self):
        """The present values only."""
        frame, c = self._column_frame()
        kept = frame.filter(~_missing(col(c), self._is_float()))
        return Series(kept, col(c), self._name, self._index, self._index_names, Rows())

    def astype(self, dtype):
        """The values as another type (``"int64"``, ``float``, ``"string"``,
        ``"category"``, ``"datetime64[us]"``, a NumPy or pandas dtype)."""
        name = _dtype_name(dtype)
        hint = "str" if name == "string" and (dtype is str or dtype in ("str", "object")) else None
        return self._derive(self._expr.astype(name), hint=hint)

    def isin(self, values):
        """True where the value is one of ``values``."""
        return self._derive(self._expr.isin([python_literal(v) for v in values]).fillna(False))

    def between(self, left, right, inclusive: str = "both"):
        """``left <= self <= right`` (``inclusive``: ``"both"``, ``"left"``,
        ``"right"``, ``"neither"``)."""
        lo, _ = _operand(left)
        hi, _ = _operand(right)
        e = self._expr
        lower = (e >= lo) if inclusive in ("both", "left") else (e > lo)
        upper = (e <= hi) if inclusive in ("both", "right") else (e < hi)
        if inclusive not in ("both", "left", "right", "neither"):
            raise ValueError(f"inclusive={inclusive!r}: use 'both', 'left', 'right' or 'neither'")
        if self._is_text():
            return self._derive(lower & upper, hint="bool[pyarrow]")
        return self._derive((lower & upper).fillna(False))

    def clip(self, lower=None, upper=None):
        """Values limited to ``[lower, upper]`` (either may be ``None``)."""
        e = self._expr
        if lower is not None:
            lo, _ = _operand(lower)
            e = when(e < lo).then(lo).otherwise(e)
        if upper is not None:
            hi, _ = _operand(upper)
            e = when(e > hi).then(hi).otherwise(e)
        return self._derive(e)

    def round(self, decimals: int = 0):
        """Values rounded half to even at ``decimals`` places, as NumPy rounds."""
        if decimals == 0:
            return self._derive(self._expr.round())
        scale = 10.0**decimals
        return self._derive((self._expr * scale).round() / scale)

    def where(self, cond, other=np.nan):
        """The values where ``cond`` holds, ``other`` elsewhere (missing by default)."""
        return self._select(cond, other, keep_where_true=True)

    def mask(self, cond, other=np.nan):
        """``other`` where ``cond`` holds, the values elsewhere."""
        return self._select(cond, other, keep_where_true=False)

    def _select(self, cond, other, keep_where_true: bool):
        c, cs = _operand(cond)
        if cs is not None and common_frame([(self._expr, self._rows, self._frame), (cs._expr, cs._rows, cs._frame)]) is None:
            raise unaligned("where")
        o = None if isinstance(other, float) and np.isnan(other) else python_literal(other)
        if keep_where_true:
            return self._derive(when(c).then(self._expr).otherwise(o))
        return self._derive(when(c).then(o).otherwise(self._expr))

    def map(self, arg, na_action=None, meta=None):
        """Values looked up in a dict (missing where absent, as pandas), or passed
        through a Python function on pandas partitions."""
        if isinstance(arg, dict):
            if not arg:
                return self._derive(lit(None).astype("float64"))
            items = list(arg.items())
            w = when(self._expr == python_literal(items[0][0])).then(python_literal(items[0][1]))
            for k, v in items[1:]:
                w = w.when(self._expr == python_literal(k)).then(python_literal(v))
            texts = all(isinstance(v, str) for v in arg.values())
            return self._derive(w.otherwise(None), hint="str" if texts and not self._is_text() else None)
        return self.map_partitions(lambda s: s.map(arg, na_action=na_action), meta=meta)

    def apply(self, func, args=(), meta=None, **kwargs):
        """``func`` applied to every value, in Python, on pandas partitions."""
        return self.map_partitions(lambda s: s.apply(func, args=args, **kwargs), meta=meta)

    def map_partitions(self, func, *args, meta=None, **kwargs):
        """``func`` applied to every partition as a ``pandas.Series`` (Dask's
        ``map_partitions``); a Series or frame of what it returns."""
        return self.to_frame(self._name if self._name is not None else _VALUE).map_partitions(
            lambda pdf: func(pdf.iloc[:, 0], *args, **kwargs), meta=meta
        )

    @property
    def str(self):
        """String methods (``.str.lower()``, ``.str.contains()``, ...)."""
        from ._accessors import StringMethods

        return StringMethods(self)

    @property
    def dt(self):
        """Calendar parts of datetimes (``.dt.hour``, ``.dt.floor("h")``, ...)."""
        from ._accessors import DatetimeMethods

        return DatetimeMethods(self)

    # -- window functions ---------------------------------------------------------------

    def cumsum(self, skipna: bool = True):
        """The running sum, in row order."""
        return self._null_nan()._window("cumsum")

    def cumprod(self, skipna: bool = True):
        """The running product."""
        return self._null_nan()._window("cumprod")

    def cummin(self, skipna: bool = True):
        """The running minimum."""
        return self._null_nan()._window("cummin")

    def cummax(self, skipna: bool = True):
        """The running maximum."""
        return self._null_nan()._window("cummax")

    def shift(self, periods: int = 1):
        """The value ``periods`` rows earlier (missing where there is none)."""
        return self._window("shift", periods=periods)

    def diff(self, periods: int = 1):
        """The value minus the one ``periods`` rows earlier."""
        return self._window("diff", periods=periods)

    def rank(self, method: str = "average", ascending: bool = True):
        """The rank of each value (1 for the smallest), ties by ``method``."""
        frame, c = self._column_frame()
        out = frame.rank(c, method=method, ascending=ascending)
        return Series(out, col(c).astype("float64"), self._name, self._index, self._index_names, self._rows)

    # -- reductions ---------------------------------------------------------------------

    def _agg_expr(self, func: str):
        """``(expression, engine function)`` of a reduction: NaN of a float Series made
        missing first, as pandas skips it."""
        e = self._expr
        if self._is_float():
            e = when(e.isnan()).then(None).otherwise(e)
        return e, func

    def _reduce(self, func: str):
        return Scalar.of(self._frame, *self._agg_expr(func))

    def sum(self, skipna: bool = True, min_count: int = 0):
        """The sum of the present values (0 when there are none)."""
        return self._reduce("sum")

    def mean(self, skipna: bool = True):
        """The mean of the present values."""
        return self._reduce("mean")

    def min(self, skipna: bool = True):
        """The smallest present value."""
        return self._reduce("min")

    def max(self, skipna: bool = True):
        """The largest present value."""
        return self._reduce("max")

    def count(self):
        """The number of present values."""
        return self._reduce("count")

    def std(self, ddof: int = 1, skipna: bool = True):
        """The standard deviation (``ddof`` 1 or 0)."""
        return self._moment("std", ddof)

    def var(self, ddof: int = 1, skipna: bool = True):
        """The variance (``ddof`` 1 or 0)."""
        return self._moment("var", ddof)

    def _moment(self, func: str, ddof: int):
        if ddof == 1:
            return self._reduce(func)
        power = 1.0 if func == "var" else 0.5
        return Scalar.of_many(
            self._frame,
            [self._agg_expr("var"), self._agg_expr("count")],
            lambda v, n: rescaled_value(v, n, ddof) ** power,
        )

    def median(self, skipna: bool = True):
        """The median of the present values, exact."""
        return self._reduce("median")

    def quantile(self, q=0.5, method: str = "default"):
        """The ``q`` quantile (or a Series of them for a list), exact and linearly
        interpolated as pandas' default."""
        if np.ndim(q) == 0:
            return self._reduce(f"quantile({float(q)})")
        import pandas as pd

        aggs = [self._agg_expr(f"quantile({float(x)})") for x in q]
        return Scalar.of_many(self._frame, aggs, lambda *v: pd.Series(v, index=list(q), name=self._name))

    def nunique(self, dropna: bool = True):
        """The number of distinct present values."""
        return self._reduce("nunique")

    def any(self):
        """Whether any value is true."""
        return self.astype("int64").max().map(lambda v: bool(v) if v == v else False)

    def all(self):
        """Whether every value is true."""
        return self.astype("int64").min().map(lambda v: bool(v) if v == v else True)

    def agg(self, func):
        """One reduction by name, or a pandas Series of several."""
        import pandas as pd

        if isinstance(func, str):
            return getattr(self, func)()
        finish = lambda *v: pd.Series(v, index=list(func), name=self._name)  # noqa: E731
        if all(f in _ENGINE_REDUCTIONS for f in func):
            return Scalar.of_many(self._frame, [self._agg_expr(f) for f in func], finish)
        return Scalar.combine([getattr(self, f)() for f in func], finish)

    aggregate = agg

    def describe(self, percentiles=None):
        """pandas' ``describe()`` of a numeric Series: count, mean, std, min, the
        percentiles (exact) and max, a lazy value whose ``compute()`` is a pandas
        Series."""
        name = self._name if isinstance(self._name, str) else _VALUE
        frame = self.to_frame(name).describe(percentiles=percentiles)

        def run():
            out = frame.compute()[name]
            out.name = self._name
            return out

        return Scalar(run, "describe()")

    def value_counts(self, sort: bool = True, ascending: bool = False, dropna: bool = True, normalize: bool = False):
        """How often each value occurs, a Series indexed by the values (named
        ``count``, or ``proportion`` with ``normalize``): most frequent first, ties by
        value, or least frequent first with ``ascending``."""
        frame, c = self._null_nan()._column_frame()
        key = self._name if isinstance(self._name, str) and self._name != "count" else _VALUE
        counted = frame.select([c]).rename({c: key}).value_counts(key)
        if sort and ascending:
            counted = counted.sort_values(["count", key], ascending=[True, True])
        text = self._is_text()
        out = Series(counted, col("count"), "count", (key,), (self._name,), Rows(), "int64[pyarrow]" if text else None)
        if normalize:
            total = self.count()
            share = col("count").astype("float64") / python_literal(total.compute())
            out = Series(counted, share, "proportion", (key,), (self._name,), Rows(), "double[pyarrow]" if text else None)
        return out

    def unique(self):
        """The distinct values (nulls once), as a Series named like this one."""
        frame, c = self._column_frame()
        kept = frame.select([c]).drop_duplicates([c])
        return Series(kept, col(c), self._name, (), (), Rows())

    def drop_duplicates(self, keep: str = "first"):
        """The Series without repeated values, the first of each kept."""
        frame, c = self._column_frame()
        kept = frame.select(list(self._index) + [c]).drop_duplicates([c], keep=keep)
        return Series(kept, col(c), self._name, self._index, self._index_names, Rows())

    def nlargest(self, n: int = 5):
        """The ``n`` largest values, largest first."""
        return self._top(n, largest=True)

    def nsmallest(self, n: int = 5):
        """The ``n`` smallest values, smallest first."""
        return self._top(n, largest=False)

    def _top(self, n: int, largest: bool):
        frame, c = self._null_nan()._column_frame()
        part = frame.select(list(self._index) + [c]).filter(col(c).notnull())
        top = part.nlargest(n, c) if largest else part.nsmallest(n, c)
        return Series(top, col(c), self._name, self._index, self._index_names, Rows())

    def sort_values(self, ascending: bool = True):
        """The Series sorted by value (stable, missing last)."""
        frame, c = self._column_frame()
        s = frame.select(list(self._index) + [c]).sort_values(c, ascending=ascending)
        return Series(s, col(c), self._name, self._index, self._index_names, Rows())

    def groupby(self, by, dropna: bool = True, sort=None, observed=None):
        """The Series grouped by ``by``: Series of the same rows, or column names of
        the frame it was read from."""
        from ._frame import DataFrame
        from ._groupby import DataFrameGroupBy

        keys = by if isinstance(by, list) else [by]
        frame = self._frame
        names = []
        parts = [(self._expr, self._rows, self._frame)]
        for k in keys:
            if isinstance(k, Series):
                parts.append((k._expr, k._rows, k._frame))
        frame = common_frame(parts)
        if frame is None:
            raise unaligned("groupby")
        for k in keys:
            if isinstance(k, Series):
                name = fresh_name()
                frame = frame.with_column(name, k._expr)
                names.append(name)
            else:
                names.append(k)
        value = fresh_name()
        frame = frame.with_column(value, self._expr).select(list(self._index) + names + [value])
        df = DataFrame(frame, self._index, self._index_names, self._rows)
        labels = [k._name if isinstance(k, Series) else k for k in keys]
        return DataFrameGroupBy(df, names, dropna=dropna, sort=sort, labels=labels).select_series(value, self._name)


_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
# Reductions the engine computes under the same name, as pandas defines them.
_ENGINE_REDUCTIONS = ("sum", "mean", "min", "max", "count", "std", "var", "median", "nunique")


def _floor_mod(a, b):
    """``a % b`` with the sign of ``b``, as Python and pandas take it (the engine's
    remainder has the sign of ``a``)."""
    r = a % b
    if not hasattr(r, "columns"):
        return r
    if hasattr(b, "columns"):
        wrong = (r != 0) & ((r < 0) != (b < 0))
    else:
        wrong = (r != 0) & ((r > 0) if b < 0 else (r < 0))
    return when(wrong).then(r + b).otherwise(r)


def _as_float(e):
    """Division as pandas does it: in float64 for integer operands."""
    if hasattr(e, "astype"):
        return e.astype("float64")
    return float(e) if isinstance(e, (int, np.integer)) else e


def _missing(e, is_float: bool):
    """pandas' notion of missing: null, or NaN in a float column."""
    return (e.isnull() | e.isnan()) if is_float else e.isnull()


def _dtype_name(dtype) -> str:
    """An engine type name from what pandas users pass to ``astype``."""
    import pandas as pd

    if isinstance(dtype, str):
        return {
            "str": "string",
            "object": "string",
            "string[pyarrow]": "string",
            "float": "float64",
            "int": "int64",
            "datetime64[ns]": "datetime64[ns]",
            "Int64": "int64",
            "Float64": "float64",
            "boolean": "bool",
        }.get(dtype, dtype)
    if dtype is str or isinstance(dtype, pd.StringDtype):
        return "string"
    if dtype is float:
        return "float64"
    if dtype is int:
        return "int64"
    if dtype is bool:
        return "bool"
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    return np.dtype(dtype).name
