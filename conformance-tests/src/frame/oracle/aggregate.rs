//! Grouped aggregation from the definitions in the protocol's [`AggFunc`] docs: rows with a
//! null key dropped, groups sorted by their keys, every function over the group's cells
//! in partition order.

use tessera_core::frame::AggFunc;

use super::expr::order;
use super::value::{Cell, Column, Table, Ty, Value};

/// `func` of column `v` per group of the `keys` columns of `t` (one row and no key
/// columns when `keys` is empty), as `keys..., output`.
///
/// # Errors
/// A function or type the oracle does not state (the t-digest estimate).
pub fn aggregate(
    t: &Table,
    keys: &[String],
    v: &str,
    func: AggFunc,
    output: &str,
) -> Result<Table, String> {
    let ty = t.column(v)?.ty;
    let out_ty = output_type(func, ty)?;
    aggregate_with(t, keys, v, output, out_ty, &|cells| {
        of_group(func, ty, cells)
    })
}

/// A pair function (`cov`, `corr`) of columns `x` and `y` per group of `keys` (laid out as
/// [`aggregate`] does), over the rows where both hold a number (not null, not NaN), by
/// two passes over compensated sums: the means first, then the sums of products of
/// deviations — the route pandas takes, not the backends' one-pass co-moments. `cov`
/// divides by `n − 1`; `corr` by `√(Σdx² Σdy²)`, clamped to [−1, 1]. None below two
/// pairs, and `corr` none where either column is constant (or the sums are not finite
/// and positive).
///
/// # Errors
/// An unknown column, or a function that is not a pair function.
pub fn pair(
    t: &Table,
    keys: &[String],
    (x, y): (&str, &str),
    func: AggFunc,
    output: &str,
) -> Result<Table, String> {
    if !func.is_pair() {
        return Err(format!("{} is not a pair function", func.name()));
    }
    let (xc, yc) = (t.column(x)?, t.column(y)?);
    aggregate_rows(t, keys, output, Ty::Float64, &|rows| {
        let pairs: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|&r| {
                let (a, b) = (xc.cells[r].as_ref()?, yc.cells[r].as_ref()?);
                let (a, b) = (numbers(&[a])[0], numbers(&[b])[0]);
                (!a.is_nan() && !b.is_nan()).then_some((a, b))
            })
            .collect();
        if pairs.len() < 2 {
            return Ok(None);
        }
        let n = pairs.len() as f64;
        let xs: Vec<f64> = pairs.iter().map(|p| p.0).collect();
        let ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
        let (mx, my) = (fsum(&xs) / n, fsum(&ys) / n);
        let sxy = fsum(
            &pairs
                .iter()
                .map(|(a, b)| (a - mx) * (b - my))
                .collect::<Vec<_>>(),
        );
        let value = match func {
            AggFunc::Cov => Some(sxy / (n - 1.0)),
            _ => {
                let sxx = fsum(&xs.iter().map(|a| (a - mx) * (a - mx)).collect::<Vec<_>>());
                let syy = fsum(&ys.iter().map(|b| (b - my) * (b - my)).collect::<Vec<_>>());
                let den = (sxx * syy).sqrt();
                (den > 0.0).then(|| (sxy / den).clamp(-1.0, 1.0))
            }
        };
        Ok(value.map(Value::Float))
    })
}

/// The `k` best values of `v` per group of `keys` (`nlargest(k)`/`nsmallest(k)`), one
/// row per value: the keys (groups in key order, as [`aggregate`] lays them out), then the
/// value, best first within a group; nulls and NaN left out, a group without values
/// without rows. Found by a stable sort of each group's values, not a bounded selection.
///
/// # Errors
/// An unknown column, a function that is not a top-values one, or values the oracle
/// cannot order.
pub fn top_values(
    t: &Table,
    keys: &[String],
    v: &str,
    func: AggFunc,
    output: &str,
) -> Result<Table, String> {
    let (k, largest) = match func {
        AggFunc::Largest(k) => (k as usize, true),
        AggFunc::Smallest(k) => (k as usize, false),
        f => return Err(format!("{} is not a top-values function", f.name())),
    };
    let vc = t.column(v)?;
    let mut err = None;
    let mut keyed: Vec<Vec<Value>> = Vec::new();
    let mut cells: Vec<Cell> = Vec::new();
    for (key, rows) in sorted_groups(t, keys)? {
        let mut values: Vec<&Value> = rows
            .iter()
            .filter_map(|&r| vc.cells[r].as_ref())
            .filter(|x| !matches!(x, Value::Float(f) if f.is_nan()))
            .collect();
        // Stable: equal values keep their row order.
        values.sort_by(|a, b| {
            let o = order(a, b).unwrap_or_else(|e| {
                err = Some(e);
                std::cmp::Ordering::Equal
            });
            if largest {
                o.reverse()
            } else {
                o
            }
        });
        for x in values.into_iter().take(k) {
            keyed.push(key.clone());
            cells.push(Some(x.clone()));
        }
    }
    if let Some(e) = err {
        return Err(e);
    }
    let mut columns = key_columns(t, keys, keyed.iter())?;
    columns.push(Column {
        name: output.to_string(),
        ty: vc.ty,
        cells,
    });
    Ok(Table {
        rows: keyed.len(),
        columns,
    })
}

/// The bounds a t-digest estimate of the level-`q` quantile must lie in, per group of
/// `keys` (as [`aggregate`] lays them out): the exact order statistics of the group's
/// values (NaN left out, as every quantile does) at `rank_slack` ranks below and above
/// `q * (n - 1)`, where `rank_slack` is one rank plus 1% of `n` — the estimate's
/// interpolation convention and its compression error together. A group with no value
/// gives null on both sides.
///
/// # Errors
/// As [`aggregate`]; a column that is not numeric.
pub fn approx_quantile_bounds(
    t: &Table,
    keys: &[String],
    v: &str,
    q: f64,
    output: &str,
) -> Result<(Table, Table), String> {
    let ty = t.column(v)?.ty;
    if !(ty.is_int() || ty == Ty::Float64 || ty == Ty::Bool) {
        return Err(format!(
            "the oracle does not state approx_quantile of {ty:?}"
        ));
    }
    let bound = |upper: bool| {
        move |cells: &[&Value]| -> Result<Cell, String> {
            let mut xs: Vec<f64> = numbers(cells).into_iter().filter(|x| !x.is_nan()).collect();
            if xs.is_empty() {
                return Ok(None);
            }
            xs.sort_by(f64::total_cmp);
            let n = xs.len();
            let pos = q * (n - 1) as f64;
            let slack = 1.0 + 0.01 * n as f64;
            let at = if upper {
                ((pos + slack).ceil() as usize).min(n - 1)
            } else {
                (pos - slack).floor().max(0.0) as usize
            };
            Ok(Some(Value::Float(xs[at])))
        }
    };
    Ok((
        aggregate_with(t, keys, v, output, Ty::Float64, &bound(false))?,
        aggregate_with(t, keys, v, output, Ty::Float64, &bound(true))?,
    ))
}

/// [`aggregate`] with the function of a group's non-null cells given as `per_group`,
/// giving an `out_ty` column.
fn aggregate_with(
    t: &Table,
    keys: &[String],
    v: &str,
    output: &str,
    out_ty: Ty,
    per_group: &dyn Fn(&[&Value]) -> Result<Cell, String>,
) -> Result<Table, String> {
    let vc = t.column(v)?;
    aggregate_rows(t, keys, output, out_ty, &|rows| {
        let cells: Vec<&Value> = rows.iter().filter_map(|&r| vc.cells[r].as_ref()).collect();
        per_group(&cells)
    })
}

/// One row per group of `keys` (in key order; one group when there are no keys, also of
/// no rows): the keys, then `per_group` of the group's rows (in input order) as an
/// `out_ty` column named `output`.
fn aggregate_rows(
    t: &Table,
    keys: &[String],
    output: &str,
    out_ty: Ty,
    per_group: &dyn Fn(&[usize]) -> Result<Cell, String>,
) -> Result<Table, String> {
    let mut groups = sorted_groups(t, keys)?;
    if keys.is_empty() && groups.is_empty() {
        groups.push((Vec::new(), Vec::new()));
    }
    let mut columns = key_columns(t, keys, groups.iter().map(|(k, _)| k))?;
    let cells = groups
        .iter()
        .map(|(_, rows)| per_group(rows))
        .collect::<Result<Vec<Cell>, String>>()?;
    columns.push(Column {
        name: output.to_string(),
        ty: out_ty,
        cells,
    });
    Ok(Table {
        rows: groups.len(),
        columns,
    })
}

/// [`groups`] in key order.
fn sorted_groups(t: &Table, keys: &[String]) -> Result<Vec<Group>, String> {
    let mut groups = groups(t, keys)?;
    let mut err = None;
    groups.sort_by(|(a, _), (b, _)| {
        for (x, y) in a.iter().zip(b) {
            match order(x, y) {
                Ok(std::cmp::Ordering::Equal) => {}
                Ok(o) => return o,
                Err(e) => err = Some(e),
            }
        }
        std::cmp::Ordering::Equal
    });
    match err {
        Some(e) => Err(e),
        None => Ok(groups),
    }
}

/// The key columns of `t` named `keys`, holding `rows` (one key tuple per row).
fn key_columns<'a>(
    t: &Table,
    keys: &[String],
    rows: impl Iterator<Item = &'a Vec<Value>> + Clone,
) -> Result<Vec<Column>, String> {
    keys.iter()
        .enumerate()
        .map(|(i, k)| {
            let c = t.column(k)?;
            Ok(Column {
                name: c.name.clone(),
                ty: c.ty,
                cells: rows.clone().map(|key| Some(key[i].clone())).collect(),
            })
        })
        .collect()
}

/// A group: its key's values and its rows.
pub type Group = (Vec<Value>, Vec<usize>);

/// The groups of `t` by the `keys` columns in order of first appearance: each key's
/// values and its rows in input order. Rows with a null key belong to none.
///
/// # Errors
/// An unknown key column.
pub fn groups(t: &Table, keys: &[String]) -> Result<Vec<Group>, String> {
    let key_cols: Vec<&Column> = keys.iter().map(|k| t.column(k)).collect::<Result<_, _>>()?;
    let mut groups: Vec<Group> = Vec::new();
    for r in 0..t.rows {
        let Some(key) = key_cols
            .iter()
            .map(|c| c.cells[r].clone())
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        match groups.iter_mut().find(|(k, _)| same(k, &key)) {
            Some((_, rows)) => rows.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    Ok(groups)
}

/// Several aggregations of `t` per group of `keys`, as a groupby returns them: the keys,
/// then one column per `(column, func, output)`.
///
/// # Errors
/// As [`aggregate`].
pub fn aggregate_all(
    t: &Table,
    keys: &[String],
    specs: &[(&str, AggFunc, &str)],
) -> Result<Table, String> {
    let mut out: Option<Table> = None;
    for &(column, func, output) in specs {
        let one = aggregate(t, keys, column, func, output)?;
        match &mut out {
            None => out = Some(one),
            Some(o) => o.columns.extend(one.columns.into_iter().skip(keys.len())),
        }
    }
    Ok(out.unwrap_or_default())
}

fn same(a: &[Value], b: &[Value]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| order(x, y).is_ok_and(|o| o.is_eq()))
}

/// The result type of `func` over `t`.
fn output_type(func: AggFunc, t: Ty) -> Result<Ty, String> {
    Ok(match func {
        AggFunc::Sum if t == Ty::Float64 => Ty::Float64,
        // DuckDB's SUM(DECIMAL(p, s)): 38 digits at the same scale, exact.
        AggFunc::Sum if matches!(t, Ty::Decimal(..)) => match t {
            Ty::Decimal(_, s) => Ty::Decimal(38, s),
            _ => unreachable!("matched a decimal"),
        },
        AggFunc::Sum if t.is_int() || t == Ty::Bool => Ty::Int64,
        AggFunc::Count | AggFunc::NUnique => Ty::Int64,
        AggFunc::Mean
        | AggFunc::Std
        | AggFunc::Var
        | AggFunc::Skew
        | AggFunc::Kurt
        | AggFunc::Median
        | AggFunc::Quantile(_) => Ty::Float64,
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => t,
        f => return Err(format!("the oracle does not state {} of {t:?}", f.name())),
    })
}

/// The numbers of a group (booleans as 0 and 1).
fn numbers(cells: &[&Value]) -> Vec<f64> {
    cells
        .iter()
        .map(|v| match v {
            Value::Bool(b) => f64::from(u8::from(*b)),
            v => v.float().unwrap_or(f64::NAN),
        })
        .collect()
}

/// A compensated sum with IEEE's infinities and NaN (the array oracle's).
fn fsum(xs: &[f64]) -> f64 {
    crate::oracle::reduce::float_sum(xs.iter().copied())
}

/// Sample variance (ddof 1) by two passes over compensated sums.
fn variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let mean = fsum(xs) / n;
    let dev: Vec<f64> = xs.iter().map(|x| (x - mean) * (x - mean)).collect();
    Some(fsum(&dev) / (n - 1.0))
}

/// The central sums `Σ (x − mean)^k` for k = 2, 3, 4, the mean taken first (two passes).
fn central_sums(xs: &[f64]) -> (f64, f64, f64) {
    let mean = fsum(xs) / xs.len() as f64;
    let power = |k: i32| fsum(&xs.iter().map(|x| (x - mean).powi(k)).collect::<Vec<_>>());
    (power(2), power(3), power(4))
}

/// pandas' `skew()`: the adjusted Fisher–Pearson coefficient `n √(n−1) / (n−2) · M3 /
/// M2^1.5`; none below 3 values or when every value is the same (DuckDB's NULL, pandas' NaN).
fn skew(xs: &[f64]) -> Option<f64> {
    if xs.len() < 3 {
        return None;
    }
    let (m2, m3, _) = central_sums(xs);
    if m2 == 0.0 {
        return None;
    }
    let n = xs.len() as f64;
    Some(n * (n - 1.0).sqrt() / (n - 2.0) * m3 / m2.powf(1.5))
}

/// pandas' `kurt()`: `n (n+1) (n−1) M4 / ((n−2)(n−3) M2²) − 3 (n−1)² / ((n−2)(n−3))`;
/// none below 4 values or when every value is the same.
fn kurt(xs: &[f64]) -> Option<f64> {
    if xs.len() < 4 {
        return None;
    }
    let (m2, _, m4) = central_sums(xs);
    if m2 == 0.0 {
        return None;
    }
    let n = xs.len() as f64;
    let (a, b) = ((n - 2.0) * (n - 3.0), (n - 1.0) * (n - 1.0));
    Some(n * (n + 1.0) * (n - 1.0) * m4 / (a * m2 * m2) - 3.0 * b / a)
}

/// The `q` quantile with linear interpolation between the two nearest ranks, of the
/// values that are not NaN: the value itself at an exact rank, else NumPy's `_lerp`
/// (`a + (b - a) t`, or `b - (b - a) (1 - t)` from `t = 0.5` on, so that an infinite end
/// gives the infinity rather than NaN).
fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let t = pos - lo as f64;
    let (a, b) = (v[lo], v[hi]);
    Some(if lo == hi || t == 0.0 {
        a
    } else if t < 0.5 {
        a + (b - a) * t
    } else {
        b - (b - a) * (1.0 - t)
    })
}

/// The median: the middle value, or the mean of the two middle values (NumPy's
/// `median`: their sum halved), of the values that are not NaN.
fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The least (`max`: greatest) value in [`order`]'s sense: NaN above every number.
fn extreme(cells: &[&Value], max: bool) -> Result<Cell, String> {
    let mut best: Option<&Value> = None;
    for &v in cells {
        best = Some(match best {
            None => v,
            Some(b) => {
                let o = order(v, b)?;
                if (max && o.is_gt()) || (!max && o.is_lt()) {
                    v
                } else {
                    b
                }
            }
        });
    }
    Ok(best.cloned())
}

fn of_group(func: AggFunc, ty: Ty, cells: &[&Value]) -> Result<Cell, String> {
    let f = |x: Option<f64>| x.map(Value::Float);
    if let Ty::Decimal(_, scale) = ty {
        // Exact sums of the unscaled values; a mean is that sum over the count, in Float64.
        let mut sum = 0i128;
        for v in cells {
            let Value::Dec(d) = v else {
                return Err(format!("a decimal column holds {v:?}"));
            };
            sum = sum
                .checked_add(*d)
                .ok_or("a decimal sum overflows 128 bits")?;
        }
        return Ok(match func {
            AggFunc::Sum => Some(Value::Dec(sum)),
            AggFunc::Mean => f((!cells.is_empty())
                .then(|| sum as f64 / 10f64.powi(i32::from(scale)) / cells.len() as f64)),
            AggFunc::Count => Some(Value::Int(cells.len() as i64)),
            other => {
                return Err(format!(
                    "the oracle does not state {} of decimals",
                    other.name()
                ))
            }
        });
    }
    Ok(match func {
        AggFunc::Sum if ty == Ty::Float64 => Some(Value::Float(fsum(&numbers(cells)))),
        AggFunc::Sum => Some(Value::Int(
            numbers(cells)
                .iter()
                .fold(0i64, |s, &x| s.wrapping_add(x as i64)),
        )),
        AggFunc::Count => Some(Value::Int(cells.len() as i64)),
        AggFunc::Mean => f((!cells.is_empty()).then(|| fsum(&numbers(cells)) / cells.len() as f64)),
        AggFunc::Var => f(variance(&numbers(cells))),
        AggFunc::Std => f(variance(&numbers(cells)).map(f64::sqrt)),
        AggFunc::Skew => f(skew(&numbers(cells))),
        AggFunc::Kurt => f(kurt(&numbers(cells))),
        AggFunc::Min => extreme(cells, false)?,
        AggFunc::Max => extreme(cells, true)?,
        AggFunc::First => cells.first().map(|v| (*v).clone()),
        AggFunc::Last => cells.last().map(|v| (*v).clone()),
        AggFunc::NUnique => {
            let mut seen: Vec<&Value> = Vec::new();
            for v in cells {
                if !seen.iter().any(|s| order(s, v).is_ok_and(|o| o.is_eq())) {
                    seen.push(v);
                }
            }
            Some(Value::Int(seen.len() as i64))
        }
        AggFunc::Median => f(median(&numbers(cells))),
        AggFunc::Quantile(q) => f(quantile(&numbers(cells), q.value())),
        other => return Err(format!("the oracle does not state {}", other.name())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_statistics() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(variance(&xs), Some(32.0 / 7.0));
        assert_eq!(median(&xs), Some(4.5));
        assert_eq!(median(&[f64::NEG_INFINITY, 1.0]), Some(f64::NEG_INFINITY));
        assert_eq!(
            quantile(&[f64::NEG_INFINITY, 1.0], 0.75),
            Some(f64::NEG_INFINITY)
        );
        assert!(quantile(&[f64::NEG_INFINITY, 1.0], 0.25).unwrap().is_nan());
        assert!((quantile(&[1.0, 2.0, 3.0, 4.0], 0.3).unwrap() - 1.9).abs() < 1e-12);
        assert_eq!(quantile(&[f64::NAN], 0.5), None);
        assert_eq!(fsum(&[1e100, 1.0, -1e100]), 1.0);
    }
}
