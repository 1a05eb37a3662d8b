//! The t-digest behind the protocol's `AggFunc::ApproxQuantile`: a
//! quantile sketch whose size does not grow with the data, so a quantile of a billion-row
//! group costs a few kilobytes of state, and whose states from any partitions merge.
//!
//! This is Dunning's *merging* t-digest (Dunning & Ertl, "Computing extremely accurate
//! quantiles using t-digests", 2019) with the `k1` scale function and compression
//! [`COMPRESSION`]: sorted centroids `(mean, weight)` are merged left to right while the
//! merged centroid spans at most one unit of `k(q) = δ/(2π)·asin(2q − 1)`, so centroids
//! are small near the tails (where a single value may stand alone) and large in the
//! middle. The exact minimum and maximum are kept beside them for the extreme quantiles.
//!
//! The layout is defined here, once, so that states from every backend merge the same way: one
//! `List<Float64>` value per group, `[min, max, mean₁, weight₁, mean₂, weight₂, …]` with
//! means ascending and weights positive; an empty list is a group without values.

/// A list of numbers that is not a digest state, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("a digest state of {len} numbers is malformed: {why}")]
pub struct MalformedDigest {
    /// How many numbers the state had.
    pub len: usize,
    /// What is wrong with them.
    pub why: &'static str,
}

/// The compression δ: a digest holds at most about δ centroids. 200 keeps the rank error
/// of a median estimate well under 0.5% and of the 1st/99th percentiles near 0.01%.
pub const COMPRESSION: f64 = 200.0;

/// A t-digest: centroids sorted by mean, and the exact extremes.
#[derive(Debug, Clone, PartialEq)]
pub struct Digest {
    min: f64,
    max: f64,
    centroids: Vec<(f64, f64)>,
}

fn k(q: f64) -> f64 {
    COMPRESSION / (2.0 * std::f64::consts::PI) * (2.0 * q - 1.0).clamp(-1.0, 1.0).asin()
}

fn k_inverse(k: f64) -> f64 {
    let angle = (2.0 * std::f64::consts::PI * k / COMPRESSION)
        .clamp(-std::f64::consts::FRAC_PI_2, std::f64::consts::FRAC_PI_2);
    (angle.sin() + 1.0) / 2.0
}

/// One merging pass over centroids sorted by mean.
fn compress(sorted: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let Some((&first, rest)) = sorted.split_first() else {
        return Vec::new();
    };
    let total: f64 = sorted.iter().map(|c| c.1).sum();
    let limit_after = |before: f64| k_inverse(k(before / total) + 1.0) * total;
    let mut out = Vec::with_capacity(COMPRESSION as usize);
    let mut cur = first;
    let mut before = 0.0;
    let mut limit = limit_after(before);
    for &x in rest {
        if before + cur.1 + x.1 <= limit {
            let w = cur.1 + x.1;
            cur = (cur.0 + (x.0 - cur.0) * (x.1 / w), w);
        } else {
            before += cur.1;
            out.push(cur);
            limit = limit_after(before);
            cur = x;
        }
    }
    out.push(cur);
    out
}

impl Digest {
    /// The digest of `values` (reordered; NaN skipped), or `None` when there are none.
    pub fn from_values(values: &mut [f64]) -> Option<Digest> {
        values.sort_unstable_by(f64::total_cmp);
        let values: Vec<(f64, f64)> = values
            .iter()
            .filter(|v| !v.is_nan())
            .map(|&v| (v, 1.0))
            .collect();
        let (min, max) = (values.first()?.0, values.last()?.0);
        Some(Digest {
            min,
            max,
            centroids: compress(&values),
        })
    }

    /// Reads a digest in the layout above; `None` for an empty list.
    ///
    /// # Errors
    /// [`MalformedDigest`] when the numbers are not a digest: an odd or too short length,
    /// weights that are not positive and finite, means out of order or outside
    /// `[min, max]`.
    pub fn decode(flat: &[f64]) -> Result<Option<Digest>, MalformedDigest> {
        if flat.is_empty() {
            return Ok(None);
        }
        let bad = |why: &'static str| MalformedDigest {
            len: flat.len(),
            why,
        };
        if flat.len() < 4 || !flat.len().is_multiple_of(2) {
            return Err(bad(
                "expected [min, max] and at least one (mean, weight) pair",
            ));
        }
        let (min, max) = (flat[0], flat[1]);
        let centroids: Vec<(f64, f64)> = flat[2..].chunks_exact(2).map(|p| (p[0], p[1])).collect();
        if centroids.iter().any(|c| !(c.1 > 0.0 && c.1.is_finite())) {
            return Err(bad("a weight is not positive and finite"));
        }
        if centroids.windows(2).any(|w| w[0].0 > w[1].0)
            || centroids.iter().any(|c| c.0 < min || c.0 > max)
        {
            return Err(bad("the means are not ascending within [min, max]"));
        }
        Ok(Some(Digest {
            min,
            max,
            centroids,
        }))
    }

    /// Appends the digest in the layout above.
    pub fn encode(&self, out: &mut Vec<f64>) {
        out.extend([self.min, self.max]);
        for &(m, w) in &self.centroids {
            out.extend([m, w]);
        }
    }

    /// The digest of everything the digests saw, or `None` when there are none.
    pub fn merge(digests: impl IntoIterator<Item = Digest>) -> Option<Digest> {
        let mut min = f64::INFINITY;
        let mut max = f64::NEG_INFINITY;
        let mut all = Vec::new();
        let mut any = false;
        for d in digests {
            any = true;
            min = min.min(d.min);
            max = max.max(d.max);
            all.extend(d.centroids);
        }
        if !any {
            return None;
        }
        all.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        Some(Digest {
            min,
            max,
            centroids: compress(&all),
        })
    }

    /// Number of values seen.
    pub fn count(&self) -> f64 {
        self.centroids.iter().map(|c| c.1).sum()
    }

    /// Number of centroids (at most about [`COMPRESSION`]).
    pub fn len(&self) -> usize {
        self.centroids.len()
    }

    /// Whether the digest has no centroids (never true of a decoded or built digest).
    pub fn is_empty(&self) -> bool {
        self.centroids.is_empty()
    }

    /// The estimated `q` quantile: linear between the centres of neighbouring centroids,
    /// and between the outer centroids and the exact minimum and maximum.
    pub fn quantile(&self, q: f64) -> f64 {
        let c = &self.centroids;
        let total = self.count();
        if q <= 0.0 {
            return self.min;
        }
        if q >= 1.0 {
            return self.max;
        }
        let t = q * total;
        let (first, last) = (c[0], c[c.len() - 1]);
        if t < first.1 / 2.0 {
            return lerp(self.min, first.0, t / (first.1 / 2.0));
        }
        if t > total - last.1 / 2.0 {
            let from = total - last.1 / 2.0;
            return lerp(last.0, self.max, (t - from) / (last.1 / 2.0));
        }
        let mut before = 0.0;
        for w in c.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (ca, cb) = (before + a.1 / 2.0, before + a.1 + b.1 / 2.0);
            if t <= cb {
                return lerp(a.0, b.0, (t - ca) / (cb - ca));
            }
            before += a.1;
        }
        last.0
    }
}

/// The point a fraction `f` of the way from `a` to `b`, which stays in `[a, b]` where
/// either end is infinite (`a + (b - a) * f` is NaN for `inf` to `inf`, and for `-inf` to
/// any number): there the nearer end.
fn lerp(a: f64, b: f64, f: f64) -> f64 {
    if a == b || f <= 0.0 {
        a
    } else if f >= 1.0 {
        b
    } else if a.is_infinite() || b.is_infinite() {
        if f < 0.5 {
            a
        } else {
            b
        }
    } else {
        a + (b - a) * f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Infinite values give infinite estimates, never NaN (found by the frame suite's
    /// bounds: a group whose top values were `inf` estimated its 0.9 quantile as NaN).
    #[test]
    fn infinities_give_estimates_in_range_not_nan() {
        for values in [
            vec![2.5, 3.0, f64::INFINITY, f64::INFINITY],
            vec![f64::NEG_INFINITY, f64::NEG_INFINITY, 1.0, 2.0],
            vec![f64::NEG_INFINITY, 0.0, f64::INFINITY],
        ] {
            let d = Digest::from_values(&mut values.clone()).unwrap();
            for q in [0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95] {
                let e = d.quantile(q);
                assert!(!e.is_nan(), "{values:?} at {q}: NaN");
                assert!(
                    values[0] <= e && e <= values[values.len() - 1],
                    "{values:?} at {q}: {e}"
                );
            }
        }
    }

    /// The fraction of `sorted` below `x`.
    fn rank(sorted: &[f64], x: f64) -> f64 {
        sorted.partition_point(|v| *v < x) as f64 / sorted.len() as f64
    }

    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // A skewed distribution: exponential of a uniform.
                let u = (s >> 11) as f64 / (1u64 << 53) as f64;
                -(1.0 - u).ln() * 10.0
            })
            .collect()
    }

    #[test]
    fn estimates_are_within_a_small_rank_error_and_merging_keeps_them() {
        let data = values(200_000, 7);
        let mut sorted = data.clone();
        sorted.sort_by(f64::total_cmp);
        let whole = Digest::from_values(&mut data.clone()).unwrap();
        // The same values in 37 uneven pieces, digested apart and merged in a tree.
        let mut pieces = Vec::new();
        let mut at = 0;
        for i in 0.. {
            let end = (at + 1 + (i * 997) % 11_000).min(data.len());
            pieces.push(Digest::from_values(&mut data[at..end].to_vec()).unwrap());
            at = end;
            if at == data.len() {
                break;
            }
        }
        assert!(pieces.len() > 30, "{} pieces", pieces.len());
        let merged = Digest::merge(
            pieces
                .chunks(5)
                .map(|c| Digest::merge(c.iter().cloned()).unwrap()),
        )
        .unwrap();
        for d in [&whole, &merged] {
            assert_eq!(d.count(), data.len() as f64);
            assert!(d.len() <= COMPRESSION as usize, "{} centroids", d.len());
            for q in [0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999] {
                let err = (rank(&sorted, d.quantile(q)) - q).abs();
                let allowed = if (0.01..=0.99).contains(&q) {
                    0.005
                } else {
                    0.001
                };
                assert!(err <= allowed, "q {q}: rank error {err}");
            }
            assert_eq!(d.quantile(0.0), sorted[0]);
            assert_eq!(d.quantile(1.0), sorted[sorted.len() - 1]);
        }
    }

    #[test]
    fn small_inputs_are_exact_at_their_values_and_states_round_trip() {
        let d = Digest::from_values(&mut [3.0, f64::NAN, 1.0, 2.0]).unwrap();
        assert_eq!(d.count(), 3.0);
        // Each value is its own centroid: the middle one is the median.
        assert_eq!(d.quantile(0.5), 2.0);
        let mut flat = Vec::new();
        d.encode(&mut flat);
        assert_eq!(flat, [1.0, 3.0, 1.0, 1.0, 2.0, 1.0, 3.0, 1.0]);
        assert_eq!(Digest::decode(&flat).unwrap(), Some(d));
        assert_eq!(Digest::decode(&[]).unwrap(), None);
        assert!(Digest::from_values(&mut [f64::NAN]).is_none());
        for bad in [
            &[1.0, 2.0, 1.5][..],
            &[1.0, 2.0, 1.5, 0.0],
            &[1.0, 2.0, 1.8, 1.0, 1.2, 1.0],
            &[1.0, 2.0, 5.0, 1.0],
        ] {
            let e = Digest::decode(bad).unwrap_err().to_string();
            assert!(e.contains("malformed"), "{e}");
        }
    }
}
