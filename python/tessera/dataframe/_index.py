"""``Index``: the lazy index of a frame or Series (``df.index``), a Series of the
index values whose ``compute()`` gives a ``pandas.Index``."""

from __future__ import annotations

from ._series import Series


class Index(Series):
    """The index values (see the module docs).

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> df = dd.from_pandas(pd.DataFrame({"k": [3, 1, 2], "x": [1, 2, 3]}), npartitions=2)
    >>> df.set_index("k").index.compute().tolist()
    [1, 2, 3]
    """

    def compute(self):
        """The values as a ``pandas.Index``."""
        import pandas as pd

        s = Series.compute(self)
        return pd.Index(s.to_numpy() if s.dtype.kind in "iufbM" else s.array, name=self._name)

    def min(self, skipna: bool = True):
        """The smallest label."""
        return Series.min(self)

    def max(self, skipna: bool = True):
        """The largest label."""
        return Series.max(self)
