//! Window functions by their definitions in the protocol's `WindowFunc` docs: over the
//! frame's rows in order, per group of the keys (a row with a null key is null), with
//! pandas' missing-value rules (nulls and, for floats, NaN are missing: cumulative
//! functions skip them and leave them missing; rolling windows count rows and need
//! `min_periods` values that are not missing).

use tessera_core::frame::{RollingAgg, WindowFunc};

use super::expr::order;
use super::value::{Cell, Column, Table, Ty, Value};

fn missing(c: &Cell) -> bool {
    match c {
        None => true,
        Some(Value::Float(f)) => f.is_nan(),
        Some(_) => false,
    }
}

/// The result type of `func` over `t`.
fn output_type(func: WindowFunc, t: Ty) -> Result<Ty, String> {
    Ok(match func {
        WindowFunc::Shift(_) | WindowFunc::CumMin | WindowFunc::CumMax => t,
        WindowFunc::FillForward | WindowFunc::FillBackward => t,
        WindowFunc::Diff(_) | WindowFunc::CumSum | WindowFunc::CumProd if t == Ty::Float64 => {
            Ty::Float64
        }
        WindowFunc::Diff(_) if t.is_int() => Ty::Int64,
        WindowFunc::CumSum | WindowFunc::CumProd if t.is_int() || t == Ty::Bool => Ty::Int64,
        WindowFunc::Rolling { .. } if t.is_numeric() || t == Ty::Bool => Ty::Float64,
        f => return Err(format!("the oracle does not state {} of {t:?}", f.name())),
    })
}

fn number(v: &Value) -> f64 {
    match v {
        Value::Bool(b) => f64::from(u8::from(*b)),
        v => v.float().unwrap_or(f64::NAN),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Bool(b) => i64::from(*b),
        v => v.int().unwrap_or(0),
    }
}

/// `func` of column `v` of `t` per group of `keys`, as a column named `output`.
///
/// # Errors
/// A function or type the oracle does not state.
pub fn window(
    t: &Table,
    keys: &[String],
    v: &str,
    func: WindowFunc,
    output: &str,
) -> Result<Column, String> {
    let vc = t.column(v)?;
    let ty = output_type(func, vc.ty)?;
    // Each row's group: the rows of the same non-null key, in order.
    let groups = super::aggregate::groups(t, keys)?;
    let mut cells: Vec<Cell> = vec![None; t.rows];
    for (_, rows) in &groups {
        let vals: Vec<&Cell> = rows.iter().map(|&r| &vc.cells[r]).collect();
        for (p, &r) in rows.iter().enumerate() {
            cells[r] = at(func, ty, &vals, p)?;
        }
    }
    Ok(Column {
        name: output.to_string(),
        ty,
        cells,
    })
}

/// The result at position `p` of a group's values `vals`.
fn at(func: WindowFunc, ty: Ty, vals: &[&Cell], p: usize) -> Result<Cell, String> {
    let back = |n: i64| -> Option<&Cell> {
        let q = p as i64 - n;
        usize::try_from(q).ok().and_then(|q| vals.get(q).copied())
    };
    Ok(match func {
        WindowFunc::Shift(n) => back(n).cloned().flatten(),
        WindowFunc::Diff(n) => match (vals[p], back(n).cloned().flatten()) {
            (Some(a), Some(b)) if ty == Ty::Float64 => Some(Value::Float(number(a) - number(&b))),
            (Some(a), Some(b)) => Some(Value::Int(int(a).wrapping_sub(int(&b)))),
            _ => None,
        },
        WindowFunc::CumSum | WindowFunc::CumProd | WindowFunc::CumMin | WindowFunc::CumMax => {
            if missing(vals[p]) {
                return Ok(vals[p].clone());
            }
            let seen: Vec<&Value> = vals[..=p]
                .iter()
                .filter(|c| !missing(c))
                .filter_map(|c| c.as_ref())
                .collect();
            match func {
                WindowFunc::CumSum if ty == Ty::Float64 => {
                    Some(Value::Float(seen.iter().fold(0.0, |s, v| s + number(v))))
                }
                WindowFunc::CumSum => Some(Value::Int(
                    seen.iter().fold(0i64, |s, v| s.wrapping_add(int(v))),
                )),
                WindowFunc::CumProd if ty == Ty::Float64 => {
                    Some(Value::Float(seen.iter().fold(1.0, |s, v| s * number(v))))
                }
                WindowFunc::CumProd => Some(Value::Int(
                    seen.iter().fold(1i64, |s, v| s.wrapping_mul(int(v))),
                )),
                _ => {
                    let mut best = seen[0];
                    for v in &seen[1..] {
                        let o = order(v, best)?;
                        if (func == WindowFunc::CumMax && o.is_gt())
                            || (func == WindowFunc::CumMin && o.is_lt())
                        {
                            best = v;
                        }
                    }
                    Some(best.clone())
                }
            }
        }
        WindowFunc::FillForward => vals[..=p].iter().rev().find_map(|c| (*c).clone()),
        WindowFunc::FillBackward => vals[p..].iter().find_map(|c| (*c).clone()),
        WindowFunc::Rolling {
            agg,
            window,
            min_periods,
        } => {
            let from = (p + 1).saturating_sub(window);
            let xs: Vec<f64> = vals[from..=p]
                .iter()
                .filter(|c| !missing(c))
                .filter_map(|c| c.as_ref())
                .map(number)
                .collect();
            if xs.len() < min_periods || xs.is_empty() {
                return Ok(None);
            }
            Some(Value::Float(match agg {
                RollingAgg::Sum => xs.iter().sum(),
                RollingAgg::Mean => xs.iter().sum::<f64>() / xs.len() as f64,
                RollingAgg::Min => xs.iter().copied().fold(f64::INFINITY, f64::min),
                RollingAgg::Max => xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }))
        }
    })
}
