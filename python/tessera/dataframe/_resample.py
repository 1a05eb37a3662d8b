"""``df.resample("1h").mean()`` on a datetime index, as pandas and Dask bin it.

Each row's bin is computed in the engine (the index floored to the rule, or truncated
to the calendar unit), the frame is aggregated by bin in one pass, and the small
result is completed with the empty bins pandas shows between the first and the last
(missing for ``mean``/``min``/``max``, 0 for ``sum``/``count``). Labels follow pandas'
defaults: the bin start for fixed rules and ``MS``/``QS``/``YS``, the period's last day
for ``ME``/``QE``/``YE`` and ``W`` (weeks ending on Sunday).
"""

from __future__ import annotations

from .. import col
from ._accessors import floor_expr, tick_nanos
from ._series import fresh_name

_CALENDAR = {
    "MS": ("month", "start"),
    "ME": ("month", "end"),
    "M": ("month", "end"),
    "QS": ("quarter", "start"),
    "QS-JAN": ("quarter", "start"),
    "QE": ("quarter", "end"),
    "Q": ("quarter", "end"),
    "QE-DEC": ("quarter", "end"),
    "YS": ("year", "start"),
    "AS": ("year", "start"),
    "YS-JAN": ("year", "start"),
    "YE": ("year", "end"),
    "Y": ("year", "end"),
    "A": ("year", "end"),
    "YE-DEC": ("year", "end"),
    "W": ("week", "end"),
    "W-SUN": ("week", "end"),
}


class Resampler:
    """Bins of a datetime index (see the module docs).

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> t = pd.date_range("2024-01-01", periods=6, freq="20min")
    >>> df = dd.from_pandas(pd.DataFrame({"x": range(6)}, index=t), npartitions=2)
    >>> df.x.resample("1h").sum().compute().tolist()
    [3, 12]
    """

    def __init__(self, obj, rule: str, closed=None, label=None):
        if closed not in (None, "left") or label not in (None, "left"):
            raise NotImplementedError("resample: only closed='left' and label='left' (the defaults) are supported")
        self._obj = obj
        self._rule = rule
        if len(obj._index) != 1:
            raise TypeError("resample needs a datetime index; set_index() the time column first")

    def _binned(self):
        """The frame (of the object's columns) with a bin column, its name, the
        calendar label side or ``None``, and the pandas frequency."""
        from ._frame import DataFrame
        from ._series import Series

        obj = self._obj
        frame_like = obj if isinstance(obj, DataFrame) else None
        index_col = obj._index[0]
        rule = self._rule
        key = rule
        name = fresh_name()
        t = col(index_col)
        if key in _CALENDAR:
            unit, side = _CALENDAR[key]
            bins = t.dt.truncate(unit)
        else:
            nanos = tick_nanos(rule)
            if nanos is None:
                raise ValueError(f"resample({rule!r}): unknown rule; use a fixed one (h, 15min, D) or MS, ME, QS, QE, YS, YE, W")
            if (86_400 * 10**9) % nanos and nanos % (86_400 * 10**9):
                raise NotImplementedError(
                    f"resample({rule!r}): bins that neither divide a day nor are whole days start at pandas' first midnight; use a rule that divides a day"
                )
            if nanos > 86_400 * 10**9:
                raise NotImplementedError(f"resample({rule!r}): multi-day bins are counted from the first day in pandas; use 'D' or 'W'")
            unit = _pandas_time_type(obj._frame.dtypes[index_col])
            bins, side = floor_expr(t, rule, unit), None
        if frame_like is not None:
            frame = frame_like._frame.with_column(name, bins)
            columns = frame_like._visible()
        else:
            s: Series = obj
            value = s._name if isinstance(s._name, str) else fresh_name()
            frame = s._frame.with_column(value, s._expr).with_column(name, bins)
            columns = [value]
        return frame, name, columns, side

    def _agg(self, func: str):
        from ._scalar import Scalar

        return Scalar(lambda: self._run(func), f"resample({self._rule!r}).{func}()")

    def _run(self, func: str):
        import pandas as pd

        from ._convert import arrow_to_pandas
        from ._frame import DataFrame
        from ._series import Series

        frame, name, columns, side = self._binned()
        obj = self._obj
        kinds = obj._kinds() if isinstance(obj, DataFrame) else {columns[0]: obj._kind()}
        if func in ("sum", "mean", "std", "var", "median"):
            columns = [c for c in columns if kinds[c] in "iufb"]
        from .. import when

        aggs = []
        for c in columns:
            e = col(c)
            if kinds[c] == "f":
                e = when(e.isnan()).then(None).otherwise(e)
            aggs.append((e, func, c))
        result = arrow_to_pandas(frame.groupby([name]).agg_exprs(aggs).sort_values(name).compute())
        result = result.set_index(name)
        result.index.name = obj._index_names[0]
        if len(result):
            full = pd.date_range(result.index.min(), result.index.max(), freq=_step(self._rule, side))
            result = result.reindex(full)
            result.index.name = obj._index_names[0]
            if func in ("sum", "count"):
                result = result.fillna(0)
                for c in result.columns:
                    if kinds[c] in "iub" or func == "count":
                        result[c] = result[c].astype("int64")
        if side == "end":
            result.index = _period_end(result.index, self._rule)
        if len(result):
            result.index = pd.DatetimeIndex(result.index, freq=pd.tseries.frequencies.to_offset(self._rule))
        result.index.name = obj._index_names[0]
        if isinstance(obj, Series):
            s = result[columns[0]]
            s.name = obj._name
            return s
        return result

    def sum(self):
        """The sum per bin (0 for an empty bin)."""
        return self._agg("sum")

    def mean(self):
        """The mean per bin."""
        return self._agg("mean")

    def min(self):
        """The smallest value per bin."""
        return self._agg("min")

    def max(self):
        """The largest value per bin."""
        return self._agg("max")

    def count(self):
        """The number of present values per bin."""
        return self._agg("count")

    def first(self):
        """The first present value per bin."""
        return self._agg("first")

    def last(self):
        """The last present value per bin."""
        return self._agg("last")

    def std(self):
        """The sample standard deviation per bin."""
        return self._agg("std")

    def var(self):
        """The sample variance per bin."""
        return self._agg("var")

    def median(self):
        """The exact median per bin."""
        return self._agg("median")

    def nunique(self):
        """The number of distinct present values per bin."""
        return self._agg("nunique")

    def agg(self, func: str):
        """One aggregation by name."""
        return getattr(self, func)()


def _pandas_time_type(engine_type: str) -> str:
    """pandas' name of an engine timestamp type (``Timestamp(µs)``: ``datetime64[us]``)."""
    for mark, unit in (("ns", "ns"), ("µs", "us"), ("ms", "ms"), ("s)", "s")):
        if mark in engine_type:
            return f"datetime64[{unit}]"
    return "datetime64[us]"


def _step(rule: str, side):
    """The frequency of consecutive bin starts."""
    key = rule
    if side is None:
        return rule
    unit = _CALENDAR[key][0]
    return {"month": "MS", "quarter": "QS", "year": "YS", "week": "W-MON"}[unit]


def _period_end(index, rule: str):
    """Bin starts as pandas labels the ``*E`` rules: the period's last day."""
    import pandas as pd

    unit = _CALENDAR[rule][0]
    if unit == "week":
        return index + pd.Timedelta(days=6)
    offset = {"month": pd.offsets.MonthEnd(0), "quarter": pd.offsets.QuarterEnd(0), "year": pd.offsets.YearEnd(0)}[unit]
    return index + offset
