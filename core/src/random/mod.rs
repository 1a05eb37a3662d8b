//! Counter-based random numbers: Philox 4x32-10 (Salmon et al., SC'11).
//!
//! An element's value is a pure function of `(seed, stream, global element index)`:
//! the counter is `[index_lo, index_hi, stream_lo, stream_hi]` and the key
//! `[seed_lo, seed_hi]`. Any chunk, any strided slice of a chunk, on any backend, can be
//! generated on its own and agrees bit for bit with every other way of generating it. This
//! is what lets the optimizer push a slice into a random source and generate only the
//! elements that are kept.
//!
//! One Philox call per element (128 random bits):
//! - `uniform(low, high)`: 53 bits of words 0-1 give `u` in `[0, 1)`, `low + (high-low)*u`
//!   (24 bits of word 0 for `f32`);
//! - `normal(mean, std)`: `mean + std * z` with `z` from a 256-layer [`ziggurat`] on words
//!   0-1; the 1.5% of tries it rejects read further Philox blocks of the *same* element
//!   (the block number in the stream word's top byte), so addressing by counter holds.
//!   The tables and the rare wedge and tail tests use [`math`](ln_positive)'s portable
//!   `ln`/`exp` rather than the platform libm, so every backend can reproduce the bits;
//! - `randint(low, high)`: `low + floor(r * (high - low) / 2^64)` on the 64 bits of words
//!   0-1 (Lemire's multiply-shift without rejection: the bias is below `(high-low)/2^64`).

mod math;
pub mod ziggurat;

pub use math::{exp_nonpositive, ln_positive};

use crate::dtype::DType;

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox 4x32 with 10 rounds.
#[inline(always)]
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = ctr;
    let [mut k0, mut k1] = key;
    for round in 0..10 {
        if round > 0 {
            k0 = k0.wrapping_add(W0);
            k1 = k1.wrapping_add(W1);
        }
        let p0 = (M0 as u64) * (c0 as u64);
        let p1 = (M1 as u64) * (c2 as u64);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    [c0, c1, c2, c3]
}

/// Standard normal samples for `idx` into `out`: Philox and the ziggurat's first try for
/// every element in one branch-free loop the compiler vectorises, then the full sampler
/// for the 1.5% it rejected (continuing from the block already computed: its first word
/// waits in `out`, its second in `spare`), then the affine map. Compiled for AVX-512, AVX2+FMA and the
/// baseline, picked at run time (`multiversion`); Rust never contracts `a*b+c` into an
/// FMA, so every version gives the same bits.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl+avx512bw",
    "x86_64+avx2+fma",
))]
fn normal_pass(
    (key, stream): ([u32; 2], u64),
    (mean, std, single): (f64, f64, bool),
    idx: &[i64],
    out: &mut [f64],
    spare: &mut [u64],
    accepted: &mut [bool],
) {
    let t = ziggurat::tables();
    let (s_lo, s_hi) = (stream as u32, (stream >> 32) as u32);
    // Indexed over slices cut to one length: the bounds checks drop out and the loop
    // vectorises. (Passing `spare` and `accepted` as one tuple argument stopped that.)
    let n = idx.len();
    let (out1, spare, accepted) = (&mut out[..n], &mut spare[..n], &mut accepted[..n]);
    for i in 0..n {
        let k = idx[i] as u64;
        let r = philox4x32_10([k as u32, (k >> 32) as u32, s_lo, s_hi], key);
        let first = r[0] as u64 | ((r[1] as u64) << 32);
        spare[i] = r[2] as u64 | ((r[3] as u64) << 32);
        let (x, ok) = ziggurat::first_try(t, first);
        // A rejected element keeps its first word (as bits) for the sampler below.
        out1[i] = if ok { x } else { f64::from_bits(first) };
        accepted[i] = ok;
    }
    for (((o, &w), &a), &k) in out
        .iter_mut()
        .zip(spare.iter())
        .zip(accepted.iter())
        .zip(idx)
    {
        if !a {
            *o = ziggurat::standard_from_block0(t, key, stream, k as u64, [o.to_bits(), w]);
        }
    }
    if single {
        let (m, s) = (mean as f32, std as f32);
        for o in out.iter_mut() {
            *o = (m + s * *o as f32) as f64;
        }
    } else {
        for o in out.iter_mut() {
            *o = mean + std * *o;
        }
    }
}

/// Uniform samples of indices `idx` into `out`: the bits of
/// [`RandomSpec::sample_f64`], in one branch-free loop the compiler vectorises across
/// elements (Philox's 32x32->64 multiplies become vector multiplies), compiled for
/// AVX-512 and AVX2 with run-time dispatch. No FMA is formed (Rust does not contract),
/// so every version gives the same bits.
#[multiversion::multiversion(targets(
    "x86_64+avx512f+avx512dq+avx512vl+avx512bw",
    "x86_64+avx2+fma",
))]
fn uniform_pass(
    key: [u32; 2],
    stream: u64,
    (low, high, single): (f64, f64, bool),
    idx: &[i64],
    out: &mut [f64],
) {
    // A plain loop over slices: an iterator adapter here would be compiled as a separate
    // generic function without this function's target features (no AVX-512).
    let (s_lo, s_hi) = (stream as u32, (stream >> 32) as u32);
    for (o, &k) in out.iter_mut().zip(idx) {
        let r = philox4x32_10(
            [k as u64 as u32, ((k as u64) >> 32) as u32, s_lo, s_hi],
            key,
        );
        *o = uniform_value(low, high, single, r);
    }
}

/// The uniform value of 128 random bits: the one definition, used element by element
/// ([`RandomSpec::sample_f64`]) and in batches (`uniform_pass`).
#[inline(always)]
fn uniform_value(low: f64, high: f64, single: bool, r: [u32; 4]) -> f64 {
    if single {
        (low as f32 + (high as f32 - low as f32) * unit_f32(r[0])) as f64
    } else {
        low + (high - low) * unit_f64(r[0], r[1])
    }
}

/// The distribution of a random source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform on `[low, high)`.
    Uniform {
        /// Lower bound (inclusive).
        low: f64,
        /// Upper bound (exclusive).
        high: f64,
    },
    /// Normal with the given mean and standard deviation.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        std: f64,
    },
    /// Integers uniform on `[low, high)`.
    RandInt {
        /// Lower bound (inclusive).
        low: i64,
        /// Upper bound (exclusive).
        high: i64,
    },
}

/// A random source: seed, stream, distribution and output dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomSpec {
    /// The seed (Philox key).
    pub seed: u64,
    /// The stream (upper half of the counter): independent arrays from one seed.
    pub stream: u64,
    /// The distribution.
    pub dist: Distribution,
    /// Output dtype: `f32`/`f64` for uniform and normal, any integer type for randint.
    pub dtype: DType,
}

impl RandomSpec {
    /// The 128 random bits of element `index`.
    #[inline(always)]
    pub fn bits(&self, index: u64) -> [u32; 4] {
        philox4x32_10(
            [
                index as u32,
                (index >> 32) as u32,
                self.stream as u32,
                (self.stream >> 32) as u32,
            ],
            self.key(),
        )
    }

    /// Element `index` as `f64` (float distributions; for `f32` specs the `f32` value
    /// widened exactly).
    #[inline(always)]
    pub fn sample_f64(&self, index: u64) -> f64 {
        match self.dist {
            Distribution::RandInt { .. } => self.sample_i64(index) as f64,
            Distribution::Uniform { low, high } => {
                uniform_value(low, high, self.dtype == DType::F32, self.bits(index))
            }
            Distribution::Normal { mean, std } => {
                let z = ziggurat::standard(ziggurat::tables(), self.key(), self.stream, index);
                if self.dtype == DType::F32 {
                    (mean as f32 + std as f32 * z as f32) as f64
                } else {
                    mean + std * z
                }
            }
        }
    }

    /// The Philox key: the seed's two halves.
    #[inline(always)]
    fn key(&self) -> [u32; 2] {
        [self.seed as u32, (self.seed >> 32) as u32]
    }

    /// Elements `idx[i]` of a float distribution, in order: the same bits as
    /// [`Self::sample_f64`] element by element (a test checks), computed in passes over
    /// the whole slice — Philox and the ziggurat's first try as one loop the compiler
    /// vectorises, the rare rejections element by element, then the affine map.
    /// Meant for cache-sized slices (the CPU backend's tiles).
    pub fn sample_batch(&self, idx: &[i64]) -> Vec<f64> {
        match (self.dist, self.dtype) {
            // Integer samples: element by element through the one definition.
            (Distribution::RandInt { .. }, _) => {
                idx.iter().map(|&k| self.sample_f64(k as u64)).collect()
            }
            (Distribution::Uniform { low, high }, dtype) => {
                let mut out = vec![0.0; idx.len()];
                uniform_pass(
                    self.key(),
                    self.stream,
                    (low, high, dtype == DType::F32),
                    idx,
                    &mut out,
                );
                out
            }
            (Distribution::Normal { mean, std }, dtype) => {
                let mut out = vec![0.0; idx.len()];
                let mut spare = vec![0u64; idx.len()];
                let mut accepted = vec![false; idx.len()];
                normal_pass(
                    (self.key(), self.stream),
                    (mean, std, dtype == DType::F32),
                    idx,
                    &mut out,
                    &mut spare,
                    &mut accepted,
                );
                out
            }
        }
    }

    /// Element `index` of an integer distribution.
    #[inline(always)]
    pub fn sample_i64(&self, index: u64) -> i64 {
        match self.dist {
            Distribution::RandInt { low, high } => {
                let r = self.bits(index);
                let x = (r[0] as u64) | ((r[1] as u64) << 32);
                let range = high.wrapping_sub(low) as u64;
                low.wrapping_add(((x as u128 * range as u128) >> 64) as i64)
            }
            _ => self.sample_f64(index) as i64,
        }
    }
}

/// 53 random bits as a double in `[0, 1)`.
#[inline(always)]
pub fn unit_f64(lo: u32, hi: u32) -> f64 {
    let x = ((lo as u64) | ((hi as u64) << 32)) >> 11;
    // Through i64 (exact: x < 2^53): a signed conversion is one instruction on every
    // x86-64 level, an unsigned one is a branchy sequence below AVX-512.
    (x as i64) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// 24 random bits as a float in `[0, 1)`.
#[inline(always)]
pub fn unit_f32(w: u32) -> f32 {
    ((w >> 8) as i32) as f32 * (1.0 / (1u32 << 24) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors from Random123's `kat_vectors` (philox4x32 10).
    #[test]
    fn philox_matches_random123_kat() {
        assert_eq!(
            philox4x32_10([0, 0, 0, 0], [0, 0]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn normal_moments_are_right() {
        let spec = RandomSpec {
            seed: 42,
            stream: 0,
            dist: Distribution::Normal {
                mean: 10.0,
                std: 2.0,
            },
            dtype: DType::F64,
        };
        let n = 200_000u64;
        let xs: Vec<f64> = (0..n).map(|i| spec.sample_f64(i)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // Standard errors: 2/sqrt(n) = 0.0045 for the mean; ~0.013 for the variance.
        assert!((mean - 10.0).abs() < 0.03, "mean {mean}");
        assert!((var - 4.0).abs() < 0.08, "var {var}");
    }

    #[test]
    fn uniform_and_randint_stay_in_range() {
        let u = RandomSpec {
            seed: 7,
            stream: 3,
            dist: Distribution::Uniform {
                low: -1.0,
                high: 2.0,
            },
            dtype: DType::F32,
        };
        let r = RandomSpec {
            seed: 7,
            stream: 3,
            dist: Distribution::RandInt { low: -3, high: 4 },
            dtype: DType::I8,
        };
        let mut seen = [false; 7];
        for i in 0..10_000 {
            let x = u.sample_f64(i);
            assert!((-1.0..2.0).contains(&x));
            assert_eq!(x as f32 as f64, x, "f32 specs produce f32 values");
            let k = r.sample_i64(i);
            assert!((-3..4).contains(&k));
            seen[(k + 3) as usize] = true;
        }
        assert!(seen.iter().all(|&s| s), "every integer in range appears");
    }

    #[test]
    fn batches_match_element_by_element_generation() {
        let specs = [
            Distribution::Normal {
                mean: 10.0,
                std: 1.0,
            },
            Distribution::Uniform {
                low: -2.0,
                high: 3.0,
            },
            Distribution::RandInt { low: -5, high: 9 },
        ];
        for dist in specs {
            for dtype in [DType::F64, DType::F32] {
                let spec = RandomSpec {
                    seed: 0xdead_beef_1234,
                    stream: 7,
                    dist,
                    dtype,
                };
                // Strided, reversed and huge indices (with ~30 ziggurat rejections among them); a
                // length that leaves a remainder.
                let idx: Vec<i64> = (0..2003)
                    .map(|i| {
                        if i % 3 == 0 {
                            (1 << 40) + 17 * i
                        } else {
                            1000 - 2 * i
                        }
                    })
                    .collect();
                let out = spec.sample_batch(&idx);
                assert_eq!(out.len(), idx.len());
                for (o, &k) in out.iter().zip(&idx) {
                    assert_eq!(o.to_bits(), spec.sample_f64(k as u64).to_bits());
                }
            }
        }
    }

    #[test]
    fn streams_and_seeds_differ() {
        let a = RandomSpec {
            seed: 1,
            stream: 0,
            dist: Distribution::Uniform {
                low: 0.0,
                high: 1.0,
            },
            dtype: DType::F64,
        };
        let b = RandomSpec { stream: 1, ..a };
        let c = RandomSpec { seed: 2, ..a };
        assert_ne!(a.sample_f64(5), b.sample_f64(5));
        assert_ne!(a.sample_f64(5), c.sample_f64(5));
        assert_eq!(a.sample_f64(5), a.sample_f64(5));
    }
}
