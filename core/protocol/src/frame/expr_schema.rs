//! Expression typing: the Arrow type every [`Expr`] yields over a schema, and the rules
//! behind it — numeric promotion (pandas' where Arrow leaves a choice), strings of any
//! layout as one logical type, exact decimals with DuckDB's typing, the common type of
//! `when`/`coalesce`/`clip`, `is_in` operands and casts.
//!
//! Kept apart from the expression tree ([`super::expr`]) as DataFusion keeps
//! `expr_schema.rs` apart from `expr.rs`: one file says what an expression is, this one
//! what type it has. Every backend evaluates to these types, so a plan's schema is known
//! before anything runs.

use arrow_schema::{DataType, Schema, TimeUnit};

use super::expr::{BinaryOp, DatePart, Expr, Literal};
use super::temporal::{elapsed_type, offset_type, truncate_type};
use crate::error::{Error, Result};

impl Expr {
    /// The Arrow type this expression yields over `schema`; an unknown column or an
    /// operator applied to the wrong types is an [`Error::Invalid`] naming both.
    pub fn data_type(&self, schema: &Schema) -> Result<DataType> {
        match self {
            Expr::Column(c) => schema
                .field_with_name(c)
                .map(|f| f.data_type().clone())
                .map_err(|_| unknown_column(c, schema)),
            Expr::Literal(l) => Ok(literal_type(l)),
            Expr::Binary { op, left, right } => {
                let lt = left.data_type(schema)?;
                let rt = right.data_type(schema)?;
                Ok(binary_types(*op, left, &lt, right, &rt)
                    .map_err(|why| Error::invalid("expression", format!("{self}: {why}")))?
                    .1)
            }
            Expr::Not(e) => {
                let t = e.data_type(schema)?;
                if t != DataType::Boolean && t != DataType::Null {
                    return Err(Error::invalid(
                        "expression",
                        format!("{self}: `!` needs a boolean, got {t}"),
                    ));
                }
                Ok(DataType::Boolean)
            }
            Expr::Negate(e) => {
                let t = e.data_type(schema)?;
                if !t.is_numeric() {
                    return Err(Error::invalid(
                        "expression",
                        format!("{self}: `-` needs a number, got {t}"),
                    ));
                }
                Ok(t)
            }
            Expr::IsNull(e) | Expr::IsNotNull(e) | Expr::IsNan(e) => {
                e.data_type(schema)?;
                Ok(DataType::Boolean)
            }
            Expr::FillNull { expr, value } => {
                let t = expr.data_type(schema)?;
                value.data_type(schema)?;
                Ok(t)
            }
            Expr::Cast { expr, to } => {
                let from = expr.data_type(schema)?;
                if !castable(&from, to) {
                    return Err(Error::invalid(
                        "cast",
                        format!("{self}: cannot cast {from} to {to}"),
                    ));
                }
                Ok(to.clone())
            }
            Expr::Contains { expr, .. } => {
                let t = expr.data_type(schema)?;
                if !is_string(&t) {
                    return Err(Error::invalid(
                        "contains",
                        format!("{self}: needs a string column, got {t}"),
                    ));
                }
                Ok(DataType::Boolean)
            }
            Expr::DatePart { expr, part } => {
                let t = expr.data_type(schema)?;
                let ok = match t {
                    DataType::Timestamp(_, _) => true,
                    DataType::Date32 | DataType::Date64 => {
                        !matches!(part, DatePart::Hour | DatePart::Minute | DatePart::Second)
                    }
                    _ => false,
                };
                if !ok {
                    return Err(Error::invalid(
                        part.name(),
                        format!("{self}: needs a timestamp (or a date for year..weekday), got {t}; parse the column with `parse_dates` or cast it"),
                    ));
                }
                Ok(DataType::Int32)
            }
            Expr::Math { func, expr } => {
                let t = expr.data_type(schema)?;
                func.result_type(&t).ok_or_else(|| {
                    Error::invalid(
                        func.name(),
                        format!("{self}: needs an integer or float column, got {t}"),
                    )
                })
            }
            Expr::IsIn { expr, values } => {
                is_in_operand(expr, &expr.data_type(schema)?, values)
                    .map_err(|why| Error::invalid("is_in", format!("{self}: {why}")))?;
                Ok(DataType::Boolean)
            }
            Expr::Str { func, expr } => {
                let t = expr.data_type(schema)?;
                if !(is_string(&t) || t == DataType::Null) {
                    return Err(Error::invalid(
                        func.name(),
                        format!("{self}: needs a string column, got {t}"),
                    ));
                }
                func.check()
                    .map_err(|why| Error::invalid(func.name(), format!("{self}: {why}")))?;
                Ok(func.result_type())
            }
            Expr::When {
                branches,
                otherwise,
            } => {
                for (c, _) in branches {
                    let t = c.data_type(schema)?;
                    if !matches!(t, DataType::Boolean | DataType::Null) {
                        return Err(Error::invalid(
                            "when",
                            format!("{self}: the condition {c} is {t}; it must be Boolean"),
                        ));
                    }
                }
                let values: Vec<&Expr> = branches
                    .iter()
                    .map(|(_, v)| v)
                    .chain([&**otherwise])
                    .collect();
                common_type(&values, schema)
                    .map_err(|why| Error::invalid("when", format!("{self}: {why}")))
            }
            Expr::Coalesce(values) => {
                if values.is_empty() {
                    return Err(Error::invalid("coalesce", "needs at least one value"));
                }
                let values: Vec<&Expr> = values.iter().collect();
                common_type(&values, schema)
                    .map_err(|why| Error::invalid("coalesce", format!("{self}: {why}")))
            }
            Expr::Clip { expr, lower, upper } => {
                let t = common_type(&[expr, lower, upper], schema)
                    .map_err(|why| Error::invalid("clip", format!("{self}: {why}")))?;
                if !t.is_numeric() {
                    return Err(Error::invalid(
                        "clip",
                        format!("{self}: needs numbers, got {t}"),
                    ));
                }
                Ok(t)
            }
            Expr::Pow { base, exponent } => {
                for e in [base, exponent] {
                    let t = e.data_type(schema)?;
                    if !t.is_numeric() && t != DataType::Null {
                        return Err(Error::invalid(
                            "pow",
                            format!("{self}: needs numbers, got {t} for {e}"),
                        ));
                    }
                }
                Ok(DataType::Float64)
            }
            Expr::Offset { expr, interval } => offset_type(&expr.data_type(schema)?, interval)
                .map_err(|why| Error::invalid("offset_by", format!("{self}: {why}"))),
            Expr::Elapsed { end, start, unit } => {
                elapsed_type(&end.data_type(schema)?, &start.data_type(schema)?, *unit)
                    .map_err(|why| Error::invalid("elapsed_since", format!("{self}: {why}")))
            }
            Expr::Truncate { expr, unit } => truncate_type(&expr.data_type(schema)?, *unit)
                .map_err(|why| Error::invalid("truncate", format!("{self}: {why}"))),
        }
    }
}

/// True for the types users see as one logical string type: `Utf8`, `LargeUtf8`,
/// `Utf8View` (what Polars, pyarrow and DuckDB write for strings), and dictionaries of them
/// (categoricals). Comparisons, `isin`, joins' keys and string functions accept any of them,
/// mixed; the values are compared as text.
pub fn is_string(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, v) => is_string(v),
        _ => false,
    }
}

/// `Ok` when the string literal `e` names an instant
/// ([`parse_instant`](super::instant_text::parse_instant)), else why not.
fn instant_literal(e: &Expr) -> std::result::Result<(), String> {
    match e {
        Expr::Literal(Literal::Str(s)) if super::instant_text::parse_instant(s).is_none() => {
            Err(format!(
                "{s:?} is not a date or time; write it as 2015-01-10, 2015-01-10 08:30 or 2015-01-10 08:30:15.5"
            ))
        }
        _ => Ok(()),
    }
}

/// The type two different string types meet at: the column's own when the other side is
/// a literal and the column is not a dictionary (the literal is cast, the column is not
/// copied), else `Utf8`.
fn string_meet(lt: &DataType, left: &Expr, rt: &DataType, right: &Expr) -> DataType {
    let plain = |t: &DataType| !matches!(t, DataType::Dictionary(_, _));
    if matches!(right, Expr::Literal(Literal::Str(_))) && plain(lt) {
        lt.clone()
    } else if matches!(left, Expr::Literal(Literal::Str(_))) && plain(rt) {
        rt.clone()
    } else {
        DataType::Utf8
    }
}

/// The one type `values` share: the columns' type (integers mixed with floats become
/// Float64, integers of different widths Int64), which number literals adapt to — an
/// integer literal takes a numeric column's type, a float literal makes an integer type
/// Float64 — and which a null literal takes.
///
/// # Errors
/// Which values cannot share a type.
pub fn common_type(values: &[&Expr], schema: &Schema) -> Result<DataType> {
    let clash = |a: &DataType, b: &DataType| {
        Error::invalid(
            "expression",
            format!("values of types {a} and {b} have no common type"),
        )
    };
    let widen = |a: DataType, b: DataType| -> Result<DataType> {
        Ok(if a == b {
            a
        } else if let (DataType::Decimal128(_, s1), DataType::Decimal128(_, s2)) = (&a, &b) {
            DataType::Decimal128(DECIMAL128_MAX_PRECISION, *s1.max(s2))
        } else if a.is_numeric() && b.is_numeric() {
            if a.is_floating() || b.is_floating() || is_decimal(&a) || is_decimal(&b) {
                DataType::Float64
            } else {
                DataType::Int64
            }
        } else if is_string(&a) && is_string(&b) {
            DataType::Utf8
        } else {
            return Err(clash(&a, &b));
        })
    };
    let mut t: Option<DataType> = None;
    for v in values.iter().filter(|v| !matches!(v, Expr::Literal(_))) {
        let vt = v.data_type(schema)?;
        if vt == DataType::Null {
            continue;
        }
        t = Some(match t {
            None => vt,
            Some(p) => widen(p, vt)?,
        });
    }
    for v in values {
        let Expr::Literal(l) = v else { continue };
        t = Some(match (t, l) {
            (t, Literal::Null) => t.unwrap_or(DataType::Null),
            (Some(p), Literal::Int(_)) if p.is_numeric() => p,
            (Some(p), Literal::Float(_)) if p.is_floating() => p,
            (Some(p), Literal::Float(_)) if p.is_numeric() => DataType::Float64,
            (Some(p), Literal::Str(_))
                if matches!(p, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) =>
            {
                p
            }
            (Some(p), Literal::Str(_)) if is_string(&p) => DataType::Utf8,
            (Some(p), Literal::Str(_))
                if matches!(p, DataType::Timestamp(_, _) | DataType::Date32) =>
            {
                p
            }
            (Some(p), l) => widen(p, literal_type(l))?,
            (None, l) => literal_type(l),
        });
    }
    Ok(t.unwrap_or(DataType::Null))
}

/// The type `expr is_in values` compares in: the operand type of `expr == value` for every
/// non-null value (they must all agree with the column's type).
///
/// # Errors
/// Why a value cannot be compared with the column.
pub fn is_in_operand(
    expr: &Expr,
    t: &DataType,
    values: &[Literal],
) -> std::result::Result<DataType, String> {
    let mut operand: Option<DataType> = None;
    for v in values.iter().filter(|v| **v != Literal::Null) {
        let (op_type, _) = binary_types(
            BinaryOp::Eq,
            expr,
            t,
            &Expr::Literal(v.clone()),
            &literal_type(v),
        )
        .map_err(|why| format!("value {v}: {why}"))?;
        operand = Some(match operand {
            None => op_type,
            Some(o) if o == op_type => o,
            // Integers and floats in one list: compare in the wider type.
            Some(o) if o.is_numeric() && op_type.is_numeric() => DataType::Float64,
            Some(o) => return Err(format!("values of types {o} and {op_type} in one list")),
        });
    }
    Ok(operand.unwrap_or_else(|| t.clone()))
}

/// The Arrow type of a literal on its own.
pub fn literal_type(l: &Literal) -> DataType {
    match l {
        Literal::Null => DataType::Null,
        Literal::Bool(_) => DataType::Boolean,
        Literal::Int(_) => DataType::Int64,
        Literal::Float(_) => DataType::Float64,
        Literal::Str(_) => DataType::Utf8,
    }
}

fn unknown_column(name: &str, schema: &Schema) -> Error {
    Error::invalid(
        "column",
        format!(
            "no column '{name}'; columns: {}",
            schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

pub(crate) fn is_int(t: &DataType) -> bool {
    t.is_integer()
}

/// The common numeric type of two operands, pandas-style: same type stays; two integers
/// widen to Int64 (UInt64 when both unsigned); any float gives Float64 (Float32 when both
/// are Float32).
fn numeric_common(l: &DataType, r: &DataType) -> Option<DataType> {
    if !l.is_numeric() || !r.is_numeric() {
        return None;
    }
    if l == r {
        return Some(l.clone());
    }
    if is_int(l) && is_int(r) {
        let unsigned = l.is_unsigned_integer() && r.is_unsigned_integer();
        return Some(if unsigned {
            DataType::UInt64
        } else {
            DataType::Int64
        });
    }
    Some(DataType::Float64)
}

/// How a binary operation with a decimal operand computes: each side's cast, the type
/// both meet in ([`binary_types`]' operand), and the result.
///
/// Exact decimal arithmetic follows DuckDB's typing (and SQL Server's): `+` and `-` give
/// the larger scale and one more integer digit; `*` adds the scales and precisions;
/// precision stops at 38 (values that then overflow are an error, not a wrap). An
/// integer operand is a decimal of scale 0. `/` and `%`, and anything with a float or a
/// 256-bit decimal, compute in Float64 (DuckDB's `/` of decimals is a DOUBLE too).
/// Comparisons meet at precision 38 and the larger scale, exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct DecimalPlan {
    /// The left operand's cast.
    pub left: DataType,
    /// The right operand's cast.
    pub right: DataType,
    /// The type both meet in (for comparisons and `+`/`-`: both are cast to it).
    pub operand: DataType,
    /// The result.
    pub result: DataType,
}

/// The most digits a Decimal128 holds.
pub const DECIMAL128_MAX_PRECISION: u8 = 38;

/// The type of a sum of values of type `t` (the `sum` aggregation's, a running sum's):
/// Int64 for signed integers and booleans, UInt64 for unsigned ones, Float64 for floats
/// and 256-bit decimals, and Decimal128(38, s) for a Decimal128 (or a Decimal64, the
/// 64-bit form of a decimal of up to 18 digits) of scale s — DuckDB's
/// `SUM(DECIMAL(p, s))`, exact, an overflow an error.
pub fn sum_type(t: &DataType) -> DataType {
    if let DataType::Decimal128(_, s) | DataType::Decimal64(_, s) = t {
        DataType::Decimal128(DECIMAL128_MAX_PRECISION, *s)
    } else if matches!(t, DataType::Decimal256(_, _)) || t.is_floating() {
        DataType::Float64
    } else if t.is_unsigned_integer() {
        DataType::UInt64
    } else {
        DataType::Int64
    }
}

/// `(precision, scale)` of an operand as an exact decimal: a Decimal128, an integer
/// column (scale 0, its type's digits), an integer literal (its own digits), or a float
/// literal as the decimal it is written as (`0.05` is 5 at scale 2: DuckDB's reading of
/// `0.05`, so `discount <= 0.07` compares exactly).
fn as_decimal(e: &Expr, t: &DataType) -> Option<(u8, i8)> {
    let digits = |v: u128| v.checked_ilog10().map_or(1, |d| d as u8 + 1);
    match (e, t) {
        (_, DataType::Decimal128(p, s) | DataType::Decimal64(p, s)) => Some((*p, *s)),
        (Expr::Literal(Literal::Int(v)), _) => Some((digits(u128::from(v.unsigned_abs())), 0)),
        (Expr::Literal(Literal::Float(v)), _) => {
            if !v.is_finite() {
                return None;
            }
            // Rust prints the shortest text that reads back as `v`, never in exponent form.
            let text = format!("{}", v.abs());
            let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
            let unscaled: u128 = format!("{whole}{frac}").parse().ok()?;
            let scale = u8::try_from(frac.len()).ok()?;
            let p = digits(unscaled).max(scale);
            (p <= DECIMAL128_MAX_PRECISION).then_some((p, scale as i8))
        }
        (_, DataType::Int8 | DataType::UInt8) => Some((3, 0)),
        (_, DataType::Int16 | DataType::UInt16) => Some((5, 0)),
        (_, DataType::Int32 | DataType::UInt32) => Some((10, 0)),
        (_, DataType::Int64) => Some((19, 0)),
        (_, DataType::UInt64) => Some((20, 0)),
        _ => None,
    }
}

/// Decimal(p, s) brought to scale `to` (>= s) without losing a digit: its precision grows
/// by the digits added (up to 38).
fn rescaled(p: u8, s: i8, to: i8) -> DataType {
    let p = (i16::from(p) + i16::from(to) - i16::from(s)).clamp(1, 38) as u8;
    DataType::Decimal128(p, to)
}

fn is_decimal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Decimal64(_, _) | DataType::Decimal128(_, _) | DataType::Decimal256(_, _)
    )
}

/// The plan of `left op right` when one side is a decimal (`None` otherwise, or when the
/// other side is not a number: the general rules then report it).
pub fn decimal_types(
    op: BinaryOp,
    left: &Expr,
    lt: &DataType,
    right: &Expr,
    rt: &DataType,
) -> Option<std::result::Result<DecimalPlan, String>> {
    if !(is_decimal(lt) || is_decimal(rt)) || matches!(op, BinaryOp::And | BinaryOp::Or) {
        return None;
    }
    let float_lit = |e: &Expr| matches!(e, Expr::Literal(Literal::Float(_)));
    let numeric = |e: &Expr, t: &DataType| t.is_numeric() || float_lit(e);
    if !(numeric(left, lt) && numeric(right, rt)) {
        return None;
    }
    let result = if op.is_comparison() {
        DataType::Boolean
    } else {
        DataType::Float64
    };
    let floats = DecimalPlan {
        left: DataType::Float64,
        right: DataType::Float64,
        operand: DataType::Float64,
        result: result.clone(),
    };
    let (Some((p1, s1)), Some((p2, s2))) = (as_decimal(left, lt), as_decimal(right, rt)) else {
        return Some(Ok(floats));
    };
    let max = DECIMAL128_MAX_PRECISION;
    Some(Ok(match op {
        // Both sides at the larger scale; a side already there is not cast (a column
        // compared with a literal stays as it is, the literal is cast).
        _ if op.is_comparison() => {
            let s = s1.max(s2);
            let (l, r) = (rescaled(p1, s1, s), rescaled(p2, s2, s));
            let wide = |t: &DataType| match t {
                DataType::Decimal128(p, _) => *p,
                _ => max,
            };
            let operand = DataType::Decimal128(wide(&l).max(wide(&r)), s);
            DecimalPlan {
                left: operand.clone(),
                right: operand.clone(),
                operand,
                result: DataType::Boolean,
            }
        }
        BinaryOp::Add | BinaryOp::Sub => {
            let s = s1.max(s2);
            let whole = (p1 as i16 - s1 as i16).max(p2 as i16 - s2 as i16);
            let p = (whole + s as i16 + 1).clamp(1, max as i16) as u8;
            let result = DataType::Decimal128(p, s);
            DecimalPlan {
                left: rescaled(p1, s1, s),
                right: rescaled(p2, s2, s),
                operand: result.clone(),
                result,
            }
        }
        BinaryOp::Mul => {
            let s = s1 as i16 + s2 as i16;
            if s > max as i16 {
                return Some(Err(format!(
                    "the product of decimals of scales {s1} and {s2} has scale {s}, more than {max} digits; cast a side to Float64"
                )));
            }
            let p = (p1 as u16 + p2 as u16).min(max as u16) as u8;
            DecimalPlan {
                left: DataType::Decimal128(p1, s1),
                right: DataType::Decimal128(p2, s2),
                operand: DataType::Decimal128(p, s as i8),
                result: DataType::Decimal128(p, s as i8),
            }
        }
        _ => floats,
    }))
}

/// The type both operands of `op` are cast to, and the result type. A numeric literal
/// takes the other side's numeric type (a float literal against an integer column widens
/// to Float64). Errors say which types met.
pub fn binary_types(
    op: BinaryOp,
    left: &Expr,
    lt: &DataType,
    right: &Expr,
    rt: &DataType,
) -> std::result::Result<(DataType, DataType), String> {
    let is_lit = |e: &Expr| matches!(e, Expr::Literal(Literal::Int(_) | Literal::Float(_)));
    let lit_fits = |e: &Expr, other: &DataType| match e {
        Expr::Literal(Literal::Int(_)) => other.is_numeric(),
        Expr::Literal(Literal::Float(_)) => other.is_floating(),
        _ => false,
    };
    // Null literals take the other side's type.
    let (lt, rt) = match (lt, rt) {
        (DataType::Null, r) => (r.clone(), r.clone()),
        (l, DataType::Null) => (l.clone(), l.clone()),
        (l, r) => (l.clone(), r.clone()),
    };
    if let Some(plan) = decimal_types(op, left, &lt, right, &rt) {
        let plan = plan?;
        return Ok((plan.operand, plan.result));
    }
    let operand = if lt == rt || (is_lit(right) && lit_fits(right, &lt)) {
        lt.clone()
    } else if is_lit(left) && lit_fits(left, &rt) {
        rt.clone()
    } else if matches!(lt, DataType::Timestamp(_, _) | DataType::Date32)
        && matches!(right, Expr::Literal(Literal::Str(_)))
    {
        // `col("pickup") >= lit("2015-01-10")`: the string is parsed as a timestamp/date.
        instant_literal(right)?;
        lt.clone()
    } else if matches!(rt, DataType::Timestamp(_, _) | DataType::Date32)
        && matches!(left, Expr::Literal(Literal::Str(_)))
    {
        instant_literal(left)?;
        rt.clone()
    } else if let (DataType::Timestamp(u1, z1), DataType::Timestamp(u2, z2)) = (&lt, &rt) {
        if z1 != z2 {
            return Err(format!("timestamps in different time zones ({lt} vs {rt})"));
        }
        let _ = (u1, u2);
        DataType::Timestamp(TimeUnit::Nanosecond, z1.clone())
    } else if is_string(&lt) && is_string(&rt) {
        string_meet(&lt, left, &rt, right)
    } else if let Some(t) = numeric_common(&lt, &rt) {
        t
    } else {
        return Err(format!(
            "`{}` cannot combine {lt} and {rt}; cast one side",
            op.symbol()
        ));
    };
    let result = if op.is_comparison() {
        let ordered = operand.is_numeric()
            || matches!(
                operand,
                DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
                    | DataType::Boolean
                    | DataType::Timestamp(_, _)
                    | DataType::Date32
                    | DataType::Date64
            );
        if !ordered {
            return Err(format!("cannot compare {operand}"));
        }
        DataType::Boolean
    } else if matches!(op, BinaryOp::And | BinaryOp::Or) {
        if operand != DataType::Boolean {
            return Err(format!(
                "`{}` needs booleans, got {lt} and {rt}",
                op.symbol()
            ));
        }
        DataType::Boolean
    } else {
        if !operand.is_numeric() {
            return Err(format!(
                "`{}` needs numbers, got {lt} and {rt}",
                op.symbol()
            ));
        }
        if op == BinaryOp::Div && is_int(&operand) {
            // True division, as in pandas.
            return Ok((DataType::Float64, DataType::Float64));
        }
        operand.clone()
    };
    Ok((operand, result))
}

/// The cast typing rule: between two scalar types (null, boolean, integers, floats,
/// decimals, strings, dates, times, timestamps, durations), or to the same type; from
/// strings to a categorical (a dictionary of strings with integer codes) and from a
/// categorical as its values. Nested types cast only to themselves. A backend whose kernel cannot perform an accepted cast
/// for particular values reports that when it runs (e.g. `"abc"` to Int64).
pub fn castable(from: &DataType, to: &DataType) -> bool {
    fn scalar(t: &DataType) -> bool {
        t.is_primitive()
            || matches!(
                t,
                DataType::Null
                    | DataType::Boolean
                    | DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
            )
    }
    match (from, to) {
        // A categorical casts as its values do.
        (DataType::Dictionary(_, values), _) if !matches!(to, DataType::Dictionary(_, _)) => {
            castable(values, to)
        }
        // To a categorical: strings, and other categoricals of strings (re-keyed).
        (_, DataType::Dictionary(key, values)) => {
            key.is_integer()
                && is_string(values)
                && !matches!(**values, DataType::Dictionary(_, _))
                && is_string(from)
        }
        _ => from == to || (scalar(from) && scalar(to)),
    }
}
