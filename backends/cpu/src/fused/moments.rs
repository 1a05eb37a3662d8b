//! One-pass block moments: the accumulator behind `CpuBackend::moments_program`.
//!
//! `var` needs, per block, the sum and `M2` (squared deviations from the block's own mean).
//! The executor hands this sink each tile of the block's fused program as runs along the
//! last axis, so the program — often a generator — runs once. A run that folds into one
//! output element is taken exactly while it is in cache (its sum, then `M2` about its own
//! mean: two tight loops the compiler vectorises) and merged into the accumulator with the
//! update of Chan, Golub and LeVeque:
//!
//! `n = n_a + n_b`, `δ = m_b − m_a`, `m = m_a + δ n_b / n`, `M2 = M2_a + M2_b + δ² n_a n_b / n`.
//!
//! No step subtracts two large sums, so the result is as stable as the two-pass form (the
//! `E[x²] − E[x]²` shortcut is not, when the mean is large against the spread). A run whose
//! elements fold into different outputs (a reduction over a leading axis) updates each of
//! them with Welford's step, which is the same merge with `n_b = 1`.

use ndarray::{ArrayD, IxDyn};
use tessera_core::chunks::numel;
use tessera_core::program::{moments_shape, Linear};
use tessera_core::{DType, HostArray};

use super::kernels;
use super::tile::{base, inc, reduce_target, Buf, Run};

/// Sum, count, mean and `M2` per output element of a block's moments.
pub(crate) struct MomentsSink {
    /// Output element of a run's first element, and its step along the run.
    target: Linear,
    /// The program's shape and the reduced axes (ascending, not empty).
    shape: Vec<usize>,
    axes: Vec<usize>,
    dtype: DType,
    n: Vec<f64>,
    sum: Vec<f64>,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl MomentsSink {
    /// Accumulators for the moments of a `dtype` region of `shape` over `axes`.
    pub(crate) fn new(dtype: DType, shape: &[usize], axes: &[usize]) -> Self {
        let (reduced, target, _) = reduce_target(shape, axes);
        let n = numel(&reduced);
        MomentsSink {
            target,
            shape: shape.to_vec(),
            axes: axes.to_vec(),
            dtype,
            n: vec![0.0; n],
            sum: vec![0.0; n],
            mean: vec![0.0; n],
            m2: vec![0.0; n],
        }
    }

    /// How many accumulators it holds: four per output element.
    pub(crate) fn accumulators(&self) -> usize {
        4 * self.n.len()
    }

    /// The linear form giving a run's output element (see [`reduce_target`]).
    pub(crate) fn target(&self) -> &Linear {
        &self.target
    }

    /// Folds a tile's runs.
    pub(crate) fn consume(&mut self, buf: &Buf, runs: &[Run]) {
        for r in runs {
            let (t0, ti) = (base(&self.target, &r.coords), inc(&self.target));
            let range = r.pos..r.pos + r.len;
            match buf {
                Buf::F64(x) => self.fold(t0, ti, &x[range], |v| v),
                Buf::F32(x) => self.fold(t0, ti, &x[range], |v| v as f64),
                _ => unreachable!("moments are checked to take float programs"),
            }
        }
    }

    fn fold<T: Copy>(&mut self, t0: i64, ti: i64, xs: &[T], f: impl Fn(T) -> f64 + Copy) {
        if xs.is_empty() {
            return;
        }
        if ti == 0 {
            let s = kernels::sum_lanes(xs, f);
            let m = s / xs.len() as f64;
            let m2 = kernels::sum_lanes(xs, |v| {
                let d = f(v) - m;
                d * d
            });
            self.merge_one(t0 as usize, xs.len() as f64, s, m, m2);
            return;
        }
        for (j, &v) in xs.iter().enumerate() {
            let t = (t0 + ti * j as i64) as usize;
            let v = f(v);
            self.n[t] += 1.0;
            let d = v - self.mean[t];
            self.mean[t] += d / self.n[t];
            self.m2[t] += d * (v - self.mean[t]);
            self.sum[t] += v;
        }
    }

    /// Merges `n_b` elements with sum `s_b`, mean `m_b` and `M2_b` into output `t`.
    fn merge_one(&mut self, t: usize, n_b: f64, s_b: f64, m_b: f64, m2_b: f64) {
        let n_a = self.n[t];
        if n_b == 0.0 {
            return;
        }
        if n_a == 0.0 {
            (self.n[t], self.sum[t], self.mean[t], self.m2[t]) = (n_b, s_b, m_b, m2_b);
            return;
        }
        let n = n_a + n_b;
        let d = m_b - self.mean[t];
        self.mean[t] += d * (n_b / n);
        self.m2[t] += m2_b + d * d * (n_a * n_b / n);
        self.sum[t] += s_b;
        self.n[t] = n;
    }

    /// Folds the accumulators of a later segment of the same block into these.
    pub(crate) fn merge(&mut self, other: MomentsSink) {
        for t in 0..self.n.len() {
            self.merge_one(t, other.n[t], other.sum[t], other.mean[t], other.m2[t]);
        }
    }

    /// The packed result: sums, then `M2`, along the first reduced axis.
    pub(crate) fn finish(self) -> HostArray {
        let packed = moments_shape(&self.shape, &self.axes);
        let a0 = self.axes[0];
        // Output element t = outer * inner + k splits around axis a0 (length 1 there).
        let inner: usize = packed[a0 + 1..].iter().product();
        let mut out = vec![0.0f64; 2 * self.n.len()];
        for (t, (&s, &m2)) in self.sum.iter().zip(&self.m2).enumerate() {
            let (outer, k) = (t / inner.max(1), t % inner.max(1));
            out[outer * 2 * inner + k] = s;
            out[outer * 2 * inner + inner + k] = m2;
        }
        let shape = IxDyn(&packed);
        match self.dtype {
            DType::F32 => HostArray::F32(
                ArrayD::from_shape_vec(shape, out.into_iter().map(|v| v as f32).collect())
                    .expect("sized"),
            ),
            _ => HostArray::F64(ArrayD::from_shape_vec(shape, out).expect("sized")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tessera_core::backend::moments_with_primitives;
    use tessera_core::program::{IndexMap, Program, ProgramBuilder};
    use tessera_core::{ArrayBackend, Chunk, Error};

    use super::*;
    use crate::fused::moments;
    use crate::{CpuBackend, CpuChunk};

    fn read(shape: &[usize], dtype: DType) -> Program {
        let mut pb = ProgramBuilder::new(shape);
        let x = pb.input(0, dtype, IndexMap::identity(shape));
        pb.finish(vec![(x, None)]).unwrap()
    }

    fn host(shape: &[usize], v: Vec<f64>) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(IxDyn(shape), v).unwrap())
    }

    fn packed(shape: &[usize], v: Vec<f64>, axes: &[usize]) -> (Vec<usize>, Vec<f64>) {
        let out = moments(&read(shape, DType::F64), &[&host(shape, v)], axes).unwrap();
        (out.shape().to_vec(), out.to_f64_vec())
    }

    /// Hand-computed sums and M2 of [[1, 2, 3], [4, 5, 6]] over each axis set, in the
    /// packed layout: over both axes (mean 3.5), along rows (a run per output) and down
    /// columns (Welford's step per element).
    #[test]
    fn packed_sums_and_m2_by_hand() {
        let x = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(
            packed(&[2, 3], x.clone(), &[0, 1]),
            (vec![2, 1], vec![21.0, 17.5])
        );
        assert_eq!(
            packed(&[2, 3], x.clone(), &[1]),
            (vec![2, 2], vec![6.0, 2.0, 15.0, 2.0])
        );
        assert_eq!(
            packed(&[2, 3], x, &[0]),
            (vec![2, 3], vec![5.0, 7.0, 9.0, 4.5, 4.5, 4.5])
        );
    }

    /// A block far larger than a segment (merged across segments and tiles) with a mean
    /// of 1e9 and a spread of a few units: M2 matches the exact value, which
    /// `sum(x²) − sum(x)²/n` misses by orders of magnitude.
    #[test]
    fn large_offset_is_stable_across_tiles_and_segments() {
        let (rows, cols) = (700, 1000);
        let v: Vec<f64> = (0..rows * cols).map(|i| 1e9 + (i % 7) as f64).collect();
        let n = v.len() as f64;
        let mean = v.iter().map(|x| x - 1e9).sum::<f64>() / n + 1e9;
        let exact: f64 = v.iter().map(|x| (x - mean) * (x - mean)).sum();
        let (_, got) = packed(&[rows, cols], v.clone(), &[0, 1]);
        assert_eq!(got[0], v.iter().sum::<f64>());
        assert!(
            (got[1] - exact).abs() <= 1e-9 * exact,
            "{} vs {exact}",
            got[1]
        );
        let naive = v.iter().map(|x| x * x).sum::<f64>() - v.iter().sum::<f64>().powi(2) / n;
        assert!(
            (naive - exact).abs() > 1e-3 * exact,
            "the naive form should fail here"
        );
    }

    /// The native one-pass result equals the two-pass reference on every axis set, f64
    /// and f32.
    #[test]
    fn native_matches_the_reference() {
        let shape = [37, 53, 5];
        let v: Vec<f64> = (0..37 * 53 * 5)
            .map(|i| ((i * 7919) % 1013) as f64 / 17.0 - 20.0)
            .collect();
        let cpu = CpuBackend::new();
        for dtype in [DType::F64, DType::F32] {
            let h = host(&shape, v.clone()).cast(dtype);
            let chunk: Chunk = Arc::new(CpuChunk::new(h.clone()));
            for axes in [&[0][..], &[1], &[2], &[0, 2], &[1, 2], &[0, 1, 2]] {
                let p = read(&shape, dtype);
                let native = moments(&p, &[&h], axes).unwrap();
                let reference =
                    moments_with_primitives(&cpu, &p, std::slice::from_ref(&chunk), axes).unwrap();
                let reference = cpu.to_host(&reference).unwrap();
                assert_eq!(native.shape(), reference.shape(), "{axes:?}");
                assert_eq!(native.dtype(), dtype);
                let tol = if dtype == DType::F64 { 1e-12 } else { 1e-5 };
                for (a, b) in native.to_f64_vec().iter().zip(reference.to_f64_vec()) {
                    assert!(
                        (a - b).abs() <= tol * b.abs().max(1.0),
                        "{axes:?}: {a} vs {b}"
                    );
                }
            }
        }
    }

    /// NaN and infinity make the block's M2 NaN, as NumPy's var.
    #[test]
    fn non_finite_values_propagate() {
        let (_, got) = packed(&[4], vec![1.0, f64::NAN, 2.0, 3.0], &[0]);
        assert!(got[0].is_nan() && got[1].is_nan());
        let (_, got) = packed(&[4], vec![1.0, f64::INFINITY, 2.0, 3.0], &[0]);
        assert_eq!(got[0], f64::INFINITY);
        assert!(got[1].is_nan());
    }

    /// Programs moments cannot take are refused with the reason.
    #[test]
    fn unsuitable_programs_are_refused() {
        let ints = HostArray::I64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![1, 2, 3]).unwrap());
        let e = moments(&read(&[3], DType::I64), &[&ints], &[0]).unwrap_err();
        assert!(matches!(e, Error::DType { .. }), "{e}");
        let f = host(&[3], vec![1.0, 2.0, 3.0]);
        for axes in [&[][..], &[1], &[0, 0]] {
            let e = moments(&read(&[3], DType::F64), &[&f], axes).unwrap_err();
            assert!(e.to_string().contains("axes"), "{e}");
        }
    }
}
