"""Between the engine's Arrow results and pandas objects, with the dtypes Dask gives.

Dask converts text to ``string[pyarrow]`` (``pandas.StringDtype("pyarrow")``), so the
same is done here; integers with nulls become ``float64`` with NaN, as pandas reads
them. An index is kept in the engine as ordinary columns (``__index_level_0__`` for an
unnamed one, the convention pyarrow writes), which become the pandas index again here.
"""

from __future__ import annotations

import numpy as np

INDEX = "__index_level_0__"


def _types_mapper(t):
    import pandas as pd
    import pyarrow as pa

    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pd.StringDtype("pyarrow")
    return None


def arrow_to_pandas(data):
    """``data`` (anything exporting ``__arrow_c_stream__``) as a ``pandas.DataFrame``
    with Dask's dtypes."""
    import pyarrow as pa

    table = data if isinstance(data, pa.Table) else pa.table(data)
    return table.to_pandas(types_mapper=_types_mapper)


def with_index(pdf, index: tuple, names: tuple, columns: list):
    """``pdf`` with the columns ``index`` made its index (named ``names``), keeping
    ``columns`` in order; a fresh ``RangeIndex`` where there is no index."""
    import pandas as pd

    if index:
        return indexed(pdf, index, names)[list(columns)]
    pdf.index = pd.RangeIndex(len(pdf))
    return pdf[list(columns)]


def indexed(pdf, index: tuple, names: tuple):
    """``pdf`` with the columns ``index`` made its index, named ``names``, in their
    own dtypes (``DataFrame.set_index`` widens an int32 column to int64)."""
    import pandas as pd

    arrays = [pdf[c].array for c in index]
    if len(arrays) == 1:
        idx = pd.Index(arrays[0], name=names[0])
    else:
        idx = pd.MultiIndex.from_arrays(arrays, names=list(names))
    out = pdf.drop(columns=list(index))
    out.index = idx
    return out


def pandas_to_arrow(pdf, keep_range: bool = False):
    """A pandas frame as a pyarrow table with its index as columns: an unnamed
    ``RangeIndex`` is left out unless ``keep_range``, any other index is kept as
    ``__index_level_N__`` columns. Returns the table, the index columns and the index
    names."""
    import pandas as pd
    import pyarrow as pa

    index: tuple = ()
    names: tuple = ()
    if isinstance(pdf.index, pd.RangeIndex) and pdf.index.name is None and not keep_range:
        pdf = pdf.reset_index(drop=True)
    else:
        names = tuple(pdf.index.names)
        index = tuple(
            INDEX if len(names) == 1 else f"__index_level_{i}__" for i in range(len(names))
        )
        pdf = pdf.copy(deep=False)
        pdf.index.names = list(index)
        pdf = pdf.reset_index()
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    return table, index, names


def python_literal(value):
    """A Python or NumPy value as an engine literal: timestamps become microseconds
    since the epoch cast back to a timestamp, the rest passes through."""
    import pandas as pd

    from .. import lit

    if isinstance(value, (pd.Timestamp, np.datetime64)) or hasattr(value, "isoformat"):
        ts = pd.Timestamp(value)
        if ts.tz is not None:
            ts = ts.tz_convert("UTC").tz_localize(None)
        micros = ts.value // 1000
        return lit(int(micros)).astype("datetime64[us]")
    if isinstance(value, np.generic):
        return value.item()
    return value


def engine_kind(type_name: str) -> str:
    """The NumPy kind pandas gives a column of the engine type ``type_name`` (as
    ``tessera.DataFrame.dtypes`` names it): ``i``, ``u``, ``f``, ``b``, ``M`` for
    instants, ``O`` for text and anything else. Read from the plan's schema, so asking
    runs nothing."""
    if type_name.startswith("Int"):
        return "i"
    if type_name.startswith("UInt"):
        return "u"
    if type_name.startswith(("Float", "Decimal")):
        return "f"
    if type_name == "Boolean":
        return "b"
    if type_name.startswith(("Timestamp", "Date")):
        return "M"
    return "O"
