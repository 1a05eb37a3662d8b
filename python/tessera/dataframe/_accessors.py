"""``Series.str`` and ``Series.dt``: pandas' string and datetime methods as engine
expressions."""

from __future__ import annotations


class StringMethods:
    """``s.str``: string functions, run in the engine.

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> s = dd.from_pandas(pd.DataFrame({"s": ["Ab", " c "]}), npartitions=1).s
    >>> s.str.lower().str.strip().compute().tolist()
    ['ab', 'c']
    """

    def __init__(self, series):
        self._s = series

    def _map(self, fn, hint=None):
        return self._s._derive(fn(self._s._expr.str), hint=hint)

    def lower(self):
        """Lower case."""
        return self._map(lambda s: s.lower())

    def upper(self):
        """Upper case."""
        return self._map(lambda s: s.upper())

    def len(self):
        """Length in characters."""
        return self._map(lambda s: s.len(), "Int64")

    def strip(self):
        """Whitespace removed at both ends."""
        return self._map(lambda s: s.strip())

    def contains(self, pat: str, case: bool = True, regex: bool = True, na=None):
        """True where the string contains ``pat`` (a literal substring; a regular
        expression of special characters is refused)."""
        if regex and any(ch in pat for ch in ".^$*+?{}[]\\|()"):
            raise NotImplementedError(
                f"str.contains({pat!r}): regular expressions are not run in the engine; pass regex=False for a literal"
            )
        if not case:
            return self._s._derive(self._s._expr.str.lower().str.contains(pat.lower()), hint="boolean")
        return self._map(lambda s: s.contains(pat), "boolean")

    def startswith(self, pat: str):
        """True where the string starts with ``pat``."""
        return self._map(lambda s: s.startswith(pat), "boolean")

    def endswith(self, pat: str):
        """True where the string ends with ``pat``."""
        return self._map(lambda s: s.endswith(pat), "boolean")

    def replace(self, pat: str, repl: str, regex: bool = False):
        """Every occurrence of the literal ``pat`` replaced by ``repl``."""
        if regex:
            raise NotImplementedError("str.replace(regex=True) is not run in the engine; use regex=False")
        return self._map(lambda s: s.replace(pat, repl))

    def slice(self, start=None, stop=None):
        """The characters from ``start`` to before ``stop``."""
        return self._map(lambda s: s.slice(start, stop))

    def __getitem__(self, key):
        if isinstance(key, slice) and key.step in (None, 1):
            return self.slice(key.start, key.stop)
        if isinstance(key, int):
            return self.slice(key, key + 1 if key != -1 else None)
        raise TypeError("str[...] takes an integer or a slice without a step")


_UNITS = {
    86_400 * 10**9: "day",
    3_600 * 10**9: "hour",
    60 * 10**9: "minute",
    10**9: "second",
    10**6: "millisecond",
    10**3: "microsecond",
}


class DatetimeMethods:
    """``s.dt``: calendar parts and rounding of datetimes, run in the engine.

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> t = pd.DataFrame({"t": pd.to_datetime(["2024-01-01 10:30", "2024-03-02 23:59"])})
    >>> dd.from_pandas(t, npartitions=1).t.dt.hour.compute().tolist()
    [10, 23]
    """

    def __init__(self, series):
        self._s = series

    def _part(self, name: str):
        return self._s._derive(getattr(self._s._expr.dt, name).astype("int32"))

    @property
    def year(self):
        """The year."""
        return self._part("year")

    @property
    def month(self):
        """The month (1-12)."""
        return self._part("month")

    @property
    def day(self):
        """The day of the month."""
        return self._part("day")

    @property
    def hour(self):
        """The hour (0-23)."""
        return self._part("hour")

    @property
    def minute(self):
        """The minute (0-59)."""
        return self._part("minute")

    @property
    def second(self):
        """The second (0-59)."""
        return self._part("second")

    @property
    def quarter(self):
        """The quarter (1-4)."""
        return self._part("quarter")

    @property
    def dayofweek(self):
        """The day of the week, Monday 0."""
        return self._part("weekday")

    weekday = day_of_week = dayofweek

    @property
    def dayofyear(self):
        """The day of the year."""
        return self._part("dayofyear")

    day_of_year = dayofyear

    def floor(self, freq: str):
        """The start of the ``freq`` bin (``"h"``, ``"15min"``, ``"D"``) each instant
        falls in, bins counted from the epoch as pandas' ``floor``."""
        return self._s._derive(floor_expr(self._s._expr, freq, str(self._s.dtype)))

    @property
    def date(self):
        """The instant at midnight (pandas gives ``datetime.date`` objects; this keeps
        a datetime column, which is what groupby and comparisons want)."""
        return self._s._derive(self._s._expr.dt.truncate("day"))

    def normalize(self):
        """The instant at midnight."""
        return self._s._derive(self._s._expr.dt.truncate("day"))


def tick_nanos(freq: str) -> int | None:
    """The fixed length of ``freq`` in nanoseconds, ``None`` for calendar ones."""
    import pandas as pd

    offset = pd.tseries.frequencies.to_offset(freq)
    try:
        return int(pd.Timedelta(offset).value)
    except (TypeError, ValueError):
        return None


def floor_expr(e, freq: str, dtype: str = "datetime64[us]"):
    """``e`` (a datetime expression of type ``dtype``) floored to bins of ``freq`` from
    the epoch, in the same type."""
    nanos = tick_nanos(freq)
    if nanos is None:
        raise ValueError(f"floor({freq!r}): a calendar frequency has no fixed length; use a fixed one (h, min, s, D)")
    if nanos in _UNITS:
        return e.dt.truncate(_UNITS[nanos])
    if nanos % 1000:
        raise ValueError(f"floor({freq!r}): bins finer than a microsecond are not supported")
    width = nanos // 1000
    ticks = e.astype("datetime64[us]").astype("int64")
    # Floor toward minus infinity for instants before the epoch too.
    floored = ticks - ((ticks % width) + width) % width
    return floored.astype("datetime64[us]").astype(dtype)
