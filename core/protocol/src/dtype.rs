//! Element types, typed scalars and type promotion.
//!
//! tessera follows NumPy's promotion rules for the eleven dtypes it supports, including
//! NEP 50 "weak" scalars: a Rust literal combined with an array takes the array's dtype
//! where it is of the same kind (`int8_array + 1` stays `int8`, `f32_array * 2.0` stays
//! `f32`), and only crosses kinds upward (`int_array + 0.5` is `f64`).
//!
//! Where tessera differs from NumPy, and why:
//! - there is no `float16`, so unary float functions of `bool`, `int8`, `uint8` (NumPy:
//!   `float16`) return `f32`;
//! - arithmetic (`+ - * / % pow`) on two `bool` operands is a [`crate::Error::DType`] error
//!   rather than NumPy's mix of logical-or and `TypeError`: cast to an integer first;
//! - `int64` with `uint64` promotes to `f64`, exactly as NumPy does (there is no wider int).

use std::fmt;

/// The element type of an array or chunk.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
}

/// The broad kind of a dtype, which decides promotion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DTypeKind {
    /// `bool`
    Bool,
    /// signed integers
    Int,
    /// unsigned integers
    UInt,
    /// floating point
    Float,
}

impl DType {
    /// Every dtype, in promotion-table order.
    pub const ALL: [DType; 11] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F32,
        DType::F64,
    ];

    /// Size of one element in bytes (`bool` is one byte, as in NumPy).
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// The kind of this dtype.
    pub fn kind(self) -> DTypeKind {
        match self {
            DType::Bool => DTypeKind::Bool,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => DTypeKind::Int,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => DTypeKind::UInt,
            DType::F32 | DType::F64 => DTypeKind::Float,
        }
    }

    /// True for `f32` and `f64`.
    pub fn is_float(self) -> bool {
        self.kind() == DTypeKind::Float
    }

    /// True for signed and unsigned integers (not `bool`).
    pub fn is_integer(self) -> bool {
        matches!(self.kind(), DTypeKind::Int | DTypeKind::UInt)
    }

    /// The NumPy-style name (`"float64"`, `"int8"`, `"bool"`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Parses a NumPy-style name (`float64`, `f8`, `i4`, `uint8`, `bool`, ...).
    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "bool" | "b1" => DType::Bool,
            "int8" | "i1" => DType::I8,
            "int16" | "i2" => DType::I16,
            "int32" | "i4" => DType::I32,
            "int64" | "i8" => DType::I64,
            "uint8" | "u1" => DType::U8,
            "uint16" | "u2" => DType::U16,
            "uint32" | "u4" => DType::U32,
            "uint64" | "u8" => DType::U64,
            "float32" | "f4" => DType::F32,
            "float64" | "f8" => DType::F64,
            _ => return None,
        })
    }

    fn int_bits(self) -> u32 {
        (self.size() * 8) as u32
    }

    /// The smallest signed integer type holding every value of both integer types, or
    /// `None` when there is none (`int64` with `uint64`).
    fn signed_for_bits(bits: u32) -> Option<DType> {
        match bits {
            0..=8 => Some(DType::I8),
            9..=16 => Some(DType::I16),
            17..=32 => Some(DType::I32),
            33..=64 => Some(DType::I64),
            _ => None,
        }
    }

    /// The float type NumPy picks for unary float functions (`sqrt`, `exp`, ...) and true
    /// division of this dtype.
    pub fn float_result(self) -> DType {
        match self {
            DType::F32 => DType::F32,
            DType::Bool | DType::I8 | DType::U8 | DType::I16 | DType::U16 => DType::F32,
            _ => DType::F64,
        }
    }

    /// The dtype `sum`/`prod` accumulate and return in: `int64` for bool and signed ints,
    /// `uint64` for unsigned, the input float type for floats (NumPy on 64-bit Linux).
    pub fn sum_result(self) -> DType {
        match self.kind() {
            DTypeKind::Bool | DTypeKind::Int => DType::I64,
            DTypeKind::UInt => DType::U64,
            DTypeKind::Float => self,
        }
    }

    /// The dtype `mean`/`var`/`std` return: `f64` for bool and ints, the float type for floats.
    pub fn mean_result(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F64
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// NumPy's `result_type` for two array dtypes.
///
/// ```
/// use tessera_core::DType::*;
/// use tessera_core::dtype::promote;
/// assert_eq!(promote(I8, U8), I16);
/// assert_eq!(promote(I64, U64), F64);
/// assert_eq!(promote(I16, F32), F32);
/// assert_eq!(promote(I32, F32), F64);
/// assert_eq!(promote(Bool, U16), U16);
/// ```
pub fn promote(a: DType, b: DType) -> DType {
    use DTypeKind::*;
    if a == b {
        return a;
    }
    match (a.kind(), b.kind()) {
        (Bool, _) => b,
        (_, Bool) => a,
        (Float, Float) => DType::F64,
        (Float, _) => float_with_int(a, b),
        (_, Float) => float_with_int(b, a),
        (Int, Int) | (UInt, UInt) => {
            if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
        (Int, UInt) => mixed_int(a, b),
        (UInt, Int) => mixed_int(b, a),
    }
}

fn float_with_int(float: DType, int: DType) -> DType {
    // f32 holds every int8/uint8/int16/uint16 exactly; wider ints need f64.
    if float == DType::F32 && int.size() <= 2 {
        DType::F32
    } else {
        DType::F64
    }
}

fn mixed_int(signed: DType, unsigned: DType) -> DType {
    let bits = signed.int_bits().max(unsigned.int_bits() + 1);
    DType::signed_for_bits(bits).unwrap_or(DType::F64)
}

/// A typed scalar value.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl Scalar {
    /// The dtype of this scalar.
    pub fn dtype(&self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::I8(_) => DType::I8,
            Scalar::I16(_) => DType::I16,
            Scalar::I32(_) => DType::I32,
            Scalar::I64(_) => DType::I64,
            Scalar::U8(_) => DType::U8,
            Scalar::U16(_) => DType::U16,
            Scalar::U32(_) => DType::U32,
            Scalar::U64(_) => DType::U64,
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
        }
    }

    /// The value as `f64` (exact for every dtype but large 64-bit integers).
    pub fn as_f64(&self) -> f64 {
        match *self {
            Scalar::Bool(v) => v as u8 as f64,
            Scalar::I8(v) => v as f64,
            Scalar::I16(v) => v as f64,
            Scalar::I32(v) => v as f64,
            Scalar::I64(v) => v as f64,
            Scalar::U8(v) => v as f64,
            Scalar::U16(v) => v as f64,
            Scalar::U32(v) => v as f64,
            Scalar::U64(v) => v as f64,
            Scalar::F32(v) => v as f64,
            Scalar::F64(v) => v,
        }
    }

    /// The value as `i64` with C-style conversion (floats truncate, saturating; NaN is 0;
    /// `u64` above `i64::MAX` wraps).
    pub fn as_i64(&self) -> i64 {
        match *self {
            Scalar::Bool(v) => v as i64,
            Scalar::I8(v) => v as i64,
            Scalar::I16(v) => v as i64,
            Scalar::I32(v) => v as i64,
            Scalar::I64(v) => v,
            Scalar::U8(v) => v as i64,
            Scalar::U16(v) => v as i64,
            Scalar::U32(v) => v as i64,
            Scalar::U64(v) => v as i64,
            Scalar::F32(v) => v as i64,
            Scalar::F64(v) => v as i64,
        }
    }

    /// The value as `u64`: negative ints wrap; floats truncate, negative ones through
    /// `i64` (wrapping, as NumPy on x86-64 does), and saturate beyond the range.
    pub fn as_u64(&self) -> u64 {
        let from_float = |v: f64| {
            if v < 0.0 {
                (v as i64) as u64
            } else {
                v as u64
            }
        };
        match *self {
            Scalar::U64(v) => v,
            Scalar::F32(v) => from_float(v as f64),
            Scalar::F64(v) => from_float(v),
            other => other.as_i64() as u64,
        }
    }

    /// Truthiness, as NumPy's `bool(x)`: nonzero (NaN is true).
    pub fn as_bool(&self) -> bool {
        match *self {
            Scalar::Bool(v) => v,
            Scalar::F32(v) => v != 0.0,
            Scalar::F64(v) => v != 0.0,
            Scalar::U64(v) => v != 0,
            other => other.as_i64() != 0,
        }
    }

    /// Converts to `dtype` with NumPy `astype` semantics (ints wrap, floats to ints truncate).
    pub fn cast(&self, dtype: DType) -> Scalar {
        let src = self.dtype();
        match dtype {
            DType::Bool => Scalar::Bool(self.as_bool()),
            DType::F32 => Scalar::F32(match *self {
                Scalar::F64(v) => v as f32,
                Scalar::F32(v) => v,
                Scalar::U64(v) => v as f32,
                other => other.as_i64() as f32,
            }),
            DType::F64 => Scalar::F64(self.as_f64()),
            DType::U64 => Scalar::U64(self.as_u64()),
            _ => {
                let v = if src.is_float() {
                    // Through i64 first, as NumPy does on x86-64 for in-range values.
                    self.as_f64() as i64
                } else {
                    self.as_i64()
                };
                Scalar::from_i64_wrapping(v, dtype)
            }
        }
    }

    /// An integer dtype's scalar from an `i64`, wrapping like a C cast.
    pub fn from_i64_wrapping(v: i64, dtype: DType) -> Scalar {
        match dtype {
            DType::Bool => Scalar::Bool(v != 0),
            DType::I8 => Scalar::I8(v as i8),
            DType::I16 => Scalar::I16(v as i16),
            DType::I32 => Scalar::I32(v as i32),
            DType::I64 => Scalar::I64(v),
            DType::U8 => Scalar::U8(v as u8),
            DType::U16 => Scalar::U16(v as u16),
            DType::U32 => Scalar::U32(v as u32),
            DType::U64 => Scalar::U64(v as u64),
            DType::F32 => Scalar::F32(v as f32),
            DType::F64 => Scalar::F64(v as f64),
        }
    }

    /// The zero of `dtype`.
    pub fn zero(dtype: DType) -> Scalar {
        Scalar::from_i64_wrapping(0, dtype)
    }

    /// The one of `dtype`.
    pub fn one(dtype: DType) -> Scalar {
        Scalar::from_i64_wrapping(1, dtype)
    }

    /// True when the value is NaN.
    pub fn is_nan(&self) -> bool {
        match *self {
            Scalar::F32(v) => v.is_nan(),
            Scalar::F64(v) => v.is_nan(),
            _ => false,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(v) => write!(f, "{v}"),
            Scalar::F32(v) => write!(f, "{v}"),
            Scalar::F64(v) => write!(f, "{v}"),
            Scalar::U64(v) => write!(f, "{v}"),
            other => write!(f, "{}", other.as_i64()),
        }
    }
}

/// A scalar operand in an expression with an array: `Weak` scalars follow NEP 50 (they
/// adopt the array's dtype within the same kind), `Typed` ones promote like arrays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Operand {
    /// A Rust literal or untyped number: adopts the other operand's dtype where it can.
    Weak(Scalar),
    /// A scalar with a fixed dtype.
    Typed(Scalar),
}

/// The dtype a weak scalar takes when combined with an array of dtype `array`.
///
/// ```
/// use tessera_core::{DType, Scalar};
/// use tessera_core::dtype::weak_result;
/// assert_eq!(weak_result(DType::I8, &Scalar::I64(1)), DType::I8);
/// assert_eq!(weak_result(DType::I8, &Scalar::F64(0.5)), DType::F64);
/// assert_eq!(weak_result(DType::F32, &Scalar::F64(2.0)), DType::F32);
/// assert_eq!(weak_result(DType::Bool, &Scalar::I64(2)), DType::I64);
/// ```
pub fn weak_result(array: DType, scalar: &Scalar) -> DType {
    match (array.kind(), scalar.dtype().kind()) {
        (_, DTypeKind::Bool) => array,
        (DTypeKind::Bool, DTypeKind::Float) => DType::F64,
        (DTypeKind::Bool, _) => DType::I64,
        (DTypeKind::Float, _) => array,
        (_, DTypeKind::Float) => DType::F64,
        _ => array,
    }
}

/// The range of an integer dtype as `i128` (`bool` is `0..=1`); `None` for floats.
pub fn int_range(d: DType) -> Option<(i128, i128)> {
    Some(match d {
        DType::Bool => (0, 1),
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::I64 => (i64::MIN.into(), i64::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        DType::U64 => (0, u64::MAX.into()),
        DType::F32 | DType::F64 => return None,
    })
}

/// An integer scalar's exact value, `None` for bool and float scalars.
pub fn int_value(s: &Scalar) -> Option<i128> {
    match *s {
        Scalar::I8(v) => Some(v.into()),
        Scalar::I16(v) => Some(v.into()),
        Scalar::I32(v) => Some(v.into()),
        Scalar::I64(v) => Some(v.into()),
        Scalar::U8(v) => Some(v.into()),
        Scalar::U16(v) => Some(v.into()),
        Scalar::U32(v) => Some(v.into()),
        Scalar::U64(v) => Some(v.into()),
        Scalar::Bool(_) | Scalar::F32(_) | Scalar::F64(_) => None,
    }
}

/// Where a weak integer scalar lies relative to an integer dtype it does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutOfRange {
    /// Below the dtype's minimum: every element is greater than the scalar.
    Below,
    /// Above the dtype's maximum: every element is less than the scalar.
    Above,
}

/// Whether a weak integer `scalar` is out of the range of `dtype` — the dtype it would
/// adopt under NEP 50 ([`weak_result`]) — and on which side; `None` when it fits or is
/// not an integer meeting an integer dtype.
///
/// NumPy 2 rules for a Python integer that does not fit the array's integer dtype, and
/// what tessera does:
///
/// | operation | NumPy 2 | tessera |
/// | --- | --- | --- |
/// | `== != < <= > >=` | the mathematically right answer (`uint8 < -1` is all false) | the same |
/// | `/` (true division) | float64 with the exact value (`uint8 / -6` divides by -6) | the same |
/// | `logical_and`/`or` | the scalar's truth (`256` is true) | the same |
/// | `+ - * // % ** maximum minimum` | `OverflowError` | an error naming the value and the dtype |
/// | `clip` bound beyond the far end | no clipping on that side | the same |
/// | `clip` bound beyond the near end | `OverflowError` | an error |
/// | in range | the array's dtype (`int8 + 1` is int8, wrapping) | the same |
///
/// Float scalars with integer arrays give float64, with float arrays the array's dtype
/// (a value too large for float32 becomes inf, as in NumPy); bool arrays with integer
/// scalars give int64. `np.where` with an out-of-range Python integer wraps in NumPy
/// 2.4; tessera's `where_` takes arrays only, whose dtype the caller chose.
pub fn weak_int_out_of_range(dtype: DType, scalar: &Scalar) -> Option<OutOfRange> {
    let v = int_value(scalar)?;
    let d = weak_result(dtype, scalar);
    let (lo, hi) = int_range(d)?;
    if v < lo {
        Some(OutOfRange::Below)
    } else if v > hi {
        Some(OutOfRange::Above)
    } else {
        None
    }
}

/// Rust element types tessera stores: the bridge from generic code to [`DType`].
pub trait Element: Copy + Send + Sync + Default + fmt::Debug + PartialEq + 'static {
    /// The dtype of this Rust type.
    const DTYPE: DType;
    /// Wraps a value as a [`Scalar`].
    fn to_scalar(self) -> Scalar;
    /// Converts a scalar (any dtype) to this type with `astype` semantics.
    fn from_scalar(s: Scalar) -> Self;
}

macro_rules! element {
    ($t:ty, $d:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn to_scalar(self) -> Scalar {
                Scalar::$d(self)
            }
            fn from_scalar(s: Scalar) -> Self {
                match s.cast(DType::$d) {
                    Scalar::$d(v) => v,
                    _ => unreachable!("Scalar::cast returns the requested dtype"),
                }
            }
        }
        impl From<$t> for Scalar {
            fn from(v: $t) -> Scalar {
                Scalar::$d(v)
            }
        }
    };
}
element!(bool, Bool);
element!(i8, I8);
element!(i16, I16);
element!(i32, I32);
element!(i64, I64);
element!(u8, U8);
element!(u16, U16);
element!(u32, U32);
element!(u64, U64);
element!(f32, F32);
element!(f64, F64);

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn promotion_matches_numpy_table() {
        // Hand-copied from numpy.result_type for these dtypes.
        let cases = [
            (Bool, Bool, Bool),
            (Bool, I8, I8),
            (I8, U8, I16),
            (I16, U16, I32),
            (I32, U32, I64),
            (I64, U64, F64),
            (U8, I64, I64),
            (U32, I8, I64),
            (U16, U32, U32),
            (I8, F32, F32),
            (U16, F32, F32),
            (I32, F32, F64),
            (U64, F32, F64),
            (F32, F64, F64),
            (Bool, F32, F32),
        ];
        for (a, b, want) in cases {
            assert_eq!(promote(a, b), want, "{a} with {b}");
            assert_eq!(promote(b, a), want, "{b} with {a} (symmetry)");
        }
    }

    #[test]
    fn casts_wrap_and_truncate_like_astype() {
        assert_eq!(Scalar::I64(300).cast(U8), Scalar::U8(44));
        assert_eq!(Scalar::I64(-1).cast(U16), Scalar::U16(65535));
        assert_eq!(Scalar::F64(-2.7).cast(I32), Scalar::I32(-2));
        assert_eq!(Scalar::F64(0.0).cast(Bool), Scalar::Bool(false));
        assert_eq!(Scalar::F64(f64::NAN).cast(Bool), Scalar::Bool(true));
        assert_eq!(
            Scalar::U64(u64::MAX).cast(F64),
            Scalar::F64(u64::MAX as f64)
        );
        assert_eq!(i16::from_scalar(Scalar::F32(3.9)), 3);
        // Negative floats reach uint64 through int64, as the CPU kernels (and NumPy on
        // x86-64) do; positive ones saturate.
        assert_eq!(Scalar::F64(-7.5).cast(U64), Scalar::U64(u64::MAX - 6));
        assert_eq!(Scalar::F32(-1.0).cast(U64), Scalar::U64(u64::MAX));
        assert_eq!(Scalar::F64(1e30).cast(U64), Scalar::U64(u64::MAX));
    }

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.name()), Some(d));
        }
        assert_eq!(DType::parse("complex128"), None);
    }
}
