//! Evaluating column expressions over an Arrow `RecordBatch` with arrow's compute
//! kernels. Types follow core's rules ([`binary_types`]): both operands are cast to the
//! operand type core chose, so every backend agrees on the result type. Literals stay
//! length-1 "scalar" datums until a projection needs a full column.

use std::sync::Arc;

use super::keys::canonical_floats;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Datum, Float64Array, Int64Array, RecordBatch,
    Scalar, StringArray, UInt32Array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, TimeUnit};
use tessera_core::frame::expr::{
    binary_types, compile, decimal_types, is_in_operand, BinaryOp, DatePart, Expr, Literal,
    MathFunc, StrFunc, DECIMAL128_MAX_PRECISION,
};
use tessera_core::{Error, Result};

/// A column, or a length-1 array standing for every row.
pub(crate) enum Val {
    /// A full column.
    Array(ArrayRef),
    /// One value for every row.
    Scalar(ArrayRef),
}

impl Val {
    fn map(self, f: impl FnOnce(&ArrayRef) -> Result<ArrayRef>) -> Result<Val> {
        Ok(match self {
            Val::Array(a) => Val::Array(f(&a)?),
            Val::Scalar(a) => Val::Scalar(f(&a)?),
        })
    }

    /// The array behind the value (one row for a scalar).
    fn array(&self) -> &ArrayRef {
        match self {
            Val::Array(a) | Val::Scalar(a) => a,
        }
    }

    /// The full column of `rows` rows.
    pub(crate) fn into_array(self, rows: usize) -> Result<ArrayRef> {
        self.to_array(rows)
    }

    /// The full column of `rows` rows, without consuming the value.
    fn to_array(&self, rows: usize) -> Result<ArrayRef> {
        match self {
            Val::Array(a) => Ok(a.clone()),
            Val::Scalar(a) => {
                let idx = UInt32Array::from(vec![0u32; rows]);
                arrow_select::take::take(a, &idx, None)
                    .map_err(|e| Error::arrow("broadcast literal", e))
            }
        }
    }
}

fn literal_array(l: &Literal) -> ArrayRef {
    match l {
        Literal::Null => new_null_array(&DataType::Null, 1),
        Literal::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
        Literal::Int(i) => Arc::new(Int64Array::from(vec![*i])),
        Literal::Float(f) => Arc::new(Float64Array::from(vec![*f])),
        Literal::Str(s) => Arc::new(StringArray::from(vec![s.as_str()])),
    }
}

fn cast_to(a: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    if a.data_type() == t {
        return Ok(a.clone());
    }
    arrow_cast::cast(a, t).map_err(|e| Error::arrow("cast", e))
}

fn datum(v: &Val) -> Box<dyn Datum + '_> {
    match v {
        Val::Array(a) => Box::new(a),
        Val::Scalar(a) => Box::new(Scalar::new(a.clone())),
    }
}

fn wrap(is_scalar: bool, a: ArrayRef) -> Val {
    if is_scalar {
        Val::Scalar(a)
    } else {
        Val::Array(a)
    }
}

/// Evaluates `e` over `batch`.
pub(crate) fn eval(e: &Expr, batch: &RecordBatch) -> Result<Val> {
    let schema = batch.schema();
    match e {
        Expr::Column(c) => {
            let i = schema.index_of(c).map_err(|_| {
                Error::invalid("column", format!("no column '{c}' in the partition"))
            })?;
            Ok(Val::Array(batch.column(i).clone()))
        }
        Expr::Literal(l) => Ok(Val::Scalar(literal_array(l))),
        Expr::Binary { op, left, right } => {
            let lt = left.data_type(&schema)?;
            let rt = right.data_type(&schema)?;
            if let Some(v) = decimal_binary(e, (&lt, &rt), batch, false)? {
                return Ok(v);
            }
            let (operand, _) = binary_types(*op, left, &lt, right, &rt)
                .map_err(|why| Error::invalid("expression", format!("{e}: {why}")))?;
            let mut l = eval(left, batch)?.map(|a| cast_to(a, &operand))?;
            let mut r = eval(right, batch)?.map(|a| cast_to(a, &operand))?;
            if op.is_comparison() && operand.is_floating() {
                // Arrow's comparison kernels order floats totally, so `-0.0 < 0.0`; as
                // values (IEEE, pandas, DuckDB) they are equal. NaN keeps Arrow's (and
                // DuckDB's) place: equal to itself, above every number.
                l = l.map(|a| Ok(canonical_floats(a.clone())))?;
                r = r.map(|a| Ok(canonical_floats(a.clone())))?;
            }
            if let Some(out) = view_compare(*op, &l, &r) {
                return Ok(Val::Array(out));
            }
            let both_scalar = matches!((&l, &r), (Val::Scalar(_), Val::Scalar(_)));
            let (ld, rd) = (datum(&l), datum(&r));
            let (ld, rd) = (ld.as_ref(), rd.as_ref());
            let ints = operand.is_integer();
            let out: ArrayRef = match op {
                BinaryOp::Add if ints => arrow_arith::numeric::add_wrapping(ld, rd),
                BinaryOp::Sub if ints => arrow_arith::numeric::sub_wrapping(ld, rd),
                BinaryOp::Mul if ints => arrow_arith::numeric::mul_wrapping(ld, rd),
                BinaryOp::Add => arrow_arith::numeric::add(ld, rd),
                BinaryOp::Sub => arrow_arith::numeric::sub(ld, rd),
                BinaryOp::Mul => arrow_arith::numeric::mul(ld, rd),
                BinaryOp::Div => arrow_arith::numeric::div(ld, rd),
                BinaryOp::Rem => arrow_arith::numeric::rem(ld, rd),
                BinaryOp::Eq => arrow_ord::cmp::eq(ld, rd).map(|a| Arc::new(a) as ArrayRef),
                BinaryOp::NotEq => arrow_ord::cmp::neq(ld, rd).map(|a| Arc::new(a) as ArrayRef),
                BinaryOp::Lt => arrow_ord::cmp::lt(ld, rd).map(|a| Arc::new(a) as ArrayRef),
                BinaryOp::LtEq => arrow_ord::cmp::lt_eq(ld, rd).map(|a| Arc::new(a) as ArrayRef),
                BinaryOp::Gt => arrow_ord::cmp::gt(ld, rd).map(|a| Arc::new(a) as ArrayRef),
                BinaryOp::GtEq => arrow_ord::cmp::gt_eq(ld, rd).map(|a| Arc::new(a) as ArrayRef),
                BinaryOp::And | BinaryOp::Or => {
                    let rows = batch.num_rows();
                    let la = l.to_array(rows)?;
                    let ra = r.to_array(rows)?;
                    let (la, ra) = (
                        la.as_any().downcast_ref::<BooleanArray>(),
                        ra.as_any().downcast_ref::<BooleanArray>(),
                    );
                    let (Some(la), Some(ra)) = (la, ra) else {
                        return Err(Error::invalid(
                            "expression",
                            format!("{e}: operands are not Boolean"),
                        ));
                    };
                    let out = if *op == BinaryOp::And {
                        arrow_arith::boolean::and_kleene(la, ra)
                    } else {
                        arrow_arith::boolean::or_kleene(la, ra)
                    };
                    return Ok(Val::Array(Arc::new(
                        out.map_err(|e| Error::arrow("logic", e))?,
                    )));
                }
            }
            .map_err(|err| Error::invalid("expression", format!("{e}: {err}")))?;
            Ok(wrap(both_scalar, out))
        }
        Expr::Not(x) => {
            let v = eval(x, batch)?;
            v.map(|a| {
                let b = a
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| Error::invalid("not", format!("{e}: operand is not Boolean")))?;
                Ok(
                    Arc::new(arrow_arith::boolean::not(b).map_err(|e| Error::arrow("not", e))?)
                        as ArrayRef,
                )
            })
        }
        Expr::Negate(x) => eval(x, batch)?
            .map(|a| arrow_arith::numeric::neg_wrapping(a).map_err(|e| Error::arrow("negate", e))),
        Expr::IsNull(x) => eval(x, batch)?.map(|a| {
            Ok(
                Arc::new(arrow_arith::boolean::is_null(a).map_err(|e| Error::arrow("is_null", e))?)
                    as ArrayRef,
            )
        }),
        Expr::IsNotNull(x) => eval(x, batch)?.map(|a| {
            Ok(Arc::new(
                arrow_arith::boolean::is_not_null(a).map_err(|e| Error::arrow("is_not_null", e))?,
            ) as ArrayRef)
        }),
        Expr::IsNan(x) => eval(x, batch)?.map(|a| Ok(is_nan(a))),
        Expr::FillNull { expr, value } => {
            let t = expr.data_type(&schema)?;
            let rows = batch.num_rows();
            let x = eval(expr, batch)?;
            let is_scalar = matches!(x, Val::Scalar(_));
            let x = x.into_array(if is_scalar { 1 } else { rows })?;
            let v = eval(value, batch)?.map(|a| cast_to(a, &t))?;
            let mask =
                arrow_arith::boolean::is_not_null(&x).map_err(|e| Error::arrow("fill_null", e))?;
            let out = arrow_select::zip::zip(&mask, &x, datum(&v).as_ref())
                .map_err(|e| Error::arrow("fill_null", e))?;
            Ok(wrap(is_scalar, out))
        }
        Expr::Cast { expr, to } => eval(expr, batch)?.map(|a| cast_to(a, to)),
        Expr::Contains { expr, pattern } => eval(expr, batch)?.map(|a| {
            let a = cast_to(a, &DataType::Utf8)?;
            let pat = Scalar::new(StringArray::from(vec![pattern.as_str()]));
            Ok(Arc::new(
                arrow_string::like::contains(&a, &pat).map_err(|e| Error::arrow("contains", e))?,
            ) as ArrayRef)
        }),
        Expr::DatePart { expr, part } => eval(expr, batch)?.map(|a| {
            let p = match part {
                DatePart::Year => arrow_arith::temporal::DatePart::Year,
                DatePart::Month => arrow_arith::temporal::DatePart::Month,
                DatePart::Day => arrow_arith::temporal::DatePart::Day,
                DatePart::Hour => arrow_arith::temporal::DatePart::Hour,
                DatePart::Minute => arrow_arith::temporal::DatePart::Minute,
                DatePart::Second => arrow_arith::temporal::DatePart::Second,
                DatePart::Weekday => arrow_arith::temporal::DatePart::DayOfWeekMonday0,
                DatePart::Quarter => arrow_arith::temporal::DatePart::Quarter,
                DatePart::DayOfYear => arrow_arith::temporal::DatePart::DayOfYear,
            };
            if let DataType::Timestamp(TimeUnit::Microsecond, None) = a.data_type() {
                if let Some(out) = fast_time_part(a, *part) {
                    return Ok(out);
                }
            }
            arrow_arith::temporal::date_part(a, p).map_err(|e| Error::arrow(part.name(), e))
        }),
        Expr::Math { func, expr } => eval(expr, batch)?.map(|a| math(*func, a)),
        Expr::IsIn { expr, values } => {
            let t = expr.data_type(&schema)?;
            let operand = is_in_operand(expr, &t, values)
                .map_err(|why| Error::invalid("is_in", format!("{e}: {why}")))?;
            eval(expr, batch)?.map(|a| is_in(a, &operand, values))
        }
        Expr::Str { func, expr } => eval(expr, batch)?.map(|a| string_fn(func, a)),
        Expr::When {
            branches,
            otherwise,
        } => {
            let t = e.data_type(&schema)?;
            let rows = batch.num_rows();
            let mut out = eval(otherwise, batch)?
                .map(|a| cast_to(a, &t))?
                .into_array(rows)?;
            for (cond, value) in branches.iter().rev() {
                let c = eval(cond, batch)?.into_array(rows)?;
                let c = cast_to(&c, &DataType::Boolean)?;
                let c = c
                    .as_any()
                    .downcast_ref::<BooleanArray>()
                    .ok_or_else(|| Error::invalid("when", format!("{cond} is not Boolean")))?;
                // A null condition does not hold.
                let mask = if c.null_count() > 0 {
                    arrow_select::filter::prep_null_mask_filter(c)
                } else {
                    c.clone()
                };
                let v = eval(value, batch)?.map(|a| cast_to(a, &t))?;
                out = arrow_select::zip::zip(&mask, datum(&v).as_ref(), &out)
                    .map_err(|err| Error::arrow("when", err))?;
            }
            Ok(Val::Array(out))
        }
        Expr::Coalesce(values) => {
            let t = e.data_type(&schema)?;
            let rows = batch.num_rows();
            let mut out: Option<ArrayRef> = None;
            for value in values.iter().rev() {
                let v = eval(value, batch)?
                    .map(|a| cast_to(a, &t))?
                    .into_array(rows)?;
                out = Some(match out {
                    None => v,
                    Some(rest) => {
                        let mask = arrow_arith::boolean::is_not_null(&v)
                            .map_err(|err| Error::arrow("coalesce", err))?;
                        arrow_select::zip::zip(&mask, &v, &rest)
                            .map_err(|err| Error::arrow("coalesce", err))?
                    }
                });
            }
            out.map(Val::Array)
                .ok_or_else(|| Error::invalid("coalesce", "needs at least one value"))
        }
        Expr::Clip { expr, lower, upper } => {
            let t = e.data_type(&schema)?;
            let rows = batch.num_rows();
            let x = eval(expr, batch)?;
            let is_scalar = matches!(x, Val::Scalar(_));
            let n = if is_scalar { 1 } else { rows };
            let x = x.map(|a| cast_to(a, &t))?.into_array(n)?;
            let lo = eval(lower, batch)?.map(|a| cast_to(a, &t))?.into_array(n)?;
            let hi = eval(upper, batch)?.map(|a| cast_to(a, &t))?.into_array(n)?;
            Ok(wrap(is_scalar, clip(&x, &lo, &hi, &t)?))
        }
        Expr::Pow { base, exponent } => {
            use arrow_array::cast::AsArray;
            use arrow_array::types::Float64Type;
            let b = eval(base, batch)?.map(|a| cast_to(a, &DataType::Float64))?;
            let x = eval(exponent, batch)?.map(|a| cast_to(a, &DataType::Float64))?;
            let both_scalar = matches!((&b, &x), (Val::Scalar(_), Val::Scalar(_)));
            let rows = if both_scalar { 1 } else { batch.num_rows() };
            let (b, x) = (b.into_array(rows)?, x.into_array(rows)?);
            let out: Float64Array = arrow_arith::arity::binary(
                b.as_primitive::<Float64Type>(),
                x.as_primitive::<Float64Type>(),
                f64::powf,
            )
            .map_err(|err| Error::arrow("pow", err))?;
            Ok(wrap(both_scalar, Arc::new(out)))
        }
        Expr::Offset { expr, interval } => {
            eval(expr, batch)?.map(|a| crate::temporal::offset(a, *interval))
        }
        Expr::Truncate { expr, unit } => {
            eval(expr, batch)?.map(|a| crate::temporal::truncate(a, *unit))
        }
        Expr::Elapsed { end, start, unit } => {
            let (e, s) = (eval(end, batch)?, eval(start, batch)?);
            let both_scalar = matches!((&e, &s), (Val::Scalar(_), Val::Scalar(_)));
            let rows = if both_scalar { 1 } else { batch.num_rows() };
            let out = crate::temporal::elapsed(&e.into_array(rows)?, &s.into_array(rows)?, *unit)?;
            Ok(wrap(both_scalar, out))
        }
    }
}

/// `e` (`left op right`, whose operands have the types `types`) as exact decimal
/// arithmetic, when [`decimal_types`] plans it so (`None` otherwise): its operands through
/// [`decimal_input`], into Decimal64 when `narrow` and the result has at most 18 digits
/// ([`decimal_arith`]).
fn decimal_binary(
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
fn decimal_arith(
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
fn fits_digits(v: i128) -> bool {
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

/// `x` clipped to `[lo, hi]` row by row with IEEE comparisons, so NaN stays NaN (arrow's
/// comparison kernels order NaN above every number, which would clip it). Integers are
/// clipped in Int64 and floats in Float64, then cast back to `t`.
fn clip(x: &ArrayRef, lo: &ArrayRef, hi: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    macro_rules! clip_in {
        ($wide:ty, $dt:expr) => {{
            let (x, lo, hi) = (cast_to(x, &$dt)?, cast_to(lo, &$dt)?, cast_to(hi, &$dt)?);
            let raised = arrow_arith::arity::binary::<_, _, _, $wide>(
                x.as_primitive::<$wide>(),
                lo.as_primitive::<$wide>(),
                |v, l| if v < l { l } else { v },
            )
            .map_err(|e| Error::arrow("clip", e))?;
            let out = arrow_arith::arity::binary::<_, _, _, $wide>(
                &raised,
                hi.as_primitive::<$wide>(),
                |v, h| if v > h { h } else { v },
            )
            .map_err(|e| Error::arrow("clip", e))?;
            cast_to(&(Arc::new(out) as ArrayRef), t)
        }};
    }
    if t.is_floating() {
        clip_in!(Float64Type, DataType::Float64)
    } else if t.is_integer() {
        clip_in!(Int64Type, DataType::Int64)
    } else {
        Err(Error::invalid("clip", format!("needs numbers, got {t}")))
    }
}

/// A string function over a column. A string column of any layout (Utf8, LargeUtf8, string
/// views: Parquet's strings arrive as views) is read as it is — copying 1.5 million
/// comments into a Utf8 column was a fifth of TPC-H Q13's `like` — and any other column is
/// cast to Utf8 first.
fn string_fn(func: &StrFunc, a: &ArrayRef) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    let a = if is_text(a.data_type()) {
        a.clone()
    } else {
        cast_to(a, &DataType::Utf8)?
    };
    let values = || string_values(&a, func);
    // A one-value pattern of the column's own layout, as Arrow's `like` kernels ask.
    let pattern = |p: &str| -> Scalar<ArrayRef> {
        Scalar::new(match a.data_type() {
            DataType::Utf8View => Arc::new(arrow_array::StringViewArray::from(vec![p])),
            DataType::LargeUtf8 => Arc::new(arrow_array::LargeStringArray::from(vec![p])),
            _ => Arc::new(StringArray::from(vec![p])) as ArrayRef,
        })
    };
    let map = |f: &dyn Fn(&str) -> String| -> Result<ArrayRef> {
        Ok(Arc::new(
            values()?.map(|v| v.map(f)).collect::<StringArray>(),
        ))
    };
    let err = |e| Error::arrow(func.name(), e);
    Ok(match func {
        StrFunc::StartsWith(p) => {
            Arc::new(arrow_string::like::starts_with(&a, &pattern(p)).map_err(err)?)
        }
        StrFunc::EndsWith(p) => {
            Arc::new(arrow_string::like::ends_with(&a, &pattern(p)).map_err(err)?)
        }
        StrFunc::Like(p) => Arc::new(arrow_string::like::like(&a, &pattern(p)).map_err(err)?),
        StrFunc::Lower => map(&|v| v.to_lowercase())?,
        StrFunc::Upper => map(&|v| v.to_uppercase())?,
        StrFunc::Strip => map(&|v| v.trim().to_string())?,
        StrFunc::Replace { from, to } => map(&|v| v.replace(from.as_str(), to))?,
        StrFunc::Len => Arc::new(
            values()?
                .map(|v| v.map(|v| v.chars().count() as i64))
                .collect::<Int64Array>(),
        ),
        StrFunc::Substring { start, len } => {
            let utf8 = cast_to(&a, &DataType::Utf8)?;
            Arc::new(
                arrow_string::substring::substring_by_char(utf8.as_string::<i32>(), *start, *len)
                    .map_err(err)?,
            )
        }
        StrFunc::Matches(p) => {
            let re = compile(p).map_err(|why| Error::invalid("matches", why))?;
            Arc::new(
                values()?
                    .map(|v| v.map(|v| re.is_match(v)))
                    .collect::<BooleanArray>(),
            )
        }
        StrFunc::Extract { pattern, group } => {
            let re = compile(pattern).map_err(|why| Error::invalid("extract", why))?;
            Arc::new(
                values()?
                    .map(|v| {
                        v.and_then(|v| re.captures(v))
                            .and_then(|c| c.get(*group))
                            .map(|m| m.as_str().to_string())
                    })
                    .collect::<StringArray>(),
            )
        }
        StrFunc::SplitPart { sep, index } => Arc::new(
            values()?
                .map(|v| v.and_then(|v| split_part(v, sep, *index)))
                .collect::<StringArray>(),
        ),
        StrFunc::Split(sep) => {
            let mut out =
                arrow_array::builder::ListBuilder::new(arrow_array::builder::StringBuilder::new());
            for v in values()? {
                match v {
                    Some(v) => {
                        for piece in v.split(sep.as_str()) {
                            out.values().append_value(piece);
                        }
                        out.append(true);
                    }
                    None => out.append(false),
                }
            }
            Arc::new(out.finish())
        }
    })
}

/// The values of a Utf8, LargeUtf8 or string view column, null where null.
fn string_values<'a>(
    a: &'a ArrayRef,
    func: &StrFunc,
) -> Result<Box<dyn Iterator<Item = Option<&'a str>> + 'a>> {
    use arrow_array::cast::AsArray;
    Ok(match a.data_type() {
        DataType::Utf8 => Box::new(a.as_string::<i32>().iter()),
        DataType::LargeUtf8 => Box::new(a.as_string::<i64>().iter()),
        DataType::Utf8View => Box::new(a.as_string_view().iter()),
        t => {
            return Err(Error::invalid(
                func.name(),
                format!("needs a string column, got {t}"),
            ))
        }
    })
}

/// Piece `index` of `v` split by `sep` (negative from the end), if there is one.
fn split_part(v: &str, sep: &str, index: i64) -> Option<String> {
    let piece = if index >= 0 {
        v.split(sep).nth(usize::try_from(index).ok()?)
    } else {
        v.rsplit(sep).nth(usize::try_from(-(index + 1)).ok()?)
    };
    piece.map(str::to_string)
}

/// True where a float is NaN, null where null, false for any other type.
fn is_nan(a: &ArrayRef) -> ArrayRef {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float16Type, Float32Type, Float64Type};
    let out: BooleanArray = match a.data_type() {
        DataType::Float64 => BooleanArray::from_unary(a.as_primitive::<Float64Type>(), f64::is_nan),
        DataType::Float32 => BooleanArray::from_unary(a.as_primitive::<Float32Type>(), f32::is_nan),
        DataType::Float16 => {
            BooleanArray::from_unary(a.as_primitive::<Float16Type>(), |v| v.is_nan())
        }
        _ => BooleanArray::new(
            arrow_buffer::BooleanBuffer::new_unset(a.len()),
            a.logical_nulls(),
        ),
    };
    Arc::new(out)
}

/// `a is_in values`, comparing in `operand`: the values go into a hash set of their
/// row-format bytes (any Arrow type, exact), each row is one lookup. A value that does not
/// fit the operand type (300 for a `UInt8` column) matches nothing.
fn is_in(a: &ArrayRef, operand: &DataType, values: &[Literal]) -> Result<ArrayRef> {
    use arrow_row::{RowConverter, SortField};
    if let Some(out) = is_in_direct(a, values)? {
        return Ok(out);
    }
    let x = canonical_floats(cast_to(a, operand)?);
    let wanted = values
        .iter()
        .filter(|v| **v != Literal::Null)
        .map(|v| cast_to(&literal_array(v), operand))
        .collect::<Result<Vec<ArrayRef>>>()?;
    let wanted: ArrayRef = if wanted.is_empty() {
        arrow_array::new_empty_array(operand)
    } else {
        let refs: Vec<&dyn Array> = wanted.iter().map(|w| w.as_ref()).collect();
        arrow_select::concat::concat(&refs).map_err(|e| Error::arrow("is_in", e))?
    };
    let wanted = canonical_floats(wanted);
    let conv = RowConverter::new(vec![SortField::new(operand.clone())])
        .map_err(|e| Error::arrow("is_in", e))?;
    let set_rows = conv
        .convert_columns(std::slice::from_ref(&wanted))
        .map_err(|e| Error::arrow("is_in", e))?;
    let set: std::collections::HashSet<&[u8]> = (0..set_rows.num_rows())
        .filter(|&i| wanted.is_valid(i))
        .map(|i| set_rows.row(i).data())
        .collect();
    let rows = conv
        .convert_columns(std::slice::from_ref(&x))
        .map_err(|e| Error::arrow("is_in", e))?;
    let null_matches = values.contains(&Literal::Null);
    let out: BooleanArray = (0..x.len())
        .map(|i| {
            Some(if x.is_null(i) {
                null_matches
            } else {
                set.contains(rows.row(i).data())
            })
        })
        .collect();
    Ok(Arc::new(out))
}

/// Membership in a set of `T`: a scan of a few values, or a hash set of many.
enum Wanted<T> {
    Few(Vec<T>),
    Many(std::collections::HashSet<T, ahash::RandomState>),
}

impl<T: PartialEq + Eq + std::hash::Hash> Wanted<T> {
    fn new(values: Vec<T>) -> Wanted<T> {
        if values.len() <= 8 {
            Wanted::Few(values)
        } else {
            let mut set = std::collections::HashSet::with_hasher(ahash::RandomState::new());
            set.extend(values);
            Wanted::Many(set)
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Wanted::Few(all) => all.is_empty(),
            Wanted::Many(set) => set.is_empty(),
        }
    }

    fn contains(&self, v: &T) -> bool {
        match self {
            // Without an early exit: a branch per value mispredicts on mixed columns.
            Wanted::Few(all) => all.iter().fold(false, |hit, w| hit | (w == v)),
            Wanted::Many(set) => set.contains(v),
        }
    }
}

/// `is_in` without encoding rows, for the common cases: a string column (any string type,
/// dictionaries by their values) with string values, or an integer column with integer
/// values. `None` for anything else (the general path handles it).
fn is_in_direct(a: &ArrayRef, values: &[Literal]) -> Result<Option<ArrayRef>> {
    use arrow_array::cast::AsArray;
    let null_matches = values.contains(&Literal::Null);
    let given = values.iter().filter(|v| **v != Literal::Null);
    let out: BooleanArray = match a.data_type() {
        DataType::Dictionary(_, inner) if is_text(inner) => {
            let dict = a.as_any_dictionary();
            let Some(hits) = is_in_direct(dict.values(), values)? else {
                return Ok(None);
            };
            let hits = hits.as_boolean();
            let keys = dict.normalized_keys();
            let key_nulls = dict.keys().logical_nulls();
            (0..a.len())
                .map(|i| {
                    let valid = key_nulls.as_ref().is_none_or(|n| n.is_valid(i));
                    Some(if valid {
                        hits.value(keys[i])
                    } else {
                        null_matches
                    })
                })
                .collect()
        }
        t if is_text(t) => {
            let Some(wanted) = given
                .map(|v| match v {
                    Literal::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<Option<Vec<&str>>>()
            else {
                return Ok(None);
            };
            if *t == DataType::Utf8View {
                return Ok(Some(Arc::new(view_is_in(
                    a.as_string_view(),
                    &wanted,
                    null_matches,
                ))));
            }
            let wanted = Wanted::new(wanted);
            let test = |v: Option<&str>| Some(v.map_or(null_matches, |v| wanted.contains(&v)));
            match t {
                DataType::Utf8 => a.as_string::<i32>().iter().map(test).collect(),
                _ => a.as_string::<i64>().iter().map(test).collect(),
            }
        }
        t if t.is_integer() => {
            let Some(wanted) = given
                .map(|v| match v {
                    Literal::Int(i) => Some(*i),
                    _ => None,
                })
                .collect::<Option<Vec<i64>>>()
            else {
                return Ok(None);
            };
            if *t == DataType::UInt64 {
                return Ok(None);
            }
            let wanted = Wanted::new(wanted);
            let x = cast_to(a, &DataType::Int64)?;
            x.as_primitive::<arrow_array::types::Int64Type>()
                .iter()
                .map(|v| Some(v.map_or(null_matches, |v| wanted.contains(&v))))
                .collect()
        }
        _ => return Ok(None),
    };
    Ok(Some(Arc::new(out)))
}

/// Strings looked for in a string view column, matched by the columns' views: a string of
/// at most 12 bytes is all in its 16-byte view (length, bytes, zero padding), so it
/// matches exactly when the view equals a wanted string's view; a longer one is compared
/// byte by byte only when its length and 4-byte prefix (the view's first 8 bytes) are a
/// wanted string's, and not again when its view is the one just compared: a column
/// decoded from a Parquet dictionary repeats the same view (same buffer and offset) for
/// every row of a value.
struct ViewSet<'a> {
    short: Wanted<u128>,
    heads: Wanted<u64>,
    long: Wanted<&'a str>,
}

impl<'a> ViewSet<'a> {
    fn new(wanted: &[&'a str]) -> ViewSet<'a> {
        let view_of = |s: &str| {
            let b = s.as_bytes();
            let mut v = [0u8; 16];
            v[..4].copy_from_slice(&(b.len() as u32).to_le_bytes());
            let n = b.len().min(12);
            v[4..4 + n].copy_from_slice(&b[..n]);
            u128::from_le_bytes(v)
        };
        let (short, long): (Vec<&str>, Vec<&str>) = wanted.iter().partition(|s| s.len() <= 12);
        ViewSet {
            short: Wanted::new(short.iter().map(|s| view_of(s)).collect()),
            heads: Wanted::new(long.iter().map(|s| view_of(s) as u64).collect()),
            long: Wanted::new(long),
        }
    }

    /// Per row of `a`, whether its string is wanted; a null row gets `null_matches`.
    fn hits(&self, a: &arrow_array::StringViewArray, null_matches: bool) -> BooleanBuffer {
        let views = a.views();
        let nulls = a.nulls().filter(|n| n.null_count() > 0);
        let found = if self.long.is_empty() {
            // Every wanted string is in its view: one comparison of 16 bytes per wanted
            // string and row, whatever the row's length (a null row is fixed below).
            BooleanBuffer::collect_bool(a.len(), |i| self.short.contains(&views[i]))
        } else {
            // The last long view compared byte by byte (never 0: its length is over 12),
            // and whether it matched.
            let mut last = (0u128, false);
            BooleanBuffer::collect_bool(a.len(), |i| {
                let v = views[i];
                if (v as u32) <= 12 {
                    self.short.contains(&v)
                } else if !self.heads.contains(&(v as u64)) || nulls.is_some_and(|n| n.is_null(i)) {
                    // A null row's view is unspecified: its bytes are not read.
                    false
                } else if v == last.0 {
                    last.1
                } else {
                    let hit = self.long.contains(&a.value(i));
                    last = (v, hit);
                    hit
                }
            })
        };
        match nulls {
            Some(n) if null_matches => &found | &!n.inner(),
            Some(n) => &found & n.inner(),
            None => found,
        }
    }
}

/// `is_in` over a string view column, by its views ([`ViewSet`]); no nulls in the answer.
fn view_is_in(
    a: &arrow_array::StringViewArray,
    wanted: &[&str],
    null_matches: bool,
) -> BooleanArray {
    BooleanArray::new(ViewSet::new(wanted).hits(a, null_matches), None)
}

/// `a == s` (or `a != s` when `negate`) over a string view column, by its views
/// ([`ViewSet`]); null where `a` is null.
fn view_eq(a: &arrow_array::StringViewArray, s: &str, negate: bool) -> BooleanArray {
    let hits = ViewSet::new(&[s]).hits(a, false);
    BooleanArray::new(if negate { !&hits } else { hits }, a.nulls().cloned())
}

/// `left op right` by [`view_eq`] when `op` is `==` or `!=` between a string view column
/// and a non-null string scalar (in either order); `None` otherwise.
fn view_compare(op: BinaryOp, left: &Val, right: &Val) -> Option<ArrayRef> {
    use arrow_array::cast::AsArray;
    if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq) {
        return None;
    }
    let ((Val::Array(a), Val::Scalar(s)) | (Val::Scalar(s), Val::Array(a))) = (left, right) else {
        return None;
    };
    let (a, s) = (a.as_string_view_opt()?, s.as_string_view_opt()?);
    if s.len() != 1 || s.is_null(0) {
        return None;
    }
    Some(Arc::new(view_eq(a, s.value(0), op == BinaryOp::NotEq)))
}

/// The plain string types (not dictionaries).
fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// `func` over a numeric column, with the result type `MathFunc::result_type` gives.
fn math(func: MathFunc, a: &ArrayRef) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type};
    let to = func.result_type(a.data_type()).ok_or_else(|| {
        Error::invalid(
            func.name(),
            format!("needs an integer or float column, got {}", a.data_type()),
        )
    })?;
    let a = cast_to(a, &to)?;
    // The scalar definitions the array engine uses (`UnaryOp::apply_*`).
    let op = func.unary_op();
    // Integers only reach here for abs, floor, ceil and round (the others were cast to
    // float64), and only abs changes them.
    macro_rules! ints {
        ($t:ty) => {{
            let p = a.as_primitive::<$t>();
            Arc::new(if func == MathFunc::Abs {
                p.unary::<_, $t>(|x| x.wrapping_abs())
            } else {
                p.clone()
            }) as ArrayRef
        }};
    }
    Ok(match a.data_type() {
        DataType::Float64 => Arc::new(
            a.as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|x| op.apply_f64(x)),
        ),
        DataType::Float32 => Arc::new(
            a.as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|x| op.apply_f32(x)),
        ),
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        // Unsigned values are their own absolute value.
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => a,
        other => {
            return Err(Error::invalid(
                func.name(),
                format!("needs an integer or float column, got {other}"),
            ))
        }
    })
}

/// Hour, minute and second of naive microsecond timestamps by integer arithmetic (no
/// calendar needed), much faster than the generic temporal kernel.
fn fast_time_part(a: &ArrayRef, part: DatePart) -> Option<ArrayRef> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::TimestampMicrosecondType;
    let (div, modulo) = match part {
        DatePart::Hour => (3_600_000_000i64, 24),
        DatePart::Minute => (60_000_000, 60),
        DatePart::Second => (1_000_000, 60),
        _ => return None,
    };
    let ts = a.as_primitive::<TimestampMicrosecondType>();
    let out: arrow_array::Int32Array =
        ts.unary::<_, arrow_array::types::Int32Type>(|v| (v.div_euclid(div) % modulo) as i32);
    Some(Arc::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Decimal128Type;
    use arrow_array::Decimal128Array;
    use arrow_buffer::ScalarBuffer;
    use tessera_core::frame::expr::col;

    /// Float comparisons: `-0.0` equals `0.0` (IEEE, pandas, DuckDB); NaN equals itself
    /// and sorts above every number (DuckDB); null compares to null.
    #[test]
    fn negative_zero_equals_zero_and_nan_sorts_above_numbers() {
        use tessera_core::frame::expr::{col, lit};
        let v: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
            Some(-0.0),
            Some(0.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
            None,
        ]));
        let b = RecordBatch::try_from_iter([("v", v)]).unwrap();
        let check = |e: Expr, want: [Option<bool>; 5]| {
            let got = eval(&e, &b).unwrap().into_array(5).unwrap();
            let got: Vec<Option<bool>> = got.as_boolean().iter().collect();
            assert_eq!(got, want, "{e}");
        };
        check(
            col("v").eq(lit(0.0)),
            [Some(true), Some(true), Some(false), Some(false), None],
        );
        check(
            col("v").lt(lit(0.0)),
            [Some(false), Some(false), Some(false), Some(false), None],
        );
        check(
            col("v").eq(lit(-0.0)),
            [Some(true), Some(true), Some(false), Some(false), None],
        );
        check(
            col("v").gt(lit(f64::INFINITY)),
            [Some(false), Some(false), Some(true), Some(false), None],
        );
        check(
            col("v").eq(lit(f64::NAN)),
            [Some(false), Some(false), Some(true), Some(false), None],
        );
    }

    #[test]
    fn string_functions_answer_alike_over_every_string_layout() {
        let words = vec![
            Some("special packages requests"),
            None,
            Some("a string longer than twelve bytes, with requests"),
            Some("spec"),
            Some(""),
            Some("requests special"),
            Some("  ünïcode spécial requests "),
        ];
        let utf8: ArrayRef = Arc::new(StringArray::from(words.clone()));
        let large: ArrayRef = Arc::new(arrow_array::LargeStringArray::from(words.clone()));
        let views: ArrayRef = Arc::new(arrow_array::StringViewArray::from(words));
        for func in [
            StrFunc::StartsWith("spec".into()),
            StrFunc::EndsWith("requests".into()),
            StrFunc::Like("%special%requests%".into()),
            StrFunc::Like("spe_".into()),
            StrFunc::Like("%spécial%".into()),
            StrFunc::Matches("^re.*l$".into()),
            StrFunc::Upper,
            StrFunc::Strip,
            StrFunc::Len,
            StrFunc::Substring {
                start: 2,
                len: Some(5),
            },
            StrFunc::SplitPart {
                sep: " ".into(),
                index: 1,
            },
        ] {
            let want = string_fn(&func, &utf8).unwrap();
            for other in [&large, &views] {
                let got = string_fn(&func, other).unwrap();
                assert_eq!(&got, &want, "{func:?} over {}", other.data_type());
            }
        }
    }

    #[test]
    fn fits_digits_agrees_with_arrows_check_at_the_bounds() {
        use arrow_array::types::Decimal128Type;
        use arrow_array::PrimitiveArray;
        let b = 10i128.pow(38);
        for v in [0, 1, -1, b - 1, -(b - 1), b, -b, i128::MAX, i128::MIN + 1] {
            let arrow = PrimitiveArray::<Decimal128Type>::from(vec![v])
                .with_precision_and_scale(38, 0)
                .unwrap()
                .validate_decimal_precision(38)
                .is_ok();
            assert_eq!(fits_digits(v), arrow, "{v}");
        }
    }

    /// Decimal arithmetic under other decimal arithmetic, computed in 64 bits when its type
    /// has at most 18 digits, gives the values of the same arithmetic evaluated on its own
    /// (in 128 bits, the type a top-level expression has) and used as a column.
    #[test]
    fn inner_decimal_arithmetic_in_64_bits_gives_the_values_of_its_own_column() {
        use tessera_core::frame::expr::lit;
        let big = 10i128.pow(15) - 1;
        let a = dec(
            vec![big, -big, 12_345, 0, 7, -1],
            Some(vec![true, true, true, true, false, true]),
            15,
            2,
        );
        let b = dec(vec![99, 0, 5, -99, 3, 1], None, 4, 2);
        let batch = RecordBatch::try_from_iter([("a", a), ("b", b)]).unwrap();
        type Outer = fn(Expr) -> Expr;
        let cases: [(Expr, Outer); 3] = [
            (lit(1) - col("b"), |t: Expr| col("a") * t),
            (col("a") - col("b"), |t: Expr| t * (col("a") + col("b"))),
            (col("a") + col("b"), |t: Expr| lit(3) - t),
        ];
        for (inner, outer) in cases {
            let top = eval(&inner, &batch).unwrap().into_array(6).unwrap();
            assert!(matches!(top.data_type(), DataType::Decimal128(p, _) if *p <= 18));
            let with_t = RecordBatch::try_from_iter(
                batch
                    .schema()
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .zip(batch.columns().iter().cloned())
                    .chain([("t".to_string(), top)]),
            )
            .unwrap();
            let direct = eval(&outer(inner.clone()), &batch)
                .unwrap()
                .into_array(6)
                .unwrap();
            let via = eval(&outer(col("t")), &with_t)
                .unwrap()
                .into_array(6)
                .unwrap();
            assert_eq!(&direct, &via, "{inner}");
        }
    }

    /// A column holding values past its own precision (Arrow does not check) under
    /// arithmetic computed in 64 bits is an overflow error, not a value cut to 64 bits.
    #[test]
    fn values_past_their_precision_are_not_cut_to_64_bits() {
        use tessera_core::frame::expr::lit;
        let a = dec(vec![1, 10i128.pow(20)], None, 4, 2);
        let batch = RecordBatch::try_from_iter([("a", a)]).unwrap();
        let e = (col("a") + lit(1)) - col("a");
        let err = eval(&e, &batch).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("does not fit"), "{err}");
    }

    /// A sum typed at the 38-digit cap that passes 10^38 (but not i128) is an error; the
    /// same value in a null slot is not.
    #[test]
    fn a_result_past_38_digits_is_an_error_unless_its_slot_is_null() {
        let b = 10i128.pow(38);
        let a = dec(vec![b - 1, 1], None, 38, 0);
        let one = dec(vec![1, 1], None, 38, 0);
        let e = run(BinaryOp::Add, Val::Array(a), Val::Array(one.clone()), 38, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not fit Decimal128(38, 0)"), "{e}");
        let a = dec(vec![b - 1, 1], Some(vec![false, true]), 38, 0);
        let got = run(BinaryOp::Add, Val::Array(a), Val::Array(one), 38, 0).unwrap();
        assert_eq!(got, vec![None, Some(2)]);
    }

    fn dec(values: Vec<i128>, nulls: Option<Vec<bool>>, p: u8, s: i8) -> ArrayRef {
        let a = Decimal128Array::new(ScalarBuffer::from(values), nulls.map(NullBuffer::from));
        Arc::new(a.with_precision_and_scale(p, s).unwrap())
    }

    fn run(op: BinaryOp, l: Val, r: Val, p: u8, s: i8) -> Result<Vec<Option<i128>>> {
        let e = col("a") * col("b");
        let out = decimal_arith(op, l, r, p, s, &e, false)?;
        Ok(out
            .array()
            .as_primitive::<Decimal128Type>()
            .iter()
            .collect())
    }

    #[test]
    fn decimal_products_past_i64_are_exact_and_past_i128_are_errors() {
        let big = 10i128.pow(20);
        let a = dec(vec![big, -3, 7], None, 25, 2);
        let b = dec(vec![10i128.pow(10) + 1, 5, -9], None, 12, 2);
        let got = run(BinaryOp::Mul, Val::Array(a), Val::Array(b), 37, 4).unwrap();
        assert_eq!(
            got,
            vec![Some(big * (10i128.pow(10) + 1)), Some(-15), Some(-63)]
        );
        // 10^30 * 10^30 is past i128: an error that names the expression and the type.
        let huge = dec(vec![1, 10i128.pow(30)], None, 38, 0);
        let e = run(
            BinaryOp::Mul,
            Val::Array(huge.clone()),
            Val::Array(huge),
            38,
            0,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("does not fit Decimal128(38, 0)"), "{e}");
        assert!(e.contains("a * b"), "{e}");
    }

    /// Decimal64 operands (the 64-bit form a scan may hand over) give the values, nulls
    /// and types that their Decimal128 casts give, column with column and with literals,
    /// and the same overflow error.
    #[test]
    fn decimal64_operands_compute_as_their_decimal128_casts() {
        use tessera_core::frame::expr::lit;
        let d64 = |values: Vec<Option<i64>>, p: u8| -> ArrayRef {
            let a: arrow_array::Decimal64Array = values.into_iter().collect();
            Arc::new(a.with_precision_and_scale(p, 2).unwrap())
        };
        let price = d64(
            vec![
                Some(123_456_789_012_345),
                None,
                Some(-5),
                Some(0),
                Some(999_999_999_999_999),
            ],
            15,
        );
        let rate = d64(vec![Some(7), Some(10), None, Some(0), Some(3)], 4);
        let wide = dec(
            vec![10i128.pow(30), 1, 2, 3, -(10i128.pow(35))],
            Some(vec![true, true, true, false, true]),
            38,
            2,
        );
        let narrow = RecordBatch::try_from_iter([("p", price), ("r", rate), ("w", wide)]).unwrap();
        let widened =
            RecordBatch::try_from_iter(narrow.schema().fields().iter().zip(narrow.columns()).map(
                |(f, c)| {
                    let t = match f.data_type() {
                        DataType::Decimal64(p, s) => DataType::Decimal128(*p, *s),
                        t => t.clone(),
                    };
                    (f.name().clone(), arrow_cast::cast(c, &t).unwrap())
                },
            ))
            .unwrap();
        let discounted = col("p") * (lit(1) - col("r"));
        for e in [
            discounted.clone(),
            discounted * (lit(1) + col("r")),
            col("p") - col("r"),
            col("r") + col("p"),
            col("p") * col("r"),
            col("p") * lit(0.5),
            lit(3) - col("p"),
            col("p") + col("w"),
            col("w") - col("r"),
        ] {
            let got = eval(&e, &narrow).unwrap().into_array(5).unwrap();
            let want = eval(&e, &widened).unwrap().into_array(5).unwrap();
            assert_eq!(got.data_type(), want.data_type(), "{e}");
            assert_eq!(&got, &want, "{e}");
        }
        // p * w passes i128 on the first row, whatever p's width.
        let e = col("p") * col("w");
        let got = eval(&e, &narrow).map(|_| ()).unwrap_err().to_string();
        let want = eval(&e, &widened).map(|_| ()).unwrap_err().to_string();
        assert_eq!(got, want);
        assert!(got.contains("does not fit"), "{got}");
    }

    #[test]
    fn a_null_slot_never_overflows_and_stays_null() {
        // The null slot holds i128::MAX; doubling it would overflow, but it is null.
        let a = dec(vec![i128::MAX, 4], Some(vec![false, true]), 38, 0);
        let two = dec(vec![2], None, 1, 0);
        for (l, r) in [
            (Val::Array(a.clone()), Val::Scalar(two.clone())),
            (Val::Scalar(two.clone()), Val::Array(a.clone())),
        ] {
            assert_eq!(
                run(BinaryOp::Mul, l, r, 38, 0).unwrap(),
                vec![None, Some(8)]
            );
        }
        let twos = dec(vec![2, 2], None, 1, 0);
        assert_eq!(
            run(
                BinaryOp::Add,
                Val::Array(a.clone()),
                Val::Array(twos),
                38,
                0
            )
            .unwrap(),
            vec![None, Some(6)]
        );
        // A valid slot that overflows is still found when a null one precedes it.
        let b = dec(vec![i128::MAX, i128::MAX], Some(vec![false, true]), 38, 0);
        assert!(run(BinaryOp::Mul, Val::Array(b), Val::Scalar(two), 38, 0).is_err());
        // A null literal makes every row null.
        let null = dec(vec![0], Some(vec![false]), 1, 0);
        assert_eq!(
            run(BinaryOp::Sub, Val::Scalar(null), Val::Array(a), 38, 0).unwrap(),
            vec![None, None]
        );
    }

    #[test]
    fn literal_sides_keep_their_order_and_38_digits_are_checked() {
        let x = dec(vec![5, 100, -20], None, 15, 2);
        let one = dec(vec![100], None, 3, 2);
        // 1 - x and x - 1 at scale 2.
        assert_eq!(
            run(
                BinaryOp::Sub,
                Val::Scalar(one.clone()),
                Val::Array(x.clone()),
                16,
                2
            )
            .unwrap(),
            vec![Some(95), Some(0), Some(120)]
        );
        assert_eq!(
            run(BinaryOp::Sub, Val::Array(x), Val::Scalar(one), 16, 2).unwrap(),
            vec![Some(-95), Some(0), Some(-120)]
        );
        // Two 38-digit values whose sum fits i128 but has 39 digits.
        let nines = 10i128.pow(38) - 1;
        let a = dec(vec![nines], None, 38, 0);
        assert!(run(BinaryOp::Add, Val::Array(a.clone()), Val::Array(a), 38, 0).is_err());
    }

    #[test]
    fn string_view_equality_by_views_matches_arrows_comparison() {
        use arrow_array::builder::StringViewBuilder;
        use arrow_array::StringViewArray;
        let words = [
            "",
            "AIR",
            "twelve bytes",
            "thirteen byte",
            "DELIVER IN PERSON",
            "DELIVER IN PERSONS",
            "DELIVER IN PERSOM",
            "TAKE BACK RETURN",
        ];
        let column: Vec<Option<&str>> = (0..300)
            .map(|i: usize| (i % 11 != 4).then(|| words[(i * 7 + i / 3) % words.len()]))
            .collect();
        // Each long string stored again per row, and stored once with every row's view
        // pointing at it (as a column decoded from a Parquet dictionary is).
        let plain = StringViewArray::from(column.clone());
        let mut shared = StringViewBuilder::new().with_deduplicate_strings();
        shared.extend(column.iter().copied());
        let shared = shared.finish();
        for a in [&plain, &shared] {
            let array = Val::Array(Arc::new(a.clone()));
            for w in words.iter().chain(&["DELIVER", "TAKE BACK RETURNS"]) {
                let scalar = Val::Scalar(Arc::new(StringViewArray::from(vec![*w])));
                let s = Scalar::new(StringViewArray::from(vec![*w]));
                for (op, want) in [
                    (BinaryOp::Eq, arrow_ord::cmp::eq(a, &s).unwrap()),
                    (BinaryOp::NotEq, arrow_ord::cmp::neq(a, &s).unwrap()),
                ] {
                    for (l, r) in [(&array, &scalar), (&scalar, &array)] {
                        let got = view_compare(op, l, r).expect("a view comparison");
                        assert_eq!(got.as_boolean(), &want, "{op:?} {w:?}");
                    }
                }
            }
        }
        // Not for an ordering, nor a null scalar.
        let array = Val::Array(Arc::new(plain.clone()));
        let scalar = Val::Scalar(Arc::new(StringViewArray::from(vec!["AIR"])));
        assert!(view_compare(BinaryOp::Lt, &array, &scalar).is_none());
        let null = Val::Scalar(Arc::new(StringViewArray::from(vec![None::<&str>])));
        assert!(view_compare(BinaryOp::Eq, &array, &null).is_none());
    }

    #[test]
    fn is_in_on_string_views_matches_string_equality() {
        use arrow_array::StringViewArray;
        let words = [
            "",
            "AIR",
            "AIR REG",
            "TRUCK",
            "twelve bytes",
            "thirteen byte",
            "DELIVER IN PERSON",
            "DELIVER IN PERSONS",
            "DELI",
            "a",
            "a\0",
        ];
        let column: Vec<Option<&str>> = (0..200)
            .map(|i: usize| (i % 7 != 3).then(|| words[(i * 31 + i / 5) % words.len()]))
            .collect();
        let a = StringViewArray::from(column.clone());
        let many: Vec<&str> = words.to_vec();
        for wanted in [
            vec!["AIR", "AIR REG"],
            vec!["DELIVER IN PERSON", "", "twelve bytes"],
            vec!["thirteen byte", "a"],
            vec![],
            many,
        ] {
            for null_matches in [false, true] {
                let got = view_is_in(&a, &wanted, null_matches);
                assert_eq!(got.null_count(), 0);
                for (i, v) in column.iter().enumerate() {
                    let want = v.map_or(null_matches, |v| wanted.contains(&v));
                    assert_eq!(got.value(i), want, "row {i} ({v:?}) in {wanted:?}");
                }
            }
        }
    }
}
