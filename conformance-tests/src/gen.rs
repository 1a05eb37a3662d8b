//! Seeded generation of case parameters: shapes, irregular chunkings and data with the
//! special values backends get wrong (NaN, ±inf, -0.0, subnormals, integer extremes).
//!
//! Everything a case uses is drawn from one [`Gen`] seeded by the suite seed and the case
//! id, so a case reruns identically from its id and seed alone, whatever ran before it.

use ndarray::{ArrayD, IxDyn};
use tessera_core::chunks::{numel, Chunks};
use tessera_core::{DType, HostArray, Scalar};

/// Which values a case's data is drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// About a third special values (NaN, ±inf, ±0, subnormals, extremes, halves), the
    /// rest finite and spread over many magnitudes.
    Special,
    /// Small integers (also for floats): exact arithmetic, overflow only where it must.
    Small,
    /// Finite values over many magnitudes; integers over their whole range.
    Wide,
}

impl Values {
    /// The flavour of case variant `v` (variants cycle through all three).
    pub fn of_variant(v: usize) -> Values {
        match v % 3 {
            0 => Values::Special,
            1 => Values::Small,
            _ => Values::Wide,
        }
    }
}

/// A SplitMix64 stream: tiny, fast and good enough to pick test parameters.
#[derive(Debug, Clone)]
pub struct Gen {
    state: u64,
    /// Edge shapes: 0-d arrays and empty axes are likely (variant 0 of every case);
    /// otherwise shapes have at least one axis and no empty one.
    pub edges: bool,
}

/// FNV-1a, to turn a case id into a seed offset.
fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Gen {
    /// A stream from a seed.
    pub fn new(seed: u64) -> Gen {
        Gen {
            state: seed,
            edges: true,
        }
    }

    /// The stream of one case: depends only on the suite seed and the case id.
    pub fn for_case(seed: u64, case_id: &str) -> Gen {
        let mut g = Gen::new(seed ^ fnv1a(case_id));
        g.next_u64();
        g
    }

    /// 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// One element of `items`.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// An axis length: 1 often (broadcasting), otherwise 2..=7, and 0 now and then in
    /// [`edges`](Gen::edges) mode.
    pub fn dim(&mut self) -> usize {
        match self.below(12) {
            0 if self.edges => 0,
            0 => 2 + self.below(6),
            1 | 2 => 1,
            _ => 2 + self.below(6),
        }
    }

    /// A shape of `min_nd..=max_nd` dimensions.
    pub fn shape(&mut self, min_nd: usize, max_nd: usize) -> Vec<usize> {
        let min_nd = if self.edges {
            min_nd
        } else {
            min_nd.max(1).min(max_nd)
        };
        let nd = min_nd + self.below(max_nd - min_nd + 1);
        (0..nd).map(|_| self.dim()).collect()
    }

    /// A shape with no empty axis.
    pub fn nonempty_shape(&mut self, min_nd: usize, max_nd: usize) -> Vec<usize> {
        self.shape(min_nd, max_nd)
            .into_iter()
            .map(|n| n.max(1))
            .collect()
    }

    /// Irregular chunk sizes: every axis cut at random points.
    pub fn chunks(&mut self, shape: &[usize]) -> Chunks {
        let sizes = shape
            .iter()
            .map(|&n| {
                let mut v = Vec::new();
                let mut left = n;
                while left > 0 {
                    let c = 1 + self.below(left);
                    v.push(c);
                    left -= c;
                }
                if v.is_empty() {
                    v.push(0);
                }
                v
            })
            .collect();
        Chunks::new(shape, sizes).expect("generated chunks tile the shape")
    }

    /// A random subset of `0..ndim`, ascending (possibly empty).
    pub fn axes(&mut self, ndim: usize) -> Vec<usize> {
        (0..ndim).filter(|_| self.chance(0.5)).collect()
    }

    /// A random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = self.below(i + 1);
            p.swap(i, j);
        }
        p
    }

    /// A host array of `shape` and `dtype` drawn from `values`.
    pub fn host(&mut self, shape: &[usize], dtype: DType, values: Values) -> HostArray {
        let n = numel(shape);
        let sh = IxDyn(shape);
        macro_rules! ints {
            ($t:ty, $v:ident) => {{
                let v: Vec<$t> = (0..n).map(|_| self.int(dtype, values) as $t).collect();
                HostArray::$v(ArrayD::from_shape_vec(sh, v).expect("shape matches"))
            }};
        }
        match dtype {
            DType::Bool => {
                let v: Vec<bool> = (0..n).map(|_| self.chance(0.5)).collect();
                HostArray::Bool(ArrayD::from_shape_vec(sh, v).expect("shape matches"))
            }
            DType::I8 => ints!(i8, I8),
            DType::I16 => ints!(i16, I16),
            DType::I32 => ints!(i32, I32),
            DType::I64 => ints!(i64, I64),
            DType::U8 => ints!(u8, U8),
            DType::U16 => ints!(u16, U16),
            DType::U32 => ints!(u32, U32),
            DType::U64 => ints!(u64, U64),
            DType::F32 => {
                let v: Vec<f32> = (0..n).map(|_| self.float(true, values) as f32).collect();
                HostArray::F32(ArrayD::from_shape_vec(sh, v).expect("shape matches"))
            }
            DType::F64 => {
                let v: Vec<f64> = (0..n).map(|_| self.float(false, values)).collect();
                HostArray::F64(ArrayD::from_shape_vec(sh, v).expect("shape matches"))
            }
        }
    }

    /// One scalar of `dtype` drawn from `values`.
    pub fn scalar(&mut self, dtype: DType, values: Values) -> Scalar {
        self.host(&[], dtype, values)
            .get_flat(0)
            .expect("a 0-d array has one element")
    }

    /// The range of an integer dtype, as `i128`.
    pub fn int_range(dtype: DType) -> (i128, i128) {
        match dtype {
            DType::I8 => (i8::MIN as i128, i8::MAX as i128),
            DType::I16 => (i16::MIN as i128, i16::MAX as i128),
            DType::I32 => (i32::MIN as i128, i32::MAX as i128),
            DType::I64 => (i64::MIN as i128, i64::MAX as i128),
            DType::U8 => (0, u8::MAX as i128),
            DType::U16 => (0, u16::MAX as i128),
            DType::U32 => (0, u32::MAX as i128),
            DType::U64 => (0, u64::MAX as i128),
            _ => (0, 1),
        }
    }

    fn int(&mut self, dtype: DType, values: Values) -> i128 {
        let (lo, hi) = Gen::int_range(dtype);
        let full = |g: &mut Gen| lo + (g.next_u64() as i128).rem_euclid(hi - lo + 1);
        match values {
            Values::Special if self.chance(0.35) => {
                let specials = [lo, hi, 0, 1, lo + 1, hi - 1, if lo < 0 { -1 } else { 2 }];
                self.pick(&specials)
            }
            Values::Special | Values::Wide => full(self),
            Values::Small => {
                let small_lo = lo.max(-8);
                small_lo + self.below((8 - small_lo + 1) as usize) as i128
            }
        }
    }

    fn float(&mut self, single: bool, values: Values) -> f64 {
        let (sub, max, tiny) = if single {
            (
                f32::from_bits(1) as f64,
                f32::MAX as f64,
                f32::MIN_POSITIVE as f64,
            )
        } else {
            (f64::from_bits(1), f64::MAX, f64::MIN_POSITIVE)
        };
        match values {
            Values::Special if self.chance(0.35) => self.pick(&[
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                0.0,
                -0.0,
                sub,
                -sub,
                tiny,
                max,
                -max,
                0.5,
                -2.5,
                1.0,
                -1.0,
            ]),
            Values::Small => self.below(17) as f64 - 8.0,
            Values::Special | Values::Wide => {
                if self.chance(0.2) {
                    // Halves: where floor/ceil/round and the modulo sign rules bite.
                    (self.below(41) as f64 - 20.0) + 0.5
                } else {
                    let sign = if self.chance(0.5) { -1.0 } else { 1.0 };
                    sign * (self.unit() * 14.0 - 7.0).exp()
                }
            }
        }
    }
}

/// What accumulating reductions (sums, means, variances, matrix products) are fed: the
/// data with huge finite values (`|x| > 1e15`) replaced by `±1000`. With them, IEEE
/// results legitimately depend on the order of accumulation (a partial sum overflows to
/// inf in one order and not in another); NaN, ±inf, ±0 and subnormals stay in.
pub fn for_sum(h: HostArray) -> HostArray {
    map_floats(h, |x| {
        if x.is_finite() && x.abs() > 1e15 {
            1000f64.copysign(x)
        } else {
            x
        }
    })
}

/// What products are fed: finite nonzero values become `±0.5`, `±1` or `±2` (by
/// magnitude), so no partial product overflows or underflows in any order, which would
/// turn `0 * inf` into NaN in one order and 0 in another. NaN, ±inf and ±0 stay in.
pub fn for_product(h: HostArray) -> HostArray {
    map_floats(h, |x| {
        if x.is_finite() && x != 0.0 {
            let m = x.abs();
            let v: f64 = if m < 0.75 {
                0.5
            } else if m < 1.5 {
                1.0
            } else {
                2.0
            };
            v.copysign(x)
        } else {
            x
        }
    })
}

fn map_floats(h: HostArray, f: impl Fn(f64) -> f64) -> HostArray {
    match h {
        HostArray::F32(a) => HostArray::F32(a.mapv(|x| f(x as f64) as f32)),
        HostArray::F64(a) => HostArray::F64(a.mapv(&f)),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_case_dependent() {
        let a: Vec<u64> = {
            let mut g = Gen::for_case(7, "add/f32/0");
            (0..4).map(|_| g.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut g = Gen::for_case(7, "add/f32/0");
            (0..4).map(|_| g.next_u64()).collect()
        };
        let c: Vec<u64> = {
            let mut g = Gen::for_case(7, "add/f32/1");
            (0..4).map(|_| g.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn chunks_tile_the_shape_and_data_has_the_dtype() {
        let mut g = Gen::new(3);
        for _ in 0..50 {
            let s = g.shape(0, 4);
            let c = g.chunks(&s);
            assert_eq!(c.shape(), s);
            for d in DType::ALL {
                let h = g.host(&s, d, Values::Special);
                assert_eq!(h.dtype(), d);
                assert_eq!(h.shape(), s.as_slice());
            }
        }
    }

    #[test]
    fn special_values_appear() {
        let mut g = Gen::new(11);
        let h = g.host(&[400], DType::F64, Values::Special);
        let v = h.to_f64_vec();
        assert!(v.iter().any(|x| x.is_nan()));
        assert!(v.iter().any(|x| x.is_infinite()));
        assert!(v.iter().any(|x| *x == 0.0 && x.is_sign_negative()));
        assert!(v.iter().any(|x| x.is_subnormal()));
        let h = g.host(&[400], DType::I8, Values::Special);
        assert!(h.to_f64_vec().contains(&-128.0));
    }
}
