//! The op vocabulary of programs, their dtype rules and their scalar semantics.
//!
//! The scalar functions here are the *definition* of each op (NumPy's semantics where
//! NumPy defines them, documented choices where it raises or warns); backends' vectorised
//! kernels must agree with them, and the conformance suite checks that they do.

use crate::dtype::DType;
use crate::error::{Error, Result};

/// Unary elementwise ops.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    Neg,
    Abs,
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    Floor,
    Ceil,
    /// Rounds towards zero (`np.trunc`).
    Trunc,
    /// Round half to even (NumPy's `round`).
    Round,
    /// Logical not (operand bool).
    Not,
    IsNan,
    IsFinite,
    Tan,
    /// `np.arcsin`
    Arcsin,
    /// `np.arccos`
    Arccos,
    /// `np.arctan`
    Arctan,
    Sinh,
    Cosh,
    /// `np.arcsinh`
    Arcsinh,
    /// `np.arccosh`
    Arccosh,
    /// `np.arctanh`
    Arctanh,
    /// `log(1 + x)`, accurate near zero.
    Log1p,
    /// `exp(x) - 1`, accurate near zero.
    Expm1,
    Log2,
    Log10,
    /// -1, 0 or 1 (NaN stays NaN; the zero of a float is +0, as NumPy's).
    Sign,
    /// True where the sign bit is set (`-0.0` and negative NaNs included; operand float).
    Signbit,
    /// Bitwise not (`np.invert`, `~`): integers flip every bit. On a bool it is logical
    /// not, which the builder emits as [`UnaryOp::Not`], so backends meet `Invert` on
    /// integers only.
    Invert,
}

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

/// Reductions over axes.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    Sum,
    Prod,
    /// NaN-propagating minimum.
    Min,
    /// NaN-propagating maximum.
    Max,
    Any,
    All,
    /// Sum ignoring NaN.
    NanSum,
    /// Number of non-NaN elements (`int64`).
    Count,
    /// C-order flat position of the first minimum over the reduced axes (first NaN wins).
    ArgMin,
    /// C-order flat position of the first maximum over the reduced axes (first NaN wins).
    ArgMax,
}

impl UnaryOp {
    /// Every unary op.
    pub const ALL: [UnaryOp; 31] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Sqrt,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tanh,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Trunc,
        UnaryOp::Round,
        UnaryOp::Not,
        UnaryOp::IsNan,
        UnaryOp::IsFinite,
        UnaryOp::Tan,
        UnaryOp::Arcsin,
        UnaryOp::Arccos,
        UnaryOp::Arctan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Arcsinh,
        UnaryOp::Arccosh,
        UnaryOp::Arctanh,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Log2,
        UnaryOp::Log10,
        UnaryOp::Sign,
        UnaryOp::Signbit,
        UnaryOp::Invert,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "negative",
            UnaryOp::Abs => "abs",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Round => "round",
            UnaryOp::Not => "logical_not",
            UnaryOp::IsNan => "isnan",
            UnaryOp::IsFinite => "isfinite",
            UnaryOp::Tan => "tan",
            UnaryOp::Arcsin => "arcsin",
            UnaryOp::Arccos => "arccos",
            UnaryOp::Arctan => "arctan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Arcsinh => "arcsinh",
            UnaryOp::Arccosh => "arccosh",
            UnaryOp::Arctanh => "arctanh",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log10 => "log10",
            UnaryOp::Sign => "sign",
            UnaryOp::Signbit => "signbit",
            UnaryOp::Invert => "invert",
        }
    }

    /// True for ops computed in floating point (ints are cast first).
    pub fn is_transcendental(self) -> bool {
        matches!(
            self,
            UnaryOp::Sqrt
                | UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Tanh
                | UnaryOp::Tan
                | UnaryOp::Arcsin
                | UnaryOp::Arccos
                | UnaryOp::Arctan
                | UnaryOp::Sinh
                | UnaryOp::Cosh
                | UnaryOp::Arcsinh
                | UnaryOp::Arccosh
                | UnaryOp::Arctanh
                | UnaryOp::Log1p
                | UnaryOp::Expm1
                | UnaryOp::Log2
                | UnaryOp::Log10
        )
    }

    /// True for ops whose result is `bool` whatever the operand.
    pub fn is_predicate(self) -> bool {
        matches!(
            self,
            UnaryOp::Not | UnaryOp::IsNan | UnaryOp::IsFinite | UnaryOp::Signbit
        )
    }

    /// Why [`UnaryOp::operand_dtype`] refuses an operand (a `bool`, or a float for
    /// [`UnaryOp::Invert`]), for the error that says so.
    pub fn bool_refusal(self) -> &'static str {
        match self {
            UnaryOp::Round => {
                "NumPy 2 gives float16 for a rounded bool, a dtype tessera does not have; \
                 cast to float32 or an integer dtype first"
            }
            UnaryOp::Invert => {
                "bitwise invert is defined for integer and bool dtypes; cast to an integer \
                 dtype first"
            }
            _ => "not defined for bool; cast to an integer or float dtype first",
        }
    }

    /// The dtype the operand is cast to before the op, given the user's operand dtype
    /// (`None` for an operand the op refuses: [`UnaryOp::bool_refusal`] says why).
    pub fn operand_dtype(self, x: DType) -> Option<DType> {
        match self {
            UnaryOp::Not => Some(DType::Bool),
            UnaryOp::Invert if x.is_float() => None,
            UnaryOp::Invert => Some(x),
            UnaryOp::IsNan | UnaryOp::IsFinite => Some(x),
            // NumPy 2: `-bool` raises; `abs`, `floor`, `ceil` and `trunc` keep every dtype
            // (an integer or bool is its own floor); `round(bool)` is float16 there, a
            // dtype tessera does not have, so it is refused.
            UnaryOp::Neg if x == DType::Bool => None,
            UnaryOp::Neg | UnaryOp::Abs => Some(x),
            UnaryOp::Round if x == DType::Bool => None,
            UnaryOp::Round => Some(x),
            // NumPy 2 has no `sign` loop for bool; integers keep their dtype.
            UnaryOp::Sign if x == DType::Bool => None,
            UnaryOp::Sign => Some(x),
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc => Some(x),
            _ => Some(x.float_result()),
        }
    }

    /// Result dtype for an operand of dtype `x` (already cast by [`Self::operand_dtype`]).
    pub fn result_dtype(self, x: DType) -> DType {
        match self {
            op if op.is_predicate() => DType::Bool,
            _ => x,
        }
    }

    /// The op on one `f64`.
    pub fn apply_f64(self, x: f64) -> f64 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Trunc => x.trunc(),
            UnaryOp::Round => x.round_ties_even(),
            UnaryOp::Not => f64::from(u8::from(x == 0.0)),
            UnaryOp::IsNan => f64::from(u8::from(x.is_nan())),
            UnaryOp::IsFinite => f64::from(u8::from(x.is_finite())),
            UnaryOp::Tan => x.tan(),
            UnaryOp::Arcsin => x.asin(),
            UnaryOp::Arccos => x.acos(),
            UnaryOp::Arctan => x.atan(),
            UnaryOp::Sinh => x.sinh(),
            UnaryOp::Cosh => x.cosh(),
            UnaryOp::Arcsinh => asinh_f64(x),
            UnaryOp::Arccosh => acosh_f64(x),
            UnaryOp::Arctanh => atanh_f64(x),
            UnaryOp::Log1p => x.ln_1p(),
            UnaryOp::Expm1 => x.exp_m1(),
            UnaryOp::Log2 => x.log2(),
            UnaryOp::Log10 => x.log10(),
            UnaryOp::Sign => sign_f64(x),
            UnaryOp::Signbit => f64::from(u8::from(x.is_sign_negative())),
            // Refused for floats by the builder; an integral value flips as its integer.
            UnaryOp::Invert => !(x as i64) as f64,
        }
    }

    /// The op on one `f32`.
    pub fn apply_f32(self, x: f32) -> f32 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Trunc => x.trunc(),
            UnaryOp::Round => x.round_ties_even(),
            UnaryOp::Not => f32::from(u8::from(x == 0.0)),
            UnaryOp::IsNan => f32::from(u8::from(x.is_nan())),
            UnaryOp::IsFinite => f32::from(u8::from(x.is_finite())),
            UnaryOp::Tan => x.tan(),
            UnaryOp::Arcsin => x.asin(),
            UnaryOp::Arccos => x.acos(),
            UnaryOp::Arctan => x.atan(),
            UnaryOp::Sinh => x.sinh(),
            UnaryOp::Cosh => x.cosh(),
            // The inverse hyperbolic functions in `f64`, rounded once (the CUDA backend's
            // kernels compute the same).
            UnaryOp::Arcsinh => asinh_f64(f64::from(x)) as f32,
            UnaryOp::Arccosh => acosh_f64(f64::from(x)) as f32,
            UnaryOp::Arctanh => atanh_f64(f64::from(x)) as f32,
            UnaryOp::Log1p => x.ln_1p(),
            UnaryOp::Expm1 => x.exp_m1(),
            UnaryOp::Log2 => x.log2(),
            UnaryOp::Log10 => x.log10(),
            UnaryOp::Sign => sign_f64(f64::from(x)) as f32,
            UnaryOp::Signbit => f32::from(u8::from(x.is_sign_negative())),
            UnaryOp::Invert => !(x as i64) as f32,
        }
    }

    /// The op on one integer (already in `i64`; the caller wraps to the dtype).
    pub fn apply_i64(self, x: i64) -> i64 {
        match self {
            UnaryOp::Neg => x.wrapping_neg(),
            UnaryOp::Abs => x.wrapping_abs(),
            UnaryOp::Not => i64::from(x == 0),
            UnaryOp::IsNan => 0,
            UnaryOp::IsFinite => 1,
            UnaryOp::Sign => x.signum(),
            UnaryOp::Signbit => i64::from(x < 0),
            UnaryOp::Invert => !x,
            // Round/Floor/Ceil/Trunc of an integer is the integer.
            _ => x,
        }
    }

    /// The op on one `u64`.
    pub fn apply_u64(self, x: u64) -> u64 {
        match self {
            UnaryOp::Neg => x.wrapping_neg(),
            UnaryOp::Not => u64::from(x == 0),
            UnaryOp::IsNan => 0,
            UnaryOp::IsFinite => 1,
            UnaryOp::Sign => u64::from(x != 0),
            UnaryOp::Signbit => 0,
            UnaryOp::Invert => !x,
            _ => x,
        }
    }
}

/// Above this magnitude `sqrt(x² ± 1)` is `|x|` in `f64`, and the inverse hyperbolic
/// functions are `ln(2|x|)`, computed as `ln|x| + ln 2` so that `2|x|` cannot overflow.
const HYPERBOLIC_LARGE: f64 = (1u64 << 28) as f64;

/// `asinh` that stays finite up to `f64::MAX` (the textbook formula overflows past
/// `f64::MAX / 2`) and keeps the sign of zero.
pub fn asinh_f64(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() || a.is_infinite() {
        return x;
    }
    let r = if a >= HYPERBOLIC_LARGE {
        a.ln() + std::f64::consts::LN_2
    } else {
        // ln(a + sqrt(a² + 1)) = log1p(a + a² / (1 + sqrt(a² + 1))), accurate near 0.
        (a + a * a / (1.0 + (a * a + 1.0).sqrt())).ln_1p()
    };
    r.copysign(x)
}

/// `acosh` that stays finite up to `f64::MAX`; NaN below 1.
pub fn acosh_f64(x: f64) -> f64 {
    if x.is_nan() || x < 1.0 {
        return f64::NAN;
    }
    if x >= HYPERBOLIC_LARGE {
        if x.is_infinite() {
            return x;
        }
        return x.ln() + std::f64::consts::LN_2;
    }
    // ln(x + sqrt(x² - 1)) = log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact for x < 2).
    let t = x - 1.0;
    (t + (t * (t + 2.0)).sqrt()).ln_1p()
}

/// `atanh` as `log1p(2a / (1 - a)) / 2` of `a = |x|`, with the sign of `x`: accurate near
/// zero and near ±1 (where `log1p` of the signed form would meet `1 + (-1 + ε)`), ±inf at
/// ±1, NaN past them.
pub fn atanh_f64(x: f64) -> f64 {
    let a = x.abs();
    (0.5 * ((2.0 * a) / (1.0 - a)).ln_1p()).copysign(x)
}

/// NumPy's `sign` of a float: NaN for NaN, +0 for either zero.
pub fn sign_f64(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
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

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 10] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Any,
        ReduceOp::All,
        ReduceOp::NanSum,
        ReduceOp::Count,
        ReduceOp::ArgMin,
        ReduceOp::ArgMax,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Prod => "prod",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
            ReduceOp::Any => "any",
            ReduceOp::All => "all",
            ReduceOp::NanSum => "nansum",
            ReduceOp::Count => "count",
            ReduceOp::ArgMin => "argmin",
            ReduceOp::ArgMax => "argmax",
        }
    }

    /// Result dtype for an input of dtype `x`.
    pub fn result_dtype(self, x: DType) -> DType {
        match self {
            ReduceOp::Sum | ReduceOp::Prod | ReduceOp::NanSum => x.sum_result(),
            ReduceOp::Min | ReduceOp::Max => x,
            ReduceOp::Any | ReduceOp::All => DType::Bool,
            ReduceOp::Count | ReduceOp::ArgMin | ReduceOp::ArgMax => DType::I64,
        }
    }

    /// Whether the reduction is defined on an empty set (min/max/arg* are not).
    pub fn has_identity(self) -> bool {
        !matches!(
            self,
            ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax
        )
    }

    /// Checks that the reduction over `axes` of `shape` has a value. Min, max and the
    /// arg-reductions have no identity, so a reduced axis of length 0 is an error, even
    /// when the result itself would be empty (NumPy's rule). Every backend's `reduce` and
    /// reduction epilogue applies it, so all of them refuse the same inputs.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the op and the shape.
    pub fn check_identity(self, shape: &[usize], axes: &[usize]) -> Result<()> {
        if self.has_identity() || !axes.iter().any(|&a| shape.get(a) == Some(&0)) {
            return Ok(());
        }
        Err(Error::invalid(
            self.name(),
            format!(
                "zero-size array (shape {shape:?}, axes {axes:?}) to reduction operation {} which has no identity",
                self.name()
            ),
        ))
    }

    /// Whether an input dtype is accepted: every reduction takes every dtype (NumPy 2's
    /// `nansum` of bool counts the trues: a bool has no NaN).
    pub fn accepts(self, x: DType) -> bool {
        let _ = (self, x);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse hyperbolic functions where textbook formulas fail, against values
    /// NumPy 2 (glibc) gives: past `f64::MAX / 2`, next to ±1, and at both zeros.
    #[test]
    fn inverse_hyperbolic_functions_hold_at_the_edges_of_their_domains() {
        let close = |got: f64, want: f64| {
            assert!(
                (got - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
                "{got} vs {want}"
            );
        };
        close(asinh_f64(1e308), 709.889355822726);
        close(asinh_f64(-f64::MAX), -710.4758600739439);
        close(acosh_f64(1e308), 709.889355822726);
        close(atanh_f64(0.999999), 7.254328619247669);
        close(atanh_f64(-0.999999), -7.254328619247669);
        close(atanh_f64(1e-5), 1.0000000000333335e-05);
        close(acosh_f64(1.0 + f64::EPSILON), 2.1073424255447017e-08);
        assert_eq!(atanh_f64(-1.0), f64::NEG_INFINITY);
        assert!(atanh_f64(1.5).is_nan() && acosh_f64(0.5).is_nan());
        for f in [asinh_f64, atanh_f64] {
            assert!(f(-0.0).is_sign_negative() && f(-0.0) == 0.0);
        }
        assert!(sign_f64(-0.0).is_sign_positive());
        assert!(sign_f64(f64::NAN).is_nan());
    }

    #[test]
    fn integer_division_and_modulo_follow_python() {
        assert_eq!(BinaryOp::Div.apply_i64(7, 2), 3);
        assert_eq!(BinaryOp::Div.apply_i64(-7, 2), -4);
        assert_eq!(BinaryOp::Div.apply_i64(7, -2), -4);
        assert_eq!(BinaryOp::Div.apply_i64(7, 0), 0);
        assert_eq!(BinaryOp::Rem.apply_i64(-7, 3), 2);
        assert_eq!(BinaryOp::Rem.apply_i64(7, -3), -2);
        assert_eq!(BinaryOp::Rem.apply_i64(7, 0), 0);
        assert_eq!(BinaryOp::Div.apply_i64(i64::MIN, -1), i64::MIN);
        assert_eq!(BinaryOp::Rem.apply_i64(i64::MIN, -1), 0);
        assert_eq!(py_fmod_f64(-7.0, 3.0), 2.0);
        assert_eq!(py_fmod_f64(7.5, -2.0), -0.5);
        assert!(py_fmod_f64(1.0, 0.0).is_nan());
        // NumPy 2: np.floor_divide, np.remainder.
        assert_eq!(py_floor_div_f64(1.0, 0.1), 9.0);
        assert_eq!(py_fmod_f64(1.0, 0.1), 0.09999999999999995);
        assert_eq!(py_floor_div_f64(6.0, f64::NEG_INFINITY), -1.0);
        assert!(py_floor_div_f64(f64::INFINITY, 3.0).is_nan());
        assert_eq!(py_floor_div_f64(-7.0, 2.0), -4.0);
        assert_eq!(py_floor_div_f64(7.0, -2.0), -4.0);
        assert_eq!(py_floor_div_f64(1.0, 0.0), f64::INFINITY);
        assert!(py_floor_div_f64(0.0, 0.0).is_nan());
        let z = py_floor_div_f64(-0.0, 5.0);
        assert!(z == 0.0 && z.is_sign_negative());
        let z = py_floor_div_f64(0.0, -5.0);
        assert!(z == 0.0 && z.is_sign_negative());
        assert_eq!(py_floor_div_f32(1.0, 0.1), 9.0);
        assert!(py_floor_div_f32(f32::INFINITY, 3.0).is_nan());
    }

    #[test]
    fn powers_wrap_and_handle_negative_exponents() {
        assert_eq!(ipow_i64(3, 4), 81);
        assert_eq!(wrap_i64(ipow_i64(2, 7), DType::I8), -128);
        assert_eq!(ipow_i64(2, -1), 0);
        assert_eq!(ipow_i64(-1, -3), -1);
        assert_eq!(BinaryOp::Pow.apply_u64(2, 63), 1 << 63);
    }

    #[test]
    fn nan_semantics() {
        assert!(BinaryOp::Maximum.apply_f64(f64::NAN, 1.0).is_nan());
        assert_eq!(BinaryOp::Lt.apply_f64(f64::NAN, 1.0), 0.0);
        assert_eq!(BinaryOp::Ne.apply_f64(f64::NAN, f64::NAN), 1.0);
        assert_eq!(UnaryOp::Round.apply_f64(2.5), 2.0);
        assert_eq!(UnaryOp::Round.apply_f64(-0.5), -0.0);
        assert_eq!(UnaryOp::Round.apply_f64(3.5), 4.0);
    }

    #[test]
    fn dtype_rules() {
        assert_eq!(UnaryOp::Sqrt.operand_dtype(DType::I8), Some(DType::F32));
        assert_eq!(UnaryOp::Sqrt.operand_dtype(DType::I32), Some(DType::F64));
        assert_eq!(UnaryOp::Neg.operand_dtype(DType::Bool), None);
        assert_eq!(ReduceOp::Sum.result_dtype(DType::U8), DType::U64);
        assert_eq!(ReduceOp::Sum.result_dtype(DType::Bool), DType::I64);
        assert_eq!(ReduceOp::Max.result_dtype(DType::I8), DType::I8);
    }

    /// NumPy 2's `floor_divide` and `remainder`, from `tests/scripts/numpy_divmod_golden.py`,
    /// compared bit for bit (NaN with NaN, zeros by sign), in float64 and through the
    /// float32 definition where the values are exact in float32.
    #[test]
    fn floor_division_matches_numpy_goldens() {
        let same = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
        let cases: &[(f64, f64, f64, f64)] = &[
            (1.0, 0.1, 9.0, 0.09999999999999995),
            (6.0, f64::NEG_INFINITY, -1.0, f64::NEG_INFINITY),
            (f64::INFINITY, 3.0, f64::NAN, f64::NAN),
            (-7.0, 2.0, -4.0, 1.0),
            (7.0, -2.0, -4.0, -1.0),
            (-0.0, 5.0, -0.0, 0.0),
            (0.0, -5.0, -0.0, -0.0),
            (1.0, 0.0, f64::INFINITY, f64::NAN),
            (0.0, 0.0, f64::NAN, f64::NAN),
            (-6.0, f64::INFINITY, -1.0, f64::INFINITY),
            (6.0, f64::INFINITY, 0.0, 6.0),
            (5.5, -0.5, -11.0, -0.0),
            (-5.5, 0.25, -22.0, 0.0),
            (1e+308, 1e-308, f64::INFINITY, 3.498445546245627e-309),
            (-1e-308, 3.0, -1.0, 3.0),
            (0.7, 0.1, 6.0, 0.09999999999999992),
            (-3.0, f64::NEG_INFINITY, 0.0, -3.0),
            (f64::NAN, 2.0, f64::NAN, f64::NAN),
            (2.0, f64::NAN, f64::NAN, f64::NAN),
            (f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NAN, f64::NAN),
            (123456789.0, 0.001, 123456788999.0, 0.0009999974300393183),
        ];
        for &(a, b, q, r) in cases {
            let (gq, gr) = (
                BinaryOp::FloorDiv.apply_f64(a, b),
                BinaryOp::Rem.apply_f64(a, b),
            );
            assert!(same(gq, q), "{a} // {b}: got {gq}, NumPy {q}");
            assert!(same(gr, r), "{a} % {b}: got {gr}, NumPy {r}");
        }
    }

    /// `a == (a // b) * b + a % b` up to rounding, the remainder has the sign of `b` and is
    /// smaller than `|b|`, and the quotient is integral, on random finite pairs of every
    /// magnitude; integers satisfy the identity exactly.
    #[test]
    fn floor_division_and_remainder_satisfy_the_divmod_identity() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..20_000 {
            let mag = |w: u64| ((w % 2001) as f64 / 100.0 - 10.0).exp2() * 37.0;
            let sign = |w: u64| if w & 1 == 0 { 1.0 } else { -1.0 };
            let (wa, wb) = (next(), next());
            let a = sign(wa) * mag(wa >> 1) * ((wa >> 20) % 1000) as f64 / 997.0;
            let b = sign(wb) * mag(wb >> 1);
            let (q, r) = (py_floor_div_f64(a, b), py_fmod_f64(a, b));
            assert_eq!(q, q.floor(), "{a} // {b} = {q} is not integral");
            assert!(r == 0.0 || (r < 0.0) == (b < 0.0), "{a} % {b} = {r}");
            assert!(r.abs() <= b.abs(), "{a} % {b} = {r}");
            let back = q * b + r;
            assert!(
                (back - a).abs()
                    <= 4.0 * f64::EPSILON * a.abs().max(r.abs()).max(f64::MIN_POSITIVE),
                "{a} != ({a} // {b}) * {b} + {a} % {b} = {back}"
            );
            let (ia, ib) = (
                next() as i64 >> (next() % 60),
                (next() as i64 >> (next() % 62)) | 1,
            );
            let (iq, ir) = (
                BinaryOp::FloorDiv.apply_i64(ia, ib),
                BinaryOp::Rem.apply_i64(ia, ib),
            );
            assert_eq!(iq.wrapping_mul(ib).wrapping_add(ir), ia, "{ia} divmod {ib}");
        }
    }

    /// The values NumPy 2 gives for the edges of each two-operand float function
    /// (`np.logaddexp`, `np.nextafter`, `np.hypot`, `np.copysign`, `np.arctan2`).
    #[test]
    fn float_functions_match_numpy_at_their_edges() {
        let same = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
        let inf = f64::INFINITY;
        let cases: &[(BinaryOp, f64, f64, f64)] = &[
            (BinaryOp::Logaddexp, inf, inf, inf),
            (BinaryOp::Logaddexp, -inf, -inf, -inf),
            (BinaryOp::Logaddexp, inf, -inf, inf),
            (BinaryOp::Logaddexp, 0.0, 0.0, std::f64::consts::LN_2),
            (BinaryOp::Logaddexp, 1000.0, 0.0, 1000.0),
            (BinaryOp::Logaddexp, f64::NAN, 1.0, f64::NAN),
            (BinaryOp::Nextafter, 0.0, -0.0, -0.0),
            (BinaryOp::Nextafter, 0.0, 1.0, 5e-324),
            (BinaryOp::Nextafter, -0.0, -1.0, -5e-324),
            (BinaryOp::Nextafter, 1.0, 2.0, 1.0000000000000002),
            (BinaryOp::Nextafter, 1.0, 0.0, 0.9999999999999999),
            (BinaryOp::Nextafter, f64::MAX, inf, inf),
            (BinaryOp::Nextafter, inf, 0.0, f64::MAX),
            (BinaryOp::Nextafter, 1.0, f64::NAN, f64::NAN),
            (BinaryOp::Hypot, inf, f64::NAN, inf),
            (BinaryOp::Hypot, 1e300, 1e300, 1.4142135623730952e300),
            (BinaryOp::Hypot, 3.0, -4.0, 5.0),
            (BinaryOp::Copysign, 2.0, -0.0, -2.0),
            (BinaryOp::Copysign, f64::NAN, -1.0, -f64::NAN),
            (BinaryOp::Atan2, 0.0, -0.0, std::f64::consts::PI),
            (BinaryOp::Atan2, -0.0, -0.0, -std::f64::consts::PI),
            (BinaryOp::Atan2, -0.0, 1.0, -0.0),
            (BinaryOp::Atan2, inf, inf, std::f64::consts::FRAC_PI_4),
        ];
        for &(op, a, b, want) in cases {
            let got = op.apply_f64(a, b);
            assert!(
                same(got, want),
                "{}({a}, {b}) = {got}, NumPy {want}",
                op.name()
            );
            let got32 = op.apply_f32(a as f32, b as f32);
            let want32 = want as f32;
            // float32 at the same edges, where they are edges there too.
            if a.abs() < 1e30 && b.abs() < 1e30 && want.abs() < 1e30 && op != BinaryOp::Nextafter {
                assert!(
                    (got32.is_nan() && want32.is_nan())
                        || (got32 - want32).abs() <= 1e-6 * want32.abs(),
                    "{}({a}, {b}) in f32 = {got32}, want {want32}",
                    op.name()
                );
            }
        }
        assert_eq!(BinaryOp::Nextafter.apply_f32(1.0, 2.0), 1.0000001);
        assert_eq!(
            BinaryOp::Nextafter.apply_f32(0.0, -1.0).to_bits(),
            (-1e-45f32).to_bits()
        );
    }

    /// Shifts as NumPy's `npy_lshift`/`npy_rshift` on int64/uint64: counts outside the
    /// width shift every bit out (0, or -1 for a negative value shifted right).
    #[test]
    fn shifts_past_the_width_shift_every_bit_out() {
        assert_eq!(BinaryOp::LeftShift.apply_i64(1, 63), i64::MIN);
        assert_eq!(BinaryOp::LeftShift.apply_i64(1, 64), 0);
        assert_eq!(BinaryOp::LeftShift.apply_i64(5, -1), 0);
        assert_eq!(BinaryOp::RightShift.apply_i64(-8, 1), -4);
        assert_eq!(BinaryOp::RightShift.apply_i64(-8, 64), -1);
        assert_eq!(BinaryOp::RightShift.apply_i64(-8, -3), -1);
        assert_eq!(BinaryOp::RightShift.apply_i64(8, 99), 0);
        assert_eq!(BinaryOp::LeftShift.apply_u64(1, 63), 1 << 63);
        assert_eq!(BinaryOp::LeftShift.apply_u64(1, 64), 0);
        assert_eq!(BinaryOp::RightShift.apply_u64(u64::MAX, 70), 0);
        // Narrow dtypes compute in 64 bits and wrap: int8 1 << 8 is 0, -128 >> 9 is -1.
        assert_eq!(wrap_i64(BinaryOp::LeftShift.apply_i64(1, 8), DType::I8), 0);
        assert_eq!(
            wrap_i64(BinaryOp::LeftShift.apply_i64(-1, 7), DType::I8),
            -128
        );
        assert_eq!(
            wrap_i64(BinaryOp::RightShift.apply_i64(-128, 9), DType::I8),
            -1
        );
        assert_eq!(wrap_i64(UnaryOp::Invert.apply_i64(200), DType::U8), 55);
        assert_eq!(UnaryOp::Invert.apply_i64(0), -1);
    }

    #[test]
    fn binary_dtype_rules() {
        use crate::program::ProgramBuilder;
        let mut pb = ProgramBuilder::new(&[]);
        let dtype_of = |pb: &mut ProgramBuilder, op: BinaryOp, d: DType| {
            let x = pb.constant(crate::Scalar::zero(d));
            pb.binary(op, x, x).map(|n| pb.dtype(n))
        };
        assert_eq!(
            dtype_of(&mut pb, BinaryOp::Atan2, DType::I8).unwrap(),
            DType::F32
        );
        assert_eq!(
            dtype_of(&mut pb, BinaryOp::Hypot, DType::I32).unwrap(),
            DType::F64
        );
        assert_eq!(
            dtype_of(&mut pb, BinaryOp::Logaddexp, DType::F32).unwrap(),
            DType::F32
        );
        assert_eq!(
            dtype_of(&mut pb, BinaryOp::BitAnd, DType::Bool).unwrap(),
            DType::Bool
        );
        assert_eq!(
            dtype_of(&mut pb, BinaryOp::BitXor, DType::U16).unwrap(),
            DType::U16
        );
        assert_eq!(
            dtype_of(&mut pb, BinaryOp::LeftShift, DType::Bool).unwrap(),
            DType::I8
        );
        let err = dtype_of(&mut pb, BinaryOp::BitOr, DType::F64)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bitwise_or") && err.contains("integer"),
            "{err}"
        );
        let x = pb.constant(crate::Scalar::F32(1.0));
        let err = pb.unary(UnaryOp::Invert, x).unwrap_err().to_string();
        assert!(err.contains("invert") && err.contains("integer"), "{err}");
        let b = pb.constant(crate::Scalar::Bool(true));
        let n = pb.unary(UnaryOp::Invert, b).unwrap();
        assert_eq!(pb.dtype(n), DType::Bool);
    }
}
