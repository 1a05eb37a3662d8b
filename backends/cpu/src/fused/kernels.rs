//! Structural kernels of the CPU backend: reshape, concatenate, matmul.

use ndarray::{ArrayD, Axis, Ix2};
use tessera_core::backend::{concat_shape, matmul_dims};
use tessera_core::host::HostElement;
use tessera_core::program::wrap_i64;
use tessera_core::{
    dispatch_dtype, dispatch_host, DType, Element, Error, HostArray, Result, Scalar,
};

/// Concatenation along `axis` of arrays of one dtype.
pub fn concatenate(parts: &[&HostArray], axis: usize) -> Result<HostArray> {
    let shapes: Vec<(DType, &[usize])> = parts.iter().map(|p| (p.dtype(), p.shape())).collect();
    concat_shape(&shapes, axis)?;
    fn go<T: HostElement>(parts: &[&HostArray], axis: usize) -> Result<HostArray> {
        let views: Vec<_> = parts
            .iter()
            .map(|p| p.view_typed::<T>())
            .collect::<Result<_>>()?;
        let out = ndarray::concatenate(Axis(axis), &views).map_err(|e| {
            Error::shape(
                "concatenate",
                format!(
                    "{e}: shapes {:?}",
                    parts.iter().map(|p| p.shape().to_vec()).collect::<Vec<_>>()
                ),
            )
        })?;
        Ok(T::wrap(out.as_standard_layout().into_owned()))
    }
    dispatch_dtype!(parts[0].dtype(), T => go::<T>(parts, axis))
}

/// Matrix product of two 2-d arrays of one dtype. Floats use ndarray's blocked GEMM;
/// integers accumulate with wrapping (NumPy's overflow behaviour), never panicking.
pub fn matmul(a: &HostArray, b: &HostArray) -> Result<HostArray> {
    let (sa, sb) = (a.shape(), b.shape());
    let (m, k, n) = matmul_dims((a.dtype(), sa), (b.dtype(), sb))?;
    match (a, b) {
        (HostArray::F64(x), HostArray::F64(y)) => Ok(HostArray::F64(
            crate::linalg::gemm(x, y).map_or_else(|| dot2(x, y), Ok)?,
        )),
        (HostArray::F32(x), HostArray::F32(y)) => Ok(HostArray::F32(
            crate::linalg::gemm(x, y).map_or_else(|| dot2(x, y), Ok)?,
        )),
        (HostArray::Bool(_), _) => Err(Error::dtype(
            "matmul",
            DType::Bool,
            "cast to a numeric dtype first",
        )),
        _ => {
            let dtype = a.dtype();
            let av: Vec<Scalar> = dispatch_host!(a, x => x.iter().map(|v| v.to_scalar()).collect());
            let bv: Vec<Scalar> = dispatch_host!(b, x => x.iter().map(|v| v.to_scalar()).collect());
            let mut out = Vec::with_capacity(m * n);
            if dtype == DType::U64 {
                for i in 0..m {
                    for j in 0..n {
                        let mut acc = 0u64;
                        for l in 0..k {
                            acc = acc.wrapping_add(
                                av[i * k + l].as_u64().wrapping_mul(bv[l * n + j].as_u64()),
                            );
                        }
                        out.push(Scalar::U64(acc));
                    }
                }
            } else {
                let ai: Vec<i64> = av.iter().map(|s| s.as_i64()).collect();
                let bi: Vec<i64> = bv.iter().map(|s| s.as_i64()).collect();
                for i in 0..m {
                    for j in 0..n {
                        let mut acc = 0i64;
                        for l in 0..k {
                            acc = acc.wrapping_add(ai[i * k + l].wrapping_mul(bi[l * n + j]));
                        }
                        out.push(Scalar::from_i64_wrapping(wrap_i64(acc, dtype), dtype));
                    }
                }
            }
            HostArray::from_scalars(&[m, n], dtype, &out)
        }
    }
}

fn dot2<T: ndarray::LinalgScalar>(x: &ArrayD<T>, y: &ArrayD<T>) -> Result<ArrayD<T>> {
    let x2 = x
        .view()
        .into_dimensionality::<Ix2>()
        .map_err(|e| Error::shape("matmul", e.to_string()))?;
    let y2 = y
        .view()
        .into_dimensionality::<Ix2>()
        .map_err(|e| Error::shape("matmul", e.to_string()))?;
    Ok(x2.dot(&y2).into_dyn())
}

/// Sum of `f(x)` over a slice with eight independent partial sums, combined pairwise
/// (lane `l` with lane `l + 4`, then `l + 2`, then `l + 1`): the loop vectorises, and the
/// rounding error grows with `n/8` instead of `n`.
#[inline]
pub(crate) fn sum_lanes<T: Copy>(x: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for l in 0..8 {
            acc[l] += f(c[l]);
        }
    }
    // Halves folded onto halves, the order a vector register reduces in: the partial sums
    // stay in registers through the loop (one load-and-add per two lanes). Combining
    // neighbours instead, `(acc[0] + acc[1]) + ...`, led the compiler to keep them as
    // interleaved pairs and shuffle every chunk.
    let half: [f64; 4] = std::array::from_fn(|l| acc[l] + acc[l + 4]);
    let quarter = [half[0] + half[2], half[1] + half[3]];
    let mut s = quarter[0] + quarter[1];
    for &v in chunks.remainder() {
        s += f(v);
    }
    s
}

/// [`sum_lanes`] over `f64`.
pub fn sum_f64(x: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    sum_lanes(x, f)
}

tessera_core::simd_kernel! {
/// The plain sum of `f64`s ([`sum_lanes`] with no transform), compiled for AVX-512 and
/// AVX2 with run-time dispatch (`tessera_core::simd`; the compiler keeps the eight partial sums in four
/// two-lane registers, one load-and-add each per chunk). The same additions in the same
/// order as [`sum_lanes`] anywhere else, so the same bits on every path.
    pub fn sum_plain_f64(x: &[f64]) -> f64 {
        sum_lanes(x, |v| v)
    }
}

/// [`sum_lanes`] over `f32`, accumulated in `f64`.
pub fn sum_f32(x: &[f32], f: impl Fn(f32) -> f64) -> f64 {
    sum_lanes(x, f)
}

#[cfg(test)]
mod sum_tests {
    use super::*;

    #[test]
    fn lane_sums_are_exact_on_integers_and_propagate_specials() {
        let x: Vec<f64> = (0..1003).map(|i| i as f64).collect();
        assert_eq!(sum_f64(&x, |v| v), 1002.0 * 1003.0 / 2.0);
        assert_eq!(sum_plain_f64(&x), 1002.0 * 1003.0 / 2.0);
        // Every dispatch path adds in the same order as the generic loop.
        let y: Vec<f64> = (0..1003).map(|i| 1.0 / (i as f64 + 0.37)).collect();
        assert_eq!(sum_plain_f64(&y).to_bits(), sum_f64(&y, |v| v).to_bits());
        assert_eq!(sum_f64(&[], |v| v), 0.0);
        assert!(sum_f64(&[1.0, f64::NAN, 2.0], |v| v).is_nan());
        assert_eq!(
            sum_f64(&[1.0, f64::NAN, 2.0], |v| if v.is_nan() { 0.0 } else { v }),
            3.0
        );
        assert_eq!(sum_f32(&[1.5f32; 9], |v| v as f64), 13.5);
        assert!(sum_f64(&[f64::INFINITY, f64::NEG_INFINITY], |v| v).is_nan());
    }

    #[test]
    fn every_simd_path_of_the_plain_sum_gives_the_generic_bits() {
        let y: Vec<f64> = (0..1003).map(|i| 1.0 / (i as f64 + 0.37)).collect();
        let generic = sum_f64(&y, |v| v).to_bits();
        let all = tessera_core::simd::on_every_path("cpu::sum_plain_f64", || {
            [0, 1, 7, 8, 9, 1003].map(|n| sum_plain_f64(&y[..n]).to_bits())
        });
        assert!(all
            .iter()
            .any(|(p, _)| *p == tessera_core::simd::SimdPath::Baseline));
        for (p, bits) in all {
            assert_eq!(bits[5], generic, "{}", p.name());
            assert_eq!(bits[0], 0f64.to_bits(), "{}", p.name());
            assert_eq!(bits[3], sum_f64(&y[..8], |v| v).to_bits(), "{}", p.name());
        }
    }
}
