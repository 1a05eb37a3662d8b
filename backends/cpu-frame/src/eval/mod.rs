//! Evaluating column expressions over an Arrow `RecordBatch` with arrow's compute
//! kernels. Types follow core's rules ([`binary_types`]): both operands are cast to the
//! operand type core chose, so every backend agrees on the result type. Literals stay
//! length-1 "scalar" datums until a projection needs a full column.
//!
//! One file per family: `decimal` (exact decimal arithmetic), `math` (functions, `clip`,
//! `is_nan`), `strings` (string functions and string-view comparisons), `is_in`
//! (membership); the dispatcher, [`eval`], and the column/scalar value ([`Val`]) are here.

mod decimal;
mod is_in;
mod math;
mod strings;

use std::sync::Arc;

use crate::keys::groups::canonical_floats;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Date32Array, Datum, Float64Array, Int64Array,
    RecordBatch, Scalar, StringArray, UInt32Array,
};
use arrow_schema::{DataType, TimeUnit};
use decimal::decimal_binary;
use is_in::is_in;
use math::{clip, is_nan, math, nan_as_null};
use strings::{string_fn, view_compare};
use tessera_core::frame::expr::{binary_types, is_in_operand, BinaryOp, DatePart, Expr, Literal};
use tessera_core::frame::instant_text::parse_instant;
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

/// `e` evaluated over `batch` in the type `operand`; text naming an instant becomes that
/// instant directly ([`parse_instant`]), so `2015-01-10 08:30` compares as pandas reads it
/// (Arrow's cast reads fewer forms; typing has refused text naming none).
fn operand_value(e: &Expr, batch: &RecordBatch, operand: &DataType) -> Result<Val> {
    if let Expr::Literal(Literal::Str(s)) = e {
        if let Some(nanos) = parse_instant(s) {
            let a: Option<ArrayRef> = match operand {
                DataType::Timestamp(unit, None) => {
                    let v = match unit {
                        TimeUnit::Second => nanos.div_euclid(1_000_000_000),
                        TimeUnit::Millisecond => nanos.div_euclid(1_000_000),
                        TimeUnit::Microsecond => nanos.div_euclid(1_000),
                        TimeUnit::Nanosecond => nanos,
                    };
                    Some(cast_to(
                        &(Arc::new(Int64Array::from(vec![v])) as ArrayRef),
                        operand,
                    )?)
                }
                DataType::Date32 => Some(Arc::new(Date32Array::from(vec![nanos
                    .div_euclid(86_400_000_000_000)
                    as i32]))),
                _ => None,
            };
            if let Some(a) = a {
                return Ok(Val::Scalar(a));
            }
        }
    }
    eval(e, batch)?.map(|a| cast_to(a, operand))
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
            let mut l = operand_value(left, batch, &operand)?;
            let mut r = operand_value(right, batch, &operand)?;
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
            if let [(Expr::IsNan(x), Expr::Literal(Literal::Null))] = branches.as_slice() {
                if x == otherwise && t.is_floating() {
                    return eval(otherwise, batch)?.map(|a| Ok(nan_as_null(&cast_to(a, &t)?)));
                }
            }
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

/// The plain string types (not dictionaries).
fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
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
    let out: arrow_array::Int32Array = ts
        .unary::<_, arrow_array::types::Int32Type>(|v| v.div_euclid(div).rem_euclid(modulo) as i32);
    Some(Arc::new(out))
}

#[cfg(test)]
mod tests {
    use super::decimal::{decimal_arith, fits_digits};
    use super::is_in::view_is_in;
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Decimal128Type;
    use arrow_array::Decimal128Array;
    use arrow_buffer::NullBuffer;
    use arrow_buffer::ScalarBuffer;
    use tessera_core::frame::expr::col;
    use tessera_core::frame::expr::StrFunc;

    /// The integer path for hours, minutes and seconds of microsecond timestamps agrees
    /// with arrow's calendar before 1970 too (a second before the epoch is 23:59:59).
    #[test]
    fn time_parts_before_the_epoch_match_arrow() {
        use arrow_array::TimestampMicrosecondArray;
        let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            -1,
            -1_000_000,
            -3_600_000_001,
            -86_400_000_000 * 400 - 7,
            0,
            45_296_000_123,
        ]));
        for (part, arrow_part) in [
            (DatePart::Hour, arrow_arith::temporal::DatePart::Hour),
            (DatePart::Minute, arrow_arith::temporal::DatePart::Minute),
            (DatePart::Second, arrow_arith::temporal::DatePart::Second),
        ] {
            let fast = fast_time_part(&a, part).unwrap();
            let want = arrow_arith::temporal::date_part(&a, arrow_part).unwrap();
            assert_eq!(fast.to_data(), want.to_data(), "{}", part.name());
        }
    }

    /// `when(x.is_nan()).then(null).otherwise(x)` takes the bitmap path, which agrees
    /// with the general `when` (a condition the fast path does not recognize) value for
    /// value, on floats of both widths, with and without nulls.
    #[test]
    fn nan_as_null_agrees_with_the_general_when() {
        use arrow_array::{Float32Array, Float64Array};
        use tessera_core::frame::expr::{lit, when};
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(vec![
                Some(1.5),
                Some(f64::NAN),
                None,
                Some(-0.0),
                Some(f64::NAN),
            ])),
            Arc::new(Float64Array::from(vec![1.5, 2.5, 3.5])),
            Arc::new(Float32Array::from(vec![Some(f32::NAN), None, Some(2.0)])),
        ];
        for a in cols {
            let b = RecordBatch::try_from_iter([("x", a.clone())]).unwrap();
            let fast = when(col("x").is_nan())
                .then(lit(Literal::Null))
                .otherwise(col("x"));
            // The same function spelled so the fast path does not match it.
            let general = when(col("x").is_nan().and(lit(true)))
                .then(lit(Literal::Null))
                .otherwise(col("x"));
            let f = eval(&fast, &b).unwrap().into_array(a.len()).unwrap();
            let g = eval(&general, &b).unwrap().into_array(a.len()).unwrap();
            assert_eq!(f.data_type(), g.data_type());
            assert_eq!(f.logical_nulls(), g.logical_nulls(), "{a:?}");
            let (fv, gv) = (
                cast_to(&f, &DataType::Float64).unwrap(),
                cast_to(&g, &DataType::Float64).unwrap(),
            );
            let (fv, gv) = (
                fv.as_primitive::<arrow_array::types::Float64Type>(),
                gv.as_primitive::<arrow_array::types::Float64Type>(),
            );
            for i in 0..a.len() {
                if fv.is_valid(i) {
                    assert_eq!(
                        fv.value(i).to_bits(),
                        gv.value(i).to_bits(),
                        "row {i} of {a:?}"
                    );
                }
            }
            assert_eq!(
                f.null_count(),
                a.null_count()
                    + (0..a.len())
                        .filter(|&i| a.is_valid(i)
                            && cast_to(&a, &DataType::Float64)
                                .unwrap()
                                .as_primitive::<arrow_array::types::Float64Type>()
                                .value(i)
                                .is_nan())
                        .count()
            );
        }
    }

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
