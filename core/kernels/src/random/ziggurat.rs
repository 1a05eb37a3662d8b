//! Standard normal samples by the ziggurat method (Marsaglia & Tsang, 2000) with 1024
//! layers, addressed by
//! counter so that every element is still a pure function of `(seed, stream, index)`.
//!
//! Why a ziggurat: Box-Muller needs a `ln`, a `sqrt` and a `cos` per sample, which took
//! 55% of the sampling time in the headline (`perf`), more than Philox itself. The
//! ziggurat accepts 99.57% of samples with one table lookup and one multiply, so a sample
//! costs little more than its Philox call. 1024 layers rather than the usual 256: the
//! rejected 0.43% (1.5% with 256) take the slow path, which is a further Philox block and
//! often an `exp`, and with 256 layers that path cost as much as the first try's gathers.
//!
//! Why it stays counter-based: a rejection sampler draws a variable number of words, which
//! a sequential generator takes from the next elements' share. Here each element owns a
//! stream of 64-bit words of its own: its first word ([`super::first_word`], half of a
//! block it shares with the element two places on), then both halves of the Philox
//! blocks with counter `[index_lo, index_hi, stream_lo, stream_hi ^ (b << 24)]` for
//! `b = 1, 2, ...`. The fast path reads only the first word; the rare rejections read
//! further blocks of the same element and never touch another element's. The top byte
//! of the stream counts blocks, so streams below `2^56` never share a word (block 0 has
//! a zero top byte).
//!
//! The layout of one try's word: bits 0-9 pick one of 1024 layers, bit 10 is the sign,
//! bits 12-63 are a 52-bit uniform `rabs` (numpy's layout, widened by two layer bits).
//! The tables are built from the `math` module's portable `ln`/`exp` and `sqrt`, so they are
//! the same bits on every platform and a device backend can upload them as they are.

use std::sync::LazyLock;

use super::math::{exp_nonpositive, ln_positive};
use super::unit::{exact_f64, TWO52};
use super::{philox4x32_10, unit_f64};

/// Number of layers (a power of two: the layer is the low 10 bits of a word).
const LAYERS: usize = 1024;
/// Where the base layer's tail starts, for 1024 layers of `exp(-x²/2)`: the `r` for which
/// the recursion below closes (the top layer has area `V` too), found by bisection with
/// `V = r f(r) + ∫_r^∞ f`. As bits, so that every transcription is exact.
const R: f64 = f64::from_bits(0x4010_27c8_4109_fad6); // 4.038849846109505
/// The common area of every layer (the base layer's includes the tail).
const V: f64 = f64::from_bits(0x3f54_1794_1005_fc0a); // 0.0012263246463530852
/// Blocks per element before the sampler stops trying: the top byte of the stream word
/// numbers them. Reaching it takes about 500 consecutive rejections (probability far
/// below 10^-800); the sampler then returns its last candidate rather than loop forever.
const MAX_BLOCKS: u32 = 256;

/// The ziggurat's tables: for layer `j`, `wi[j]` scales `rabs` to the layer's width,
/// `ki[j]` is the largest `rabs` whose point lies inside the layer's inner rectangle
/// (accepted without evaluating the density), and `fi[j]` is the density at the layer's
/// upper edge (`fi[j - 1]` at its lower edge).
pub struct Tables {
    /// Width of layer `j`, divided by `2^52`.
    pub wi: [f64; LAYERS],
    /// Acceptance bound on `rabs` for layer `j`.
    pub ki: [u64; LAYERS],
    /// `exp(-x_j²/2)` at the layer boundaries.
    pub fi: [f64; LAYERS],
}

/// The unnormalised half-normal density.
fn density(x: f64) -> f64 {
    exp_nonpositive(-0.5 * x * x)
}

fn build() -> Tables {
    // Layer boundaries x_0 = R > x_1 > ... > x_255 = 0: the box [0, x_{j-1}] x
    // [f(x_{j-1}), f(x_j)] has area V for j >= 1, the base [0, R] x [0, f(R)] plus the
    // tail has area V too.
    let mut x = [0.0f64; LAYERS];
    x[0] = R;
    for j in 1..LAYERS - 1 {
        let a = V / x[j - 1] + density(x[j - 1]);
        x[j] = (-2.0 * ln_positive(a.min(1.0))).sqrt();
    }
    x[LAYERS - 1] = 0.0;
    let mut t = Tables {
        wi: [0.0; LAYERS],
        ki: [0; LAYERS],
        fi: [0.0; LAYERS],
    };
    for j in 0..LAYERS {
        let width = if j == 0 { V / density(R) } else { x[j - 1] };
        let inner = x[j];
        t.wi[j] = width / TWO52;
        t.ki[j] = ((inner / width) * TWO52).floor() as u64;
        t.fi[j] = if j == LAYERS - 1 { 1.0 } else { density(x[j]) };
    }
    t
}

/// The tables, built once on first use.
pub fn tables() -> &'static Tables {
    static TABLES: LazyLock<Tables> = LazyLock::new(build);
    &TABLES
}

/// The first try's candidate from one word: the signed sample and whether it is accepted
/// without further words. The one definition of the fast path, shared by [`standard`] and
/// the batch loops.
#[inline(always)]
pub fn first_try(t: &Tables, w: u64) -> (f64, bool) {
    let j = (w & 0x3ff) as usize;
    let rabs = w >> 12;
    // Exact (rabs < 2^52), and vectorised on every SIMD level (see `exact_f64`).
    let x = exact_f64(rabs) * t.wi[j];
    // The sign bit moved onto the float's sign: branch-free, so loops vectorise.
    let signed = f64::from_bits(x.to_bits() ^ ((w & 0x400) << 53));
    (signed, rabs < t.ki[j])
}

/// The words of one element, in order.
struct Words {
    ctr: [u32; 4],
    key: [u32; 2],
    /// The next Philox block to compute (blocks 1, 2, ...).
    block: u32,
    /// Words computed but not yet used, from `buf[next]` to `buf[1]`.
    buf: [u64; 2],
    next: usize,
}

impl Words {
    /// The words of element `index`, whose first word is `first`.
    fn new(key: [u32; 2], stream: u64, index: u64, first: u64) -> Self {
        Words {
            ctr: [
                index as u32,
                (index >> 32) as u32,
                stream as u32,
                (stream >> 32) as u32,
            ],
            key,
            block: 1,
            buf: [0, first],
            next: 1,
        }
    }

    /// The next word, or `None` once `MAX_BLOCKS` blocks are used up.
    fn next(&mut self) -> Option<u64> {
        if self.next == 2 {
            if self.block == MAX_BLOCKS {
                return None;
            }
            let mut ctr = self.ctr;
            ctr[3] ^= self.block << 24;
            self.block += 1;
            let r = philox4x32_10(ctr, self.key);
            self.buf = [
                r[0] as u64 | ((r[1] as u64) << 32),
                r[2] as u64 | ((r[3] as u64) << 32),
            ];
            self.next = 0;
        }
        self.next += 1;
        Some(self.buf[self.next - 1])
    }
}

/// A standard normal sample for element `index` of `(key, stream)`: the full sampler,
/// with the wedge and tail tests. `first_try` on the element's first word gives the same
/// value whenever it accepts.
pub fn standard(t: &Tables, key: [u32; 2], stream: u64, index: u64) -> f64 {
    let first = super::first_word(key, stream, index);
    sample(t, Words::new(key, stream, index, first))
}

/// [`standard`] for an element whose first word a batch loop has already computed: the
/// same value, without computing that word's block again.
pub fn standard_from_first(t: &Tables, key: [u32; 2], stream: u64, index: u64, first: u64) -> f64 {
    sample(t, Words::new(key, stream, index, first))
}

fn sample(t: &Tables, mut words: Words) -> f64 {
    let mut last = 0.0;
    while let Some(w) = words.next() {
        let (x, accepted) = first_try(t, w);
        last = x;
        if accepted {
            return x;
        }
        let j = (w & 0x3ff) as usize;
        let negative = w & 0x400 != 0;
        if j == 0 {
            // The tail beyond R (Marsaglia's method): a = -ln(u1)/R, b = -ln(u2),
            // accept when 2b > a².
            let (Some(w1), Some(w2)) = (words.next(), words.next()) else {
                break;
            };
            let a = -ln_positive(1.0 - unit_word(w1)) / R;
            let b = -ln_positive(1.0 - unit_word(w2));
            if b + b > a * a {
                let z = R + a;
                return if negative { -z } else { z };
            }
        } else {
            // The wedge between the inner rectangle and the curve: a uniform height in
            // the layer, accepted under the density.
            let Some(w1) = words.next() else { break };
            let y = t.fi[j - 1] + unit_word(w1) * (t.fi[j] - t.fi[j - 1]);
            if y < density(x) {
                return x;
            }
        }
    }
    last
}

/// 53 bits of a word as a double in `[0, 1)`.
#[inline(always)]
fn unit_word(w: u64) -> f64 {
    unit_f64(w as u32, (w >> 32) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard normal CDF through `erfc`-free means: Φ(x) by the Abramowitz-Stegun
    /// 26.2.17 rational approximation is too coarse for a 1e-4 check, so integrate the
    /// density with Simpson's rule instead.
    fn normal_cdf(x: f64) -> f64 {
        let (a, n) = (-12.0f64, 20_000);
        if x <= a {
            return 0.0;
        }
        let h = (x - a) / n as f64;
        let pdf = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let mut s = pdf(a) + pdf(x);
        for i in 1..n {
            s += pdf(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        s * h / 3.0
    }

    #[test]
    fn tables_are_consistent() {
        let t = tables();
        // Every layer has area V: width x (density step) for the upper layers.
        for j in 1..LAYERS {
            let width = t.wi[j] * TWO52;
            let area = width * (t.fi[j] - t.fi[j - 1]);
            assert!((area / V - 1.0).abs() < 1e-8, "layer {j}: area {area}");
        }
        // The base layer: rectangle [0, R] x [0, f(R)] plus the tail (the normal tail
        // probability 2.68570e-5 beyond R, times sqrt(2π)).
        let base = R * density(R) + 2.685_697e-5 * (2.0 * std::f64::consts::PI).sqrt();
        assert!((base / V - 1.0).abs() < 1e-4, "base {base}");
        // Inner rectangles lie inside their layers; the top layer has none.
        assert!(t.ki.iter().all(|&k| k < 1 << 52));
        assert_eq!(t.ki[LAYERS - 1], 0);
        assert_eq!(t.fi[LAYERS - 1], 1.0);
        // Widths shrink upward: layer j+1 is narrower than layer j.
        assert!(t.wi.windows(2).skip(1).all(|w| w[1] < w[0]));
    }

    #[test]
    fn fast_path_agrees_with_the_full_sampler() {
        let t = tables();
        let key = [0x1234_5678, 0x9abc_def0];
        let mut accepted = 0;
        for i in 0..20_000u64 {
            let first = super::super::first_word(key, 5, i);
            let (x, ok) = first_try(t, first);
            let full = standard(t, key, 5, i);
            if ok {
                accepted += 1;
                assert_eq!(x.to_bits(), full.to_bits());
            }
            // Resuming from a computed first word gives the same value, accepted or not.
            let resumed = standard_from_first(t, key, 5, i, first);
            assert_eq!(resumed.to_bits(), full.to_bits());
        }
        // About 99.57% of first tries are accepted (standard error 0.05%).
        assert!((19_870..19_960).contains(&accepted), "{accepted}");
    }

    #[test]
    fn samples_follow_the_normal_distribution() {
        let t = tables();
        let n = 400_000u64;
        let mut xs: Vec<f64> = (0..n).map(|i| standard(t, [7, 11], 3, i)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let skew = xs.iter().map(|x| (x - mean).powi(3)).sum::<f64>() / n as f64;
        let kurt = xs.iter().map(|x| (x - mean).powi(4)).sum::<f64>() / n as f64;
        // Standard errors at n = 4e5: mean 0.0016, var 0.0022, skew 0.0039, kurt 0.015.
        assert!(mean.abs() < 0.008, "mean {mean}");
        assert!((var - 1.0).abs() < 0.011, "var {var}");
        assert!(skew.abs() < 0.02, "skew {skew}");
        assert!((kurt - 3.0).abs() < 0.08, "kurtosis {kurt}");
        // Kolmogorov-Smirnov against Φ at 2,001 points: the 0.1% critical value for
        // n = 4e5 is 1.95/sqrt(n) = 0.0031.
        xs.sort_by(f64::total_cmp);
        let mut worst = 0f64;
        for k in 0..=2000 {
            let x = -5.0 + k as f64 * 0.005;
            let below = xs.partition_point(|&v| v < x) as f64 / n as f64;
            worst = worst.max((below - normal_cdf(x)).abs());
        }
        assert!(worst < 0.0031, "KS distance {worst}");
    }

    #[test]
    fn the_tail_beyond_the_base_layer_has_the_right_mass() {
        // P(|Z| > R) = 5.37e-5: at n = 4e6 that is 215 samples, standard error 15. The
        // tail path (layer 0, rejected from the base rectangle) is the only way there.
        let t = tables();
        let n = 4_000_000u64;
        let mut beyond = 0u64;
        let mut far = 0u64;
        for i in 0..n {
            let z = standard(t, [3, 1], 0, i).abs();
            beyond += (z > R) as u64;
            far += (z > 4.5) as u64;
        }
        assert!((160..270).contains(&beyond), "{beyond} beyond R");
        // P(|Z| > 4.5) = 6.8e-6: 27 expected.
        assert!((10..50).contains(&far), "{far} beyond 4.5");
    }

    #[test]
    fn words_after_the_first_come_from_the_elements_own_blocks() {
        let mut w = Words::new([1, 2], 9, 77, 0xabc);
        let words: Vec<u64> = (0..5).map(|_| w.next().unwrap()).collect();
        assert_eq!(words[0], 0xabc);
        let r1 = philox4x32_10([77, 0, 9, 1 << 24], [1, 2]);
        assert_eq!(words[1], r1[0] as u64 | ((r1[1] as u64) << 32));
        assert_eq!(words[2], r1[2] as u64 | ((r1[3] as u64) << 32));
        let r2 = philox4x32_10([77, 0, 9, 2 << 24], [1, 2]);
        assert_eq!(words[3], r2[0] as u64 | ((r2[1] as u64) << 32));
        let mut distinct = words.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 5);
    }
}
