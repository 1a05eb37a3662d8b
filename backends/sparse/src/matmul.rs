//! Matrix product with a sparse left operand (fill 0): Gustavson's row-by-row algorithm.
//!
//! Row `i` of the result accumulates `a[i,p] * b[p,:]` over the explicit entries of row
//! `i` of `a` (its CSR run), in increasing `p` — the reference's summation order, minus the
//! terms that are exactly zero. When `b` has fill 0 too, only `b`'s explicit entries of row
//! `p` are visited (sparse × sparse); otherwise `b`'s rows are read as dense rows with the
//! fill between explicit entries (sparse × dense, e.g. a dense vector converted to this
//! backend), so the cost is `nnz(a) · ncols(b)` and nothing is densified.
//!
//! Dropping a zero term is exact unless the other factor is infinite or NaN (`0·∞` is
//! NaN), so [`applies`] sends such operands — and a left operand with a non-zero fill — to
//! the dense reference instead.

use tessera_core::dtype::DTypeKind;
use tessera_core::{DType, HostArray, Scalar};

use crate::chunk::{is_zero, to_vec, vec1, SparseChunk};

/// True when the sparse algorithm gives the reference's answer for these operands.
pub(crate) fn applies(a: &SparseChunk, b: &SparseChunk) -> bool {
    let finite = |c: &SparseChunk| {
        !c.dtype().is_float()
            || (c.fill.as_f64().is_finite() && c.vals.to_f64_vec().iter().all(|v| v.is_finite()))
    };
    is_zero(a.fill) && finite(a) && finite(b) && a.dtype() != DType::Bool
}

/// Row `r`'s range in a 2-d chunk's explicit entries.
fn row(c: &SparseChunk, r: usize) -> std::ops::Range<usize> {
    let n = c.shape[1] as u64;
    let lo = c.idx.partition_point(|&i| i < r as u64 * n);
    let hi = c.idx.partition_point(|&i| i < (r as u64 + 1) * n);
    lo..hi
}

/// Typed arithmetic for the accumulation (wrapping for integers, as the reference).
trait Acc: Copy + Default {
    fn mul_add(self, a: Self, b: Self) -> Self;
}
impl Acc for f64 {
    fn mul_add(self, a: f64, b: f64) -> f64 {
        self + a * b
    }
}
impl Acc for f32 {
    fn mul_add(self, a: f32, b: f32) -> f32 {
        self + a * b
    }
}
impl Acc for i64 {
    fn mul_add(self, a: i64, b: i64) -> i64 {
        self.wrapping_add(a.wrapping_mul(b))
    }
}
impl Acc for u64 {
    fn mul_add(self, a: u64, b: u64) -> u64 {
        self.wrapping_add(a.wrapping_mul(b))
    }
}

fn gustavson<T: Acc>(
    a: &SparseChunk,
    av: &[T],
    b: &SparseChunk,
    bv: &[T],
    bfill: T,
    sparse_b: bool,
) -> (Vec<u64>, Vec<T>) {
    let (m, n) = (a.shape[0], b.shape[1]);
    let mut acc = vec![T::default(); n];
    let mut touched = vec![false; n];
    let mut dense_row = vec![bfill; n];
    let (mut idx, mut vals) = (Vec::new(), Vec::new());
    for i in 0..m {
        let ra = row(a, i);
        if ra.is_empty() {
            continue;
        }
        for k in ra {
            let p = (a.idx[k] % a.shape[1] as u64) as usize;
            let rb = row(b, p);
            if sparse_b {
                for q in rb {
                    let j = (b.idx[q] % n as u64) as usize;
                    acc[j] = acc[j].mul_add(av[k], bv[q]);
                    touched[j] = true;
                }
            } else {
                for q in rb.clone() {
                    dense_row[(b.idx[q] % n as u64) as usize] = bv[q];
                }
                for j in 0..n {
                    acc[j] = acc[j].mul_add(av[k], dense_row[j]);
                    touched[j] = true;
                }
                for q in rb {
                    dense_row[(b.idx[q] % n as u64) as usize] = bfill;
                }
            }
        }
        for j in 0..n {
            if touched[j] {
                idx.push((i * n + j) as u64);
                vals.push(acc[j]);
                acc[j] = T::default();
                touched[j] = false;
            }
        }
    }
    (idx, vals)
}

/// `a @ b` for 2-d chunks of one dtype with [`applies`] true; the result has fill 0.
pub(crate) fn matmul(a: &SparseChunk, b: &SparseChunk) -> SparseChunk {
    let dtype = a.dtype();
    let shape = [a.shape[0], b.shape[1]];
    let sparse_b = is_zero(b.fill);
    let (idx, vals): (Vec<u64>, HostArray) = match dtype.kind() {
        DTypeKind::Float if dtype == DType::F32 => {
            let (av, bv) = (to_vec::<f32>(&a.vals), to_vec::<f32>(&b.vals));
            let (i, v) = gustavson(a, &av, b, &bv, b.fill.as_f64() as f32, sparse_b);
            (i, vec1(v))
        }
        DTypeKind::Float => {
            let (av, bv) = (to_vec::<f64>(&a.vals), to_vec::<f64>(&b.vals));
            let (i, v) = gustavson(a, &av, b, &bv, b.fill.as_f64(), sparse_b);
            (i, vec1(v))
        }
        DTypeKind::UInt => {
            let av = to_vec::<u64>(&a.vals.cast(DType::U64));
            let bv = to_vec::<u64>(&b.vals.cast(DType::U64));
            let (i, v) = gustavson(a, &av, b, &bv, b.fill.as_u64(), sparse_b);
            (i, vec1(v).cast(dtype))
        }
        DTypeKind::Int | DTypeKind::Bool => {
            let av = to_vec::<i64>(&a.vals.cast(DType::I64));
            let bv = to_vec::<i64>(&b.vals.cast(DType::I64));
            let (i, v) = gustavson(a, &av, b, &bv, b.fill.as_i64(), sparse_b);
            (i, vec1(v).cast(dtype))
        }
    };
    SparseChunk::from_parts(&shape, Scalar::zero(dtype), idx, vals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_times_sparse_and_times_dense_match_the_definition() {
        // a = [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
        let a = SparseChunk::from_parts(
            &[3, 3],
            Scalar::F64(0.0),
            vec![0, 2, 7],
            vec1(vec![1.0, 2.0, 3.0]),
        );
        // b = [[0, 4], [5, 0], [0, 6]]
        let b = SparseChunk::from_parts(
            &[3, 2],
            Scalar::F64(0.0),
            vec![1, 2, 5],
            vec1(vec![4.0, 5.0, 6.0]),
        );
        assert!(applies(&a, &b));
        let c = matmul(&a, &b);
        assert_eq!(
            c.to_dense().to_f64_vec(),
            vec![0.0, 16.0, 0.0, 0.0, 15.0, 0.0]
        );
        // b2 = all ones except one explicit 2: fill 1 (a dense operand)
        let b2 = SparseChunk::from_parts(&[3, 1], Scalar::F64(1.0), vec![2], vec1(vec![2.0]));
        assert_eq!(matmul(&a, &b2).to_dense().to_f64_vec(), vec![5.0, 0.0, 3.0]);
        let inf = SparseChunk::from_parts(
            &[3, 1],
            Scalar::F64(0.0),
            vec![0],
            vec1(vec![f64::INFINITY]),
        );
        assert!(!applies(&a, &inf));
    }
}
