//! Decimal arithmetic, exact: `Decimal128` operands rescaled to the scale DuckDB's typing
//! gives the result (`decimal_types`), products and quotients in 128 bits with overflow
//! checked against the result's precision, a 64-bit fast path where every value fits.

use std::sync::Arc;

use super::{cast_to, eval, wrap, Val};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use tessera_core::frame::expr::{decimal_types, BinaryOp, Expr, DECIMAL128_MAX_PRECISION};
use tessera_core::{Error, Result};

/// `e` (`left op right`, whose operands have the types `types`) as exact decimal
/// arithmetic, when [`decimal_types`] plans it so (`None` otherwise): its operands through
/// [`decimal_input`], into Decimal64 when `narrow` and the result has at most 18 digits
/// ([`decimal_arith`]).
pub(crate) fn decimal_binary(
    e: &Expr,
    types: (&DataType, &DataType),
    batch: &RecordBatch,
    narrow: bool,
) -> Result<Option<Val>> {
    let Expr::Binary { op, left, right } = e else {
        return Ok(None);
    };
    let Some(Ok(plan)) = decimal_types(*op, left, types.0, right, types.1) else {
        return Ok(None);
    };
    let DataType::Decimal128(p, scale) = plan.result else {
        return Ok(None);
    };
    let l = decimal_input(left, batch)?.map(|a| decimal_operand(a, &plan.left))?;
    let r = decimal_input(right, batch)?.map(|a| decimal_operand(a, &plan.right))?;
    decimal_arith(*op, l, r, p, scale, e, narrow).map(Some)
}

/// `e`, an operand of exact decimal arithmetic: as [`eval`] gives it, except that decimal
/// arithmetic whose result has at most 18 digits comes as Decimal64 (its type says it
/// fits; the arithmetic it feeds reads 8 bytes a value instead of 16, and a product of two
/// such values is one 64x64-bit multiply). Only the arithmetic that reads it sees it.
fn decimal_input(e: &Expr, batch: &RecordBatch) -> Result<Val> {
    if let Expr::Binary { left, right, .. } = e {
        let schema = batch.schema();
        let types = (&left.data_type(&schema)?, &right.data_type(&schema)?);
        if let Some(v) = decimal_binary(e, types, batch, true)? {
            return Ok(v);
        }
    }
    eval(e, batch)
}

/// An operand of exact decimal arithmetic in the type [`decimal_types`] planned for it
/// (`want`, a Decimal128), except that a Decimal64 of the planned scale stays as it is:
/// its unscaled values are the planned ones, and [`decimal_arith`] reads them in 64 bits.
fn decimal_operand(a: &ArrayRef, want: &DataType) -> Result<ArrayRef> {
    match (a.data_type(), want) {
        (DataType::Decimal64(_, s), DataType::Decimal128(_, to)) if s == to => Ok(a.clone()),
        _ => cast_to(a, want),
    }
}

/// Exact decimal `+`, `-` or `*` of two operands, each a Decimal128 or a Decimal64
/// (brought by [`decimal_operand`] to the scales [`decimal_types`] plans: the result's for
/// `+`/`-`, each its own for `*`), into Decimal128(`p`, `scale`), or into Decimal64 when
/// `narrow` (for `p <= 18` only: every value of the type fits 64 bits); a value past the
/// precision is an error naming the expression. A literal operand stays one value (no
/// column of copies).
///
/// The kernel runs without a branch on overflow: every slot is computed with the
/// overflowing form of the operation and the overflow flags are or-ed (over valid slots
/// only), so the loop stays tight; the error is raised after it. The typing gives every
/// result digit room unless it had to stop at 38 digits: only then is each value also
/// checked against the precision, in the same loop ([`fits_digits`]). A product of two
/// values that fit `i64` (every decimal of up to 18 digits) is one 64x64→128-bit
/// multiply, which cannot overflow.
pub(crate) fn decimal_arith(
    op: BinaryOp,
    l: Val,
    r: Val,
    p: u8,
    scale: i8,
    e: &Expr,
    narrow: bool,
) -> Result<Val> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Decimal128Type, Decimal64Type};
    let overflow = || {
        Error::invalid(
            "expression",
            format!(
                "{e}: a value does not fit Decimal128({p}, {scale}); cast an operand to Float64"
            ),
        )
    };
    let scalar = matches!((&l, &r), (Val::Scalar(_), Val::Scalar(_)));
    let is64 = |v: &Val| matches!(v.array().data_type(), DataType::Decimal64(_, _));
    let narrow = narrow && p <= 18;
    let capped = p >= DECIMAL128_MAX_PRECISION;
    // One instance of the kernel per operation, pair of operand widths and output width.
    macro_rules! on_widths {
        ($f:expr, $to:expr) => {{
            let (la, ra) = (l.array(), r.array());
            macro_rules! with {
                ($a:ty, $b:ty) => {
                    decimal_kernel(
                        $f,
                        $to,
                        la.as_primitive::<$a>(),
                        &l,
                        ra.as_primitive::<$b>(),
                        &r,
                    )
                };
            }
            match (is64(&l), is64(&r)) {
                (true, true) => with!(Decimal64Type, Decimal64Type),
                (true, false) => with!(Decimal64Type, Decimal128Type),
                (false, true) => with!(Decimal128Type, Decimal64Type),
                (false, false) => with!(Decimal128Type, Decimal128Type),
            }
        }};
    }
    // The output: 64-bit values (the type has room for every one), 128-bit values checked
    // against 38 digits, or 128-bit values whose type has room for every one.
    macro_rules! on_output {
        ($f:expr) => {{
            if narrow {
                // The typing says every value fits; a column holding values past its own
                // precision (Arrow does not check) is caught as an overflow, not cut.
                let f = |a: i128, b: i128| {
                    let (v, o) = $f(a, b);
                    (v, o | (v != i128::from(v as i64)))
                };
                on_widths!(f, |v: i128| v as i64)
                    .map(|(v, n)| decimal_array::<Decimal64Type>(v, n, p, scale))
            } else if capped {
                let f = |a: i128, b: i128| {
                    let (v, o) = $f(a, b);
                    (v, o | !fits_digits(v))
                };
                on_widths!(f, |v: i128| v)
                    .map(|(v, n)| decimal_array::<Decimal128Type>(v, n, p, scale))
            } else {
                on_widths!($f, |v: i128| v)
                    .map(|(v, n)| decimal_array::<Decimal128Type>(v, n, p, scale))
            }
        }};
    }
    let computed = match op {
        BinaryOp::Add => on_output!(i128::overflowing_add),
        BinaryOp::Sub => on_output!(i128::overflowing_sub),
        BinaryOp::Mul => on_output!(decimal_mul),
        _ => {
            return Err(Error::invalid(
                "expression",
                format!("{e}: `{}` is not exact decimal arithmetic", op.symbol()),
            ))
        }
    };
    let Some(out) = computed else {
        return Err(overflow());
    };
    let out = out.map_err(|err| Error::arrow("expression", err))?;
    Ok(wrap(scalar, out))
}

/// The decimal array of `values` and `nulls`, typed `(p, scale)`.
fn decimal_array<T: arrow_array::types::DecimalType>(
    values: Vec<T::Native>,
    nulls: Option<NullBuffer>,
    p: u8,
    scale: i8,
) -> std::result::Result<ArrayRef, arrow_schema::ArrowError> {
    let a = arrow_array::PrimitiveArray::<T>::new(values.into(), nulls);
    Ok(Arc::new(a.with_precision_and_scale(p, scale)?))
}

/// Whether `v` has at most 38 digits (`|v| < 10^38`), without a branch.
#[inline(always)]
pub(crate) fn fits_digits(v: i128) -> bool {
    const BOUND: i128 = 10i128.pow(DECIMAL128_MAX_PRECISION as u32);
    (v < BOUND) & (v > -BOUND)
}

/// The values and validity of `l op r` for [`decimal_arith`], `None` when a valid slot
/// overflows. Generic over the operation, so that it is inlined into the loop, and over
/// the operands' widths (64 or 128 bits), each widened to `i128` as it is read.
fn decimal_kernel<A, B, O, F, T>(
    f: F,
    to: T,
    la: &arrow_array::PrimitiveArray<A>,
    l: &Val,
    ra: &arrow_array::PrimitiveArray<B>,
    r: &Val,
) -> Option<(Vec<O>, Option<NullBuffer>)>
where
    A: arrow_array::ArrowPrimitiveType,
    B: arrow_array::ArrowPrimitiveType,
    A::Native: Into<i128>,
    B::Native: Into<i128>,
    O: Default + Clone,
    F: Fn(i128, i128) -> (i128, bool),
    T: Fn(i128) -> O,
{
    let (n, nulls) = match (l, r) {
        (Val::Array(_), Val::Scalar(_)) => (la.len(), la.nulls().cloned()),
        (Val::Scalar(_), Val::Array(_)) => (ra.len(), ra.nulls().cloned()),
        _ => (la.len(), NullBuffer::union(la.nulls(), ra.nulls())),
    };
    let (x, y) = (la.values(), ra.values());
    // Slice iterators of known length, so the loops collect without bounds checks and
    // `f` is inlined into them.
    let mut over = false;
    let mut flagged = |(v, o): (i128, bool)| {
        over |= o;
        to(v)
    };
    // A literal side is one value; a null literal makes every row null.
    let values: Vec<O> = match (l, r) {
        (Val::Array(_), Val::Scalar(_)) => match ra.is_valid(0).then(|| ra.value(0).into()) {
            Some(b) => x.iter().map(|&a| flagged(f(a.into(), b))).collect(),
            None => return Some((vec![O::default(); n], Some(NullBuffer::new_null(n)))),
        },
        (Val::Scalar(_), Val::Array(_)) => match la.is_valid(0).then(|| la.value(0).into()) {
            Some(a) => y.iter().map(|&b| flagged(f(a, b.into()))).collect(),
            None => return Some((vec![O::default(); n], Some(NullBuffer::new_null(n)))),
        },
        _ => x
            .iter()
            .zip(y.iter())
            .map(|(&a, &b)| flagged(f(a.into(), b.into())))
            .collect(),
    };
    // Only when a flag is set are the slots checked again, skipping the null ones (whose
    // values are arbitrary).
    if over {
        let at = |i: usize| match (l, r) {
            (Val::Array(_), Val::Scalar(_)) => f(x[i].into(), y[0].into()).1,
            (Val::Scalar(_), Val::Array(_)) => f(x[0].into(), y[i].into()).1,
            _ => f(x[i].into(), y[i].into()).1,
        };
        let valid = |i: usize| nulls.as_ref().is_none_or(|m| m.is_valid(i));
        if (0..n).any(|i| valid(i) && at(i)) {
            return None;
        }
    }
    Some((values, nulls))
}

/// `a * b` with its overflow flag; two values that fit `i64` take one widening multiply.
#[inline(always)]
fn decimal_mul(a: i128, b: i128) -> (i128, bool) {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(a), Ok(b)) => (i128::from(a) * i128::from(b), false),
        _ => a.overflowing_mul(b),
    }
}
