//! Window functions over a partition and its carry (the protocol's
//! [`window`](tessera_core::frame::window) module explains the carry).
//!
//! The carry rows and the partition's rows are put in one sequence (carry first, or last
//! for the backward functions), rows are assigned to groups by their keys, and one pass
//! in sequence order (reversed for the backward functions) keeps a small state per group.
//! Functions that return an existing value (`shift`, `ffill`, `cummin`, ...) compute a row
//! index per output row and `take` it, so they work for every Arrow type; the arithmetic
//! ones (`cumsum`, `diff`, `rolling`) run on Int64, UInt64 or Float64.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type, UInt64Type};
use arrow_array::{
    new_empty_array, Array, ArrayRef, ArrowPrimitiveType, Float64Array, PrimitiveArray,
    RecordBatch, UInt32Array,
};
use arrow_schema::{DataType, SortOptions};
use tessera_core::frame::{RollingAgg, WindowFunc, WindowSpec};
use tessera_core::{Error, Result};

use crate::keys::grouping::group_rows;
use crate::keys::groups::{Groups, NO_GROUP};

fn arrow_err(spec: &WindowSpec) -> impl Fn(arrow_schema::ArrowError) -> Error + '_ {
    move |e| Error::arrow_in("window", spec.func.name(), e)
}

fn column(b: &RecordBatch, name: &str, spec: &WindowSpec) -> Result<ArrayRef> {
    b.column_by_name(name).cloned().ok_or_else(|| {
        Error::invalid(
            "window",
            format!("{}: no column '{name}' in the partition", spec.func.name()),
        )
    })
}

fn cast(a: &ArrayRef, t: &DataType, spec: &WindowSpec) -> Result<ArrayRef> {
    if a.data_type() == t {
        return Ok(a.clone());
    }
    arrow_cast::cast(a, t).map_err(arrow_err(spec))
}

/// The keys and the value column (in the carry's type) of `b`.
fn parts_of(b: &RecordBatch, spec: &WindowSpec) -> Result<(Vec<ArrayRef>, ArrayRef)> {
    let keys = spec
        .keys
        .iter()
        .map(|k| column(b, k, spec))
        .collect::<Result<Vec<_>>>()?;
    let v = column(b, &spec.column, spec)?;
    let t = spec.func.carry_type(v.data_type());
    Ok((keys, cast(&v, &t, spec)?))
}

/// Rows in the order the function visits them.
fn visit(rows: usize, backward: bool) -> Box<dyn Iterator<Item = usize>> {
    if backward {
        Box::new((0..rows).rev())
    } else {
        Box::new(0..rows)
    }
}

/// Whether a row of `v` is missing for the cumulative and rolling functions: null, or
/// NaN (pandas' missing value) for floats. The type is looked at once, not per row.
fn missing_rows(v: &ArrayRef) -> impl Fn(usize) -> bool + '_ {
    let floats = (*v.data_type() == DataType::Float64).then(|| v.as_primitive::<Float64Type>());
    let nulls = v.logical_nulls();
    move |i| {
        nulls.as_ref().is_some_and(|n| n.is_null(i)) || floats.is_some_and(|f| f.value(i).is_nan())
    }
}

/// The row each output row takes its value from (`None`: null), for the functions that
/// return existing values.
fn source_rows(
    func: WindowFunc,
    v: &ArrayRef,
    g: &Groups,
    spec: &WindowSpec,
) -> Result<Vec<Option<u32>>> {
    let rows = v.len();
    let backward = func.backward();
    let mut out = vec![None; rows];
    match func {
        WindowFunc::Shift(_) | WindowFunc::Diff(_) => {
            let k = func.carry_rows().unwrap_or(0);
            let mut seen: Vec<VecDeque<u32>> = vec![VecDeque::new(); g.len()];
            for i in visit(rows, backward) {
                let id = g.ids[i];
                if id == NO_GROUP {
                    continue;
                }
                let q = &mut seen[id as usize];
                if q.len() == k {
                    out[i] = q.front().copied();
                    q.pop_front();
                }
                if k > 0 {
                    q.push_back(i as u32);
                }
            }
        }
        WindowFunc::FillForward | WindowFunc::FillBackward => {
            let mut last: Vec<Option<u32>> = vec![None; g.len()];
            for i in visit(rows, backward) {
                let id = g.ids[i];
                if id == NO_GROUP {
                    continue;
                }
                if v.is_valid(i) {
                    last[id as usize] = Some(i as u32);
                }
                out[i] = last[id as usize];
            }
        }
        WindowFunc::CumMin | WindowFunc::CumMax => {
            let cmp =
                arrow_ord::ord::make_comparator(v.as_ref(), v.as_ref(), SortOptions::default())
                    .map_err(arrow_err(spec))?;
            let want = if func == WindowFunc::CumMin {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
            let mut best: Vec<Option<u32>> = vec![None; g.len()];
            let missing = missing_rows(v);
            for (i, (&id, o)) in g.ids.iter().zip(out.iter_mut()).enumerate() {
                if id == NO_GROUP {
                    continue;
                }
                if missing(i) {
                    // A missing value stays missing (null, or NaN itself).
                    *o = Some(i as u32);
                    continue;
                }
                let b = &mut best[id as usize];
                match b {
                    Some(x) if cmp(i, *x as usize) != want => {}
                    _ => *b = Some(i as u32),
                }
                *o = *b;
            }
        }
        _ => {
            return Err(Error::invalid(
                "window",
                format!("{} does not pick rows", func.name()),
            ))
        }
    }
    Ok(out)
}

fn take(v: &ArrayRef, rows: &[Option<u32>], spec: &WindowSpec) -> Result<ArrayRef> {
    arrow_select::take::take(v.as_ref(), &UInt32Array::from(rows.to_vec()), None)
        .map_err(arrow_err(spec))
}

/// Running totals per group, with `op` (wrapping for integers); missing inputs give
/// missing outputs and are skipped.
fn cumulative<T: ArrowPrimitiveType>(
    v: &ArrayRef,
    g: &Groups,
    op: impl Fn(T::Native, T::Native) -> T::Native,
) -> (PrimitiveArray<T>, Vec<Option<T::Native>>) {
    let x = v.as_primitive::<T>();
    let missing = missing_rows(v);
    let mut acc: Vec<Option<T::Native>> = vec![None; g.len()];
    let out: PrimitiveArray<T> = (0..x.len())
        .map(|i| {
            let id = g.ids[i];
            if id == NO_GROUP || x.is_null(i) {
                return None;
            }
            if missing(i) {
                return Some(x.value(i));
            }
            let a = &mut acc[id as usize];
            let next = match *a {
                None => x.value(i),
                Some(s) => op(s, x.value(i)),
            };
            *a = Some(next);
            Some(next)
        })
        .collect();
    (out, acc)
}

/// `cumsum` or `cumprod` of `v` (already in its accumulator type): the outputs, and each
/// group's final total (`None` where the group had no value).
fn totals(
    func: WindowFunc,
    v: &ArrayRef,
    g: &Groups,
    spec: &WindowSpec,
) -> Result<(ArrayRef, ArrayRef)> {
    let prod = func == WindowFunc::CumProd;
    macro_rules! run {
        ($t:ty, $add:expr, $mul:expr) => {{
            let (out, acc) = if prod {
                cumulative::<$t>(v, g, $mul)
            } else {
                cumulative::<$t>(v, g, $add)
            };
            (
                Arc::new(out) as ArrayRef,
                Arc::new(PrimitiveArray::<$t>::from(acc)) as ArrayRef,
            )
        }};
    }
    Ok(match v.data_type() {
        DataType::Int64 => run!(Int64Type, i64::wrapping_add, i64::wrapping_mul),
        DataType::UInt64 => run!(UInt64Type, u64::wrapping_add, u64::wrapping_mul),
        DataType::Float64 => run!(Float64Type, |a: f64, b: f64| a + b, |a: f64, b: f64| a * b),
        DataType::Decimal128(p, s) => {
            let (out, acc) = cumulative::<Decimal128Type>(v, g, i128::wrapping_add);
            let acc = PrimitiveArray::<Decimal128Type>::from(acc);
            let fit = |a: PrimitiveArray<Decimal128Type>| -> Result<ArrayRef> {
                let a = a
                    .with_precision_and_scale(*p, *s)
                    .map_err(arrow_err(spec))?;
                a.validate_decimal_precision(*p).map_err(|_| {
                    Error::invalid(
                        "window",
                        format!(
                            "{}: a running total does not fit {}; cast the column to Float64 first",
                            spec.func.name(),
                            v.data_type()
                        ),
                    )
                })?;
                Ok(Arc::new(a))
            };
            (fit(out)?, fit(acc)?)
        }
        t => {
            return Err(Error::invalid(
                "window",
                format!("{}: accumulator of type {t}", spec.func.name()),
            ))
        }
    })
}

/// A rolling window of one group: the values in it, a compensated running sum, and a
/// monotonic queue of (position, value) for the extreme.
#[derive(Default, Clone)]
struct Rolling {
    values: VecDeque<Option<f64>>,
    /// The compensated sum of the window's finite values.
    sum: f64,
    compensation: f64,
    /// Infinities are counted, not added: an infinity leaving the window would otherwise
    /// leave `inf - inf = NaN` in the running sum for good.
    infinities: [usize; 2],
    count: usize,
    extremes: VecDeque<(u64, f64)>,
    seen: u64,
}

impl Rolling {
    fn add(&mut self, x: f64) {
        // Kahan–Babuška: the error of each addition is carried into the next.
        let y = x - self.compensation;
        let t = self.sum + y;
        self.compensation = (t - self.sum) - y;
        self.sum = t;
    }

    /// `x` entering (`sign` 1) or leaving (`sign` -1) the window's sum.
    fn add_value(&mut self, x: f64, sign: i8) {
        if x.is_infinite() {
            let slot = &mut self.infinities[usize::from(x < 0.0)];
            *slot = if sign > 0 { *slot + 1 } else { *slot - 1 };
        } else {
            self.add(f64::from(sign) * x);
        }
    }

    /// The window's sum: its finite values' sum, or the infinity it holds (NaN when it
    /// holds both signs).
    fn total(&self) -> f64 {
        match self.infinities {
            [0, 0] => self.sum,
            [_, 0] => f64::INFINITY,
            [0, _] => f64::NEG_INFINITY,
            _ => f64::NAN,
        }
    }

    fn push(&mut self, x: Option<f64>, agg: RollingAgg, window: usize) {
        self.seen += 1;
        if let Some(x) = x {
            self.add_value(x, 1);
            self.count += 1;
            let keep = |back: f64| match agg {
                RollingAgg::Min => back < x,
                _ => back > x,
            };
            while self.extremes.back().is_some_and(|&(_, b)| !keep(b)) {
                self.extremes.pop_back();
            }
            self.extremes.push_back((self.seen, x));
        }
        self.values.push_back(x);
        if self.values.len() > window {
            if let Some(Some(old)) = self.values.pop_front() {
                self.count -= 1;
                if self.count == 0 {
                    (self.sum, self.compensation) = (0.0, 0.0);
                    self.infinities = [0, 0];
                } else {
                    self.add_value(old, -1);
                }
            }
            let first_kept = self.seen - window as u64 + 1;
            while self
                .extremes
                .front()
                .is_some_and(|&(at, _)| at < first_kept)
            {
                self.extremes.pop_front();
            }
        }
    }

    fn value(&self, agg: RollingAgg, min_periods: usize) -> Option<f64> {
        if self.count < min_periods {
            return None;
        }
        Some(match agg {
            RollingAgg::Sum => self.total(),
            RollingAgg::Mean => self.total() / self.count as f64,
            RollingAgg::Min | RollingAgg::Max => self.extremes.front()?.1,
        })
    }
}

fn rolling(
    v: &ArrayRef,
    g: &Groups,
    agg: RollingAgg,
    window: usize,
    min_periods: usize,
    spec: &WindowSpec,
) -> Result<ArrayRef> {
    let f = cast(v, &DataType::Float64, spec)?;
    let x = f.as_primitive::<Float64Type>();
    let mut state: Vec<Rolling> = vec![Rolling::default(); g.len()];
    let missing = missing_rows(&f);
    let out: Float64Array = (0..x.len())
        .map(|i| {
            let id = g.ids[i];
            if id == NO_GROUP {
                return None;
            }
            let s = &mut state[id as usize];
            let value = (!missing(i)).then(|| x.value(i));
            s.push(value, agg, window);
            s.value(agg, min_periods)
        })
        .collect();
    Ok(Arc::new(out))
}

/// The function's values for every row of the sequence `v` grouped by `g`.
fn compute(v: &ArrayRef, g: &Groups, spec: &WindowSpec) -> Result<ArrayRef> {
    match spec.func {
        WindowFunc::Shift(_)
        | WindowFunc::FillForward
        | WindowFunc::FillBackward
        | WindowFunc::CumMin
        | WindowFunc::CumMax => take(v, &source_rows(spec.func, v, g, spec)?, spec),
        WindowFunc::Diff(_) => {
            let t = spec
                .func
                .output_type(v.data_type())
                .map_err(|why| Error::invalid("window", why))?;
            let earlier = take(v, &source_rows(spec.func, v, g, spec)?, spec)?;
            // pandas' diff(n) is x - x.shift(n) for either sign of n.
            let (now, earlier) = (cast(v, &t, spec)?, cast(&earlier, &t, spec)?);
            arrow_arith::numeric::sub_wrapping(&now, &earlier).map_err(arrow_err(spec))
        }
        WindowFunc::CumSum | WindowFunc::CumProd => Ok(totals(spec.func, v, g, spec)?.0),
        WindowFunc::Rolling {
            agg,
            window,
            min_periods,
        } => rolling(v, g, agg, window, min_periods, spec),
    }
}

/// `part` with the window's output column, `carry` preceding (or following) its rows.
pub(crate) fn window(
    part: &RecordBatch,
    spec: &WindowSpec,
    carry: Option<&RecordBatch>,
) -> Result<RecordBatch> {
    let schema = spec.output_schema(&part.schema())?;
    let (mut keys, mut v) = parts_of(part, spec)?;
    let rows = part.num_rows();
    let mut start = 0;
    if let Some(c) = carry.filter(|c| c.num_rows() > 0) {
        let (ckeys, cv) = parts_of(c, spec)?;
        let cv = cast(&cv, v.data_type(), spec)?;
        let join = |a: &ArrayRef, b: &ArrayRef| {
            arrow_select::concat::concat(&[a.as_ref(), b.as_ref()]).map_err(arrow_err(spec))
        };
        if spec.func.backward() {
            v = join(&v, &cv)?;
            for (k, ck) in keys.iter_mut().zip(&ckeys) {
                *k = join(k, &cast(ck, k.data_type(), spec)?)?;
            }
        } else {
            start = c.num_rows();
            v = join(&cv, &v)?;
            for (k, ck) in keys.iter_mut().zip(&ckeys) {
                *k = join(&cast(ck, k.data_type(), spec)?, k)?;
            }
        }
    }
    let g = group_rows(&keys, v.len())?;
    let out = compute(&v, &g, spec)?.slice(start, rows);
    let mut columns: Vec<ArrayRef> = part.columns().to_vec();
    match part.schema().index_of(&spec.output) {
        Ok(i) => columns[i] = out,
        Err(_) => columns.push(out),
    }
    RecordBatch::try_new_with_options(
        schema,
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(arrow_err(spec))
}

/// The carry `part` passes on, in the spec's carry schema.
pub(crate) fn carry(part: &RecordBatch, spec: &WindowSpec) -> Result<RecordBatch> {
    let schema = spec.carry_schema(&part.schema())?;
    let (keys, v) = parts_of(part, spec)?;
    let rows = part.num_rows();
    let g = group_rows(&keys, rows)?;
    let backward = spec.func.backward();
    let picked: Vec<u32> = match spec.func {
        WindowFunc::CumSum | WindowFunc::CumProd => {
            let (_, acc) = totals(spec.func, &v, &g, spec)?;
            let mut kept: Vec<u32> = (0..g.len() as u32)
                .filter(|&i| acc.is_valid(i as usize))
                .collect();
            let mut totals =
                arrow_select::take::take(acc.as_ref(), &UInt32Array::from(kept.clone()), None)
                    .map_err(arrow_err(spec))?;
            if let Some(f) = totals.as_primitive_opt::<Float64Type>() {
                // A NaN total (inf - inf, 0 * inf) cannot be carried as one row: the next
                // partition would skip it as a missing value and start again. Two rows
                // whose sum (product) is NaN carry it instead: +inf, -inf (0, +inf).
                let values: Vec<f64> = f.values().to_vec();
                if values.iter().any(|x| x.is_nan()) {
                    let pair = if spec.func == WindowFunc::CumSum {
                        [f64::INFINITY, f64::NEG_INFINITY]
                    } else {
                        [0.0, f64::INFINITY]
                    };
                    let (mut groups, mut out) = (Vec::new(), Vec::new());
                    for (&group, &x) in kept.iter().zip(&values) {
                        if x.is_nan() {
                            groups.extend([group, group]);
                            out.extend(pair);
                        } else {
                            groups.push(group);
                            out.push(x);
                        }
                    }
                    kept = groups;
                    totals = Arc::new(Float64Array::from(out));
                }
            }
            let firsts: Vec<u32> = kept.iter().map(|&i| g.first_rows[i as usize]).collect();
            let idx = UInt32Array::from(firsts);
            let mut columns = keys
                .iter()
                .map(|k| arrow_select::take::take(k.as_ref(), &idx, None).map_err(arrow_err(spec)))
                .collect::<Result<Vec<_>>>()?;
            columns.push(totals);
            return RecordBatch::try_new(schema, columns).map_err(arrow_err(spec));
        }
        WindowFunc::Shift(_) | WindowFunc::Diff(_) | WindowFunc::Rolling { .. } => {
            let k = spec.func.carry_rows().unwrap_or(0);
            let mut count = vec![0usize; g.len()];
            // Forward functions keep each group's last k rows, backward ones its first k.
            let mut kept: Vec<u32> = visit(rows, !backward)
                .filter(|&i| {
                    let id = g.ids[i];
                    if id == NO_GROUP || count[id as usize] >= k {
                        return false;
                    }
                    count[id as usize] += 1;
                    true
                })
                .map(|i| i as u32)
                .collect();
            kept.sort_unstable();
            kept
        }
        WindowFunc::FillForward
        | WindowFunc::FillBackward
        | WindowFunc::CumMin
        | WindowFunc::CumMax => {
            // The value the next row would see: the last non-null value (fills) or the
            // running extreme (cummin/cummax, where a NaN row is skipped) of each group.
            let fill = !matches!(spec.func, WindowFunc::CumMin | WindowFunc::CumMax);
            let sources = source_rows(spec.func, &v, &g, spec)?;
            let missing = missing_rows(&v);
            let mut last: Vec<Option<u32>> = vec![None; g.len()];
            for i in visit(rows, backward) {
                let id = g.ids[i];
                let counts = if fill { v.is_valid(i) } else { !missing(i) };
                if id != NO_GROUP && counts {
                    last[id as usize] = sources[i];
                }
            }
            let mut kept: Vec<u32> = last.into_iter().flatten().collect();
            kept.sort_unstable();
            kept
        }
    };
    let idx = UInt32Array::from(picked);
    let columns = keys
        .iter()
        .chain([&v])
        .map(|c| {
            if rows == 0 {
                Ok(new_empty_array(c.data_type()))
            } else {
                arrow_select::take::take(c.as_ref(), &idx, None).map_err(arrow_err(spec))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(schema, columns).map_err(arrow_err(spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(xs: &[Option<f64>], agg: RollingAgg, window: usize) -> Vec<Option<f64>> {
        let mut r = Rolling::default();
        xs.iter()
            .map(|&x| {
                r.push(x, agg, window);
                r.value(agg, 1)
            })
            .collect()
    }

    /// A running sum that became NaN (inf - inf) in one partition stays NaN in the next:
    /// the carry must not look like a missing value, which the next partition would skip.
    #[test]
    fn a_nan_running_total_crosses_partitions() {
        use arrow_array::Float64Array;
        for (func, first, want) in [
            (
                WindowFunc::CumSum,
                vec![f64::INFINITY, f64::NEG_INFINITY],
                2.0,
            ),
            (WindowFunc::CumProd, vec![0.0, f64::INFINITY], 2.0),
        ] {
            let spec = WindowSpec {
                keys: vec![],
                func,
                column: "v".into(),
                output: "out".into(),
            };
            let part = |v: Vec<f64>| {
                let a: ArrayRef = Arc::new(Float64Array::from(v));
                RecordBatch::try_from_iter([("v", a)]).unwrap()
            };
            let c = carry(&part(first), &spec).unwrap();
            let out = window(&part(vec![want, 3.0]), &spec, Some(&c)).unwrap();
            let got = out.column(1).as_primitive::<Float64Type>();
            assert!(
                got.value(0).is_nan() && got.value(1).is_nan(),
                "{func:?}: {got:?}"
            );
            // Folded with a later partition's carry, the total is still NaN.
            let both =
                arrow_select::concat::concat_batches(&c.schema(), &[c.clone(), part(vec![5.0])])
                    .unwrap();
            let folded = carry(&both, &spec).unwrap();
            let out = window(&part(vec![1.0]), &spec, Some(&folded)).unwrap();
            assert!(
                out.column(1)
                    .as_primitive::<Float64Type>()
                    .value(0)
                    .is_nan(),
                "{func:?}"
            );
        }
    }

    /// An infinity that leaves the window leaves no NaN behind in the running sum, and a
    /// window holding both infinities sums to NaN (as pandas' rolling sum and mean).
    #[test]
    fn infinities_enter_and_leave_a_rolling_window() {
        let (inf, ninf) = (f64::INFINITY, f64::NEG_INFINITY);
        let got = sums(
            &[Some(inf), Some(1.0), Some(2.0), Some(3.0)],
            RollingAgg::Sum,
            2,
        );
        assert_eq!(got, vec![Some(inf), Some(inf), Some(3.0), Some(5.0)]);
        let got = sums(
            &[Some(1.0), Some(ninf), Some(2.0), None, Some(4.0)],
            RollingAgg::Mean,
            2,
        );
        assert_eq!(
            got,
            vec![Some(1.0), Some(ninf), Some(ninf), Some(2.0), Some(4.0)]
        );
        let both = sums(&[Some(inf), Some(ninf), Some(7.0)], RollingAgg::Sum, 2);
        assert!(both[1].is_some_and(f64::is_nan));
        assert_eq!(both[2], Some(ninf));
    }
}
