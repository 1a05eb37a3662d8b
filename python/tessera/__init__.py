"""tessera: chunked n-d arrays and partitioned dataframes on pluggable backends.

The same program runs on the CPU, on NVIDIA GPUs (``cuda``), on sparse chunks, or on a
third party's backend loaded from a shared library; a config key or an environment
variable decides (``ts.config.set({"array.backend": "cuda"})``,
``TESSERA_ARRAY_BACKEND=cuda``). Arrays are shaped like ``dask.array``, dataframes like
``dask.dataframe`` with Polars-style expressions; everything is lazy until
``compute()``, which releases the GIL, stops on Ctrl-C, and hands back NumPy arrays and
Arrow data without copying them.

>>> import tessera as ts
>>> x = ts.random.RandomState(42).normal(10.0, 1.0, size=(2000, 2000), chunks=500)
>>> y = (x + 1)[::2, ::2].sum()
>>> round(float(y.compute()) / (11 * 1000 * 1000), 2)
1.0
"""

from __future__ import annotations

import numpy as _np

from . import _tessera, array_api, config, exceptions, linalg, random
from . import _numpy_compositions  # noqa: F401 - registers NumPy functions built from tessera's ops
from ._tessera import (
    Array,
    ComputedFrame,
    DataFrame,
    Expr,
    GroupBy,
    __version__,
    arange,
    broadcast_arrays,
    broadcast_to,
    col,
    compute,
    concatenate,
    empty,
    eye,
    from_array,
    from_npy,
    from_zarr,
    full,
    linspace,
    lit,
    map_blocks,
    ones,
    sort,
    argsort,
    take,
    take_along_axis,
    read_csv,
    read_parquet,
    stack,
    to_npy,
    to_zarr,
    when,
    zeros,
)
from ._tessera import from_arrow as _from_arrow
from ._tessera import where
from ._store import store
from ._statistics import median, nanmedian, nanpercentile, nanquantile, percentile, quantile
from .exceptions import *  # noqa: F401,F403 - the exception classes at top level


def isin(element, test_elements, assume_unique: bool = False, invert: bool = False) -> Array:
    """Whether each element of ``element`` equals some element of ``test_elements``, as
    ``dask.array.isin`` and ``np.isin``: ``-0.0`` equals ``0.0``, NaN equals nothing; the
    set is sorted chunk by chunk and searched per chunk of ``element``.

    >>> import tessera as ts
    >>> ts.isin(ts.arange(6, chunks=4), [4, 1, 9]).compute().tolist()
    [False, True, False, False, True, False]
    """
    del assume_unique  # it chooses NumPy's algorithm, not the answer
    x = element if isinstance(element, Array) else from_array(element)
    test = test_elements if isinstance(test_elements, Array) else from_array(test_elements, backend=x.backend)
    return _tessera.isin(x, test, invert)

__all__ = [
    "Array",
    "ComputedFrame",
    "DataFrame",
    "Expr",
    "GroupBy",
    "__version__",
    "arange",
    "argsort",
    "array_api",
    "backends",
    "broadcast_arrays",
    "broadcast_to",
    "col",
    "compute",
    "concatenate",
    "config",
    "cumprod",
    "cumsum",
    "empty",
    "eye",
    "from_array",
    "from_arrow",
    "from_npy",
    "from_pandas",
    "from_zarr",
    "isin",
    "full",
    "linalg",
    "linspace",
    "lit",
    "load_plugin",
    "map_blocks",
    "median",
    "nanargmax",
    "nanargmin",
    "nanmax",
    "nanmean",
    "nanmedian",
    "nanmin",
    "nanpercentile",
    "nanprod",
    "nanquantile",
    "nanstd",
    "nansum",
    "nanvar",
    "ones",
    "percentile",
    "quantile",
    "random",
    "sort",
    "read_csv",
    "read_parquet",
    "stack",
    "store",
    "take",
    "take_along_axis",
    "to_npy",
    "to_zarr",
    "when",
    "where",
    "zeros",
    *exceptions.__all__,
]


def backends() -> list[dict]:
    """Every registered backend, array and dataframe, with whether it can run here and,
    when not, why (``cuda`` without a driver says so). Plugins named by the ``plugins``
    key or ``TESSERA_PLUGINS`` are loaded first."""
    return [
        {"name": name, "kind": kind, "available": ok, "reason": why or None}
        for (name, kind, ok, why) in _tessera.backends()
    ]


def load_plugin(path: str) -> str:
    """Loads a backend plugin library (``.so``) and returns the backend's name, which
    ``array.backend``/``dataframe.backend`` or ``backend=`` then select."""
    if not hasattr(_tessera, "load_plugin"):
        raise UnsupportedError("this build of tessera has no plugin support (feature 'plugins')")
    return _tessera.load_plugin(path)


def _normalized_arrow(data):
    """``data`` as a pyarrow table whose strings are plain ``string`` (Polars and
    pandas export ``large_string`` and ``string_view``), when pyarrow is installed."""
    try:
        import pyarrow as pa
    except ImportError:
        return data
    table = data if isinstance(data, pa.Table) else pa.table(data)
    fields = []
    changed = False
    for f in table.schema:
        t = f.type
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            t, changed = pa.string(), True
        elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            t, changed = pa.binary(), True
        fields.append(pa.field(f.name, t, f.nullable))
    return table.cast(pa.schema(fields)) if changed else table


def from_arrow(data, npartitions: int | None = None, backend: str | None = None) -> DataFrame:
    """A dataframe from Arrow data: anything exporting ``__arrow_c_stream__`` — a
    ``pyarrow.Table``, a ``polars.DataFrame``, a DuckDB relation. One partition per
    record batch, or ``npartitions`` of about equal rows. Buffers are shared, not copied
    (large and view strings are cast to plain strings first)."""
    return _from_arrow(_normalized_arrow(data), npartitions=npartitions, backend=backend)


def from_pandas(df, npartitions: int | None = None, backend: str | None = None) -> DataFrame:
    """A dataframe from a ``pandas.DataFrame`` (its columns; the index is dropped unless
    it is named, as ``dask.dataframe.from_pandas(..., sort=False)`` keeps it), in
    ``npartitions`` partitions (default: one per 1,000,000 rows)."""
    import pyarrow as pa

    table = pa.Table.from_pandas(df, preserve_index=None if df.index.name else False)
    if npartitions is None:
        npartitions = max(1, -(-len(df) // 1_000_000))
    return from_arrow(table, npartitions=npartitions, backend=backend)


def cumsum(x: Array, axis: int | None = None, dtype=None) -> Array:
    """The running sum along ``axis`` (``None``: the flattened array), as
    ``dask.array.cumsum``: each chunk is scanned and the totals of the chunks before it
    are carried in, so nothing is gathered into one chunk.

    >>> import tessera as ts
    >>> ts.cumsum(ts.arange(5, chunks=2)).compute().tolist()
    [0, 1, 3, 6, 10]
    """
    return _tessera.cumulative(x, "sum", axis, dtype)


def cumprod(x: Array, axis: int | None = None, dtype=None) -> Array:
    """The running product along ``axis`` (``None``: the flattened array).

    >>> import tessera as ts
    >>> ts.cumprod(ts.arange(1, 6, chunks=2)).compute().tolist()
    [1, 2, 6, 24, 120]
    """
    return _tessera.cumulative(x, "prod", axis, dtype)


def nansum(x: Array, axis=None, keepdims: bool = False) -> Array:
    """The sum over ``axis`` with NaNs counted as zero (``dask.array.nansum``)."""
    return x.nansum(axis=axis, keepdims=keepdims)


def nanmean(x: Array, axis=None, keepdims: bool = False) -> Array:
    """The mean over ``axis`` of the elements that are not NaN (``dask.array.nanmean``)."""
    return x.nanmean(axis=axis, keepdims=keepdims)


def nanargmax(x: Array, axis=None, keepdims: bool = False) -> Array:
    """The index of the maximum over ``axis`` ignoring NaN (``dask.array.nanargmax``); a
    lane of NaN only raises ``ValueError`` when computed, as NumPy.

    >>> import numpy as np, tessera as ts
    >>> ts.nanargmax(ts.from_array(np.array([1.0, np.nan, 3.0]), chunks=2)).compute()
    np.int64(2)
    """
    return x.nanargmax(axis=axis, keepdims=keepdims)


def nanargmin(x: Array, axis=None, keepdims: bool = False) -> Array:
    """The index of the minimum over ``axis`` ignoring NaN (``dask.array.nanargmin``)."""
    return x.nanargmin(axis=axis, keepdims=keepdims)


def nanmax(x: Array, axis=None, keepdims: bool = False) -> Array:
    """The maximum over ``axis`` ignoring NaN; NaN where all are NaN (``dask.array.nanmax``)."""
    return x.nanmax(axis=axis, keepdims=keepdims)


def nanmin(x: Array, axis=None, keepdims: bool = False) -> Array:
    """The minimum over ``axis`` ignoring NaN; NaN where all are NaN (``dask.array.nanmin``)."""
    return x.nanmin(axis=axis, keepdims=keepdims)


def nanprod(x: Array, axis=None, keepdims: bool = False) -> Array:
    """The product over ``axis`` with NaNs counted as one (``dask.array.nanprod``)."""
    return x.nanprod(axis=axis, keepdims=keepdims)


def nanvar(x: Array, axis=None, ddof: int = 0, keepdims: bool = False) -> Array:
    """The variance over ``axis`` of the elements that are not NaN (``dask.array.nanvar``)."""
    return x.nanvar(axis=axis, ddof=ddof, keepdims=keepdims)


def nanstd(x: Array, axis=None, ddof: int = 0, keepdims: bool = False) -> Array:
    """The standard deviation over ``axis`` of the elements that are not NaN
    (``dask.array.nanstd``)."""
    return x.nanstd(axis=axis, ddof=ddof, keepdims=keepdims)


def _ufunc(np_ufunc):
    def apply(*args):
        if not any(isinstance(a, Array) for a in args):
            raise TypeError(f"tessera.{np_ufunc.__name__} takes tessera arrays; use numpy for NumPy data")
        return np_ufunc(*args)

    apply.__name__ = np_ufunc.__name__
    apply.__qualname__ = np_ufunc.__name__
    apply.__doc__ = (
        f"Elementwise ``{np_ufunc.__name__}``, lazily on the array's backend "
        f"(NumPy's ``np.{np_ufunc.__name__}`` on a tessera array does the same)."
    )
    return apply


#: The NumPy ufuncs tessera runs natively, each a top-level function of the same name.
_UFUNCS = (
    "sqrt", "exp", "log", "sin", "cos", "tanh", "absolute", "floor", "ceil", "trunc",
    "rint", "isnan", "isfinite", "negative", "logical_not", "maximum", "minimum", "power",
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
    "arctanh", "log1p", "expm1", "log2", "log10", "sign", "signbit", "arctan2", "hypot",
    "copysign", "logaddexp", "nextafter", "bitwise_and", "bitwise_or", "bitwise_xor",
    "left_shift", "right_shift", "invert",
)
for _name in _UFUNCS:
    globals()[_name] = _ufunc(getattr(_np, _name))
    __all__.append(_name)
abs = globals()["absolute"]  # noqa: A001 - NumPy's alias
round = globals()["rint"]  # noqa: A001 - half to even, as NumPy's round(decimals=0)
bitwise_not = globals()["invert"]  # NumPy's and dask.array's alias
_UFUNC_ALIASES = ("abs", "round", "bitwise_not")
__all__ += list(_UFUNC_ALIASES)
del _name

