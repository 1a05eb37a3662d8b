"""``Rolling`` and ``Expanding``: ``s.rolling(window).mean()``, ``s.expanding().sum()``
and their frame forms, run by the engine's rolling and running window functions in row
order."""

from __future__ import annotations


class WindowAggregates:
    """``sum``, ``mean``, ``min`` and ``max`` of a window object, each its ``_apply``
    of the engine's rolling aggregate of that name."""

    def _apply(self, agg: str):
        raise NotImplementedError

    def sum(self):
        """The sum over each window."""
        return self._apply("sum")

    def mean(self):
        """The mean over each window."""
        return self._apply("mean")

    def min(self):
        """The smallest value in each window."""
        return self._apply("min")

    def max(self):
        """The largest value in each window."""
        return self._apply("max")


class Rolling(WindowAggregates):
    """A window of the last ``window`` rows of a Series or frame, or with ``center=True``
    of the rows around each row (pandas' centered window: ``(window - 1) // 2`` rows
    after it), which is the trailing window's result moved up that many rows. A centered
    window needs full windows (``min_periods`` equal to the window, the default) unless
    it ends at its own row: near the end of the data pandas' centered windows hold fewer
    rows, which the trailing windows never do.

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> s = dd.from_pandas(pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}), npartitions=2).x
    >>> s.rolling(2).sum().compute().tolist()
    [nan, 3.0, 5.0, 7.0]
    >>> s.rolling(3, center=True).mean().compute().tolist()
    [nan, 2.0, 3.0, nan]
    """

    def __init__(self, obj, window, min_periods=None, center: bool = False):
        if not isinstance(window, int) or isinstance(window, bool):
            raise NotImplementedError(
                f"rolling({window!r}): only a window of a whole number of rows is supported, not a time offset"
            )
        if window < 1:
            raise ValueError(f"rolling({window}): the window must be at least 1 row")
        if min_periods is not None and not 0 <= min_periods <= window:
            raise ValueError(f"rolling: min_periods={min_periods} must be between 0 and the window {window}")
        self._obj = obj
        self._window = window
        self._min_periods = window if min_periods is None else max(min_periods, 1)
        self._center = bool(center)
        # Rows of a centered window after its row (pandas' offset).
        self._after = (window - 1) // 2 if center else 0
        if self._after and self._min_periods != window:
            raise NotImplementedError(
                f"rolling({window}, center=True, min_periods={min_periods}): a centered window "
                "needs full windows (min_periods equal to the window) here; pandas' partial "
                "windows at the end of the data are not computed"
            )

    def _centered(self, result):
        """The trailing window's ``result`` as the centered window's: moved up by the
        rows a centered window holds after its row."""
        return result.shift(-self._after) if self._after else result

    def _apply(self, agg: str):
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column(agg)
        s = self._obj._null_nan()
        if s._kind() != "f":
            s = s.astype("float64")
        return self._centered(s._window(f"rolling_{agg}", window=self._window, min_periods=self._min_periods))

    def count(self):
        """The number of present values in each window (pandas' ``count``, which
        needs ``min_periods`` of them, 0 by default for it)."""
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column("count")
        if self._after:
            raise NotImplementedError(
                f"rolling({self._window}, center=True).count(): a centered count holds partial "
                "windows at the end of the data, which the trailing windows do not compute"
            )
        from .. import lit, when

        s = self._obj
        present = s.notna().astype("float64")._window("rolling_sum", window=self._window, min_periods=1)
        # pandas counts a window once it holds `min_periods` rows, present or not.
        rows = present._derive(lit(1.0))._window("rolling_sum", window=self._window, min_periods=1)
        present = present._on(rows._frame)
        return rows._derive(when(rows._expr >= float(self._min_periods)).then(present._expr).otherwise(None))

    def var(self, ddof: int = 1):
        """The variance over each window, from rolling sums of the values and their
        squares (exact to about 1e-12 of the spread for data whose mean is under a
        million spreads)."""
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column("var")
        from .. import when

        s = self._obj._null_nan()
        s = s.astype("float64") if s._kind() != "f" else s
        # Each window runs on the frame the one before produced, so all three columns
        # end in one frame.
        n = s.notna().astype("float64")._window("rolling_sum", window=self._window, min_periods=1)
        s1 = s._on(n._frame)._window("rolling_sum", window=self._window, min_periods=self._min_periods)
        s2 = (s * s)._on(s1._frame)._window("rolling_sum", window=self._window, min_periods=self._min_periods)
        n, s1 = n._on(s2._frame), s1._on(s2._frame)
        var = (s2 - s1 * s1 / n) / (n - ddof)
        e = var._expr
        e = when(n._expr <= ddof).then(None).when(e < 0.0).then(0.0).otherwise(e)
        return self._centered(var._derive(e))

    def std(self, ddof: int = 1):
        """The standard deviation over each window (see ``var``)."""
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column("std")
        v = self.var(ddof)
        return v._derive(v._expr.sqrt())

    def _per_column(self, agg: str):
        df = self._obj
        def one(s):
            return getattr(Rolling(s, self._window, self._min_periods, self._center), agg)()

        return df._columnwise(one, df._numeric_columns())


class Expanding:
    """A window from the first row to each row: ``s.expanding().mean()``, from the
    engine's running sums, counts and extremes.

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> s = dd.from_pandas(pd.DataFrame({"x": [1.0, None, 3.0, 4.0]}), npartitions=2).x
    >>> s.expanding().mean().compute().tolist()
    [1.0, 1.0, 2.0, 2.6666666666666665]
    """

    def __init__(self, obj, min_periods: int = 1):
        if min_periods < 0:
            raise ValueError(f"expanding: min_periods={min_periods} must be at least 0")
        self._obj = obj
        self._min_periods = max(min_periods, 1)

    def _series(self):
        s = self._obj._null_nan()
        return s.astype("float64") if s._kind() != "f" else s

    def _count(self, s):
        return s.notna().astype("float64")._window("cumsum")

    def _enough(self, n, value):
        from .. import when

        value = value._on(n._frame) if value._frame is not n._frame else value
        return n._derive(when(n._expr >= float(self._min_periods)).then(value._expr).otherwise(None))

    def _per_column(self, agg: str):
        df = self._obj
        return df._columnwise(lambda s: getattr(Expanding(s, self._min_periods), agg)(), df._numeric_columns())

    def count(self):
        """The number of present values so far."""
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column("count")
        n = self._count(self._series())
        return self._enough(n, n)

    def sum(self):
        """The sum of the present values so far."""
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column("sum")
        s = self._series()
        n = self._count(s)
        total = s._on(n._frame)._window("cumsum")._window("ffill")
        return self._enough(n._on(total._frame), total)

    def mean(self):
        """The mean of the present values so far."""
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column("mean")
        s = self._series()
        n = self._count(s)
        total = s._on(n._frame)._window("cumsum")._window("ffill")
        n = n._on(total._frame)
        return self._enough(n, total / n)

    def min(self):
        """The smallest present value so far."""
        return self._extreme("cummin", "min")

    def max(self):
        """The largest present value so far."""
        return self._extreme("cummax", "max")

    def _extreme(self, func: str, agg: str):
        from ._frame import DataFrame

        if isinstance(self._obj, DataFrame):
            return self._per_column(agg)
        s = self._series()
        n = self._count(s)
        run = s._on(n._frame)._window(func)._window("ffill")
        return self._enough(n._on(run._frame), run)
