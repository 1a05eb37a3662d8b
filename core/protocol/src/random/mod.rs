//! Counter-based random numbers: Philox 4x32-10 (Salmon et al., SC'11).
//!
//! An element's value is a pure function of `(seed, stream, global element index)`. Its
//! first 64-bit word is half [`half_of`]`(index)` of the Philox block with counter
//! `[block_of(index)_lo, block_of(index)_hi, stream_lo, stream_hi]` and key
//! `[seed_lo, seed_hi]` (see [`philox`](first_word) for the layout): elements two apart
//! share a block, so a contiguous range or a step-2 slice costs one Philox call per two
//! elements, and any other step one per kept element. Any chunk, any strided slice of a
//! chunk, on any backend, can be
//! generated on its own and agrees bit for bit with every other way of generating it. This
//! is what lets the optimizer push a slice into a random source and generate only the
//! elements that are kept.
//!
//! From the first word `w`:
//! - `uniform(low, high)`: its top 53 bits give `u` in `[0, 1)`, `low + (high-low)*u`
//!   (bits 8-31 for `f32`);
//! - `normal(mean, std)`: `mean + std * z` with `z` from a 1024-layer [`ziggurat`] on `w`;
//!   the 0.43% of tries it rejects read further Philox blocks of the *same* element
//!   (counter `[index, stream ^ (block << 56)]`), so addressing by counter holds.
//!   The tables and the rare wedge and tail tests use [`math`](ln_positive)'s portable
//!   `ln`/`exp` rather than the platform libm, so every backend can reproduce the bits;
//! - `randint(low, high)`: `low + floor(w * (high - low) / 2^64)` (Lemire's multiply-shift
//!   without rejection: the bias is below `(high-low)/2^64`).

pub use tessera_kernels::random::{
    block_of, exp_nonpositive, first_word, half_of, ln_positive, philox4x32_10, unit_f32, unit_f64,
    ziggurat,
};

use tessera_kernels::random::{
    add, affine_value, normal_first_try, pairs_with_next_but_one, uniform_from_words,
    uniform_value, words_along, words_along_pair, words_at,
};

use crate::dtype::DType;

/// Elements generated per piece: words and values (8 KiB) stay in L1 between the passes.
const PIECE: usize = 512;

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
    /// The first 64-bit word of element `index` (see [`first_word`]).
    #[inline(always)]
    pub fn word(&self, index: u64) -> u64 {
        first_word(self.key(), self.stream, index)
    }

    /// Element `index` as `f64` (float distributions; for `f32` specs the `f32` value
    /// widened exactly).
    #[inline(always)]
    pub fn sample_f64(&self, index: u64) -> f64 {
        match self.dist {
            Distribution::RandInt { .. } => self.sample_i64(index) as f64,
            Distribution::Uniform { low, high } => {
                uniform_value(low, high, self.dtype == DType::F32, self.word(index))
            }
            Distribution::Normal { mean, std } => {
                let z = ziggurat::standard(ziggurat::tables(), self.key(), self.stream, index);
                affine_value(mean, std, self.dtype == DType::F32, z)
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
    /// the slice that the compiler vectorises (Philox, then the distribution; the
    /// ziggurat's rare rejections element by element). Meant for cache-sized slices.
    pub fn sample_batch(&self, idx: &[i64]) -> Vec<f64> {
        if let Distribution::RandInt { .. } = self.dist {
            return idx.iter().map(|&k| self.sample_f64(k as u64)).collect();
        }
        let mut w = vec![0u64; idx.len()];
        words_at(self.key(), self.stream, idx, &mut w);
        let mut out = vec![0.0; idx.len()];
        self.values_from_words(&w, None, &mut out, |p| idx[p] as u64);
        out
    }

    /// The elements of runs `(start, step, len)`, concatenated in order: the same values
    /// as [`Self::sample_batch`] on the runs' indices, but a contiguous run (`step` 1)
    /// computes each Philox block once for the two elements that share it. The CPU
    /// backend's tiles are such runs (one per row).
    pub fn sample_runs(&self, runs: &[(i64, i64, usize)]) -> Vec<f64> {
        let mut out = vec![0.0; runs.iter().map(|r| r.2).sum()];
        self.sample_runs_into(runs, &mut out);
        out
    }

    /// [`Self::sample_runs`] into `out`, whose length must be the runs' total length
    /// (extra elements are left as they are, missing ones are not generated): for callers
    /// that generate straight into their destination.
    pub fn sample_runs_into(&self, runs: &[(i64, i64, usize)], out: &mut [f64]) {
        self.runs_into(runs, None, out);
    }

    /// [`Self::sample_runs_into`], then `+ plus` on every value (in `f32` arithmetic for
    /// `f32` specs): the same bits as adding `plus` in a pass of its own, without that
    /// pass. `x - c` is `x + (-c)` in IEEE arithmetic, so it is `plus = -c`. The CPU
    /// backend generates a source that a program only shifts, such as the seed's
    /// `(x + 1)[::2, ::2]`, this way.
    pub fn sample_runs_plus_into(&self, runs: &[(i64, i64, usize)], plus: f64, out: &mut [f64]) {
        self.runs_into(runs, Some(plus), out);
    }

    /// [`Self::sample_runs_into`] with an optional `+ plus`.
    fn runs_into(&self, runs: &[(i64, i64, usize)], plus: Option<f64>, out: &mut [f64]) {
        let n = runs.iter().map(|r| r.2).sum::<usize>().min(out.len());
        let out = &mut out[..n];
        if let Distribution::RandInt { .. } = self.dist {
            let all = runs
                .iter()
                .flat_map(|&(start, step, len)| (0..len as i64).map(move |j| start + j * step));
            for (o, k) in out.iter_mut().zip(all) {
                let v = self.sample_f64(k as u64);
                *o = plus.map_or(v, |c| v + c);
            }
            return;
        }
        // Words a piece at a time into a buffer that stays in L1, each piece turned into
        // values before the next: no heap buffer, no second pass over memory.
        let mut w = [0u64; PIECE];
        // The runs in the current piece: (position in the piece, first index, step).
        let mut parts: Vec<(usize, i64, i64)> = Vec::new();
        let (mut filled, mut done, mut left) = (0, 0, n);
        let mut i = 0;
        while i < runs.len() {
            let (start, step, len) = runs[i];
            let len = len.min(left);
            // A run and the next one two elements on (rows 2i, 2i + 1 of a transposed
            // strided read): one block gives both their elements.
            if let Some(&(s2, step2, len2)) = runs.get(i + 1) {
                if s2 == start.wrapping_add(2)
                    && (step2, len2) == (step, len)
                    && 2 * len <= left
                    && pairs_with_next_but_one(start, step)
                {
                    if filled > 0 {
                        self.piece_values(
                            &w[..filled],
                            &parts,
                            plus,
                            &mut out[done..done + filled],
                        );
                        (done, filled) = (done + filled, 0);
                        parts.clear();
                    }
                    let (wa, wb) = w.split_at_mut(PIECE / 2);
                    let mut j = 0;
                    while j < len {
                        let take = (PIECE / 2).min(len - j);
                        let first = start + j as i64 * step;
                        let (wa, wb) = (&mut wa[..take], &mut wb[..take]);
                        words_along_pair(self.key(), self.stream, first, step, wa, wb);
                        self.piece_values(
                            wa,
                            &[(0, first, step)],
                            plus,
                            &mut out[done + j..][..take],
                        );
                        let second = &mut out[done + len + j..][..take];
                        self.piece_values(wb, &[(0, first + 2, step)], plus, second);
                        j += take;
                    }
                    (done, left, i) = (done + 2 * len, left - 2 * len, i + 2);
                    continue;
                }
            }
            left -= len;
            let mut j = 0;
            while j < len {
                let take = (PIECE - filled).min(len - j);
                let first = start + j as i64 * step;
                words_along(
                    self.key(),
                    self.stream,
                    first,
                    step,
                    &mut w[filled..filled + take],
                );
                parts.push((filled, first, step));
                filled += take;
                j += take;
                if filled == PIECE {
                    self.piece_values(&w, &parts, plus, &mut out[done..done + PIECE]);
                    (done, filled) = (done + PIECE, 0);
                    parts.clear();
                }
            }
            i += 1;
        }
        if filled > 0 {
            self.piece_values(&w[..filled], &parts, plus, &mut out[done..done + filled]);
        }
    }

    /// Values of a piece's words `w` into `out` (as long); `parts` are the runs in it as
    /// (position in the piece, first index, step), ascending by position; `plus` is added
    /// to every value when given.
    fn piece_values(
        &self,
        w: &[u64],
        parts: &[(usize, i64, i64)],
        plus: Option<f64>,
        out: &mut [f64],
    ) {
        self.values_from_words(w, plus, out, |p| {
            let (at, start, step) = parts[parts.partition_point(|r| r.0 <= p) - 1];
            (start + (p - at) as i64 * step) as u64
        });
    }

    /// Values of a float distribution from its elements' first words into `out` (as long
    /// as `w`); `index_of(p)` is the element index at position `p` (asked only for
    /// ziggurat rejections, which continue into the element's further Philox blocks);
    /// `plus` is added to every value when given.
    fn values_from_words(
        &self,
        w: &[u64],
        plus: Option<f64>,
        out: &mut [f64],
        index_of: impl Fn(usize) -> u64,
    ) {
        let single = self.dtype == DType::F32;
        match self.dist {
            Distribution::Uniform { low, high } => {
                uniform_from_words((low, high, single), plus, w, out)
            }
            Distribution::Normal { mean, std } => {
                let t = ziggurat::tables();
                let mut accepted = [0u8; PIECE];
                for (c, (w, out)) in w.chunks(PIECE).zip(out.chunks_mut(PIECE)).enumerate() {
                    normal_first_try(w, (mean, std, single), plus, out, &mut accepted);
                    // Flags past the piece's end read as accepted, so that the scan goes
                    // by whole words.
                    let whole = w.len().next_multiple_of(8);
                    accepted[w.len()..whole].fill(1);
                    // Eight flags at a time as one word, whose clear low bits mark the
                    // rejections: about one word in thirty holds one.
                    for (g, flags) in accepted[..whole].chunks_exact(8).enumerate() {
                        let mut bytes = [0u8; 8];
                        bytes.copy_from_slice(flags);
                        let mut rejected = u64::from_le_bytes(bytes) ^ 0x0101_0101_0101_0101;
                        while rejected != 0 {
                            let p = 8 * g + rejected.trailing_zeros() as usize / 8;
                            rejected &= rejected - 1;
                            let index = index_of(c * PIECE + p);
                            let z = ziggurat::standard_from_first(
                                t,
                                self.key(),
                                self.stream,
                                index,
                                w[p],
                            );
                            let v = affine_value(mean, std, single, z);
                            out[p] = plus.map_or(v, |c| add(v, c, single));
                        }
                    }
                }
            }
            // Integer distributions are sampled element by element by the callers.
            Distribution::RandInt { .. } => {}
        }
    }

    /// Element `index` of an integer distribution.
    #[inline(always)]
    pub fn sample_i64(&self, index: u64) -> i64 {
        match self.dist {
            Distribution::RandInt { low, high } => {
                let x = self.word(index);
                let range = high.wrapping_sub(low) as u64;
                low.wrapping_add(((x as u128 * range as u128) >> 64) as i64)
            }
            _ => self.sample_f64(index) as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every SIMD path gives the same bits as the baseline (and as element-by-element
    /// sampling), for the run shapes that reach each kernel: contiguous, step 2, any
    /// step, the paired rows of a transposed read, and scattered indices.
    #[test]
    fn every_simd_path_gives_the_same_bits() {
        let runs: [&[(i64, i64, usize)]; 4] = [
            &[(3, 1, 1500)],
            &[(5, 2, 700)],
            &[(11, 7, 300), (2, -3, 200)],
            &[(0, 8, 600), (2, 8, 600)],
        ];
        let idx: Vec<i64> = (0..900).map(|i| (i * 7919) % 100_003).collect();
        let dists = [
            Distribution::Uniform {
                low: -2.0,
                high: 3.5,
            },
            Distribution::Normal {
                mean: 1.0,
                std: 0.25,
            },
        ];
        let specs: Vec<RandomSpec> = dists
            .into_iter()
            .flat_map(|dist| {
                [DType::F64, DType::F32].map(|dtype| RandomSpec {
                    seed: 9,
                    stream: 3,
                    dist,
                    dtype,
                })
            })
            .collect();
        let bits_of = |spec: &RandomSpec| {
            let mut v: Vec<u64> = Vec::new();
            for r in runs {
                v.extend(spec.sample_runs(r).iter().map(|x| x.to_bits()));
                let n: usize = r.iter().map(|x| x.2).sum();
                let mut out = vec![0.0; n];
                spec.sample_runs_plus_into(r, 0.5, &mut out);
                v.extend(out.iter().map(|x| x.to_bits()));
            }
            v.extend(spec.sample_batch(&idx).iter().map(|x| x.to_bits()));
            v
        };
        let all = crate::simd::on_every_path("random::every_simd_path", || {
            specs.iter().map(bits_of).collect::<Vec<_>>()
        });
        let (_, baseline) = all
            .iter()
            .find(|(p, _)| *p == crate::simd::SimdPath::Baseline)
            .expect("the baseline always runs");
        for (spec, bits) in specs.iter().zip(baseline) {
            let one_by_one: Vec<u64> = (0..1500)
                .map(|k| spec.sample_f64(3 + k).to_bits())
                .collect();
            assert_eq!(&bits[..1500], &one_by_one[..], "{spec:?}");
        }
        for (p, bits) in &all {
            assert_eq!(bits, baseline, "{} differs from the baseline", p.name());
        }
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

    /// Generating with `+ plus` gives the bits of generating and then adding, for every
    /// float distribution and dtype, over runs long enough to hold ziggurat rejections
    /// (the slow path adds too), at the special shifts `±0.0` and a huge one.
    #[test]
    fn generating_plus_a_constant_is_generating_then_adding() {
        let runs = [(5i64, 1i64, 3000usize), (90_000, 2, 1001), (7, 3, 500)];
        for dist in [
            Distribution::Normal {
                mean: 10.0,
                std: 1.0,
            },
            Distribution::Normal {
                mean: 0.0,
                std: 2.5,
            },
            Distribution::Uniform {
                low: -1.0,
                high: 2.0,
            },
        ] {
            for dtype in [DType::F64, DType::F32] {
                let spec = RandomSpec {
                    seed: 11,
                    stream: 2,
                    dist,
                    dtype,
                };
                let plain = spec.sample_runs(&runs);
                for c in [1.0, -0.0, 0.0, -3.75, 1e300] {
                    let mut shifted = vec![0.0; plain.len()];
                    spec.sample_runs_plus_into(&runs, c, &mut shifted);
                    for (k, (&p, &s)) in plain.iter().zip(&shifted).enumerate() {
                        let want = if dtype == DType::F32 {
                            (p as f32 + c as f32) as f64
                        } else {
                            p + c
                        };
                        assert_eq!(s.to_bits(), want.to_bits(), "{dist:?} {dtype} +{c} at {k}");
                    }
                }
            }
        }
    }

    #[test]
    fn batches_match_element_by_element_generation() {
        // Strided, reversed and huge indices (with ~9 ziggurat rejections among them); a
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
        for spec in every_kind_of_spec(0xdead_beef_1234, 7) {
            let out = spec.sample_batch(&idx);
            assert_eq!(out.len(), idx.len());
            for (o, &k) in out.iter().zip(&idx) {
                assert_eq!(o.to_bits(), spec.sample_f64(k as u64).to_bits());
            }
        }
    }

    /// Normal, uniform and randint specs, each as `f64` and `f32`.
    fn every_kind_of_spec(seed: u64, stream: u64) -> Vec<RandomSpec> {
        let dists = [
            Distribution::Normal {
                mean: 10.0,
                std: 3.0,
            },
            Distribution::Uniform {
                low: -2.0,
                high: 3.0,
            },
            Distribution::RandInt { low: -5, high: 9 },
        ];
        let mut specs = Vec::new();
        for dist in dists {
            for dtype in [DType::F64, DType::F32] {
                specs.push(RandomSpec {
                    seed,
                    stream,
                    dist,
                    dtype,
                });
            }
        }
        specs
    }

    #[test]
    fn runs_match_element_by_element_generation() {
        // Odd and even starts and lengths, single elements, strides, a reversed run.
        let runs = [
            (0i64, 1i64, 7usize),
            (11, 1, 8),
            (100, 1, 1),
            (101, 1, 1),
            (1 << 33, 1, 33),
            (1000, 2, 9),
            (2000, -3, 12),
            (5, 1, 0),
            // Rows of a transposed strided read: a run and the run two on, generated
            // together, longer than a piece; then a pair whose first is at word 1 (not
            // paired) and one of unequal lengths (not paired).
            (40_000, 40_000, 300),
            (40_002, 40_000, 300),
            (7_000_002, 8, 20),
            (7_000_004, 8, 20),
            (9_000_000, 8, 20),
            (9_000_002, 8, 19),
        ];
        let want_idx: Vec<i64> = runs
            .iter()
            .flat_map(|&(s, st, n)| (0..n as i64).map(move |j| s + j * st))
            .collect();
        for spec in every_kind_of_spec(99, 4) {
            let got = spec.sample_runs(&runs);
            assert_eq!(got.len(), want_idx.len());
            for (g, &k) in got.iter().zip(&want_idx) {
                assert_eq!(
                    g.to_bits(),
                    spec.sample_f64(k as u64).to_bits(),
                    "{spec:?} {k}"
                );
            }
        }
        // A long contiguous normal run crosses many ziggurat rejections.
        let spec = RandomSpec {
            seed: 3,
            stream: 0,
            dist: Distribution::Normal {
                mean: 0.0,
                std: 1.0,
            },
            dtype: DType::F64,
        };
        let got = spec.sample_runs(&[(1, 1, 5001)]);
        for (j, g) in got.iter().enumerate() {
            assert_eq!(g.to_bits(), spec.sample_f64(1 + j as u64).to_bits());
        }
        // So does a long pair of rows two apart (both halves continue rejections from
        // their own element's index).
        let got = spec.sample_runs(&[(8, 4000, 5000), (10, 4000, 5000)]);
        for (j, g) in got.iter().enumerate() {
            let k = if j < 5000 {
                8 + 4000 * j
            } else {
                10 + 4000 * (j - 5000)
            };
            assert_eq!(g.to_bits(), spec.sample_f64(k as u64).to_bits(), "{j}");
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
