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

use crate::exec::{base, inc, Buf, Run};
use crate::kernels;

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
    /// Accumulators for the moments of a `dtype` region of `shape` over `axes`; `target`
    /// addresses the reduced output (see `exec::reduce_target`).
    pub(crate) fn new(dtype: DType, shape: &[usize], axes: &[usize], target: Linear) -> Self {
        let mut reduced = shape.to_vec();
        for &a in axes {
            reduced[a] = 1;
        }
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
