//! Means, variances, skewness and kurtosis: per-group moments, and their states merged
//! with Chan et al.'s pairwise formula, which stays accurate where a sum of squares would
//! cancel.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array};
use arrow_schema::DataType;
use tessera_core::Result;

use super::columns::cast;
use crate::keys::groups::{Groups, NO_GROUP};

/// Per-group `(count, mean, m2)` by Welford's update.
pub(super) fn moments(a: &ArrayRef, g: &Groups) -> Result<Vec<ArrayRef>> {
    let a = cast(a, &DataType::Float64)?;
    let v = a.as_primitive::<Float64Type>().values();
    let n = g.len();
    let (mut c, mut mean, mut m2) = (vec![0i64; n], vec![0.0f64; n], vec![0.0f64; n]);
    for (i, (&id, &x)) in g.ids.iter().zip(v.iter()).enumerate() {
        if id == NO_GROUP || a.is_null(i) {
            continue;
        }
        let k = id as usize;
        c[k] += 1;
        let d = x - mean[k];
        mean[k] += d / c[k] as f64;
        m2[k] += d * (x - mean[k]);
    }
    Ok(vec![
        Arc::new(Int64Array::from(c)),
        Arc::new(Float64Array::from(mean)),
        Arc::new(Float64Array::from(m2)),
    ])
}

/// Merges `(count, mean, m2)` states per group (Chan et al.).
pub(super) fn merge_moments(
    c: &ArrayRef,
    mean: &ArrayRef,
    m2: &ArrayRef,
    g: &Groups,
) -> Vec<ArrayRef> {
    let (cv, mv, m2v) = (
        c.as_primitive::<Int64Type>().values(),
        mean.as_primitive::<Float64Type>().values(),
        m2.as_primitive::<Float64Type>().values(),
    );
    let n = g.len();
    let (mut oc, mut om, mut om2) = (vec![0i64; n], vec![0.0f64; n], vec![0.0f64; n]);
    for (i, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || cv[i] == 0 {
            continue;
        }
        let k = id as usize;
        let (na, nb) = (oc[k] as f64, cv[i] as f64);
        let total = na + nb;
        let d = mv[i] - om[k];
        om[k] += d * nb / total;
        om2[k] += m2v[i] + d * d * na * nb / total;
        oc[k] += cv[i];
    }
    vec![
        Arc::new(Int64Array::from(oc)),
        Arc::new(Float64Array::from(om)),
        Arc::new(Float64Array::from(om2)),
    ]
}

/// `(count, mean, m2, m3, m4)` per group: the central sums `Mk = Σ (x − mean)^k`, updated
/// value by value (Pébay 2008, the one-value case of [`merge_higher_moments`]'s update).
pub(super) fn higher_moments(a: &ArrayRef, g: &Groups) -> Result<Vec<ArrayRef>> {
    let a = cast(a, &DataType::Float64)?;
    let v = a.as_primitive::<Float64Type>().values();
    let mut acc = vec![Moments4::default(); g.len()];
    for (i, (&id, &x)) in g.ids.iter().zip(v.iter()).enumerate() {
        if id == NO_GROUP || a.is_null(i) {
            continue;
        }
        acc[id as usize].push(x);
    }
    Ok(Moments4::columns(&acc))
}

/// Merges `(count, mean, m2, m3, m4)` states per group (Pébay's pairwise update).
pub(super) fn merge_higher_moments(state: &[&ArrayRef], g: &Groups) -> Vec<ArrayRef> {
    let c = state[0].as_primitive::<Int64Type>().values();
    let f = |k: usize| state[k].as_primitive::<Float64Type>().values();
    let (mean, m2, m3, m4) = (f(1), f(2), f(3), f(4));
    let mut acc = vec![Moments4::default(); g.len()];
    for (i, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || c[i] == 0 {
            continue;
        }
        let other = Moments4 {
            n: c[i],
            mean: mean[i],
            m2: m2[i],
            m3: m3[i],
            m4: m4[i],
        };
        acc[id as usize].merge(&other);
    }
    Moments4::columns(&acc)
}

/// A group's count, mean and central sums of powers 2 to 4.
#[derive(Clone, Copy, Default)]
pub(super) struct Moments4 {
    n: i64,
    mean: f64,
    m2: f64,
    m3: f64,
    m4: f64,
}

impl Moments4 {
    /// Adds one value.
    fn push(&mut self, x: f64) {
        let n1 = self.n as f64;
        self.n += 1;
        let n = self.n as f64;
        let d = x - self.mean;
        let dn = d / n;
        let dn2 = dn * dn;
        let t = d * dn * n1;
        self.mean += dn;
        self.m4 += t * dn2 * (n * n - 3.0 * n + 3.0) + 6.0 * dn2 * self.m2 - 4.0 * dn * self.m3;
        self.m3 += t * dn * (n - 2.0) - 3.0 * dn * self.m2;
        self.m2 += t;
    }

    /// Merges another group's moments into these.
    fn merge(&mut self, o: &Moments4) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let (na, nb) = (self.n as f64, o.n as f64);
        let n = na + nb;
        let d = o.mean - self.mean;
        let (d2, d3, d4) = (d * d, d * d * d, d * d * d * d);
        let m4 = self.m4
            + o.m4
            + d4 * na * nb * (na * na - na * nb + nb * nb) / (n * n * n)
            + 6.0 * d2 * (na * na * o.m2 + nb * nb * self.m2) / (n * n)
            + 4.0 * d * (na * o.m3 - nb * self.m3) / n;
        let m3 = self.m3
            + o.m3
            + d3 * na * nb * (na - nb) / (n * n)
            + 3.0 * d * (na * o.m2 - nb * self.m2) / n;
        self.m2 += o.m2 + d2 * na * nb / n;
        self.m3 = m3;
        self.m4 = m4;
        self.mean += d * nb / n;
        self.n += o.n;
    }

    /// The five state columns of `groups`.
    fn columns(groups: &[Moments4]) -> Vec<ArrayRef> {
        vec![
            Arc::new(Int64Array::from_iter_values(groups.iter().map(|m| m.n))),
            Arc::new(Float64Array::from_iter_values(
                groups.iter().map(|m| m.mean),
            )),
            Arc::new(Float64Array::from_iter_values(groups.iter().map(|m| m.m2))),
            Arc::new(Float64Array::from_iter_values(groups.iter().map(|m| m.m3))),
            Arc::new(Float64Array::from_iter_values(groups.iter().map(|m| m.m4))),
        ]
    }
}

/// Skewness from a group's count and central sums, as pandas' `skew()`: null below 3
/// values or when `m2` is 0 (all values equal: 0/0), as DuckDB; pandas gives NaN for both.
pub(super) fn skewness(n: i64, m2: f64, m3: f64) -> Option<f64> {
    if n < 3 {
        return None;
    }
    if m2 == 0.0 {
        return None;
    }
    let n = n as f64;
    Some(n * (n - 1.0).sqrt() / (n - 2.0) * (m3 / m2.powf(1.5)))
}

/// Excess kurtosis from a group's count and central sums, as pandas' `kurt()`: null below
/// 4 values or when `m2` is 0.
pub(super) fn kurtosis(n: i64, m2: f64, m4: f64) -> Option<f64> {
    if n < 4 {
        return None;
    }
    if m2 == 0.0 {
        return None;
    }
    let n = n as f64;
    let num = n * (n + 1.0) * (n - 1.0) * m4;
    let den = (n - 2.0) * (n - 3.0) * m2 * m2;
    Some(num / den - 3.0 * (n - 1.0) * (n - 1.0) / ((n - 2.0) * (n - 3.0)))
}
