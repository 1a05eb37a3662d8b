"""``tessera.dataframe``: code written for ``dask.dataframe`` runs with the import changed.

>>> import pandas as pd
>>> import tessera.dataframe as dd
>>> pdf = pd.DataFrame({"passenger_count": [1, 2, 1, 1], "tip_amount": [1.0, 0.0, 3.0, 2.0]})
>>> df = dd.from_pandas(pdf, npartitions=2)
>>> df[df.tip_amount > 0].groupby("passenger_count").tip_amount.mean().compute()
passenger_count
1    2.0
Name: tip_amount, dtype: float64

A :class:`DataFrame` is a lazy partitioned frame with pandas' methods, a
:class:`Series` a lazy column bound to its frame, a :class:`Scalar` a lazy value;
``compute()`` gives pandas objects with the index and the dtypes Dask gives (text as
``string[pyarrow]``). Each method runs in the tessera engine on the configured
dataframe backend; only the Python functions a user hands in (``map_partitions``,
``apply``) run on pandas partitions. ``df.to_tessera()`` is the engine frame, for the
expression API and its zero-copy Arrow results.

Where Dask's answer differs from pandas', this module gives pandas' (null groupby keys
dropped, exact ``describe()`` percentiles, results sorted by the keys). A frame read
from files has no index: ``compute()`` numbers its rows from 0, where Dask restarts the
numbering in each partition. The package README lists every difference.
"""

from ._frame import DataFrame
from ._groupby import DataFrameGroupBy, SeriesGroupBy
from ._index import Index
from ._io import compute, concat, from_dict, from_pandas, merge, read_csv, read_parquet, to_datetime
from ._scalar import Scalar
from ._series import Series
from ._window import Expanding, Rolling

__all__ = [
    "DataFrame",
    "DataFrameGroupBy",
    "Expanding",
    "Index",
    "Rolling",
    "Scalar",
    "Series",
    "SeriesGroupBy",
    "compute",
    "concat",
    "from_dict",
    "from_pandas",
    "merge",
    "read_csv",
    "read_parquet",
    "to_datetime",
]
