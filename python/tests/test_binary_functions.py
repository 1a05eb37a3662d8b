"""The two-operand float functions (``arctan2``, ``hypot``, ``copysign``, ``logaddexp``,
``nextafter``) and the bitwise ops (``&``, ``|``, ``^``, ``<<``, ``>>``, ``~``) against NumPy
2: every pair of special values, every integer dtype with shift counts past the width,
result dtypes, the operators with Python scalars on either side, the NumPy ufunc and
Array API spellings, and NumPy's ``TypeError`` for the dtypes an op does not take."""

import itertools

import numpy as np
import pytest

import tessera as ts
import tessera.array_api as xp

from conftest import assert_same

FLOAT_BINARY = ["arctan2", "hypot", "copysign", "logaddexp", "nextafter"]
ARRAY_API_FLOAT = {"arctan2": "atan2"}

SPECIAL = [
    0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-300, 5e-324, -5e-324, 1e300, -1e300, 1.7e308,
    700.0, -700.0, 40.0, -40.0, np.inf, -np.inf, np.nan,
]

INTEGERS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def pairs(dtype):
    """Every ordered pair of the special values, as two arrays."""
    with np.errstate(over="ignore"):
        a, b = zip(*itertools.product(SPECIAL, SPECIAL))
        return np.array(a).astype(dtype), np.array(b).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_float_functions_match_numpy_on_every_pair_of_special_values(name, dtype):
    a, b = pairs(dtype)
    x = ts.from_array(a, chunks=37)
    y = ts.from_array(b, chunks=50)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    exact = name in ("copysign", "nextafter")
    rtol = 0 if exact else (4e-7 if dtype == np.float32 else 1e-15)
    got = getattr(ts, name)(x, y)
    assert isinstance(got, ts.Array)
    out = np.asarray(got.compute())
    assert out.dtype == want.dtype
    assert_same(out, want, rtol=rtol)
    # Zeros keep NumPy's sign (atan2(±0, ·), copysign, nextafter(0, -0)).
    zeros = want == 0
    np.testing.assert_array_equal(np.signbit(out[zeros]), np.signbit(want[zeros]))
    # The ufunc on tessera arrays stays lazy, and the Array API name is the same function.
    lazy = getattr(np, name)(x, y)
    assert isinstance(lazy, ts.Array)
    assert_same(lazy.compute(), want, rtol=rtol)
    api = getattr(xp, ARRAY_API_FLOAT.get(name, name))(x, y)
    assert_same(api.compute(), want, rtol=rtol)


@pytest.mark.parametrize("name", FLOAT_BINARY)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "uint64"])
def test_float_functions_of_integers_compute_in_numpys_float_dtype(name, dtype):
    a = np.array([0, 1, 2, 3, 100, 7, 1, 0]).astype(dtype)
    b = np.array([1, 0, 5, 3, 2, 1, 1, 0]).astype(dtype)
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, b)
    if want.dtype == np.float16:
        # tessera has no float16: the functions of 1- and 2-byte operands are float32.
        with np.errstate(all="ignore"):
            want = getattr(np, name)(a.astype(np.float32), b.astype(np.float32))
    got = getattr(ts, name)(ts.from_array(a, chunks=3), ts.from_array(b, chunks=5))
    assert_same(got.compute(), want, rtol=4e-7)


def test_float_functions_take_python_scalars_on_either_side():
    a = np.linspace(-3.0, 3.0, 13)
    x = ts.from_array(a, chunks=4)
    assert_same(ts.arctan2(x, -1.0).compute(), np.arctan2(a, -1.0), rtol=1e-15)
    assert_same(ts.arctan2(2.0, x).compute(), np.arctan2(2.0, a), rtol=1e-15)
    assert_same(np.hypot(x, 4).compute(), np.hypot(a, 4), rtol=1e-15)
    assert_same(np.copysign(1.0, x).compute(), np.copysign(1.0, a))
    assert_same(np.logaddexp(x, x).compute(), np.logaddexp(a, a), rtol=1e-15)
    assert_same(np.nextafter(x, np.inf).compute(), np.nextafter(a, np.inf))


def int_values(dtype):
    info = np.iinfo(dtype)
    vals = [0, 1, 2, 3, 5, 7, 100, info.max, info.max - 1, info.min, info.min + 1]
    if info.min < 0:
        vals += [-1, -2, -7, -100]
    return np.array(vals, dtype=dtype)


@pytest.mark.parametrize("dtype", INTEGERS + ["bool"])
@pytest.mark.parametrize(
    "name,op",
    [("bitwise_and", "__and__"), ("bitwise_or", "__or__"), ("bitwise_xor", "__xor__")],
)
def test_bitwise_logic_matches_numpy_for_every_integer_dtype_and_bool(dtype, name, op):
    if dtype == "bool":
        a, b = (np.array(v, dtype=bool) for v in zip(*itertools.product([False, True], repeat=2)))
    else:
        a, b = (np.array(v, dtype=dtype) for v in zip(*itertools.product(int_values(dtype), repeat=2)))
    x, y = ts.from_array(a, chunks=7), ts.from_array(b, chunks=9)
    want = getattr(np, name)(a, b)
    for got in [getattr(x, op)(y), getattr(np, name)(x, y), getattr(ts, name)(x, y),
                getattr(xp, name)(x, y)]:
        out = np.asarray(got.compute())
        assert out.dtype == want.dtype, name
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_shifts_match_numpy_for_counts_past_the_width(dtype):
    values = int_values(dtype)
    bits = np.iinfo(dtype).bits
    counts = np.arange(0, bits + 3) if np.iinfo(dtype).min == 0 else np.arange(-3, bits + 3)
    a, b = (np.array(v, dtype=dtype) for v in zip(*itertools.product(values, counts)))
    x, y = ts.from_array(a, chunks=16), ts.from_array(b, chunks=23)
    for name, op, api in [("left_shift", "__lshift__", "bitwise_left_shift"),
                          ("right_shift", "__rshift__", "bitwise_right_shift")]:
        want = getattr(np, name)(a, b)
        for got in [getattr(x, op)(y), getattr(np, name)(x, y), getattr(xp, api)(x, y)]:
            out = np.asarray(got.compute())
            assert out.dtype == want.dtype, name
            np.testing.assert_array_equal(out, want, err_msg=name)


@pytest.mark.parametrize("dtype", INTEGERS + ["bool"])
def test_invert_is_bitwise_on_integers_and_logical_on_bool(dtype):
    a = np.array([False, True, True]) if dtype == "bool" else int_values(dtype)
    x = ts.from_array(a, chunks=4)
    want = np.invert(a)
    for got in [~x, np.invert(x), ts.invert(x), ts.bitwise_not(x), xp.bitwise_invert(x)]:
        out = np.asarray(got.compute())
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out, want)


def test_operators_take_python_ints_on_either_side_as_numpy_does():
    a = np.arange(-8, 8, dtype=np.int16)
    x = ts.from_array(a, chunks=5)
    for got, want in [
        (x & 6, a & 6), (6 & x, 6 & a), (x | 1, a | 1), (1 | x, 1 | a), (x ^ -1, a ^ -1),
        (x << 2, a << 2), (1 << (x & 7), 1 << (a & 7)), (x >> 1, a >> 1), (100 >> (x & 3), 100 >> (a & 3)),
    ]:
        out = np.asarray(got.compute())
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out, want)
    # A bool mask combines with bools as logic and stays bool.
    m = ts.from_array(a > 0, chunks=5)
    np.testing.assert_array_equal(np.asarray((m & True).compute()), (a > 0) & True)
    np.testing.assert_array_equal(np.asarray((m ^ (x < 3)).compute()), (a > 0) ^ (a < 3))


@pytest.mark.parametrize("expr", [
    lambda x, i: x & i, lambda x, i: x | 1, lambda x, i: x ^ x, lambda x, i: x << 1,
    lambda x, i: i >> x, lambda x, i: ~x,
])
def test_bitwise_ops_on_floats_raise_numpys_type_error(expr):
    x = ts.from_array(np.array([1.5, 2.0]))
    i = ts.from_array(np.array([1, 2]))
    with pytest.raises(TypeError, match="integer"):
        expr(x, i)
    # The same class is tessera's invalid argument, for code that catches that.
    with pytest.raises(ts.InvalidArgumentError):
        expr(x, i)


def test_shifts_of_bools_shift_int8_as_numpy_does():
    a = np.array([True, False, True, True])
    b = np.array([True, True, False, True])
    m, n = ts.from_array(a, chunks=3), ts.from_array(b, chunks=2)
    for got, want in [(m << n, a << b), (np.right_shift(m, n), np.right_shift(a, b))]:
        out = np.asarray(got.compute())
        assert out.dtype == want.dtype == np.int8
        np.testing.assert_array_equal(out, want)
