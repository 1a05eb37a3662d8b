//! Binary elementwise ops ([`BinaryOp`]): their dtype rules and scalar definitions, with
//! the float and integer helpers that define them (Python's floor division and `%`,
//! NumPy's `logaddexp`, wrapping powers).

use crate::dtype::DType;

/// Binary elementwise ops (operands share a dtype).
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// True division on floats; floor division on ints (the builder casts ints to float
    /// for the `/` operator, so integer `Div` only appears as `//`).
    Div,
    /// Modulo with the sign of the divisor (Python/NumPy `%`); `x % 0 == 0` for ints,
    /// NaN for floats.
    Rem,
    /// Floor division `//` as NumPy's `floor_divide`: on floats the quotient of NumPy's
    /// `divmod` ([`py_floor_div_f64`]), so `a == (a // b) * b + a % b` holds with [`Rem`](BinaryOp::Rem)
    /// (`1.0 // 0.1 == 9`, `inf // 3` is NaN, `6 // -inf == -1`); on integers the same as
    /// integer [`Div`](BinaryOp::Div) (Python's floor; `x // 0 == 0`).
    FloorDiv,
    /// Power; integer `x ** -n` is 0 unless `|x| == 1` (NumPy raises).
    Pow,
    /// NaN-propagating maximum (`np.maximum`); of +0 and -0, the second operand.
    Maximum,
    /// NaN-propagating minimum (`np.minimum`); of +0 and -0, the second operand.
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Logical and (operands bool).
    And,
    /// Logical or (operands bool).
    Or,
    /// `np.arctan2(a, b)`: the angle of the point `(b, a)` in `(-pi, pi]`, by quadrant,
    /// with the signs of zeros as C's `atan2` (operands float; integers cast as `sqrt`).
    Atan2,
    /// `np.hypot`: `sqrt(a² + b²)` without overflow or underflow in between; inf when
    /// either is infinite, even with a NaN (C's `hypot`).
    Hypot,
    /// `np.copysign`: the magnitude of `a` with the sign bit of `b`.
    Copysign,
    /// `np.logaddexp`: `ln(e^a + e^b)` without overflow, as NumPy's `npy_logaddexp`.
    Logaddexp,
    /// `np.nextafter`: the next representable float after `a` towards `b` (`b` when equal;
    /// NaN when either is NaN).
    Nextafter,
    /// `np.bitwise_and` (integers and bool).
    BitAnd,
    /// `np.bitwise_or` (integers and bool).
    BitOr,
    /// `np.bitwise_xor` (integers and bool).
    BitXor,
    /// `np.left_shift` (integers; bools as `int8`): 0 when the count is negative or at
    /// least the width.
    LeftShift,
    /// `np.right_shift` (integers; arithmetic for signed): a count that is negative or at
    /// least the width gives 0, or -1 for a negative signed value.
    RightShift,
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 27] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
        BinaryOp::FloorDiv,
        BinaryOp::Pow,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Atan2,
        BinaryOp::Hypot,
        BinaryOp::Copysign,
        BinaryOp::Logaddexp,
        BinaryOp::Nextafter,
        BinaryOp::BitAnd,
        BinaryOp::BitOr,
        BinaryOp::BitXor,
        BinaryOp::LeftShift,
        BinaryOp::RightShift,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "subtract",
            BinaryOp::Mul => "multiply",
            BinaryOp::Div => "divide",
            BinaryOp::Rem => "remainder",
            BinaryOp::FloorDiv => "floor_divide",
            BinaryOp::Pow => "power",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Eq => "equal",
            BinaryOp::Ne => "not_equal",
            BinaryOp::Lt => "less",
            BinaryOp::Le => "less_equal",
            BinaryOp::Gt => "greater",
            BinaryOp::Ge => "greater_equal",
            BinaryOp::And => "logical_and",
            BinaryOp::Or => "logical_or",
            BinaryOp::Atan2 => "arctan2",
            BinaryOp::Hypot => "hypot",
            BinaryOp::Copysign => "copysign",
            BinaryOp::Logaddexp => "logaddexp",
            BinaryOp::Nextafter => "nextafter",
            BinaryOp::BitAnd => "bitwise_and",
            BinaryOp::BitOr => "bitwise_or",
            BinaryOp::BitXor => "bitwise_xor",
            BinaryOp::LeftShift => "left_shift",
            BinaryOp::RightShift => "right_shift",
        }
    }

    /// True for the ops defined on floats only (`arctan2`, `hypot`, `copysign`,
    /// `logaddexp`, `nextafter`): integer and bool operands are cast to the float dtype
    /// NumPy computes them in ([`DType::float_result`]).
    pub fn is_float_only(self) -> bool {
        matches!(
            self,
            BinaryOp::Atan2
                | BinaryOp::Hypot
                | BinaryOp::Copysign
                | BinaryOp::Logaddexp
                | BinaryOp::Nextafter
        )
    }

    /// True for the bitwise ops, defined on integers (and/or/xor also on bool).
    pub fn is_bitwise(self) -> bool {
        matches!(
            self,
            BinaryOp::BitAnd
                | BinaryOp::BitOr
                | BinaryOp::BitXor
                | BinaryOp::LeftShift
                | BinaryOp::RightShift
        )
    }

    /// True for the shifts, defined on integers (two bools shift as `int8`).
    pub fn is_shift(self) -> bool {
        matches!(self, BinaryOp::LeftShift | BinaryOp::RightShift)
    }

    /// True where the result is not always exactly the correctly rounded value, so that
    /// backends may differ in the last bits (`pow`, `arctan2`, `hypot`, `logaddexp`: each
    /// libm's own).
    pub fn is_transcendental(self) -> bool {
        matches!(
            self,
            BinaryOp::Pow | BinaryOp::Atan2 | BinaryOp::Hypot | BinaryOp::Logaddexp
        )
    }

    /// True for comparisons (result bool).
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }

    /// True for logical and/or.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or)
    }

    /// True for `+ - * / % **`, which reject two bool operands.
    pub fn is_arithmetic(self) -> bool {
        matches!(
            self,
            BinaryOp::Add
                | BinaryOp::Sub
                | BinaryOp::Mul
                | BinaryOp::Div
                | BinaryOp::Rem
                | BinaryOp::FloorDiv
                | BinaryOp::Pow
        )
    }

    /// Result dtype for operands of the common dtype `x`.
    pub fn result_dtype(self, x: DType) -> DType {
        if self.is_comparison() || self.is_logical() {
            DType::Bool
        } else {
            x
        }
    }

    /// The op on `f64` (comparisons give 0/1).
    pub fn apply_f64(self, a: f64, b: f64) -> f64 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Rem => py_fmod_f64(a, b),
            BinaryOp::FloorDiv => py_floor_div_f64(a, b),
            BinaryOp::Pow => a.powf(b),
            // NaN wins; on a tie — +0 and -0 are the only equal values that differ — the
            // second operand, as NumPy's `maximum`/`minimum` on x86-64 (SSE's `maxpd` and
            // `minpd`), so the sign of a zero is NumPy's.
            BinaryOp::Maximum => {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else if a > b {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Minimum => {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else if a < b {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Eq => f64::from(u8::from(a == b)),
            BinaryOp::Ne => f64::from(u8::from(a != b)),
            BinaryOp::Lt => f64::from(u8::from(a < b)),
            BinaryOp::Le => f64::from(u8::from(a <= b)),
            BinaryOp::Gt => f64::from(u8::from(a > b)),
            BinaryOp::Ge => f64::from(u8::from(a >= b)),
            BinaryOp::And => f64::from(u8::from(a != 0.0 && b != 0.0)),
            BinaryOp::Or => f64::from(u8::from(a != 0.0 || b != 0.0)),
            BinaryOp::Atan2 => a.atan2(b),
            BinaryOp::Hypot => a.hypot(b),
            BinaryOp::Copysign => a.copysign(b),
            BinaryOp::Logaddexp => logaddexp_f64(a, b),
            BinaryOp::Nextafter => nextafter_f64(a, b),
            // The builder refuses floats for the bitwise ops; on integral values (what a
            // bool or a small integer becomes) they act on the integer.
            BinaryOp::BitAnd
            | BinaryOp::BitOr
            | BinaryOp::BitXor
            | BinaryOp::LeftShift
            | BinaryOp::RightShift => self.apply_i64(a as i64, b as i64) as f64,
        }
    }

    /// The op on `f32`.
    pub fn apply_f32(self, a: f32, b: f32) -> f32 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Rem => py_fmod_f64(a as f64, b as f64) as f32,
            BinaryOp::FloorDiv => py_floor_div_f32(a, b),
            BinaryOp::Pow => a.powf(b),
            // Single precision as NumPy's `float32` loops (C's `atan2f`, `hypotf`,
            // `nextafterf`, and `npy_logaddexpf`).
            BinaryOp::Atan2 => a.atan2(b),
            BinaryOp::Hypot => a.hypot(b),
            BinaryOp::Copysign => a.copysign(b),
            BinaryOp::Logaddexp => logaddexp_f32(a, b),
            BinaryOp::Nextafter => nextafter_f32(a, b),
            _ => self.apply_f64(a as f64, b as f64) as f32,
        }
    }

    /// The op on signed integers held in `i64` (the caller wraps to the dtype).
    pub fn apply_i64(self, a: i64, b: i64) -> i64 {
        match self {
            BinaryOp::Add => a.wrapping_add(b),
            BinaryOp::Sub => a.wrapping_sub(b),
            BinaryOp::Mul => a.wrapping_mul(b),
            BinaryOp::Div | BinaryOp::FloorDiv => {
                if b == 0 {
                    0
                } else {
                    let q = a.wrapping_div(b);
                    // `wrapping_rem`: `i64::MIN % -1` overflows (and panics) with `%`.
                    if (a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0)) {
                        q - 1
                    } else {
                        q
                    }
                }
            }
            BinaryOp::Rem => {
                if b == 0 {
                    0
                } else {
                    let r = a.wrapping_rem(b);
                    if r != 0 && ((r < 0) != (b < 0)) {
                        r + b
                    } else {
                        r
                    }
                }
            }
            BinaryOp::Pow => ipow_i64(a, b),
            BinaryOp::Maximum => a.max(b),
            BinaryOp::Minimum => a.min(b),
            BinaryOp::Eq => i64::from(a == b),
            BinaryOp::Ne => i64::from(a != b),
            BinaryOp::Lt => i64::from(a < b),
            BinaryOp::Le => i64::from(a <= b),
            BinaryOp::Gt => i64::from(a > b),
            BinaryOp::Ge => i64::from(a >= b),
            BinaryOp::And => i64::from(a != 0 && b != 0),
            BinaryOp::Or => i64::from(a != 0 || b != 0),
            BinaryOp::BitAnd => a & b,
            BinaryOp::BitOr => a | b,
            BinaryOp::BitXor => a ^ b,
            // Narrower dtypes compute here too: their values shifted in 64 bits and wrapped
            // back to the width give NumPy's answer for every count (a count of at least the
            // width shifts every bit out either way).
            BinaryOp::LeftShift => {
                if (0..64).contains(&b) {
                    a << b
                } else {
                    0
                }
            }
            BinaryOp::RightShift => {
                if (0..64).contains(&b) {
                    a >> b
                } else if a < 0 {
                    -1
                } else {
                    0
                }
            }
            // The float-only ops never reach an integer loop (the builder casts); the value
            // an integer gives is the float op's on it, truncated.
            BinaryOp::Atan2
            | BinaryOp::Hypot
            | BinaryOp::Copysign
            | BinaryOp::Logaddexp
            | BinaryOp::Nextafter => self.apply_f64(a as f64, b as f64) as i64,
        }
    }

    /// The op on `u64`.
    pub fn apply_u64(self, a: u64, b: u64) -> u64 {
        match self {
            BinaryOp::Add => a.wrapping_add(b),
            BinaryOp::Sub => a.wrapping_sub(b),
            BinaryOp::Mul => a.wrapping_mul(b),
            BinaryOp::Div | BinaryOp::FloorDiv => a.checked_div(b).unwrap_or(0),
            BinaryOp::Rem => a.checked_rem(b).unwrap_or(0),
            BinaryOp::Pow => {
                let mut base = a;
                let mut e = b;
                let mut acc: u64 = 1;
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            BinaryOp::Maximum => a.max(b),
            BinaryOp::Minimum => a.min(b),
            BinaryOp::Eq => u64::from(a == b),
            BinaryOp::Ne => u64::from(a != b),
            BinaryOp::Lt => u64::from(a < b),
            BinaryOp::Le => u64::from(a <= b),
            BinaryOp::Gt => u64::from(a > b),
            BinaryOp::Ge => u64::from(a >= b),
            BinaryOp::And => u64::from(a != 0 && b != 0),
            BinaryOp::Or => u64::from(a != 0 || b != 0),
            BinaryOp::BitAnd => a & b,
            BinaryOp::BitOr => a | b,
            BinaryOp::BitXor => a ^ b,
            BinaryOp::LeftShift => a
                .checked_shl(u32::try_from(b).unwrap_or(u32::MAX))
                .unwrap_or(0),
            BinaryOp::RightShift => a
                .checked_shr(u32::try_from(b).unwrap_or(u32::MAX))
                .unwrap_or(0),
            BinaryOp::Atan2
            | BinaryOp::Hypot
            | BinaryOp::Copysign
            | BinaryOp::Logaddexp
            | BinaryOp::Nextafter => self.apply_f64(a as f64, b as f64) as u64,
        }
    }
}

/// NumPy's `npy_logaddexp` and C's `nextafter` for one float type.
macro_rules! logaddexp_nextafter {
    ($(#[$ldoc:meta])* $logaddexp:ident, $(#[$ndoc:meta])* $nextafter:ident, $t:ident) => {
        $(#[$ldoc])*
        pub fn $logaddexp(a: $t, b: $t) -> $t {
            if a == b {
                return a + std::$t::consts::LN_2;
            }
            let d = a - b;
            if d > 0.0 {
                a + (-d).exp().ln_1p()
            } else if d <= 0.0 {
                b + d.exp().ln_1p()
            } else {
                d
            }
        }

        $(#[$ndoc])*
        pub fn $nextafter(a: $t, b: $t) -> $t {
            if a.is_nan() || b.is_nan() {
                a + b
            } else if a == b {
                b
            } else if b > a {
                a.next_up()
            } else {
                a.next_down()
            }
        }
    };
}

logaddexp_nextafter!(
    /// `ln(e^a + e^b)` as NumPy's `npy_logaddexp`: `a + ln 2` for equal operands
    /// (infinities of one sign included), else the larger plus `log1p(exp(-|a - b|))`; NaN
    /// for a NaN.
    logaddexp_f64,
    /// C's `nextafter`: NaN when either is NaN, `b` when equal (so `nextafter(0, -0) ==
    /// -0`), else the neighbour of `a` towards `b` (from a zero, the smallest subnormal).
    nextafter_f64,
    f64
);
logaddexp_nextafter!(
    /// [`logaddexp_f64`] in single precision (NumPy's `npy_logaddexpf`).
    logaddexp_f32,
    /// C's `nextafterf` (see [`nextafter_f64`]).
    nextafter_f32,
    f32
);

/// NumPy's float `floor_divide` (`npy_divmod`'s quotient) for one float type.
macro_rules! py_floor_div {
    ($(#[$doc:meta])* $name:ident, $t:ty) => {
        $(#[$doc])*
        pub fn $name(a: $t, b: $t) -> $t {
            if b == 0.0 {
                return a / b;
            }
            let m = a % b;
            let mut div = (a - m) / b;
            if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                div -= 1.0;
            }
            if div != 0.0 {
                let f = div.floor();
                if div - f > 0.5 {
                    f + 1.0
                } else {
                    f
                }
            } else {
                (0.0 as $t).copysign(a / b)
            }
        }
    };
}

py_floor_div!(
    /// NumPy's float `floor_divide`: the quotient of `npy_divmod`. With `m = fmod(a, b)`,
    /// `div = (a - m) / b`, lowered by one when `m` and `b` differ in sign, then rounded to
    /// the nearest integer (`floor`, plus one when more than a half below); a zero quotient
    /// takes the sign of `a / b`, and `b == 0` gives `a / b` (±inf or NaN). Unlike
    /// `floor(a / b)`, this keeps `a == (a // b) * b + a % b`: `1.0 // 0.1 == 9.0`,
    /// `inf // 3.0` is NaN, `6.0 // -inf == -1.0`.
    py_floor_div_f64,
    f64
);
py_floor_div!(
    /// [`py_floor_div_f64`] in single precision (NumPy's `npy_divmodf`).
    py_floor_div_f32,
    f32
);

/// Python's float `%`: the result has the sign of `b`; NaN for `b == 0`.
pub fn py_fmod_f64(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else if r == 0.0 {
        // NumPy gives a zero with the sign of the divisor.
        0.0f64.copysign(b)
    } else {
        r
    }
}

/// Integer power with wrapping; negative exponents give 0 unless `|a| == 1`.
pub fn ipow_i64(a: i64, b: i64) -> i64 {
    if b < 0 {
        return match a {
            1 => 1,
            -1 => {
                if b % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let mut base = a;
    let mut e = b as u64;
    let mut acc: i64 = 1;
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    acc
}

/// Wraps an `i64` holding an integer result to the range of `dtype` (C cast semantics).
#[inline(always)]
pub fn wrap_i64(v: i64, dtype: DType) -> i64 {
    match dtype {
        DType::I8 => v as i8 as i64,
        DType::I16 => v as i16 as i64,
        DType::I32 => v as i32 as i64,
        DType::U8 => v as u8 as i64,
        DType::U16 => v as u16 as i64,
        DType::U32 => v as u32 as i64,
        DType::Bool => i64::from(v != 0),
        _ => v,
    }
}
