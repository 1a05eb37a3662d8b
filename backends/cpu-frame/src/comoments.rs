//! Covariance and correlation per group from co-moments: each group's count of complete
//! pairs, the two means, the two sums of squared deviations and the sum of products of
//! deviations, updated one pair at a time (Welford's update extended to two variables)
//! and merged across partitions by the pairwise formula of Chan et al. — the stable
//! route pandas' `cov`/`corr` take with two passes, in one.
//!
//! A pair counts only where both values are present and neither is NaN (pandas' pairwise
//! completeness). Finals: `cov = c_xy / (n − 1)`; `corr = c_xy / √(m2_x · m2_y)`, clamped
//! to [−1, 1] (rounding can step past it by an ulp); null below two pairs, and `corr`
//! null where either column is constant (0/0; pandas gives NaN). A group holding an
//! infinite value has NaN sums (the two-pass route's `∞ − ∞`): `cov` NaN, `corr` null.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array};
use arrow_schema::DataType;
use tessera_core::frame::AggFunc;
use tessera_core::{Error, Result};

use crate::keys::groups::{Groups, NO_GROUP};

/// One group's co-moments.
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub(crate) struct CoMoments {
    n: i64,
    mean_x: f64,
    mean_y: f64,
    m2_x: f64,
    m2_y: f64,
    c_xy: f64,
}

impl CoMoments {
    /// Adds one complete pair. An infinite value makes the sums NaN, as the two-pass
    /// route gives (`∞ − ∞` in its deviations): `cov` NaN, `corr` null.
    fn push(&mut self, x: f64, y: f64) {
        if !(x.is_finite() && y.is_finite()) {
            self.n += 1;
            self.m2_x = f64::NAN;
            self.m2_y = f64::NAN;
            self.c_xy = f64::NAN;
            return;
        }
        self.n += 1;
        let n = self.n as f64;
        let dx = x - self.mean_x;
        self.mean_x += dx / n;
        let dy = y - self.mean_y;
        self.mean_y += dy / n;
        // (x − old mean)(y − new mean): the co-moment's exact one-pair update.
        self.c_xy += dx * (y - self.mean_y);
        self.m2_x += dx * (x - self.mean_x);
        self.m2_y += dy * (y - self.mean_y);
    }

    /// Merges another group's co-moments into these.
    fn merge(&mut self, o: &CoMoments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let (na, nb) = (self.n as f64, o.n as f64);
        let n = na + nb;
        let (dx, dy) = (o.mean_x - self.mean_x, o.mean_y - self.mean_y);
        let w = na * nb / n;
        self.c_xy += o.c_xy + dx * dy * w;
        self.m2_x += o.m2_x + dx * dx * w;
        self.m2_y += o.m2_y + dy * dy * w;
        self.mean_x += dx * nb / n;
        self.mean_y += dy * nb / n;
        self.n += o.n;
    }

    /// The final value of `func` (`cov` or `corr`).
    fn finish(&self, func: AggFunc) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        match func {
            AggFunc::Corr => {
                let den = (self.m2_x * self.m2_y).sqrt();
                (den > 0.0).then(|| (self.c_xy / den).clamp(-1.0, 1.0))
            }
            _ => Some(self.c_xy / (self.n - 1) as f64),
        }
    }
}

fn floats(a: &ArrayRef) -> Result<ArrayRef> {
    arrow_cast::cast(a, &DataType::Float64).map_err(|e| Error::arrow("cov", e))
}

/// The state columns (count, mean_x, mean_y, m2_x, m2_y, c_xy) of `x` and `y` per group.
///
/// # Errors
/// A column that does not cast to Float64.
pub(crate) fn partial(x: &ArrayRef, y: &ArrayRef, g: &Groups) -> Result<Vec<ArrayRef>> {
    let (xf, yf) = (floats(x)?, floats(y)?);
    let (xa, ya) = (
        xf.as_primitive::<Float64Type>(),
        yf.as_primitive::<Float64Type>(),
    );
    let mut acc = vec![CoMoments::default(); g.len()];
    for (i, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || xa.is_null(i) || ya.is_null(i) {
            continue;
        }
        let (xv, yv) = (xa.value(i), ya.value(i));
        if xv.is_nan() || yv.is_nan() {
            continue;
        }
        acc[id as usize].push(xv, yv);
    }
    Ok(columns(&acc))
}

/// The six state columns' values, read once (not downcast per row).
struct StateColumns<'a> {
    n: &'a [i64],
    f: [&'a [f64]; 5],
}

impl<'a> StateColumns<'a> {
    fn of(state: &[&'a ArrayRef]) -> StateColumns<'a> {
        let f = |k: usize| state[k].as_primitive::<Float64Type>().values().as_ref();
        StateColumns {
            n: state[0].as_primitive::<Int64Type>().values(),
            f: [f(1), f(2), f(3), f(4), f(5)],
        }
    }

    fn row(&self, r: usize) -> CoMoments {
        let [mean_x, mean_y, m2_x, m2_y, c_xy] = self.f.map(|c| c[r]);
        CoMoments {
            n: self.n[r],
            mean_x,
            mean_y,
            m2_x,
            m2_y,
            c_xy,
        }
    }
}

/// Merges state rows per group (`g` assigns each row).
pub(crate) fn merge(state: &[&ArrayRef], g: &Groups) -> Vec<ArrayRef> {
    let cols = StateColumns::of(state);
    let mut acc = vec![CoMoments::default(); g.len()];
    for (row, &id) in g.ids.iter().enumerate() {
        if id != NO_GROUP {
            acc[id as usize].merge(&cols.row(row));
        }
    }
    columns(&acc)
}

/// The final column of `func` from merged states.
pub(crate) fn finish(state: &[&ArrayRef], func: AggFunc) -> ArrayRef {
    let cols = StateColumns::of(state);
    Arc::new(Float64Array::from_iter(
        (0..cols.n.len()).map(|r| cols.row(r).finish(func)),
    ))
}

fn columns(groups: &[CoMoments]) -> Vec<ArrayRef> {
    let f = |get: fn(&CoMoments) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(groups.iter().map(get)))
    };
    vec![
        Arc::new(Int64Array::from_iter_values(groups.iter().map(|m| m.n))),
        f(|m| m.mean_x),
        f(|m| m.mean_y),
        f(|m| m.m2_x),
        f(|m| m.m2_y),
        f(|m| m.c_xy),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(pairs: &[(f64, f64)]) -> CoMoments {
        let mut m = CoMoments::default();
        for &(x, y) in pairs {
            m.push(x, y);
        }
        m
    }

    /// By hand: x = 1, 2, 3, 4 and y = 2, 4, 5, 9 have means 2.5 and 5, deviation
    /// products -1.5·-3 + -0.5·-1 + 0.5·0 + 1.5·4 = 11, so cov = 11/3; squared
    /// deviations 5 and 26, so corr = 11/√130.
    #[test]
    fn cov_and_corr_are_the_textbook_values() {
        let m = of(&[(1.0, 2.0), (2.0, 4.0), (3.0, 5.0), (4.0, 9.0)]);
        assert_eq!(m.n, 4);
        assert!((m.finish(AggFunc::Cov).unwrap() - 11.0 / 3.0).abs() < 1e-15);
        assert!((m.finish(AggFunc::Corr).unwrap() - 11.0 / 130f64.sqrt()).abs() < 1e-15);
        assert_eq!(of(&[(1.0, 2.0)]).finish(AggFunc::Cov), None, "one pair");
        assert_eq!(
            of(&[(1.0, 2.0), (1.0, 3.0)]).finish(AggFunc::Corr),
            None,
            "x constant"
        );
        assert_eq!(
            of(&[(1.0, 2.0), (1.0, 3.0)]).finish(AggFunc::Cov),
            Some(0.0)
        );
    }

    #[test]
    fn merged_halves_equal_the_whole_and_stay_stable_far_from_zero() {
        // Values near 1e9 with a spread of a few units (an ulp there is 1.2e-7): sums of
        // products would cancel catastrophically; co-moments keep about eight digits.
        let pairs: Vec<(f64, f64)> = (0..1000)
            .map(|i| {
                let t = f64::from(i % 17) - 8.0;
                (1e9 + t, 2e9 - 0.5 * t + f64::from(i % 3))
            })
            .collect();
        let centred: Vec<(f64, f64)> = pairs.iter().map(|&(x, y)| (x - 1e9, y - 2e9)).collect();
        let whole = of(&pairs);
        let mut halves = of(&pairs[..313]);
        halves.merge(&of(&pairs[313..]));
        for f in [AggFunc::Cov, AggFunc::Corr] {
            let exact = of(&centred).finish(f).unwrap();
            for (how, m) in [("whole", &whole), ("merged", &halves)] {
                let got = m.finish(f).unwrap();
                assert!(
                    (got - exact).abs() <= 1e-7 * exact.abs(),
                    "{f:?} {how}: {got} vs {exact}"
                );
            }
        }
        // The textbook one-pass formula on the same numbers is far off.
        let n = pairs.len() as f64;
        let (sx, sy, sxy) = pairs.iter().fold((0.0, 0.0, 0.0), |(a, b, c), &(x, y)| {
            (a + x, b + y, c + x * y)
        });
        let naive = (sxy - sx * sy / n) / (n - 1.0);
        let exact = of(&centred).finish(AggFunc::Cov).unwrap();
        assert!(
            (naive - exact).abs() > 1e-2 * exact.abs(),
            "{naive} vs {exact}"
        );
        let mut empty = CoMoments::default();
        empty.merge(&whole);
        assert_eq!(empty, whole);
        let mut inf = of(&[(1.0, 2.0), (f64::INFINITY, 3.0), (2.0, 2.0)]);
        assert!(inf.finish(AggFunc::Cov).unwrap().is_nan());
        assert_eq!(inf.finish(AggFunc::Corr), None);
        inf.merge(&whole);
        assert!(
            inf.finish(AggFunc::Cov).unwrap().is_nan(),
            "NaN survives a merge"
        );
    }
}
