//! Values as the oracle holds them, and the scalar definitions of every elementwise op.
//!
//! A value is a `bool`, an integer in `i128` (wide enough that no op on two 64-bit
//! operands overflows before it is wrapped to its dtype on purpose) or a float in `f64`
//! (a `float32` value is held exactly and rounded back after each op). Each function here
//! is the op's definition written out — NumPy's where the protocol follows NumPy — and
//! none of it calls the protocol's `apply_*` functions or `Scalar::cast`, which the
//! executors use.

use tessera_core::program::{BinaryOp, UnaryOp};
use tessera_core::{DType, HostArray, Scalar};

/// One value: bool, integer or float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum V {
    /// A bool.
    B(bool),
    /// An integer of any width, signed or not.
    I(i128),
    /// A float (`float32` values exactly).
    F(f64),
}

impl V {
    /// The value of a scalar.
    pub fn of(s: Scalar) -> V {
        match s {
            Scalar::Bool(b) => V::B(b),
            Scalar::I8(x) => V::I(x.into()),
            Scalar::I16(x) => V::I(x.into()),
            Scalar::I32(x) => V::I(x.into()),
            Scalar::I64(x) => V::I(x.into()),
            Scalar::U8(x) => V::I(x.into()),
            Scalar::U16(x) => V::I(x.into()),
            Scalar::U32(x) => V::I(x.into()),
            Scalar::U64(x) => V::I(x.into()),
            Scalar::F32(x) => V::F(x.into()),
            Scalar::F64(x) => V::F(x),
        }
    }

    /// NumPy truthiness: nonzero (NaN is true).
    pub fn truthy(self) -> bool {
        match self {
            V::B(b) => b,
            V::I(x) => x != 0,
            V::F(x) => x != 0.0,
        }
    }

    /// The value as a number (bools are 0 and 1).
    pub fn num(self) -> f64 {
        match self {
            V::B(b) => f64::from(u8::from(b)),
            V::I(x) => x as f64,
            V::F(x) => x,
        }
    }

    /// The value as an integer (bools are 0 and 1); floats are not integers here.
    fn int(self) -> Option<i128> {
        match self {
            V::B(b) => Some(i128::from(b)),
            V::I(x) => Some(x),
            V::F(_) => None,
        }
    }
}

/// Width in bits and signedness of an integer dtype.
fn int_kind(d: DType) -> Option<(u32, bool)> {
    Some(match d {
        DType::I8 => (8, true),
        DType::I16 => (16, true),
        DType::I32 => (32, true),
        DType::I64 => (64, true),
        DType::U8 => (8, false),
        DType::U16 => (16, false),
        DType::U32 => (32, false),
        DType::U64 => (64, false),
        _ => return None,
    })
}

/// `x` reduced modulo `2^bits` into the dtype's range (two's complement for signed):
/// what a C cast or a wrapping machine op gives.
pub fn wrap(x: i128, d: DType) -> i128 {
    let Some((bits, signed)) = int_kind(d) else {
        return x;
    };
    let m = 1i128 << bits;
    let r = x.rem_euclid(m);
    if signed && r >= m / 2 {
        r - m
    } else {
        r
    }
}

/// `x` rounded once to `d`'s precision (`float32` rounds to nearest even).
pub fn round_to(d: DType, x: f64) -> f64 {
    if d == DType::F32 {
        f64::from(x as f32)
    } else {
        x
    }
}

/// The scalar of dtype `d` holding `v` (already in `d`'s range; ints are wrapped again,
/// which is a no-op then, so a bug upstream shows as a wrong value rather than a panic).
pub fn scalar(v: V, d: DType) -> Scalar {
    let i = |v: V| match v {
        V::F(x) => x as i128,
        other => other.int().unwrap_or(0),
    };
    match d {
        DType::Bool => Scalar::Bool(v.truthy()),
        DType::F32 => Scalar::F32(v.num() as f32),
        DType::F64 => Scalar::F64(v.num()),
        DType::I8 => Scalar::I8(wrap(i(v), d) as i8),
        DType::I16 => Scalar::I16(wrap(i(v), d) as i16),
        DType::I32 => Scalar::I32(wrap(i(v), d) as i32),
        DType::I64 => Scalar::I64(wrap(i(v), d) as i64),
        DType::U8 => Scalar::U8(wrap(i(v), d) as u8),
        DType::U16 => Scalar::U16(wrap(i(v), d) as u16),
        DType::U32 => Scalar::U32(wrap(i(v), d) as u32),
        DType::U64 => Scalar::U64(wrap(i(v), d) as u64),
    }
}

/// Every element of `h` in C order.
pub fn read(h: &HostArray) -> Vec<V> {
    use tessera_core::Element;
    tessera_core::dispatch_host!(h, a => a.iter().map(|x| V::of(x.to_scalar())).collect())
}

/// A host array of `shape` and dtype `d` from values in C order.
pub fn build(shape: &[usize], d: DType, vals: &[V]) -> HostArray {
    let scalars: Vec<Scalar> = vals.iter().map(|&v| scalar(v, d)).collect();
    HostArray::from_scalars(shape, d, &scalars)
        .expect("the oracle builds one value per element of the shape")
}

/// `astype`: to bool by truthiness; to floats by one rounding; float to int truncates
/// (NaN is 0), saturating at the `int64` range (at `[0, 2^64)` for non-negative values
/// cast to `uint64`), then wraps to the width like every int-to-int cast.
pub fn cast(v: V, to: DType) -> V {
    match to {
        DType::Bool => V::B(v.truthy()),
        DType::F32 | DType::F64 => V::F(match v {
            V::I(x) if to == DType::F32 => f64::from(x as f32),
            other => round_to(to, other.num()),
        }),
        _ => match v {
            V::F(x) if x.is_nan() => V::I(0),
            V::F(x) => {
                let t = x.trunc() as i128;
                let (lo, hi) = if to == DType::U64 && x >= 0.0 {
                    (0, i128::from(u64::MAX))
                } else {
                    (i128::from(i64::MIN), i128::from(i64::MAX))
                };
                V::I(wrap(t.clamp(lo, hi), to))
            }
            other => V::I(wrap(other.int().unwrap_or(0), to)),
        },
    }
}

/// Round half to even, from the definition.
pub fn round_half_even(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let f = x.floor();
    let diff = x - f;
    // Up when past the half, or at the half from an odd floor.
    let odd = (f / 2.0).floor() * 2.0 != f;
    if diff > 0.5 || (diff == 0.5 && odd) {
        f + 1.0
    } else {
        f
    }
}

/// `asinh` by its Maclaurin series below 0.1 (where `ln(x + sqrt(x² + 1))` cancels), by
/// the logarithm above, and `ln|x| + ln 2` where `x²` would overflow: shares nothing with
/// the protocol's `log1p` form.
fn asinh(x: f64) -> f64 {
    let a = x.abs();
    if !a.is_finite() {
        return x;
    }
    let r = if a < 0.1 {
        // Σ (-1)^n (2n)! / (4^n (n!)² (2n + 1)) a^(2n+1)
        let (mut term, mut sum, a2) = (a, 0.0, a * a);
        for n in 0..30 {
            let n = f64::from(n);
            sum += term / (2.0 * n + 1.0);
            term *= -a2 * (2.0 * n + 1.0) * (2.0 * n + 2.0) / (4.0 * (n + 1.0) * (n + 1.0));
        }
        sum
    } else if a > 1e150 {
        a.ln() + std::f64::consts::LN_2
    } else {
        (a + (a * a + 1.0).sqrt()).ln()
    };
    r.copysign(x)
}

/// `acosh`: near 1 (where the logarithm's argument loses `x - 1`) by Newton's method on
/// `2 sinh²(y / 2) = x - 1`, a residual without cancellation; above by the logarithm.
fn acosh(x: f64) -> f64 {
    if x.is_nan() || x < 1.0 {
        return f64::NAN;
    }
    if x.is_infinite() {
        return x;
    }
    if x > 1e150 {
        return x.ln() + std::f64::consts::LN_2;
    }
    if x >= 1.5 {
        return (x + (x * x - 1.0).sqrt()).ln();
    }
    let t = x - 1.0;
    if t == 0.0 {
        return 0.0;
    }
    let mut y = (2.0 * t).sqrt();
    for _ in 0..8 {
        let h = (y / 2.0).sinh();
        y -= (2.0 * h * h - t) / y.sinh();
    }
    y
}

/// `atanh`: its series below 0.1, `ln((1 + x) / (1 - x)) / 2` above (`1 - x` is exact
/// there), ±inf at ±1 and NaN past them.
fn atanh(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(x);
    }
    let r = if a < 0.1 {
        let (mut p, mut sum, a2) = (a, 0.0, a * a);
        for n in 0..30 {
            sum += p / f64::from(2 * n + 1);
            p *= a2;
        }
        sum
    } else {
        0.5 * ((1.0 + a) / (1.0 - a)).ln()
    };
    r.copysign(x)
}

/// `sqrt(x² + y²)` scaled by the larger magnitude, so that neither square overflows;
/// an infinity wins over a NaN, as C's `hypot`.
fn hypot(x: f64, y: f64) -> f64 {
    let (x, y) = (x.abs(), y.abs());
    if x.is_infinite() || y.is_infinite() {
        return f64::INFINITY;
    }
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let (big, small) = if x > y { (x, y) } else { (y, x) };
    if big == 0.0 {
        return 0.0;
    }
    let r = small / big;
    big * (1.0 + r * r).sqrt()
}

/// The magnitude of `x` with the sign bit of `y`, on the bits.
fn copysign(x: f64, y: f64) -> f64 {
    const SIGN: u64 = 1 << 63;
    f64::from_bits((x.to_bits() & !SIGN) | (y.to_bits() & SIGN))
}

/// `ln(e^x + e^y)` as the larger plus `ln(1 + e^(smaller - larger))`.
fn logaddexp(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    let (big, small) = if x > y { (x, y) } else { (y, x) };
    if big == f64::INFINITY {
        return big;
    }
    if small == f64::NEG_INFINITY {
        return big;
    }
    big + (small - big).exp().ln_1p()
}

/// The float after `x` towards `y` in dtype `d`, by stepping the bit pattern: away from
/// zero adds one to the magnitude's bits, towards zero subtracts one, and from a zero the
/// step is the smallest subnormal with `y`'s sign.
fn nextafter(x: f64, y: f64, d: DType) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == y {
        return y;
    }
    let up = y > x;
    if d == DType::F32 {
        let x = x as f32;
        if x == 0.0 {
            let tiny = f32::from_bits(1);
            return f64::from(if up { tiny } else { -tiny });
        }
        let away = up == (x > 0.0);
        let bits = x.to_bits();
        return f64::from(f32::from_bits(if away { bits + 1 } else { bits - 1 }));
    }
    if x == 0.0 {
        let tiny = f64::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let away = up == (x > 0.0);
    let bits = x.to_bits();
    f64::from_bits(if away { bits + 1 } else { bits - 1 })
}

/// A unary op on an operand of dtype `d` (the op's operand dtype).
pub fn unary(op: UnaryOp, x: V, d: DType) -> V {
    match (op, x) {
        (UnaryOp::Not, v) => V::B(!v.truthy()),
        (UnaryOp::IsNan, V::F(f)) => V::B(f.is_nan()),
        (UnaryOp::IsNan, _) => V::B(false),
        (UnaryOp::IsFinite, V::F(f)) => V::B(f.is_finite()),
        (UnaryOp::IsFinite, _) => V::B(true),
        (UnaryOp::Signbit, V::F(f)) => V::B(f.is_sign_negative()),
        (UnaryOp::Signbit, V::I(i)) => V::B(i < 0),
        (UnaryOp::Signbit, V::B(_)) => V::B(false),
        (UnaryOp::Sign, V::I(i)) => V::I(i.signum()),
        (UnaryOp::Invert, V::I(i)) => V::I(wrap(!i, d)),
        (UnaryOp::Invert, V::B(b)) => V::B(!b),
        (UnaryOp::Neg, V::I(i)) => V::I(wrap(-i, d)),
        (UnaryOp::Abs, V::I(i)) => V::I(wrap(i.abs(), d)),
        (_, V::I(i)) => V::I(i),
        (_, V::B(b)) => V::B(b),
        (op, V::F(f)) => V::F(round_to(
            d,
            match op {
                UnaryOp::Neg => -f,
                UnaryOp::Abs => f.abs(),
                UnaryOp::Sqrt => f.sqrt(),
                UnaryOp::Exp => f.exp(),
                UnaryOp::Log => f.ln(),
                UnaryOp::Sin => f.sin(),
                UnaryOp::Cos => f.cos(),
                UnaryOp::Tanh => f.tanh(),
                UnaryOp::Floor => f.floor(),
                UnaryOp::Ceil => f.ceil(),
                UnaryOp::Trunc => f.trunc(),
                UnaryOp::Round => round_half_even(f),
                UnaryOp::Tan => f.tan(),
                UnaryOp::Arcsin => f.asin(),
                UnaryOp::Arccos => f.acos(),
                UnaryOp::Arctan => f.atan(),
                UnaryOp::Sinh => f.sinh(),
                UnaryOp::Cosh => f.cosh(),
                UnaryOp::Arcsinh => asinh(f),
                UnaryOp::Arccosh => acosh(f),
                UnaryOp::Arctanh => atanh(f),
                UnaryOp::Log1p => f.ln_1p(),
                UnaryOp::Expm1 => f.exp_m1(),
                UnaryOp::Log2 => f.log2(),
                UnaryOp::Log10 => f.log10(),
                UnaryOp::Sign if f.is_nan() => f,
                UnaryOp::Sign if f == 0.0 => 0.0,
                UnaryOp::Sign => f.signum(),
                UnaryOp::Not | UnaryOp::IsNan | UnaryOp::IsFinite | UnaryOp::Signbit => {
                    unreachable!("handled above")
                }
                // Refused for floats (the builder's error); an integral value flips as its
                // integer.
                UnaryOp::Invert => !(f as i64) as f64,
            },
        )),
    }
}

/// Python's floor division and modulo on integers: the quotient rounds towards minus
/// infinity and the remainder takes the divisor's sign; a zero divisor gives 0 for both
/// (NumPy warns and returns 0).
fn int_divmod(a: i128, b: i128) -> (i128, i128) {
    if b == 0 {
        return (0, 0);
    }
    let (mut q, mut r) = (a / b, a % b);
    if r != 0 && ((r < 0) != (b < 0)) {
        q -= 1;
        r += b;
    }
    (q, r)
}

/// `a ** b` on integers: square and multiply, wrapping; a negative exponent gives 0
/// unless `|a| == 1` (NumPy raises there; the protocol defines the value).
fn int_pow(a: i128, b: i128, d: DType) -> i128 {
    if b < 0 {
        return match a {
            1 => 1,
            -1 if b % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let (mut result, mut base, mut e) = (1i128, wrap(a, d), b);
    while e > 0 {
        if e & 1 == 1 {
            result = wrap(result.wrapping_mul(base), d);
        }
        base = wrap(base.wrapping_mul(base), d);
        e >>= 1;
    }
    result
}

macro_rules! float_divmod {
    ($name:ident, $t:ty) => {
        /// NumPy's `npy_divmod` (floor quotient, remainder with the divisor's sign) in
        /// the dtype's own arithmetic, as NumPy computes it.
        fn $name(a: $t, b: $t) -> ($t, $t) {
            let m = a % b;
            if b == 0.0 {
                return (a / b, m);
            }
            let mut div = (a - m) / b;
            let mut m = m;
            if m != 0.0 || m.is_nan() {
                if (b < 0.0) != (m < 0.0) {
                    m += b;
                    div -= 1.0;
                }
            } else {
                m = (0.0 as $t).copysign(b);
            }
            let q = if div != 0.0 || div.is_nan() {
                let mut f = div.floor();
                if div - f > 0.5 {
                    f += 1.0;
                }
                f
            } else {
                (0.0 as $t).copysign(a / b)
            };
            (q, m)
        }
    };
}
float_divmod!(divmod_f32, f32);
float_divmod!(divmod_f64, f64);

fn float_divmod(a: f64, b: f64, d: DType) -> (f64, f64) {
    if d == DType::F32 {
        let (q, r) = divmod_f32(a as f32, b as f32);
        (q.into(), r.into())
    } else {
        divmod_f64(a, b)
    }
}

/// A binary op on two operands of dtype `d`.
pub fn binary(op: BinaryOp, a: V, b: V, d: DType) -> V {
    use BinaryOp::*;
    match op {
        And => return V::B(a.truthy() && b.truthy()),
        Or => return V::B(a.truthy() || b.truthy()),
        Eq | Ne | Lt | Le | Gt | Ge => {
            let ord = match (a.int(), b.int()) {
                (Some(x), Some(y)) => Some(x.cmp(&y)),
                _ => a.num().partial_cmp(&b.num()),
            };
            use std::cmp::Ordering::*;
            return V::B(match (op, ord) {
                (Ne, None) => true,
                (_, None) => false,
                (Eq, Some(o)) => o == Equal,
                (Ne, Some(o)) => o != Equal,
                (Lt, Some(o)) => o == Less,
                (Le, Some(o)) => o != Greater,
                (Gt, Some(o)) => o == Greater,
                (_, Some(o)) => o != Less,
            });
        }
        _ => {}
    }
    if let (V::B(x), V::B(y)) = (a, b) {
        // Of the ops left, maximum/minimum and the bitwise and/or/xor take two bools.
        return V::B(match op {
            Maximum | BitOr => x || y,
            BitXor => x != y,
            _ => x && y,
        });
    }
    if let (Some(x), Some(y), Some((bits, _))) = (a.int(), b.int(), int_kind(d)) {
        // The shifts on the dtype's own width (NumPy's `npy_lshift`/`npy_rshift`): a count
        // outside `0..bits` shifts every bit out.
        let in_width = (0..i128::from(bits)).contains(&y);
        match op {
            LeftShift => {
                return V::I(if in_width {
                    wrap(x.wrapping_shl(y as u32), d)
                } else {
                    0
                })
            }
            RightShift => {
                return V::I(if in_width {
                    x >> y
                } else if x < 0 {
                    -1
                } else {
                    0
                })
            }
            BitAnd => return V::I(wrap(x & y, d)),
            BitOr => return V::I(wrap(x | y, d)),
            BitXor => return V::I(wrap(x ^ y, d)),
            _ => {}
        }
    }
    if let (Some(x), Some(y)) = (a.int(), b.int()) {
        return V::I(wrap(
            match op {
                Add => x + y,
                Sub => x - y,
                Mul => x.wrapping_mul(y),
                Div | FloorDiv => int_divmod(x, y).0,
                Rem => int_divmod(x, y).1,
                Pow => int_pow(x, y, d),
                Maximum => x.max(y),
                _ => x.min(y),
            },
            d,
        ));
    }
    let (x, y) = (a.num(), b.num());
    V::F(round_to(
        d,
        match op {
            Add => x + y,
            Sub => x - y,
            Mul => x * y,
            Div => x / y,
            FloorDiv => float_divmod(x, y, d).0,
            Rem => float_divmod(x, y, d).1,
            Pow => x.powf(y),
            Atan2 => x.atan2(y),
            Hypot => hypot(x, y),
            Copysign => copysign(x, y),
            Logaddexp => logaddexp(x, y),
            Nextafter => nextafter(x, y, d),
            Maximum | Minimum if x.is_nan() || y.is_nan() => f64::NAN,
            // A tie (+0 and -0) gives the second operand, as NumPy on x86-64.
            Maximum => {
                if x > y {
                    x
                } else {
                    y
                }
            }
            _ => {
                if x < y {
                    x
                } else {
                    y
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_follows_twos_complement() {
        assert_eq!(wrap(128, DType::I8), -128);
        assert_eq!(wrap(-129, DType::I8), 127);
        assert_eq!(wrap(-1, DType::U16), 65535);
        assert_eq!(wrap(1 << 64, DType::U64), 0);
        assert_eq!(
            wrap(i128::from(i64::MAX) + 1, DType::I64),
            i128::from(i64::MIN)
        );
    }

    #[test]
    fn casts_follow_the_documented_rules() {
        assert_eq!(cast(V::F(f64::NAN), DType::I32), V::I(0));
        assert_eq!(cast(V::F(-1.5), DType::U64), V::I(i128::from(u64::MAX)));
        assert_eq!(cast(V::F(1e30), DType::U64), V::I(i128::from(u64::MAX)));
        assert_eq!(cast(V::F(1e30), DType::I8), V::I(-1)); // i64::MAX wraps to -1
        assert_eq!(cast(V::F(300.7), DType::U8), V::I(44));
        assert_eq!(cast(V::F(f64::NAN), DType::Bool), V::B(true));
        assert_eq!(cast(V::I(16_777_217), DType::F32), V::F(16_777_216.0));
        assert_eq!(cast(V::I(-1), DType::U32), V::I(4_294_967_295));
    }

    #[test]
    fn division_is_pythons() {
        assert_eq!(int_divmod(-7, 2), (-4, 1));
        assert_eq!(int_divmod(7, -2), (-4, -1));
        assert_eq!(int_divmod(5, 0), (0, 0));
        let i64min = i128::from(i64::MIN);
        assert_eq!(
            binary(BinaryOp::FloorDiv, V::I(i64min), V::I(-1), DType::I64),
            V::I(i64min)
        );
        assert_eq!(divmod_f64(1.0, 0.1).0, 9.0);
        assert!(divmod_f64(f64::INFINITY, 3.0).0.is_nan());
        assert_eq!(divmod_f64(6.0, f64::NEG_INFINITY).0, -1.0);
        assert_eq!(divmod_f64(-1.0, 3.0).1, 2.0);
        assert!(divmod_f64(1.0, 0.0).0.is_infinite());
    }

    #[test]
    fn powers_wrap_and_negative_exponents_vanish() {
        assert_eq!(int_pow(3, 5, DType::I8), wrap(243, DType::I8));
        assert_eq!(int_pow(2, 64, DType::U64), 0);
        assert_eq!(int_pow(-1, -3, DType::I32), -1);
        assert_eq!(int_pow(5, -1, DType::I32), 0);
        assert_eq!(int_pow(0, 0, DType::I32), 1);
    }

    #[test]
    fn rounding_is_half_to_even() {
        for (x, r) in [
            (0.5, 0.0),
            (1.5, 2.0),
            (2.5, 2.0),
            (-0.5, 0.0),
            (-1.5, -2.0),
            (2.4, 2.0),
        ] {
            assert_eq!(round_half_even(x), r, "{x}");
        }
    }

    #[test]
    fn comparisons_with_nan_are_false_but_not_equal() {
        let nan = V::F(f64::NAN);
        assert_eq!(
            binary(BinaryOp::Lt, nan, V::F(1.0), DType::F64),
            V::B(false)
        );
        assert_eq!(binary(BinaryOp::Ne, nan, nan, DType::F64), V::B(true));
        assert!(
            matches!(binary(BinaryOp::Maximum, nan, V::F(1.0), DType::F64), V::F(x) if x.is_nan())
        );
        let big = V::I(i128::from(u64::MAX));
        assert_eq!(binary(BinaryOp::Gt, big, V::I(0), DType::U64), V::B(true));
    }
}
