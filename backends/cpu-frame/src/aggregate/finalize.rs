//! The last step: each group's state made its answer (a mean from its sum and count, a
//! quantile from its values, a digest's estimate).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{DataType, Field, Schema};
use tessera_core::frame::digest::Digest;
use tessera_core::frame::{AggFunc, AggSpec};
use tessera_core::{Error, Result};

use super::columns::{cast, column};
use super::combine::state_columns;
use super::moments::{kurtosis, skewness};

/// The median of `xs` (reordered): the middle value, or the mean of the two middle values
/// of an even count; `None` when empty.
pub(super) fn median(xs: &mut [f64]) -> Option<f64> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let (_, hi, _) = xs.select_nth_unstable_by(n / 2, f64::total_cmp);
    let hi = *hi;
    if n % 2 == 1 {
        return Some(hi);
    }
    // The largest of the lower half.
    let lo = xs[..n / 2]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    Some((lo + hi) / 2.0)
}

/// The `q` quantile of `xs` (reordered), interpolated linearly between the values at
/// ranks `floor(q(n-1))` and `ceil(q(n-1))` as NumPy's and pandas' default; `None` when
/// empty.
pub(super) fn quantile(xs: &mut [f64], q: f64) -> Option<f64> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let pos = q * (n - 1) as f64;
    let lo = (pos.floor() as usize).min(n - 1);
    let (_, at, above) = xs.select_nth_unstable_by(lo, f64::total_cmp);
    let lo_v = *at;
    let frac = pos - lo as f64;
    if frac == 0.0 || above.is_empty() {
        return Some(lo_v);
    }
    let hi_v = above.iter().copied().fold(f64::INFINITY, f64::min);
    // NumPy's lerp: exact at both ends.
    Some(if frac < 0.5 {
        lo_v + (hi_v - lo_v) * frac
    } else {
        hi_v - (hi_v - lo_v) * (1.0 - frac)
    })
}

/// Turns a combined state into results, sorted by the keys.
pub(crate) fn finalize(
    state: &RecordBatch,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for k in keys {
        let c = column(state, k, "groupby")?;
        fields.push(Field::new(k, c.data_type().clone(), true));
        columns.push(c);
    }
    for spec in aggs {
        let cols = state_columns(state, spec)?;
        let a: Vec<&ArrayRef> = cols.iter().map(|(_, a)| a).collect();
        let out: ArrayRef = match spec.func {
            AggFunc::Sum | AggFunc::Count => a[0].clone(),
            AggFunc::Mean => {
                let s = cast(a[0], &DataType::Float64)?;
                let s = s.as_primitive::<Float64Type>().values();
                let c = a[1].as_primitive::<Int64Type>().values();
                Arc::new(Float64Array::from_iter(
                    s.iter()
                        .zip(c.iter())
                        .map(|(&s, &c)| (c > 0).then(|| s / c as f64)),
                ))
            }
            AggFunc::Skew | AggFunc::Kurt => {
                let c = a[0].as_primitive::<Int64Type>().values();
                let f = |k: usize| a[k].as_primitive::<Float64Type>().values();
                let (m2, m3, m4) = (f(2), f(3), f(4));
                let skew = spec.func == AggFunc::Skew;
                Arc::new(Float64Array::from_iter((0..c.len()).map(|i| {
                    if skew {
                        skewness(c[i], m2[i], m3[i])
                    } else {
                        kurtosis(c[i], m2[i], m4[i])
                    }
                })))
            }
            AggFunc::Var | AggFunc::Std => {
                let c = a[0].as_primitive::<Int64Type>().values();
                let m2 = a[2].as_primitive::<Float64Type>().values();
                let std = spec.func == AggFunc::Std;
                Arc::new(Float64Array::from_iter(c.iter().zip(m2.iter()).map(
                    |(&c, &m2)| {
                        (c > 1).then(|| {
                            // Rounding can leave m2 a hair below zero; clamp that, but
                            // keep NaN (an infinite value in the group): `f64::max`
                            // would turn NaN into 0.
                            let v = m2 / (c - 1) as f64;
                            let v = if v < 0.0 { 0.0 } else { v };
                            if std {
                                v.sqrt()
                            } else {
                                v
                            }
                        })
                    },
                )))
            }
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => a[0].clone(),
            AggFunc::Cov | AggFunc::Corr => crate::comoments::finish(&a, spec.func),
            AggFunc::Largest(_) | AggFunc::Smallest(_) => a[0].clone(),
            AggFunc::NUnique => {
                let list = a[0].as_list::<i32>();
                let lens: Vec<i64> = list
                    .offsets()
                    .windows(2)
                    .map(|w| i64::from(w[1] - w[0]))
                    .collect();
                Arc::new(Int64Array::new(ScalarBuffer::from(lens), None))
            }
            AggFunc::Median | AggFunc::Quantile(_) => {
                let list = a[0].as_list::<i32>();
                Arc::new(Float64Array::from_iter((0..list.len()).map(|r| {
                    let v = list.value(r);
                    let mut xs: Vec<f64> = v
                        .as_primitive::<Float64Type>()
                        .iter()
                        .flatten()
                        .filter(|x| !x.is_nan())
                        .collect();
                    match spec.func {
                        AggFunc::Quantile(q) => quantile(&mut xs, q.value()),
                        _ => median(&mut xs),
                    }
                })))
            }
            AggFunc::ApproxQuantile(q) => {
                let list = a[0].as_list::<i32>();
                let mut out = Vec::with_capacity(list.len());
                for r in 0..list.len() {
                    let v = list.value(r);
                    let d = Digest::decode(v.as_primitive::<Float64Type>().values())?;
                    out.push(d.map(|d| d.quantile(q.value())));
                }
                Arc::new(Float64Array::from(out))
            }
        };
        fields.push(Field::new(&spec.output, out.data_type().clone(), true));
        columns.push(out);
    }
    let out = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(state.num_rows())),
    )
    .map_err(|e| Error::arrow("groupby", e))?;
    if keys.is_empty() || out.num_rows() <= 1 {
        return Ok(out);
    }
    let by: Vec<tessera_core::frame::SortKey> = keys
        .iter()
        .map(|k| tessera_core::frame::SortKey {
            column: k.clone(),
            descending: false,
        })
        .collect();
    crate::sort::sort_batch(&out, &by)
}
