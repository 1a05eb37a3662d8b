//! Unary elementwise ops ([`UnaryOp`]): their dtype rules and scalar definitions, with
//! the inverse hyperbolic functions that stay finite where textbook formulas overflow.

use crate::dtype::DType;

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
