"""``df.loc[...]``: rows by index labels, as pandas and Dask select them.

A label or a slice of labels becomes one engine filter on the index column; slices
include both ends, and on a datetime index a partial date (``"2024-01"``,
``"2024-01-02"``) stands for the whole period, as in pandas. A list of labels keeps the
rows whose index is among them. The second key, when given, picks columns.
"""

from __future__ import annotations

from ._convert import python_literal
from ._series import Series


class LocIndexer:
    """``df.loc`` (see the module docs).

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> pdf = pd.DataFrame({"x": range(6)}, index=pd.date_range("2024-01-01", periods=6, freq="12h"))
    >>> dd.from_pandas(pdf, npartitions=2).loc["2024-01-02"].compute().x.tolist()
    [2, 3]
    """

    def __init__(self, df):
        self._df = df

    def __getitem__(self, key):
        columns = None
        if isinstance(key, tuple):
            if len(key) != 2:
                raise IndexError("loc takes rows, or rows and columns")
            key, columns = key
        df = self._df
        if isinstance(key, Series):
            out = df[key]
        elif isinstance(key, slice) and key.start is None and key.stop is None and key.step is None:
            out = df
        else:
            out = df[self._condition(key)]
        if columns is None:
            return out
        if isinstance(columns, str):
            return out[columns]
        return out[list(columns)]

    def _condition(self, key):
        df = self._df
        if len(df._index) != 1:
            raise KeyError("loc needs a frame with a one-column index; set_index() first")
        index = df.index
        is_time = index._kind() == "M"
        if isinstance(key, slice):
            if key.step is not None:
                raise ValueError("loc: a slice with a step is not supported")
            cond = None
            if key.start is not None:
                lo = _period(key.start)[0] if is_time else key.start
                cond = index >= _value(lo)
            if key.stop is not None:
                hi = _period(key.stop)[1] if is_time else key.stop
                c = index <= _value(hi)
                cond = c if cond is None else cond & c
            return cond
        if isinstance(key, (list, tuple)) or hasattr(key, "tolist"):
            values = list(key.tolist() if hasattr(key, "tolist") else key)
            return index.isin(values)
        if is_time and isinstance(key, str):
            lo, hi = _period(key)
            return (index >= _value(lo)) & (index <= _value(hi))
        return index == _value(key)


def _value(v):
    return python_literal(v)


def _period(label):
    """The first and last instant a datetime label stands for: a partial date string
    covers its whole period (``"2024-01"`` is January), anything else is one instant."""
    import pandas as pd

    if isinstance(label, str):
        try:
            p = pd.Period(label)
        except (ValueError, TypeError):
            t = pd.Timestamp(label)
            return t, t
        if p.freqstr in ("ns",):
            t = pd.Timestamp(label)
            return t, t
        return p.start_time, p.end_time.floor("us")
    t = pd.Timestamp(label)
    return t, t
