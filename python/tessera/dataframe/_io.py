"""Building frames (``from_pandas``, ``from_dict``, ``read_csv``, ``read_parquet``)
with Dask's argument names, and the functions of several frames (``concat``,
``merge``, ``compute``)."""

from __future__ import annotations

from .. import _tessera, col
from ._convert import pandas_to_arrow
from ._frame import DataFrame
from ._scalar import Scalar
from ._series import Series


def from_pandas(data, npartitions: int | None = None, chunksize: int | None = None, sort: bool = True):
    """A frame (or Series) from a pandas one, in ``npartitions`` partitions (or of
    ``chunksize`` rows; default one), its index kept and, with ``sort``, the rows
    sorted by it so the divisions are known, as Dask's ``from_pandas``.

    >>> import pandas as pd
    >>> import tessera.dataframe as dd
    >>> df = dd.from_pandas(pd.DataFrame({"x": [3, 1, 2]}, index=[30, 10, 20]), npartitions=2)
    >>> df.x.compute().index.tolist()
    [10, 20, 30]
    """
    import pandas as pd

    from .. import from_arrow

    if isinstance(data, pd.Series):
        name = "0" if data.name is None else str(data.name)
        s = from_pandas(data.to_frame(name), npartitions=npartitions, chunksize=chunksize, sort=sort)[name]
        s.name = data.name
        return s
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"from_pandas takes a pandas DataFrame or Series, not {type(data).__name__}")
    if chunksize is not None:
        if npartitions is not None:
            raise ValueError("from_pandas: give npartitions or chunksize, not both")
        npartitions = max(1, -(-len(data) // int(chunksize)))
    npartitions = 1 if npartitions is None else int(npartitions)
    if npartitions < 1:
        raise ValueError(f"from_pandas: npartitions={npartitions} must be at least 1")
    if sort and not data.index.is_monotonic_increasing:
        data = data.sort_index(kind="stable")
    columns = [str(c) for c in data.columns]
    if len(set(columns)) != len(columns):
        raise ValueError(f"from_pandas: duplicate column names {columns}")
    data = data.set_axis(columns, axis=1)
    # The index is kept as a column, a RangeIndex too, so the rows a filter leaves keep
    # their labels.
    table, index, names = pandas_to_arrow(data, keep_range=True)
    import pyarrow as pa

    n = len(data)
    cuts = _cuts(data.index, npartitions) if n else [0]
    bounds = cuts[1:] + [n]
    batches = [
        b for lo, hi in zip(cuts, bounds) if hi > lo for b in table.slice(lo, hi - lo).combine_chunks().to_batches()
    ]
    frame = from_arrow(pa.Table.from_batches(batches, schema=table.schema) if batches else table)
    df = DataFrame(frame, index, names)
    if sort and len(index) == 1 and n > 0:
        labels = data.index
        df._divisions = tuple(labels[i] for i in cuts) + (labels[n - 1],)
    return df


def _cuts(labels, npartitions: int) -> list:
    """Where partitions start, as Dask cuts a sorted index: ``n // npartitions`` rows
    each, one more for the first ``n % npartitions``, and no run of equal labels cut
    in two."""
    n = len(labels)
    npartitions = min(npartitions, n)
    base, extra = divmod(n, npartitions)
    cuts, at = [], 0
    unique = labels.is_unique
    for i in range(npartitions):
        if at >= n:
            break
        if not unique and cuts:
            first = int(labels.searchsorted(labels[at], side="left"))
            at = first if first > cuts[-1] else int(labels.searchsorted(labels[at], side="right"))
            if at >= n:
                break
        cuts.append(at)
        at += base + (1 if i < extra else 0)
    return cuts


def from_dict(data: dict, npartitions: int = 1, orient: str = "columns", dtype=None, columns=None):
    """A frame from a dict of columns, as ``pandas.DataFrame(data)`` then
    ``from_pandas``."""
    import pandas as pd

    return from_pandas(pd.DataFrame.from_dict(data, orient=orient, dtype=dtype, columns=columns), npartitions=npartitions)


def read_csv(
    urlpath,
    blocksize="default",
    sep: str = ",",
    header="infer",
    names=None,
    dtype=None,
    usecols=None,
    parse_dates=None,
    na_values=None,
    **kwargs,
):
    """Reads CSV files lazily (a path, a glob, a list of them, or an object URL) with
    Dask's arguments: ``blocksize`` (bytes per partition, e.g. ``"64MB"``), ``sep``,
    ``header``, ``names``, ``dtype`` (one type or ``{column: type}``), ``usecols``,
    ``parse_dates`` (a list of columns) and ``na_values``. The frame has no index (a
    fresh ``RangeIndex`` on ``compute()``, where Dask restarts it in each partition)."""
    from ._series import _dtype_name

    unknown = set(kwargs) - {"assume_missing", "storage_options", "include_path_column", "engine"}
    if unknown:
        raise TypeError(f"read_csv: unsupported arguments {sorted(unknown)}")
    if isinstance(urlpath, (list, tuple)):
        frames = [read_csv(p, blocksize, sep, header, names, dtype, usecols, parse_dates, na_values) for p in urlpath]
        return concat(frames)
    types = None
    if dtype is not None:
        if not isinstance(dtype, dict):
            raise NotImplementedError("read_csv: give dtype as {column: type}")
        types = {k: _dtype_name(v) for k, v in dtype.items()}
    if parse_dates is True or isinstance(parse_dates, dict):
        raise NotImplementedError("read_csv: give parse_dates as a list of column names")
    frame = _tessera.read_csv(
        str(urlpath),
        sep=sep,
        header=None if header is None else "infer",
        names=list(names) if names is not None else None,
        dtype=types,
        parse_dates=list(parse_dates) if parse_dates else None,
        na_values=[na_values] if isinstance(na_values, str) else (list(na_values) if na_values else None),
        blocksize=_bytes(blocksize),
    )
    if usecols is not None:
        frame = frame.select(list(usecols))
    return DataFrame(frame)


def read_parquet(path, columns=None, filters=None, index=None, **kwargs):
    """Reads Parquet lazily (a file, a glob, a hive-partitioned directory or an object
    URL) with Dask's arguments: ``columns``, ``filters`` (pyarrow's DNF: ``[("x", ">",
    1)]`` or a list of such lists, pushed into the scan) and ``index`` (a column to
    use as the index). A pandas index written with the file is the index again."""
    if isinstance(path, (list, tuple)):
        return concat([read_parquet(p, columns, filters, index) for p in path])
    frame = _tessera.read_parquet(str(path))
    if filters:
        frame = frame.filter(_dnf(filters))
    cols = frame.columns
    stored = [c for c in cols if c.startswith("__index_level_")]
    if columns is not None:
        wanted = [columns] if isinstance(columns, str) else list(columns)
        keep = wanted + ([index] if isinstance(index, str) and index not in wanted else []) + stored
        frame = frame.select(keep)
    df = DataFrame(frame, tuple(stored), (None,) * len(stored))
    if index:
        df = df.set_index(index, sorted=False)
    return df


def _dnf(filters):
    """pyarrow's disjunctive normal form of filters as an engine expression."""
    groups = filters if filters and isinstance(filters[0], list) else [filters]
    out = None
    for group in groups:
        conj = None
        for name, op, value in group:
            c = col(name)
            if op in ("=", "=="):
                e = c == value
            elif op == "!=":
                e = c != value
            elif op == "<":
                e = c < value
            elif op == "<=":
                e = c <= value
            elif op == ">":
                e = c > value
            elif op == ">=":
                e = c >= value
            elif op == "in":
                e = c.isin(list(value))
            elif op == "not in":
                e = ~c.isin(list(value))
            else:
                raise ValueError(f"read_parquet: filter operator {op!r}; use =, !=, <, <=, >, >=, in, not in")
            conj = e if conj is None else conj & e
        out = conj if out is None else out | conj
    return out


def _bytes(size):
    """A block size in bytes from an int or a string like ``"64MB"``; ``None`` for
    the default."""
    if size in (None, "default"):
        return None
    if isinstance(size, int):
        return size
    units = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30, "b": 1}
    text = str(size).strip().lower().replace(" ", "")
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * units[unit])
    return int(text)


def concat(dfs, axis=0, join: str = "outer", interleave_partitions: bool = False, ignore_index: bool = False):
    """The rows of ``dfs`` one after another (their partitions in order), as
    ``dd.concat``; columns a frame lacks are missing there (``join="outer"``) or left
    out (``"inner"``)."""
    from .. import lit

    if axis not in (0, "index"):
        raise NotImplementedError("concat: only axis=0 is supported")
    dfs = [d.to_frame() if isinstance(d, Series) else d for d in dfs]
    if not dfs:
        raise ValueError("concat: no frames to concatenate")
    index = dfs[0]._index
    if any(bool(d._index) != bool(index) for d in dfs):
        raise ValueError("concat: some frames have an index and some do not; reset_index() or set_index() them alike")
    columns = list(dfs[0]._visible())
    for d in dfs[1:]:
        if join == "inner":
            columns = [c for c in columns if c in d._visible()]
        else:
            columns += [c for c in d._visible() if c not in columns]
    parts = []
    for d in dfs:
        frame = d._frame
        if len(d._index) == len(index):
            frame = frame.rename({a: b for a, b in zip(d._index, index) if a != b}) if d._index != index else frame
        for c in columns:
            if c not in d._visible():
                frame = frame.with_column(c, lit(None).astype(_engine_type(dfs, c)))
        parts.append(frame.select(list(index) + columns))
    out = DataFrame(_tessera.concat_frames(parts), index, dfs[0]._index_names)
    return out.reset_index(drop=True) if ignore_index else out


def _engine_type(dfs, c):
    from ._series import _dtype_name

    for d in dfs:
        if c in d._visible():
            t = d.dtypes[c]
            return "float64" if t.kind in "iub" else _dtype_name(t)
    return "float64"


def merge(left, right, **kwargs):
    """``left.merge(right, ...)``."""
    return left.merge(right, **kwargs)


def compute(*args, **kwargs):
    """The values of every lazy argument (frames, Series, scalars), as a tuple."""
    return tuple(a.compute() if isinstance(a, (DataFrame, Series, Scalar)) else a for a in args)


def to_datetime(arg, format=None, unit=None, **kwargs):
    """Text or numbers as datetimes: a Series cast in the engine (``unit`` for epoch
    numbers: ``"s"``, ``"ms"``, ``"us"``); anything else through pandas."""
    import pandas as pd

    if not isinstance(arg, Series):
        return pd.to_datetime(arg, format=format, unit=unit, **kwargs)
    if unit is not None:
        scale = {"s": 1_000_000, "ms": 1_000, "us": 1}.get(unit)
        if scale is None:
            raise ValueError(f"to_datetime: unit={unit!r}; use 's', 'ms' or 'us'")
        return arg._derive((arg._expr.astype("int64") * scale).astype("datetime64[us]"))
    if format is not None:
        raise NotImplementedError("to_datetime(format=) is not supported; ISO 8601 text is read as it is")
    return arg.astype("datetime64[us]")


