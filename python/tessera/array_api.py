"""tessera's namespace of the Python Array API standard (2024.12).

``x.__array_namespace__()`` returns this module, so code written against the standard —
``xp = array_namespace(x)`` in scikit-learn, SciPy, xarray — runs on tessera's lazy
chunked arrays unchanged. Dtypes are the NumPy dtype objects (``xp.float64 ==
np.dtype("float64")``, as ``x.dtype`` gives them); devices are ``"cpu"`` and
``"cuda:N"``.

What the namespace does not define yet (complex dtypes, set functions, ``nonzero``, the
``fft`` extension, ``linalg`` beyond ``matmul``, data-dependent shapes) is absent rather
than approximated: ``hasattr(xp, name)`` says whether a function is there, and
``__array_namespace_info__().capabilities()`` declares ``"data-dependent shapes":
False``.

>>> import tessera as ts
>>> x = ts.arange(6, chunks=4)
>>> xp = x.__array_namespace__()
>>> xp.__array_api_version__
'2024.12'
>>> y = xp.cumulative_sum(xp.astype(x, xp.float64), include_initial=True)
>>> y.compute().tolist()
[0.0, 0.0, 1.0, 3.0, 6.0, 10.0, 15.0]
>>> xp.__array_namespace_info__().default_dtypes()["indexing"]
dtype('int64')
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
import types as _types

import numpy as _np

from . import _numpy_functions as _nf
from . import _tessera
from ._tessera import Array

__array_api_version__ = "2024.12"

# Data types: NumPy's dtype objects, which `Array.dtype` returns.
bool = _np.dtype("bool")  # noqa: A001 - the standard's name
int8 = _np.dtype("int8")
int16 = _np.dtype("int16")
int32 = _np.dtype("int32")
int64 = _np.dtype("int64")
uint8 = _np.dtype("uint8")
uint16 = _np.dtype("uint16")
uint32 = _np.dtype("uint32")
uint64 = _np.dtype("uint64")
float32 = _np.dtype("float32")
float64 = _np.dtype("float64")

_SIGNED = (int8, int16, int32, int64)
_UNSIGNED = (uint8, uint16, uint32, uint64)
_FLOATS = (float32, float64)
_ALL = (bool,) + _SIGNED + _UNSIGNED + _FLOATS

# Constants.
e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None


def _backend(device):
    """The backend a ``device=`` argument selects (``None``: the configured default)."""
    if device is None:
        return None
    name = str(device)
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        return "cuda"
    raise ValueError(f"unknown device {device!r}: tessera's devices are 'cpu' and 'cuda:N'")


class _Info:
    """What ``__array_namespace_info__()`` returns: the namespace's capabilities, devices
    and dtypes."""

    __module__ = "tessera.array_api"

    def capabilities(self):
        """The optional features: boolean indexing and data-dependent shapes are not
        supported yet; arrays have at most 64 dimensions."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self):
        """The device of arrays created without ``device=`` under the default backend."""
        return _device_of_default()

    def devices(self):
        """Every device a backend can run on here: ``cpu``, and ``cuda:0`` when the CUDA
        backend is available."""
        out = ["cpu"]
        for name, kind, ok, _why in _tessera.backends():
            if name == "cuda" and kind == "array" and ok:
                out.append("cuda:0")
        return out

    def default_dtypes(self, *, device=None):
        """The default dtypes: ``float64`` for real floats, ``int64`` for integers and
        indexing (complex dtypes are not supported yet)."""
        _backend(device)
        return {"real floating": float64, "integral": int64, "indexing": int64}

    def dtypes(self, *, device=None, kind=None):
        """The supported dtypes by name, all or those of ``kind`` (as ``isdtype`` takes)."""
        _backend(device)
        found = _ALL if kind is None else tuple(d for d in _ALL if isdtype(d, kind))
        return {d.name: d for d in found}


def _device_of_default():
    return zeros((), dtype=bool).device


def __array_namespace_info__():
    """The namespace's inspection object (``capabilities()``, ``default_device()``,
    ``devices()``, ``default_dtypes()``, ``dtypes()``)."""
    return _Info()


# Data type functions.
_KINDS = {
    "bool": (bool,),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integral": _SIGNED + _UNSIGNED,
    "real floating": _FLOATS,
    "complex floating": (),
    "numeric": _SIGNED + _UNSIGNED + _FLOATS,
}


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name (``"integral"``,
    ``"real floating"``, ...) or a tuple of them."""
    if isinstance(kind, tuple):
        return _builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r}; the kinds are {sorted(_KINDS)}")
        return _np.dtype(dtype) in _KINDS[kind]
    return _np.dtype(dtype) == _np.dtype(kind)


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else _np.dtype(x)


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives ``arrays_and_dtypes`` (arrays, dtypes and
    Python scalars, which are weak)."""
    dtypes = [_dtype_of(a) for a in arrays_and_dtypes if not isinstance(a, (_builtins.bool, int, float, complex))]
    scalars = [a for a in arrays_and_dtypes if isinstance(a, (_builtins.bool, int, float, complex))]
    if not dtypes:
        raise TypeError("result_type needs at least one array or dtype: Python scalars alone have no "
                        "dtype under the Array API")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote(out, d)
    for s in scalars:
        out = _np.result_type(out, s) if not isinstance(s, _builtins.bool) else out
    return out


def _promote(a, b):
    a, b = _np.dtype(a), _np.dtype(b)
    if a == b:
        return a
    kinds = [k for k in ("bool", "signed integer", "unsigned integer", "real floating") if isdtype(a, k) or isdtype(b, k)]
    if "bool" in kinds and len(kinds) > 1:
        raise TypeError(f"the Array API does not promote {a} with {b}")
    if "real floating" in kinds and len(kinds) > 1:
        raise TypeError(f"the Array API does not promote {a} with {b} (no mixed-kind promotion)")
    if {a.kind, b.kind} == {"i", "u"} and (a if a.kind == "u" else b).itemsize == 8:
        # A signed type wider than uint64 does not exist.
        raise TypeError(f"the Array API does not promote {a} with {b}")
    return _np.promote_types(a, b)


def can_cast(from_, to, /):
    """Whether ``from_`` (a dtype or an array) casts to ``to`` under the standard's
    promotion rules."""
    try:
        return _promote(_dtype_of(from_), to) == _np.dtype(to)
    except TypeError:
        return False


def finfo(type, /):  # noqa: A002 - the standard's name
    """Machine limits of a float dtype (``bits``, ``eps``, ``max``, ``min``,
    ``smallest_normal``, ``dtype``)."""
    return _np.finfo(_dtype_of(type))


def iinfo(type, /):  # noqa: A002 - the standard's name
    """Machine limits of an integer dtype (``bits``, ``max``, ``min``, ``dtype``)."""
    return _np.iinfo(_dtype_of(type))


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` as ``dtype`` (lazily; ``copy`` has no meaning for immutable lazy arrays)."""
    x = asarray(x)
    if device is not None:
        x = x.to_device(device)
    return x.astype(dtype)


# Creation functions.
def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """``obj`` as a tessera array: an array as it is (cast to ``dtype``), anything NumPy
    converts (nested sequences, scalars, buffers) copied into one."""
    if isinstance(obj, Array):
        out = obj if dtype is None else obj.astype(dtype)
        return out if device is None else out.to_device(device)
    if copy is False:
        raise ValueError("asarray(copy=False) of data that is not a tessera array would need a copy")
    return _tessera.from_array(_np.asarray(obj, dtype=dtype), backend=_backend(device))


def from_dlpack(x, /, *, device=None, copy=None):
    """A tessera array of a DLPack producer's data (copied into tessera's chunks)."""
    return _tessera.from_array(_np.from_dlpack(x), backend=_backend(device))


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in ``[start, stop)``."""
    return _tessera.arange(start, stop, step, dtype=dtype, backend=_backend(device))


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def empty(shape, *, dtype=None, device=None):
    """An array of ``shape`` (zeros: tessera never hands out uninitialised memory)."""
    return _tessera.empty(_shape(shape), dtype=dtype, backend=_backend(device))


def zeros(shape, *, dtype=None, device=None):
    """Zeros of ``shape``."""
    return _tessera.zeros(_shape(shape), dtype=dtype, backend=_backend(device))


def ones(shape, *, dtype=None, device=None):
    """Ones of ``shape``."""
    return _tessera.ones(_shape(shape), dtype=dtype, backend=_backend(device))


def full(shape, fill_value, *, dtype=None, device=None):
    """``fill_value`` everywhere in ``shape``."""
    return _tessera.full(_shape(shape), fill_value, dtype=dtype, backend=_backend(device))


def empty_like(x, /, *, dtype=None, device=None):
    """An array shaped and chunked like ``x`` (zeros)."""
    return zeros_like(x, dtype=dtype, device=device)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros shaped and chunked like ``x``."""
    return full_like(x, 0, dtype=dtype, device=device)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones shaped and chunked like ``x``."""
    return full_like(x, 1, dtype=dtype, device=device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` shaped and chunked like ``x``."""
    out = _tessera.full(
        tuple(x.shape), fill_value, dtype=x.dtype if dtype is None else dtype, chunks=x.chunks, backend=x.backend
    )
    return out if device is None else out.to_device(device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """Ones on the ``k``-th diagonal of an ``n_rows × n_cols`` matrix."""
    return _tessera.eye(n_rows, M=n_cols, k=k, dtype=dtype, backend=_backend(device))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    return _tessera.linspace(start, stop, num, endpoint=endpoint, dtype=dtype, backend=_backend(device))


def _tri(x, k, lower):
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"{'tril' if lower else 'triu'} needs at least 2 dimensions; the array has {x.ndim}")
    n, m = x.shape[-2], x.shape[-1]
    rows = _tessera.arange(n, dtype=int64, chunks=(x.chunks[-2],), backend=x.backend)[:, None]
    cols = _tessera.arange(m, dtype=int64, chunks=(x.chunks[-1],), backend=x.backend)[None, :]
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    return _tessera.where(keep, x, zeros_like(x))


def tril(x, /, *, k=0):
    """``x`` with the elements above the ``k``-th diagonal zeroed (last two axes)."""
    return _tri(x, k, True)


def triu(x, /, *, k=0):
    """``x`` with the elements below the ``k``-th diagonal zeroed (last two axes)."""
    return _tri(x, k, False)


# Element-wise functions the engine runs natively, and exact compositions of them.
def _elementwise(np_ufunc, doc):
    def f(*args):
        like = _nf._first_array(args)
        if like is None:
            raise TypeError(f"{np_ufunc.__name__} takes tessera arrays")
        return np_ufunc(*args)

    f.__doc__ = doc
    return f


abs = _elementwise(_np.absolute, "The absolute value.")  # noqa: A001
add = _elementwise(_np.add, "``x1 + x2``.")
ceil = _elementwise(_np.ceil, "The ceiling.")
cos = _elementwise(_np.cos, "The cosine.")
divide = _elementwise(_np.divide, "``x1 / x2``.")
equal = _elementwise(_np.equal, "``x1 == x2``.")
exp = _elementwise(_np.exp, "The exponential.")
floor = _elementwise(_np.floor, "The floor.")
floor_divide = _elementwise(_np.floor_divide, "``x1 // x2``.")
greater = _elementwise(_np.greater, "``x1 > x2``.")
greater_equal = _elementwise(_np.greater_equal, "``x1 >= x2``.")
isfinite = _elementwise(_np.isfinite, "True where finite.")
isnan = _elementwise(_np.isnan, "True where NaN.")
less = _elementwise(_np.less, "``x1 < x2``.")
less_equal = _elementwise(_np.less_equal, "``x1 <= x2``.")
log = _elementwise(_np.log, "The natural logarithm.")
logical_and = _elementwise(_np.logical_and, "Logical and.")
logical_not = _elementwise(_np.logical_not, "Logical not.")
logical_or = _elementwise(_np.logical_or, "Logical or.")
maximum = _elementwise(_np.maximum, "The larger of two (NaN propagates).")
minimum = _elementwise(_np.minimum, "The smaller of two (NaN propagates).")
multiply = _elementwise(_np.multiply, "``x1 * x2``.")
negative = _elementwise(_np.negative, "``-x``.")
not_equal = _elementwise(_np.not_equal, "``x1 != x2``.")
pow = _elementwise(_np.power, "``x1 ** x2``.")  # noqa: A001
remainder = _elementwise(_np.remainder, "``x1 % x2`` (the sign of the divisor).")
round = _elementwise(_np.rint, "Rounded half to even.")  # noqa: A001
sin = _elementwise(_np.sin, "The sine.")
sqrt = _elementwise(_np.sqrt, "The square root.")
subtract = _elementwise(_np.subtract, "``x1 - x2``.")
tanh = _elementwise(_np.tanh, "The hyperbolic tangent.")
trunc = _elementwise(_np.trunc, "Rounded toward zero.")
tan = _elementwise(_np.tan, "The tangent.")
asin = _elementwise(_np.arcsin, "The inverse sine.")
acos = _elementwise(_np.arccos, "The inverse cosine.")
atan = _elementwise(_np.arctan, "The inverse tangent.")
sinh = _elementwise(_np.sinh, "The hyperbolic sine.")
cosh = _elementwise(_np.cosh, "The hyperbolic cosine.")
asinh = _elementwise(_np.arcsinh, "The inverse hyperbolic sine.")
acosh = _elementwise(_np.arccosh, "The inverse hyperbolic cosine.")
atanh = _elementwise(_np.arctanh, "The inverse hyperbolic tangent.")
log1p = _elementwise(_np.log1p, "``log(1 + x)``, accurate near zero.")
expm1 = _elementwise(_np.expm1, "``exp(x) - 1``, accurate near zero.")
log2 = _elementwise(_np.log2, "The base-2 logarithm.")
log10 = _elementwise(_np.log10, "The base-10 logarithm.")
sign = _elementwise(_np.sign, "-1, 0 or 1 (NaN stays NaN).")
signbit = _elementwise(_np.signbit, "True where the sign bit is set (``-0.0`` included).")
atan2 = _elementwise(_np.arctan2, "The angle of the point ``(x2, x1)``, by quadrant.")
hypot = _elementwise(_np.hypot, "``sqrt(x1**2 + x2**2)`` without overflow.")
copysign = _elementwise(_np.copysign, "The magnitude of ``x1`` with the sign of ``x2``.")
logaddexp = _elementwise(_np.logaddexp, "``log(exp(x1) + exp(x2))`` without overflow.")
nextafter = _elementwise(_np.nextafter, "The next float after ``x1`` towards ``x2``.")
bitwise_and = _elementwise(_np.bitwise_and, "``x1 & x2`` (integers and bool).")
bitwise_or = _elementwise(_np.bitwise_or, "``x1 | x2`` (integers and bool).")
bitwise_xor = _elementwise(_np.bitwise_xor, "``x1 ^ x2`` (integers and bool).")
bitwise_left_shift = _elementwise(_np.left_shift, "``x1 << x2`` (integers).")
bitwise_right_shift = _elementwise(_np.right_shift, "``x1 >> x2`` (integers, arithmetic).")
bitwise_invert = _elementwise(_np.invert, "``~x`` (integers and bool).")


def reciprocal(x, /):
    """``1 / x`` in ``x``'s floating-point dtype (integers give float64).

    >>> import tessera.array_api as xp
    >>> xp.reciprocal(xp.asarray([2.0, 4.0])).compute().tolist()
    [0.5, 0.25]
    """
    return 1.0 / x


def positive(x, /):
    """``+x``."""
    return +asarray(x)


def square(x, /):
    """``x * x``."""
    x = asarray(x)
    return x * x


def isinf(x, /):
    """True where ``x`` is positive or negative infinity."""
    x = asarray(x)
    if not isdtype(x.dtype, "real floating"):
        return zeros_like(x, dtype=bool)
    return logical_not(isfinite(x)) & logical_not(isnan(x))


def logical_xor(x1, x2, /):
    """Logical exclusive or."""
    like = _nf._first_array((x1, x2))
    a, b = _nf._array(x1, like).astype(bool), _nf._array(x2, like).astype(bool)
    return a != b


def clip(x, /, min=None, max=None):  # noqa: A002 - the standard's names
    """``x`` limited to ``[min, max]`` (either may be ``None``)."""
    return asarray(x).clip(min, max)


# Manipulation.
def concat(arrays, /, *, axis=0):
    """Arrays joined along ``axis`` (``None``: flattened first)."""
    return _nf._concatenate(list(arrays), axis=axis)


def stack(arrays, /, *, axis=0):
    """Arrays joined along a new ``axis``."""
    return _tessera.stack(list(arrays), axis=axis)


def broadcast_to(x, /, shape):
    """``x`` broadcast to ``shape`` (no copy: a broadcast axis reads the same block)."""
    return _tessera.broadcast_to(asarray(x), tuple(shape))


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other to one shape."""
    return _tessera.broadcast_arrays(*[asarray(a) for a in arrays])


def expand_dims(x, /, *, axis=0):
    """``x`` with a new axis of length 1 at ``axis``."""
    return _nf._expand_dims(x, axis)


def squeeze(x, /, axis):
    """``x`` without the length-1 axes ``axis``."""
    x = asarray(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise _np.exceptions.AxisError(a, x.ndim)
        if x.shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of length {x.shape[a]}")
    return x.squeeze(axes)


def permute_dims(x, /, axes):
    """``x`` with its axes in the order ``axes``."""
    return asarray(x).transpose(tuple(axes))


def matrix_transpose(x, /):
    """The transpose of the last two axes."""
    return asarray(x).mT


def moveaxis(x, source, destination, /):
    """``x`` with the axes ``source`` moved to ``destination``."""
    return _nf._moveaxis(x, source, destination)


def reshape(x, /, shape, *, copy=None):
    """``x`` with a new ``shape`` (C order; one ``-1`` inferred)."""
    if copy is False:
        raise ValueError("reshape(copy=False) cannot promise a view of a lazy array")
    return asarray(x).reshape(tuple(shape))


def flip(x, /, *, axis=None):
    """``x`` with the order of the elements along ``axis`` (all axes when ``None``)
    reversed."""
    x = asarray(x)
    axes = range(x.ndim) if axis is None else ((axis,) if isinstance(axis, int) else axis)
    index = [slice(None)] * x.ndim
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise _np.exceptions.AxisError(a, x.ndim)
        index[a] = slice(None, None, -1)
    return x[tuple(index)]


def unstack(x, /, *, axis=0):
    """The sub-arrays of ``x`` along ``axis``, as a tuple."""
    x = asarray(x)
    if not -x.ndim <= axis < x.ndim:
        raise _np.exceptions.AxisError(axis, x.ndim)
    axis %= x.ndim
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(x.shape[axis]))


# Statistical functions.
def _axis(axis):
    return axis if axis is None or isinstance(axis, int) else tuple(axis)


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    """The maximum (NaN propagates)."""
    return asarray(x).max(axis=_axis(axis), keepdims=keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    """The minimum (NaN propagates)."""
    return asarray(x).min(axis=_axis(axis), keepdims=keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    """The arithmetic mean."""
    return asarray(x).mean(axis=_axis(axis), keepdims=keepdims)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    """The sum, in ``dtype`` (default: ``int64`` for bool and signed integers,
    ``uint64`` for unsigned, the float dtype for floats)."""
    # The engine's sum already accumulates in these dtypes.
    return _nf._cast(asarray(x), dtype).sum(axis=_axis(axis), keepdims=keepdims)


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    """The product, in ``dtype`` (defaults as ``sum``)."""
    return _nf._cast(asarray(x), dtype).prod(axis=_axis(axis), keepdims=keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    """The variance with ``correction`` degrees of freedom removed."""
    return asarray(x).var(axis=_axis(axis), ddof=int(correction), keepdims=keepdims)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    """The standard deviation with ``correction`` degrees of freedom removed."""
    return asarray(x).std(axis=_axis(axis), ddof=int(correction), keepdims=keepdims)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """The running sum along ``axis`` (needed when ``x`` has more than one dimension),
    chunk by chunk with carries; ``include_initial`` starts with 0."""
    return _nf._cumulative_sum(asarray(x), axis=axis, dtype=dtype, include_initial=include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The running product along ``axis``; ``include_initial`` starts with 1."""
    return _nf._cumulative_prod(asarray(x), axis=axis, dtype=dtype, include_initial=include_initial)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th forward difference along ``axis``."""
    x = asarray(x)
    if not -x.ndim <= axis < x.ndim:
        raise _np.exceptions.AxisError(axis, x.ndim)
    axis %= x.ndim
    parts = [p for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat([asarray(p) for p in parts], axis=axis)
    lead = (slice(None),) * axis
    for _ in range(n):
        x = x[lead + (slice(1, None),)] - x[lead + (slice(None, -1),)]
    return x


# Sorting.
def sort(x, /, *, axis=-1, descending=False, stable=True):
    """``x`` sorted along ``axis`` (NaN last ascending, first descending), chunk by chunk:
    each chunk sorted, then each output chunk merged from the sorted chunks of its lane.
    Every tessera sort is stable."""
    return _tessera.sort(asarray(x), axis, descending)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """The ``int64`` indices that sort ``x`` along ``axis``; equal elements keep their
    order (descending too, as the standard defines it). Each chunk is argsorted, then
    each output chunk merged from the sorted chunks of its lane with their indices.

    >>> import tessera.array_api as xp
    >>> xp.argsort(xp.asarray([3.0, 1.0, 3.0, 2.0]), descending=True).compute().tolist()
    [0, 2, 3, 1]
    """
    return _tessera.argsort(asarray(x), axis, descending)


# Indexing.
def take(x, indices, /, *, axis=None):
    """The elements of ``x`` at the 1-d integer array ``indices`` along ``axis`` (which
    may be omitted for a 1-d ``x``); negative indices count from the end.

    >>> import tessera.array_api as xp
    >>> x = xp.asarray([[1, 2], [3, 4], [5, 6]])
    >>> xp.take(x, xp.asarray([2, 0]), axis=0).compute().tolist()
    [[5, 6], [1, 2]]
    """
    x = asarray(x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis must be given for an array of {x.ndim} dimensions")
        axis = 0
    return _tessera.take(x, indices, axis)


def take_along_axis(x, indices, /, *, axis=-1):
    """For each element of ``indices`` (of ``x``'s rank), the element of ``x`` at that
    position along ``axis`` in the same lane; the other axes broadcast.

    >>> import tessera.array_api as xp
    >>> x = xp.asarray([[3, 1, 2], [9, 7, 8]])
    >>> xp.take_along_axis(x, xp.argsort(x, axis=1), axis=1).compute().tolist()
    [[1, 2, 3], [7, 8, 9]]
    """
    return _tessera.take_along_axis(asarray(x), indices, axis)


# Searching and utility functions.
def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """For each element of ``x2``, the index in the sorted 1-d ``x1`` where inserting it
    keeps the order (``side="left"``: before equal elements); every chunk of ``x1`` is
    searched per chunk of ``x2``, nothing concatenated.

    >>> import tessera.array_api as xp
    >>> xp.searchsorted(xp.asarray([1.0, 2.0, 2.0, 5.0]), xp.asarray([2.0, 6.0])).compute().tolist()
    [1, 4]
    """
    x1 = asarray(x1)
    if sorter is not None:
        x1 = take(x1, sorter)
    return _tessera.searchsorted(x1, asarray(x2), side)


def argmax(x, /, *, axis=None, keepdims=False):
    """The index of the first maximum."""
    return asarray(x).argmax(axis=axis, keepdims=keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    """The index of the first minimum."""
    return asarray(x).argmin(axis=axis, keepdims=keepdims)


def where(condition, x1, x2, /):
    """``x1`` where ``condition`` is true, else ``x2``."""
    return _tessera.where(asarray(condition), x1, x2)


def _no_out(out, what):
    # NumPy-written callers (xarray's ``np.any(data_array)``) pass ``out=None`` on.
    if out is not None:
        raise TypeError(f"{what}(out=...) is not supported: tessera arrays are immutable plans")


def all(x, /, *, axis=None, keepdims=False, out=None):  # noqa: A001
    """True where every element along ``axis`` is nonzero."""
    _no_out(out, "all")
    return asarray(x).all(axis=_axis(axis), keepdims=keepdims)


def any(x, /, *, axis=None, keepdims=False, out=None):  # noqa: A001
    """True where any element along ``axis`` is nonzero."""
    _no_out(out, "any")
    return asarray(x).any(axis=_axis(axis), keepdims=keepdims)


# Linear algebra in the main namespace.
def matmul(x1, x2, /):
    """The matrix product of two 2-d arrays."""
    return asarray(x1) @ asarray(x2)


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along ``axis`` (broadcasting the others)."""
    return sum(asarray(x1) * asarray(x2), axis=axis)


# Beyond the standard: NumPy's names that libraries written for NumPy and CuPy call through
# an array's namespace (xarray's ``duck_array_ops`` asks it for ``einsum``, ``pad``,
# ``transpose``, ``quantile``, ``concatenate``, ``isin``), each NumPy's function on tessera
# arrays, so the answers and signatures are NumPy's and the result stays lazy.
def _numpy_name(np_func):
    return _nf.numpy_function(
        np_func, f"``numpy.{np_func.__name__}`` on tessera arrays (NumPy's signature, a lazy result).")


einsum = _numpy_name(_np.einsum)
tensordot = _numpy_name(_np.tensordot)
pad = _numpy_name(_np.pad)
transpose = _numpy_name(_np.transpose)
quantile = _numpy_name(_np.quantile)
concatenate = _numpy_name(_np.concatenate)
isin = _numpy_name(_np.isin)
gradient = _numpy_name(_np.gradient)
bool_ = bool
# ``xp.lib.stride_tricks.sliding_window_view``: xarray's rolling windows.
lib = _types.SimpleNamespace(
    stride_tricks=_types.SimpleNamespace(
        sliding_window_view=_numpy_name(_np.lib.stride_tricks.sliding_window_view)))

__all__ = [
    name
    for name in dir()
    if not name.startswith("_") and name not in ("annotations", "Array")
] + ["__array_api_version__", "__array_namespace_info__"]
