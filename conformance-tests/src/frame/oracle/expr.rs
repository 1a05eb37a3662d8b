//! Expressions interpreted one row at a time, with the oracle's own typing.
//!
//! The rules are the protocol's as its documentation states them, written again from
//! that text (pandas' typing where Arrow leaves a choice, DuckDB's where pandas has
//! none): `/` on integers is true division, integers of two widths meet in Int64, an
//! integer literal takes a numeric column's type and a float literal makes an integer
//! Float64; integer arithmetic wraps in the result's width; comparisons order NaN above
//! every number and equal to itself, `-0.0` equal to `0.0` (DuckDB's order), and give null
//! where an operand is null; `&` and `|` are Kleene's; positions in strings count
//! characters.

use tessera_core::frame::expr::{BinaryOp, DatePart, Expr, Literal, MathFunc, StrFunc};
use tessera_core::frame::{DateUnit, Interval};

use super::calendar::{self, US_PER_DAY};
use super::value::{Cell, Table, Ty, Value};

/// What the oracle says of an expression it cannot evaluate.
pub type Oops = String;

/// An expression's type over `t`.
///
/// # Errors
/// An unknown column, or an expression outside what the oracle models.
pub fn type_of(e: &Expr, t: &Table) -> Result<Ty, Oops> {
    Ok(match e {
        Expr::Column(c) => t.column(c)?.ty,
        Expr::Literal(l) => literal_ty(l),
        Expr::Binary { op, left, right } => {
            let (lt, rt) = (type_of(left, t)?, type_of(right, t)?);
            if let Some(d) = decimal_result(*op, left, lt, right, rt) {
                return Ok(d);
            }
            match op {
                BinaryOp::And | BinaryOp::Or => Ty::Bool,
                op if op.is_comparison() => {
                    operand(left, lt, right, rt)?;
                    Ty::Bool
                }
                BinaryOp::Div => {
                    operand(left, lt, right, rt)?;
                    Ty::Float64
                }
                _ => operand(left, lt, right, rt)?,
            }
        }
        Expr::Not(_)
        | Expr::IsNull(_)
        | Expr::IsNotNull(_)
        | Expr::IsNan(_)
        | Expr::Contains { .. }
        | Expr::IsIn { .. } => Ty::Bool,
        Expr::Negate(x) | Expr::FillNull { expr: x, .. } => type_of(x, t)?,
        Expr::Cast { to, .. } => Ty::of(to)?,
        Expr::DatePart { .. } => Ty::Int32,
        Expr::Math { func, expr } => {
            let it = type_of(expr, t)?;
            match func {
                MathFunc::Sqrt | MathFunc::Exp | MathFunc::Ln => Ty::Float64,
                _ => it,
            }
        }
        Expr::Str { func, .. } => match func {
            StrFunc::StartsWith(_)
            | StrFunc::EndsWith(_)
            | StrFunc::Like(_)
            | StrFunc::Matches(_) => Ty::Bool,
            StrFunc::Len => Ty::Int64,
            StrFunc::Split(_) => Ty::ListUtf8,
            _ => Ty::Utf8,
        },
        Expr::When {
            branches,
            otherwise,
        } => {
            let values: Vec<&Expr> = branches
                .iter()
                .map(|(_, v)| v)
                .chain([&**otherwise])
                .collect();
            common(&values, t)?
        }
        Expr::Coalesce(values) => common(&values.iter().collect::<Vec<_>>(), t)?,
        Expr::Clip { expr, lower, upper } => common(&[expr, lower, upper], t)?,
        Expr::Pow { .. } => Ty::Float64,
        Expr::Offset { expr, .. } | Expr::Truncate { expr, .. } => type_of(expr, t)?,
        Expr::Elapsed { .. } => Ty::Int64,
    })
}

/// The decimal `(precision, scale)` an operand takes part in decimal arithmetic as: its
/// own; an integer literal's digits at scale 0 (as DuckDB types integer literals); an
/// integer column's full width at scale 0 (INTEGER is DECIMAL(10, 0), BIGINT 19 digits).
fn as_decimal(e: &Expr, t: Ty) -> Option<(u8, i8)> {
    match (e, t) {
        (_, Ty::Decimal(p, s)) => Some((p, s)),
        (Expr::Literal(Literal::Int(v)), _) => Some((
            v.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1) as u8,
            0,
        )),
        (_, Ty::Int32) => Some((10, 0)),
        (_, Ty::Int64) => Some((19, 0)),
        _ => None,
    }
}

/// The type of `left op right` when a decimal meets a decimal or an integer, by DuckDB's
/// rules:
/// `+`/`-` keep the larger scale and one more integer digit, `*` adds precisions and
/// scales (38 digits at most), `/` and `%` are Float64, comparisons Bool. `None` when
/// neither side is a decimal.
fn decimal_result(op: BinaryOp, left: &Expr, l: Ty, right: &Expr, r: Ty) -> Option<Ty> {
    if !matches!(l, Ty::Decimal(..)) && !matches!(r, Ty::Decimal(..)) {
        return None;
    }
    let ((p1, s1), (p2, s2)) = (as_decimal(left, l)?, as_decimal(right, r)?);
    Some(match op {
        BinaryOp::Add | BinaryOp::Sub => {
            let s = s1.max(s2);
            let int = (p1 as i16 - s1 as i16).max(p2 as i16 - s2 as i16);
            Ty::Decimal((int + s as i16 + 1).min(38) as u8, s)
        }
        BinaryOp::Mul => Ty::Decimal((p1 + p2).min(38), s1 + s2),
        BinaryOp::Div | BinaryOp::Rem => Ty::Float64,
        _ => Ty::Bool,
    })
}

/// A decimal or integer value as an unscaled integer at `scale` (its own scale `from`).
fn rescale(v: &Value, from: i8, scale: i8) -> Option<i128> {
    let x = match v {
        Value::Dec(d) => *d,
        Value::Int(i) => i128::from(*i),
        _ => return None,
    };
    x.checked_mul(10i128.checked_pow(u32::try_from(scale - from).ok()?)?)
}

/// `a op b` where one side is a decimal (see [`decimal_result`]), exactly.
fn decimal_arithmetic(
    op: BinaryOp,
    a: &Value,
    lt: Ty,
    b: &Value,
    rt: Ty,
    out: Ty,
) -> Result<Cell, Oops> {
    let scale_of = |t: Ty| match t {
        Ty::Decimal(_, s) => s,
        _ => 0,
    };
    let (s1, s2) = (scale_of(lt), scale_of(rt));
    let overflow = || format!("{a:?} {op:?} {b:?} overflows 128 bits");
    Ok(Some(match (op, out) {
        (BinaryOp::Add | BinaryOp::Sub, Ty::Decimal(_, s)) => {
            let (x, y) = (
                rescale(a, s1, s).ok_or_else(overflow)?,
                rescale(b, s2, s).ok_or_else(overflow)?,
            );
            Value::Dec(
                if op == BinaryOp::Add {
                    x.checked_add(y)
                } else {
                    x.checked_sub(y)
                }
                .ok_or_else(overflow)?,
            )
        }
        (BinaryOp::Mul, Ty::Decimal(..)) => {
            let (x, y) = (
                rescale(a, s1, s1).ok_or_else(overflow)?,
                rescale(b, s2, s2).ok_or_else(overflow)?,
            );
            Value::Dec(x.checked_mul(y).ok_or_else(overflow)?)
        }
        (_, Ty::Float64) => {
            let f =
                |v: &Value, s: i8| rescale(v, s, s).map(|x| x as f64 / 10f64.powi(i32::from(s)));
            let (x, y) = (
                f(a, s1).ok_or_else(overflow)?,
                f(b, s2).ok_or_else(overflow)?,
            );
            Value::Float(if op == BinaryOp::Div { x / y } else { x % y })
        }
        (_, Ty::Bool) => {
            let s = s1.max(s2);
            let (x, y) = (
                rescale(a, s1, s).ok_or_else(overflow)?,
                rescale(b, s2, s).ok_or_else(overflow)?,
            );
            Value::Bool(holds(op, x.cmp(&y)))
        }
        _ => return Err(format!("decimal {op:?} giving {out:?}")),
    }))
}

/// Whether comparison `op` holds between two values ordered `c`.
fn holds(op: BinaryOp, c: std::cmp::Ordering) -> bool {
    match op {
        BinaryOp::Eq => c.is_eq(),
        BinaryOp::NotEq => !c.is_eq(),
        BinaryOp::Lt => c.is_lt(),
        BinaryOp::LtEq => c.is_le(),
        BinaryOp::Gt => c.is_gt(),
        _ => c.is_ge(),
    }
}

fn literal_ty(l: &Literal) -> Ty {
    match l {
        Literal::Null => Ty::Null,
        Literal::Bool(_) => Ty::Bool,
        Literal::Int(_) => Ty::Int64,
        Literal::Float(_) => Ty::Float64,
        Literal::Str(_) => Ty::Utf8,
    }
}

/// Two column types meeting: equal stays, integers widen to Int64, numbers mixed with a
/// float become Float64, a categorical meets text as text.
fn widen(a: Ty, b: Ty) -> Result<Ty, Oops> {
    Ok(match (a, b) {
        (a, b) if a == b => a,
        (Ty::Null, x) | (x, Ty::Null) => x,
        (Ty::Categorical, Ty::Utf8) | (Ty::Utf8, Ty::Categorical) => Ty::Utf8,
        (a, b) if a.is_int() && b.is_int() => Ty::Int64,
        (a, b) if a.is_numeric() && b.is_numeric() => Ty::Float64,
        (a, b) => return Err(format!("{a:?} and {b:?} have no common type")),
    })
}

/// A literal meeting a column type `c`.
fn adapt(c: Ty, l: &Literal) -> Result<Ty, Oops> {
    Ok(match (c, l) {
        (c, Literal::Null) => c,
        (c, Literal::Int(_)) if c.is_numeric() => c,
        (c, Literal::Float(_)) if c.is_numeric() => Ty::Float64,
        (Ty::Utf8, Literal::Str(_)) => Ty::Utf8,
        (c, l) => widen(c, literal_ty(l))?,
    })
}

/// The type both operands of a binary operator are compared or computed in.
fn operand(left: &Expr, lt: Ty, right: &Expr, rt: Ty) -> Result<Ty, Oops> {
    match (left, right) {
        (Expr::Literal(l), Expr::Literal(r)) => widen(literal_ty(l), literal_ty(r)),
        (_, Expr::Literal(r)) => adapt(lt, r),
        (Expr::Literal(l), _) => adapt(rt, l),
        _ => widen(lt, rt),
    }
}

/// The one type of several values: the non-literals widened, then each literal adapted.
fn common(values: &[&Expr], t: &Table) -> Result<Ty, Oops> {
    let mut ty: Option<Ty> = None;
    for v in values.iter().filter(|v| !matches!(v, Expr::Literal(_))) {
        let vt = type_of(v, t)?;
        ty = Some(match ty {
            None => vt,
            Some(p) => widen(p, vt)?,
        });
    }
    for v in values {
        if let Expr::Literal(l) = v {
            ty = Some(match ty {
                None => literal_ty(l),
                Some(p) => adapt(p, l)?,
            });
        }
    }
    Ok(ty.unwrap_or(Ty::Null))
}

/// The cells of `e` over every row of `t`.
///
/// # Errors
/// As [`type_of`], and a value the oracle cannot compute.
pub fn eval(e: &Expr, t: &Table) -> Result<Vec<Cell>, Oops> {
    (0..t.rows).map(|r| cell(e, t, r)).collect()
}

/// The value of `e` at row `r` of `t`.
///
/// # Errors
/// As [`eval`].
pub fn cell(e: &Expr, t: &Table, r: usize) -> Result<Cell, Oops> {
    let ty = type_of(e, t)?;
    Ok(match e {
        Expr::Column(c) => t.column(c)?.cells[r].clone(),
        Expr::Literal(l) => literal(l),
        Expr::Binary { op, left, right } => {
            let (lt, rt) = (type_of(left, t)?, type_of(right, t)?);
            let (a, b) = (cell(left, t, r)?, cell(right, t, r)?);
            if decimal_result(*op, left, lt, right, rt).is_some() {
                return match (a, b) {
                    (Some(a), Some(b)) => decimal_arithmetic(*op, &a, lt, &b, rt, ty),
                    _ => Ok(None),
                };
            }
            match op {
                BinaryOp::And => kleene(a, b, false),
                BinaryOp::Or => kleene(a, b, true),
                op => {
                    let (Some(a), Some(b)) = (a, b) else {
                        return Ok(None);
                    };
                    let o = operand(left, lt, right, rt)?;
                    let (a, b) = (convert(&a, lt, o)?, convert(&b, rt, o)?);
                    let (Some(a), Some(b)) = (a, b) else {
                        return Ok(None);
                    };
                    if op.is_comparison() {
                        Some(Value::Bool(holds(*op, order(&a, &b)?)))
                    } else {
                        arithmetic(*op, &a, &b, o)?
                    }
                }
            }
        }
        Expr::Not(x) => cell(x, t, r)?.map(|v| Value::Bool(!v.bool().unwrap_or(false))),
        Expr::Negate(x) => match cell(x, t, r)? {
            None => None,
            Some(Value::Int(i)) => Some(Value::Int(wrap(ty, -i128::from(i)))),
            Some(Value::Float(f)) => Some(Value::Float(-f)),
            other => return Err(format!("negating {other:?}")),
        },
        Expr::IsNull(x) => Some(Value::Bool(cell(x, t, r)?.is_none())),
        Expr::IsNotNull(x) => Some(Value::Bool(cell(x, t, r)?.is_some())),
        Expr::IsNan(x) => Some(Value::Bool(
            matches!(cell(x, t, r)?, Some(Value::Float(f)) if f.is_nan()),
        )),
        Expr::FillNull { expr, value } => match cell(expr, t, r)? {
            Some(v) => Some(v),
            None => {
                let vt = type_of(value, t)?;
                match cell(value, t, r)? {
                    Some(v) => convert(&v, vt, ty)?,
                    None => None,
                }
            }
        },
        Expr::Cast { expr, .. } => match cell(expr, t, r)? {
            Some(v) => convert(&v, type_of(expr, t)?, ty)?,
            None => None,
        },
        Expr::Contains { expr, pattern } => {
            text(cell(expr, t, r)?).map(|s| Value::Bool(s.contains(pattern.as_str())))
        }
        Expr::DatePart { expr, part } => {
            let it = type_of(expr, t)?;
            cell(expr, t, r)?
                .and_then(|v| v.int())
                .map(|n| Value::Int(date_part(it, n, *part)))
        }
        Expr::Math { func, expr } => match cell(expr, t, r)? {
            None => None,
            Some(Value::Int(i)) => Some(match func {
                MathFunc::Abs => Value::Int(wrap(ty, i128::from(i).abs())),
                MathFunc::Floor | MathFunc::Ceil | MathFunc::Round => Value::Int(i),
                f => Value::Float(math(*f, i as f64)),
            }),
            Some(Value::Float(x)) => Some(Value::Float(math(*func, x))),
            Some(other) => return Err(format!("{} of {other:?}", func.name())),
        },
        Expr::IsIn { expr, values } => {
            let it = type_of(expr, t)?;
            let v = cell(expr, t, r)?;
            Some(Value::Bool(match v {
                None => values.contains(&Literal::Null),
                Some(v) => {
                    let mut hit = false;
                    for l in values.iter().filter(|l| **l != Literal::Null) {
                        let o = adapt(it, l)?;
                        let (a, b) = (
                            convert(&v, it, o)?,
                            convert(&literal(l).expect("not null"), literal_ty(l), o)?,
                        );
                        if let (Some(a), Some(b)) = (a, b) {
                            hit |= order(&a, &b)?.is_eq();
                        }
                    }
                    hit
                }
            }))
        }
        Expr::Str { func, expr } => match text(cell(expr, t, r)?) {
            None => None,
            Some(s) => string(func, &s)?,
        },
        Expr::When {
            branches,
            otherwise,
        } => {
            let mut chosen = &**otherwise;
            for (c, v) in branches {
                if cell(c, t, r)? == Some(Value::Bool(true)) {
                    chosen = v;
                    break;
                }
            }
            let ct = type_of(chosen, t)?;
            match cell(chosen, t, r)? {
                Some(v) => convert(&v, ct, ty)?,
                None => None,
            }
        }
        Expr::Coalesce(values) => {
            let mut out = None;
            for v in values {
                if let Some(x) = cell(v, t, r)? {
                    out = convert(&x, type_of(v, t)?, ty)?;
                    break;
                }
            }
            out
        }
        Expr::Clip { expr, lower, upper } => {
            let get = |x: &Expr| -> Result<Cell, Oops> {
                match cell(x, t, r)? {
                    Some(v) => convert(&v, type_of(x, t)?, ty),
                    None => Ok(None),
                }
            };
            match get(expr)? {
                None => None,
                Some(Value::Float(f)) if f.is_nan() => Some(Value::Float(f)),
                Some(v) => {
                    let mut v = v;
                    if let Some(lo) = get(lower)? {
                        if less(&v, &lo) {
                            v = lo;
                        }
                    }
                    if let Some(hi) = get(upper)? {
                        if less(&hi, &v) {
                            v = hi;
                        }
                    }
                    Some(v)
                }
            }
        }
        Expr::Pow { base, exponent } => match (cell(base, t, r)?, cell(exponent, t, r)?) {
            (Some(b), Some(x)) => Some(Value::Float(
                b.float()
                    .ok_or("pow of a non-number")?
                    .powf(x.float().ok_or("pow by a non-number")?),
            )),
            _ => None,
        },
        Expr::Offset { expr, interval } => cell(expr, t, r)?
            .and_then(|v| v.int())
            .map(|n| offset(ty, n, *interval))
            .transpose()?
            .map(Value::Int),
        Expr::Truncate { expr, unit } => cell(expr, t, r)?
            .and_then(|v| v.int())
            .map(|n| truncate(ty, n, *unit))
            .transpose()?
            .map(Value::Int),
        Expr::Elapsed { end, start, unit } => {
            let (et, st) = (type_of(end, t)?, type_of(start, t)?);
            match (cell(end, t, r)?, cell(start, t, r)?) {
                (Some(Value::Int(e)), Some(Value::Int(s))) => {
                    let per = unit_us(*unit).ok_or("elapsed in a unit of no fixed length")?;
                    let diff = i128::from(micros(et, e)) - i128::from(micros(st, s));
                    Some(Value::Int(
                        i64::try_from(diff / i128::from(per)).map_err(|_| "elapsed overflows")?,
                    ))
                }
                _ => None,
            }
        }
    })
}

fn literal(l: &Literal) -> Cell {
    match l {
        Literal::Null => None,
        Literal::Bool(b) => Some(Value::Bool(*b)),
        Literal::Int(i) => Some(Value::Int(*i)),
        Literal::Float(f) => Some(Value::Float(*f)),
        Literal::Str(s) => Some(Value::Str(s.clone())),
    }
}

fn text(c: Cell) -> Option<String> {
    match c {
        Some(Value::Str(s)) => Some(s),
        _ => None,
    }
}

/// Kleene's `and` (`or` when `is_or`): the dominant value wins over null.
fn kleene(a: Cell, b: Cell, is_or: bool) -> Cell {
    let (a, b) = (a.and_then(|v| v.bool()), b.and_then(|v| v.bool()));
    if a == Some(is_or) || b == Some(is_or) {
        return Some(Value::Bool(is_or));
    }
    match (a, b) {
        (Some(_), Some(_)) => Some(Value::Bool(!is_or)),
        _ => None,
    }
}

/// An integer wrapped to the width of `ty` (two's complement).
fn wrap(ty: Ty, v: i128) -> i64 {
    match ty {
        Ty::Int32 => i64::from(v as i32),
        _ => v as i64,
    }
}

/// `v` (of type `from`) as type `to`; `None` where a safe cast gives null (a float that is
/// not finite or outside the integer's range).
fn convert(v: &Value, from: Ty, to: Ty) -> Result<Cell, Oops> {
    if from == to || to == Ty::Null {
        return Ok(Some(v.clone()));
    }
    Ok(match (v, to) {
        (Value::Int(i), Ty::Float64) => Some(Value::Float(*i as f64)),
        (Value::Int(i), Ty::Int64) => Some(Value::Int(*i)),
        (Value::Int(i), Ty::Int32) => i32::try_from(*i).ok().map(|x| Value::Int(i64::from(x))),
        (Value::Float(f), Ty::Float64) => Some(Value::Float(*f)),
        (Value::Float(f), Ty::Int64 | Ty::Int32) => {
            let x = f.trunc();
            let (lo, hi) = if to == Ty::Int32 {
                (f64::from(i32::MIN), f64::from(i32::MAX))
            } else {
                (-9_223_372_036_854_775_808.0, 9_223_372_036_854_775_807.0)
            };
            (x.is_finite() && x >= lo && x < hi + 1.0).then_some(Value::Int(x as i64))
        }
        (Value::Bool(b), Ty::Int64 | Ty::Int32) => Some(Value::Int(i64::from(*b))),
        (Value::Bool(b), Ty::Float64) => Some(Value::Float(f64::from(u8::from(*b)))),
        (Value::Str(s), Ty::Utf8 | Ty::Categorical) => Some(Value::Str(s.clone())),
        (v, to) => {
            return Err(format!(
                "the oracle does not cast {v:?} ({from:?}) to {to:?}"
            ))
        }
    })
}

/// The order of two values of one type: numbers with NaN above all and equal to itself,
/// `-0.0 == 0.0`; text by code points; `false < true`.
pub fn order(a: &Value, b: &Value) -> Result<std::cmp::Ordering, Oops> {
    use std::cmp::Ordering;
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Str(x), Value::Str(y)) => x.chars().cmp(y.chars()),
        (Value::Float(_) | Value::Int(_), Value::Float(_) | Value::Int(_)) => {
            let (x, y) = (a.float().unwrap_or(0.0), b.float().unwrap_or(0.0));
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            }
        }
        (a, b) => return Err(format!("the oracle does not order {a:?} against {b:?}")),
    })
}

fn less(a: &Value, b: &Value) -> bool {
    order(a, b).is_ok_and(|o| o.is_lt())
}

fn arithmetic(op: BinaryOp, a: &Value, b: &Value, o: Ty) -> Result<Cell, Oops> {
    if op == BinaryOp::Div {
        let (x, y) = (
            a.float().ok_or("dividing a non-number")?,
            b.float().ok_or("dividing by a non-number")?,
        );
        return Ok(Some(Value::Float(x / y)));
    }
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let (x, y) = (i128::from(*x), i128::from(*y));
            Some(Value::Int(wrap(
                o,
                match op {
                    BinaryOp::Add => x + y,
                    BinaryOp::Sub => x - y,
                    BinaryOp::Mul => x.wrapping_mul(y),
                    BinaryOp::Rem if y == 0 => return Err("an integer remainder by zero".into()),
                    BinaryOp::Rem => x % y,
                    _ => return Err(format!("{op:?} on integers")),
                },
            )))
        }
        (Value::Float(x), Value::Float(y)) => Some(Value::Float(match op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Rem => x % y,
            _ => return Err(format!("{op:?} on floats")),
        })),
        (a, b) => return Err(format!("{op:?} of {a:?} and {b:?}")),
    })
}

fn math(f: MathFunc, x: f64) -> f64 {
    match f {
        MathFunc::Abs => x.abs(),
        MathFunc::Sqrt => x.sqrt(),
        MathFunc::Exp => x.exp(),
        MathFunc::Ln => x.ln(),
        MathFunc::Floor => x.floor(),
        MathFunc::Ceil => x.ceil(),
        MathFunc::Round => x.round_ties_even(),
    }
}

/// The microseconds since the epoch of a date's days or a timestamp's microseconds.
fn micros(ty: Ty, n: i64) -> i64 {
    if ty == Ty::Date32 {
        n * US_PER_DAY
    } else {
        n
    }
}

fn date_part(ty: Ty, n: i64, part: DatePart) -> i64 {
    let us = micros(ty, n);
    let days = us.div_euclid(US_PER_DAY);
    let of_day = us.rem_euclid(US_PER_DAY);
    let (y, m, d) = calendar::civil(days);
    match part {
        DatePart::Year => y,
        DatePart::Month => m,
        DatePart::Day => d,
        DatePart::Hour => of_day / 3_600_000_000,
        DatePart::Minute => of_day / 60_000_000 % 60,
        DatePart::Second => of_day / 1_000_000 % 60,
        DatePart::Weekday => calendar::weekday(days),
        DatePart::Quarter => (m - 1) / 3 + 1,
        DatePart::DayOfYear => calendar::day_of_year(days),
    }
}

/// Microseconds in a unit of fixed length.
fn unit_us(u: DateUnit) -> Option<i64> {
    Some(match u {
        DateUnit::Week => 7 * US_PER_DAY,
        DateUnit::Day => US_PER_DAY,
        DateUnit::Hour => 3_600_000_000,
        DateUnit::Minute => 60_000_000,
        DateUnit::Second => 1_000_000,
        DateUnit::Millisecond => 1_000,
        DateUnit::Microsecond => 1,
        _ => return None,
    })
}

/// Months, then days, then the fixed duration (a date takes whole days only).
fn offset(ty: Ty, n: i64, i: Interval) -> Result<i64, Oops> {
    let us = micros(ty, n);
    let (days, of_day) = (us.div_euclid(US_PER_DAY), us.rem_euclid(US_PER_DAY));
    let days = calendar::add_months(days, i64::from(i.months)) + i64::from(i.days);
    let us = days * US_PER_DAY + of_day;
    if ty == Ty::Date32 {
        if i.nanos % (US_PER_DAY * 1000) != 0 {
            return Err("a date moved by part of a day".into());
        }
        return Ok(days + i.nanos / (US_PER_DAY * 1000));
    }
    if i.nanos % 1000 != 0 {
        return Err("a microsecond timestamp moved by nanoseconds".into());
    }
    Ok(us + i.nanos / 1000)
}

fn truncate(ty: Ty, n: i64, unit: DateUnit) -> Result<i64, Oops> {
    let us = micros(ty, n);
    let days = us.div_euclid(US_PER_DAY);
    let (y, m, _) = calendar::civil(days);
    let start_day = match unit {
        DateUnit::Year => Some(calendar::days_from_civil(y, 1, 1)),
        DateUnit::Quarter => Some(calendar::days_from_civil(y, (m - 1) / 3 * 3 + 1, 1)),
        DateUnit::Month => Some(calendar::days_from_civil(y, m, 1)),
        DateUnit::Week => Some(days - calendar::weekday(days)),
        _ => None,
    };
    let out_us = match start_day {
        Some(d) => d * US_PER_DAY,
        None => {
            let per = unit_us(unit).ok_or("truncation to an unknown unit")?;
            us.div_euclid(per) * per
        }
    };
    Ok(if ty == Ty::Date32 {
        out_us.div_euclid(US_PER_DAY)
    } else {
        out_us
    })
}

/// SQL `LIKE`: `%` any run of characters, `_` one, `\` escapes the next.
fn like(s: &[char], p: &[char]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('%', rest)) => (0..=s.len()).any(|k| like(&s[k..], rest)),
        Some(('_', rest)) => !s.is_empty() && like(&s[1..], rest),
        Some(('\\', rest)) if !rest.is_empty() => {
            s.first() == Some(&rest[0]) && like(&s[1..], &rest[1..])
        }
        Some((c, rest)) => s.first() == Some(c) && like(&s[1..], rest),
    }
}

fn string(f: &StrFunc, s: &str) -> Result<Cell, Oops> {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len() as i64;
    Ok(Some(match f {
        StrFunc::StartsWith(p) => Value::Bool(s.starts_with(p.as_str())),
        StrFunc::EndsWith(p) => Value::Bool(s.ends_with(p.as_str())),
        StrFunc::Like(p) => Value::Bool(like(&chars, &p.chars().collect::<Vec<_>>())),
        StrFunc::Lower => Value::Str(s.to_lowercase()),
        StrFunc::Upper => Value::Str(s.to_uppercase()),
        StrFunc::Strip => Value::Str(s.trim().to_string()),
        StrFunc::Len => Value::Int(n),
        StrFunc::Replace { from, to } => Value::Str(s.replace(from.as_str(), to)),
        StrFunc::Substring { start, len } => {
            let from = if *start < 0 {
                (n + start).max(0)
            } else {
                (*start).min(n)
            };
            let to = match len {
                Some(l) => (from + i64::try_from(*l).unwrap_or(i64::MAX)).min(n),
                None => n,
            };
            Value::Str(chars[from as usize..to as usize].iter().collect())
        }
        StrFunc::Matches(p) => Value::Bool(regex(p)?.is_match(s)),
        StrFunc::Extract { pattern, group } => {
            match regex(pattern)?.captures(s).and_then(|c| c.get(*group)) {
                Some(m) => Value::Str(m.as_str().to_string()),
                None => return Ok(None),
            }
        }
        StrFunc::Split(sep) => {
            Value::List(s.split(sep.as_str()).map(|p| Some(p.to_string())).collect())
        }
        StrFunc::SplitPart { sep, index } => {
            let pieces: Vec<&str> = s.split(sep.as_str()).collect();
            let k = if *index < 0 {
                pieces.len() as i64 + index
            } else {
                *index
            };
            match usize::try_from(k).ok().and_then(|k| pieces.get(k)) {
                Some(p) => Value::Str((*p).to_string()),
                None => return Ok(None),
            }
        }
    }))
}

fn regex(p: &str) -> Result<regex::Regex, Oops> {
    regex::Regex::new(p).map_err(|e| format!("pattern {p:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::frame::expr::col;

    fn table(cells: Vec<Cell>, ty: Ty) -> Table {
        Table {
            rows: cells.len(),
            columns: vec![super::super::value::Column {
                name: "v".into(),
                ty,
                cells,
            }],
        }
    }

    #[test]
    fn kleene_logic_and_null_comparisons() {
        let t = table(
            vec![Some(Value::Bool(true)), Some(Value::Bool(false)), None],
            Ty::Bool,
        );
        let and_null = eval(&(col("v") & Expr::Literal(Literal::Null)), &t).unwrap();
        assert_eq!(and_null, vec![None, Some(Value::Bool(false)), None]);
        let or_null = eval(&(col("v") | Expr::Literal(Literal::Null)), &t).unwrap();
        assert_eq!(or_null, vec![Some(Value::Bool(true)), None, None]);
    }

    #[test]
    fn int32_arithmetic_wraps_in_its_width_and_division_is_true() {
        let t = table(
            vec![Some(Value::Int(i64::from(i32::MAX))), Some(Value::Int(7))],
            Ty::Int32,
        );
        assert_eq!(type_of(&(col("v") + 1), &t).unwrap(), Ty::Int32);
        assert_eq!(
            eval(&(col("v") + 1), &t).unwrap()[0],
            Some(Value::Int(i64::from(i32::MIN)))
        );
        assert_eq!(
            eval(&(col("v") / 2), &t).unwrap()[1],
            Some(Value::Float(3.5))
        );
        assert_eq!(eval(&(-col("v") % 4), &t).unwrap()[1], Some(Value::Int(-3)));
    }

    #[test]
    fn nan_sorts_above_numbers_and_negative_zero_equals_zero() {
        let nan = Value::Float(f64::NAN);
        assert!(order(&nan, &Value::Float(f64::INFINITY)).unwrap().is_gt());
        assert!(order(&nan, &nan).unwrap().is_eq());
        assert!(order(&Value::Float(-0.0), &Value::Float(0.0))
            .unwrap()
            .is_eq());
    }

    /// DuckDB's decimal typing, by hand: `p * (1 - r)` of DECIMAL(15, 2) and DECIMAL(4, 2)
    /// is at scale 4; `p - r` at scale 2 with one more integer digit.
    #[test]
    fn decimal_arithmetic_is_exact_with_duckdbs_scales() {
        let t = Table {
            rows: 1,
            columns: vec![
                super::super::value::Column {
                    name: "p".into(),
                    ty: Ty::Decimal(15, 2),
                    cells: vec![Some(Value::Dec(123_456))], // 1234.56
                },
                super::super::value::Column {
                    name: "r".into(),
                    ty: Ty::Decimal(4, 2),
                    cells: vec![Some(Value::Dec(7))], // 0.07
                },
            ],
        };
        let d = col("p") * (Expr::Literal(Literal::Int(1)) - col("r"));
        // 1 - r: DECIMAL(5, 2); p * that: DECIMAL(20, 4).
        assert_eq!(type_of(&d, &t).unwrap(), Ty::Decimal(20, 4));
        // 1234.56 * 0.93 = 1148.1408
        assert_eq!(eval(&d, &t).unwrap()[0], Some(Value::Dec(11_481_408)));
        assert_eq!(
            type_of(&(col("p") - col("r")), &t).unwrap(),
            Ty::Decimal(16, 2)
        );
        assert_eq!(
            eval(&(col("p") - col("r")), &t).unwrap()[0],
            Some(Value::Dec(123_449))
        );
    }

    #[test]
    fn strings_count_characters() {
        let t = table(vec![Some(Value::Str("mékaß".into()))], Ty::Utf8);
        assert_eq!(
            eval(&col("v").substring(-2, None), &t).unwrap()[0],
            Some(Value::Str("aß".into()))
        );
        assert_eq!(
            eval(&col("v").str_len(), &t).unwrap()[0],
            Some(Value::Int(5))
        );
        assert_eq!(
            eval(&col("v").like("%a_"), &t).unwrap()[0],
            Some(Value::Bool(true))
        );
        assert_eq!(
            eval(&col("v").upper(), &t).unwrap()[0],
            Some(Value::Str("MÉKASS".into()))
        );
        assert_eq!(
            eval(&col("v").split_part("k", -1), &t).unwrap()[0],
            Some(Value::Str("aß".into()))
        );
    }
}
