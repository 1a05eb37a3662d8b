//! Elementwise ops: NumPy broadcasting, promotion, scalars, and operator overloading.
//!
//! Operators return `Result<Array>` (shape and dtype errors are values, as in candle), and
//! take `f64` and `i64` scalars (one type per kind, so literals infer; use
//! [`Array::binary_scalar`] for other scalar types):
//! `let y = (&x + 1.0)?;`. Rust numbers are NEP 50 *weak* scalars: `int8_array + 1` stays
//! `int8`, `f32_array * 2.0` stays `f32`.
//!
//! Arrays with different chunks combine without a rechunk: the result takes the common
//! refinement of the operands' chunk boundaries, so each output chunk reads exactly one
//! chunk of each operand.

use std::ops;

use super::{Array, Op};
use crate::chunks::Chunks;
use crate::dtype::{promote, weak_int_out_of_range, weak_result, DType, OutOfRange, Scalar};
use crate::error::{Error, Result};
use crate::program::{AxisMap, BinaryOp, ProgramBuilder, UnaryOp};

/// The common refinement of two chunkings of one axis.
pub(crate) fn refine(a: &[usize], b: &[usize]) -> Vec<usize> {
    if a == b {
        return a.to_vec();
    }
    let mut bounds: Vec<usize> = Vec::new();
    let mut acc = 0;
    for &x in a {
        acc += x;
        bounds.push(acc);
    }
    acc = 0;
    for &x in b {
        acc += x;
        bounds.push(acc);
    }
    bounds.sort_unstable();
    bounds.dedup();
    let mut out = Vec::with_capacity(bounds.len());
    let mut prev = 0;
    for b in bounds {
        if b > prev {
            out.push(b - prev);
            prev = b;
        }
    }
    if out.is_empty() {
        out.push(0);
    }
    out
}

/// The broadcast shape of two shapes (NumPy rules).
///
/// # Errors
/// A shape error naming `op`, both shapes and the first axis that differs.
pub fn broadcast_shapes(op: &str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::shape(
                op,
                format!("operands with shapes {a:?} and {b:?} cannot be broadcast together (axis {i}: {da} vs {db})"),
            ));
        };
    }
    Ok(out)
}

impl Array {
    /// Broadcasts to `shape` (NumPy rules) without copying.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Array> {
        let own = self.shape();
        if own == shape {
            return Ok(self.clone());
        }
        let full = broadcast_shapes("broadcast_to", &own, shape)?;
        if full != shape {
            return Err(Error::shape(
                "broadcast_to",
                format!("cannot broadcast shape {own:?} to {shape:?}"),
            ));
        }
        let off = shape.len() - own.len();
        let maps = own
            .iter()
            .enumerate()
            .map(|(j, &n)| AxisMap {
                start: 0,
                step: if n == 1 && shape[j + off] != 1 { 0 } else { 1 },
                out_axis: Some(j + off),
            })
            .collect();
        self.view(maps, shape)
    }

    /// Brings operands to one shape and one chunk grid (common refinement).
    pub(crate) fn align(op: &str, arrays: &[&Array]) -> Result<Vec<Array>> {
        let mut shape = arrays[0].shape();
        for a in &arrays[1..] {
            shape = broadcast_shapes(op, &shape, &a.shape())?;
        }
        for a in &arrays[1..] {
            arrays[0].require_same_backend(a, op, "operands")?;
        }
        let b: Vec<Array> = arrays
            .iter()
            .map(|a| a.broadcast_to(&shape))
            .collect::<Result<_>>()?;
        let mut sizes: Vec<Vec<usize>> = b[0].chunks().sizes().to_vec();
        for a in &b[1..] {
            for (ax, s) in sizes.iter_mut().enumerate() {
                *s = refine(s, a.chunks().axis(ax));
            }
        }
        let chunks = Chunks::new(&shape, sizes)?;
        Ok(b.into_iter()
            .map(|a| {
                if *a.chunks() == chunks {
                    a
                } else {
                    a.with_chunks_view(chunks.clone())
                }
            })
            .collect())
    }

    /// The same array presented with finer chunks (each new chunk within one old chunk).
    pub(crate) fn with_chunks_view(&self, chunks: Chunks) -> Array {
        let maps = (0..self.ndim())
            .map(|a| AxisMap {
                start: 0,
                step: 1,
                out_axis: Some(a),
            })
            .collect();
        Array::new(
            Op::View(self.clone(), maps),
            self.dtype(),
            chunks,
            self.backend().clone(),
        )
    }

    /// A binary op with broadcasting and promotion.
    pub fn binary(&self, op: BinaryOp, other: &Array) -> Result<Array> {
        let v = Array::align(op.name(), &[self, other])?;
        let mut pb = ProgramBuilder::new(&[]);
        let (x, y) = (
            pb.constant(Scalar::zero(v[0].dtype())),
            pb.constant(Scalar::zero(v[1].dtype())),
        );
        let z = pb.binary(op, x, y)?;
        let dtype = pb.dtype(z);
        Ok(Array::new(
            Op::Binary(op, v[0].clone(), v[1].clone()),
            dtype,
            v[0].chunks().clone(),
            self.backend().clone(),
        ))
    }

    /// A binary op with a weak scalar (`scalar_left` puts the scalar first: `2 - x`), by
    /// NEP 50: the scalar adopts the array's dtype within its kind. An integer scalar
    /// that does not fit the array's integer dtype follows NumPy 2 (see
    /// [`weak_int_out_of_range`](crate::dtype::weak_int_out_of_range)): comparisons give
    /// the mathematically right answer, true division uses the exact value, logical ops its
    /// truth, and arithmetic is an error — never a wrapped scalar.
    ///
    /// # Errors
    /// Arithmetic with an out-of-range integer scalar, or what [`Array::binary`] refuses.
    pub fn binary_scalar(&self, op: BinaryOp, value: Scalar, scalar_left: bool) -> Result<Array> {
        if let Some(side) = weak_int_out_of_range(self.dtype(), &value) {
            return self.out_of_range_scalar(op, value, scalar_left, side);
        }
        let d = weak_result(self.dtype(), &value);
        let c = self.const_like(value.cast(d));
        if scalar_left {
            c.binary(op, self)
        } else {
            self.binary(op, &c)
        }
    }

    /// [`Array::binary_scalar`] with an integer scalar outside the array's integer dtype.
    fn out_of_range_scalar(
        &self,
        op: BinaryOp,
        value: Scalar,
        scalar_left: bool,
        side: OutOfRange,
    ) -> Result<Array> {
        // Every element lies on one side of the scalar, so a comparison is a constant.
        let elements_greater = side == OutOfRange::Below;
        let (less, greater) = if scalar_left {
            (elements_greater, !elements_greater) // `v < x`, `v > x`
        } else {
            (!elements_greater, elements_greater) // `x < v`, `x > v`
        };
        let constant = match op {
            BinaryOp::Eq => Some(false),
            BinaryOp::Ne => Some(true),
            BinaryOp::Lt | BinaryOp::Le => Some(less),
            BinaryOp::Gt | BinaryOp::Ge => Some(greater),
            _ => None,
        };
        if let Some(c) = constant {
            return Ok(self.const_like(Scalar::Bool(c)));
        }
        match op {
            BinaryOp::Div => {
                self.astype(DType::F64)
                    .binary_scalar(op, Scalar::F64(value.as_f64()), scalar_left)
            }
            BinaryOp::And | BinaryOp::Or => {
                self.binary_scalar(op, Scalar::Bool(value.as_f64() != 0.0), scalar_left)
            }
            _ => {
                let d = weak_result(self.dtype(), &value);
                Err(Error::dtype(
                    op.name(),
                    d,
                    format!(
                        "the integer {value} is out of bounds for {d} (NumPy 2 raises \
                         OverflowError here instead of wrapping it); cast the array to a \
                         wider dtype first"
                    ),
                ))
            }
        }
    }

    /// A unary op.
    pub fn unary(&self, op: UnaryOp) -> Result<Array> {
        let operand = op
            .operand_dtype(self.dtype())
            .ok_or_else(|| Error::dtype(op.name(), self.dtype(), op.bool_refusal()))?;
        Ok(Array::new(
            Op::Unary(op, self.astype(operand)),
            op.result_dtype(operand),
            self.chunks().clone(),
            self.backend().clone(),
        ))
    }

    /// `astype` (a no-op for the same dtype).
    pub fn astype(&self, dtype: DType) -> Array {
        if dtype == self.dtype() {
            return self.clone();
        }
        Array::new(
            Op::Cast(self.clone()),
            dtype,
            self.chunks().clone(),
            self.backend().clone(),
        )
    }

    /// Floor division `//`, as NumPy's `floor_divide` (see [`BinaryOp::FloorDiv`]): on
    /// floats the quotient of NumPy's `divmod`, so `a == (a // b) * b + a % b`.
    ///
    /// # Errors
    /// Operands that do not broadcast, live on different backends, or are both `bool`.
    pub fn floor_div(&self, other: &Array) -> Result<Array> {
        self.binary(BinaryOp::FloorDiv, other)
    }

    /// `where(self, a, b)`: `a` where `self` is true (nonzero), else `b`.
    pub fn where_(&self, a: &Array, b: &Array) -> Result<Array> {
        let v = Array::align("where", &[self, a, b])?;
        let d = promote(v[1].dtype(), v[2].dtype());
        Ok(Array::new(
            Op::Where(v[0].astype(DType::Bool), v[1].astype(d), v[2].astype(d)),
            d,
            v[0].chunks().clone(),
            self.backend().clone(),
        ))
    }

    /// Limits values to `[min, max]` (NaN stays NaN; a value equal to a bound is kept, so
    /// `clip(-0.0, 0, 1)` is -0 as in NumPy), in the result type of the array and
    /// both bounds (a float bound makes an integer array's clip float64). As in NumPy 2,
    /// an integer bound beyond the far end of the array's integer dtype clips nothing
    /// (`clip(uint8, -5, 300)` is the array), and one beyond the near end is an error.
    ///
    /// # Errors
    /// A bound that cannot be represented on the side it clips; a bool array with neither
    /// bound (NumPy 2 refuses it too).
    pub fn clip(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Array> {
        if min.is_none() && max.is_none() && self.dtype() == DType::Bool {
            return Err(Error::dtype(
                "clip",
                DType::Bool,
                "a bool array with neither bound is refused, as NumPy 2 refuses it (its \
                 `positive` has no bool loop); give a bound, or cast to an integer dtype first",
            ));
        }
        // NumPy 2 computes in the result type of the array and both bounds first: a float
        // bound beside an integer array makes the whole clip float64, where an integer
        // bound out of the array's range is then an ordinary number.
        let d = [min, max].iter().flatten().fold(self.dtype(), weak_result);
        let mut x = if d != self.dtype() && d.is_float() {
            self.astype(d)
        } else {
            self.clone()
        };
        // `maximum(lo, x)`, `minimum(hi, x)`: a tie gives the second operand, so a value
        // equal to a bound is kept, sign of zero and all (NumPy's `clip(-0.0, 0, 1)` is -0).
        if let Some(lo) = min {
            if weak_int_out_of_range(x.dtype(), &lo) != Some(OutOfRange::Below) {
                x = x.binary_scalar(BinaryOp::Maximum, lo, true)?;
            }
        }
        if let Some(hi) = max {
            if weak_int_out_of_range(x.dtype(), &hi) != Some(OutOfRange::Above) {
                x = x.binary_scalar(BinaryOp::Minimum, hi, true)?;
            }
        }
        Ok(x)
    }
}

macro_rules! unary_methods {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl Array {
            $(
                #[doc = concat!("Elementwise `", stringify!($name), "`.")]
                pub fn $name(&self) -> Result<Array> {
                    self.unary(UnaryOp::$op)
                }
            )*
        }
    };
}
unary_methods!(
    neg => Neg, abs => Abs, sqrt => Sqrt, exp => Exp, log => Log, sin => Sin, cos => Cos,
    tanh => Tanh, floor => Floor, ceil => Ceil, round => Round, logical_not => Not,
    isnan => IsNan, isfinite => IsFinite, tan => Tan, arcsin => Arcsin, arccos => Arccos,
    arctan => Arctan, sinh => Sinh, cosh => Cosh, arcsinh => Arcsinh, arccosh => Arccosh,
    arctanh => Arctanh, log1p => Log1p, expm1 => Expm1, log2 => Log2, log10 => Log10,
    sign => Sign, signbit => Signbit, invert => Invert,
);

macro_rules! binary_methods {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl Array {
            $(
                #[doc = concat!("Elementwise `", stringify!($name), "` with broadcasting.")]
                pub fn $name(&self, other: &Array) -> Result<Array> {
                    self.binary(BinaryOp::$op, other)
                }
            )*
        }
    };
}
binary_methods!(
    add => Add, sub => Sub, mul => Mul, div => Div, rem => Rem, pow => Pow,
    maximum => Maximum, minimum => Minimum, eq => Eq, ne => Ne, lt => Lt, le => Le,
    gt => Gt, ge => Ge, logical_and => And, logical_or => Or, arctan2 => Atan2,
    hypot => Hypot, copysign => Copysign, logaddexp => Logaddexp, nextafter => Nextafter,
    bitwise_and => BitAnd, bitwise_or => BitOr, bitwise_xor => BitXor,
    left_shift => LeftShift, right_shift => RightShift,
);

macro_rules! scalar_cmp_methods {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl Array {
            $(
                #[doc = concat!("Elementwise `", stringify!($name), "` against a weak scalar.")]
                pub fn $name(&self, value: impl Into<Scalar>) -> Result<Array> {
                    self.binary_scalar(BinaryOp::$op, value.into(), false)
                }
            )*
        }
    };
}
scalar_cmp_methods!(
    eq_scalar => Eq, ne_scalar => Ne, lt_scalar => Lt, le_scalar => Le, gt_scalar => Gt,
    ge_scalar => Ge, pow_scalar => Pow,
);

macro_rules! operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl ops::$trait<&Array> for &Array {
            type Output = Result<Array>;
            fn $method(self, rhs: &Array) -> Result<Array> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl ops::$trait<Array> for Array {
            type Output = Result<Array>;
            fn $method(self, rhs: Array) -> Result<Array> {
                self.binary(BinaryOp::$op, &rhs)
            }
        }
        impl ops::$trait<&Array> for Array {
            type Output = Result<Array>;
            fn $method(self, rhs: &Array) -> Result<Array> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl ops::$trait<Array> for &Array {
            type Output = Result<Array>;
            fn $method(self, rhs: Array) -> Result<Array> {
                self.binary(BinaryOp::$op, &rhs)
            }
        }
        operator!(@scalar $trait, $method, $op, f64, i64);
    };
    (@scalar $trait:ident, $method:ident, $op:ident, $($t:ty),*) => {
        $(
            impl ops::$trait<$t> for &Array {
                type Output = Result<Array>;
                fn $method(self, rhs: $t) -> Result<Array> {
                    self.binary_scalar(BinaryOp::$op, Scalar::from(rhs), false)
                }
            }
            impl ops::$trait<$t> for Array {
                type Output = Result<Array>;
                fn $method(self, rhs: $t) -> Result<Array> {
                    self.binary_scalar(BinaryOp::$op, Scalar::from(rhs), false)
                }
            }
            impl ops::$trait<&Array> for $t {
                type Output = Result<Array>;
                fn $method(self, rhs: &Array) -> Result<Array> {
                    rhs.binary_scalar(BinaryOp::$op, Scalar::from(self), true)
                }
            }
            impl ops::$trait<Array> for $t {
                type Output = Result<Array>;
                fn $method(self, rhs: Array) -> Result<Array> {
                    rhs.binary_scalar(BinaryOp::$op, Scalar::from(self), true)
                }
            }
        )*
    };
}
operator!(Add, add, Add);
operator!(Sub, sub, Sub);
operator!(Mul, mul, Mul);
operator!(Div, div, Div);
operator!(Rem, rem, Rem);
operator!(BitAnd, bitand, BitAnd);
operator!(BitOr, bitor, BitOr);
operator!(BitXor, bitxor, BitXor);
operator!(Shl, shl, LeftShift);
operator!(Shr, shr, RightShift);

/// `!x` is NumPy's `~x`: bitwise not of integers, logical not of bools.
impl ops::Not for &Array {
    type Output = Result<Array>;
    fn not(self) -> Result<Array> {
        self.unary(UnaryOp::Invert)
    }
}

impl ops::Not for Array {
    type Output = Result<Array>;
    fn not(self) -> Result<Array> {
        self.unary(UnaryOp::Invert)
    }
}

impl ops::Neg for &Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        self.unary(UnaryOp::Neg)
    }
}

impl ops::Neg for Array {
    type Output = Result<Array>;
    fn neg(self) -> Result<Array> {
        self.unary(UnaryOp::Neg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refinement_merges_boundaries() {
        assert_eq!(refine(&[3, 3, 3, 1], &[5, 5]), vec![3, 2, 1, 3, 1]);
        assert_eq!(refine(&[4], &[4]), vec![4]);
        assert_eq!(refine(&[0], &[0]), vec![0]);
    }

    #[test]
    fn broadcast_rules() {
        assert_eq!(broadcast_shapes("t", &[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes("t", &[], &[2, 2]).unwrap(), vec![2, 2]);
        assert_eq!(broadcast_shapes("t", &[0, 1], &[1, 5]).unwrap(), vec![0, 5]);
        let err = broadcast_shapes("add", &[3, 2], &[4, 2])
            .unwrap_err()
            .to_string();
        assert!(err.contains("[3, 2] and [4, 2]"), "{err}");
    }
}
