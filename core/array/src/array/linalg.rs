//! Chunked matrix products: `matmul`, `dot`, `tensordot`.
//!
//! Output block `(i, j)` is one task summing `a[i, l] @ b[l, j]` over `l`, with the
//! contraction chunks of `b` aligned to those of `a` first.

use super::{Array, Op};
use crate::chunks::Chunks;
use crate::dtype::{promote, DType, Scalar};
use crate::error::{Error, Result};
use crate::program::BinaryOp;

impl Array {
    /// Matrix product of 1-d or 2-d arrays (NumPy `@` for these ranks).
    pub fn matmul(&self, other: &Array) -> Result<Array> {
        let (a_nd, b_nd) = (self.ndim(), other.ndim());
        if a_nd == 0 || b_nd == 0 || a_nd > 2 || b_nd > 2 {
            return Err(Error::invalid(
                "matmul",
                format!(
                    "operands of shapes {:?} and {:?}: matmul takes 1-d or 2-d arrays (batched >2-d matmul is not supported; use tensordot)",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let a = if a_nd == 1 {
            self.expand_dims(0)?
        } else {
            self.clone()
        };
        let b = if b_nd == 1 {
            other.expand_dims(1)?
        } else {
            other.clone()
        };
        let (sa, sb) = (a.shape(), b.shape());
        if sa[1] != sb[0] {
            return Err(Error::shape(
                "matmul",
                format!(
                    "contraction mismatch: {:?} @ {:?} ({} != {})",
                    self.shape(),
                    other.shape(),
                    sa[1],
                    sb[0]
                ),
            ));
        }
        let dtype = promote(a.dtype(), b.dtype());
        if dtype == DType::Bool {
            // NumPy: a bool product is the logical "or" of "and"s, i.e. whether the count
            // of true pairs along the contraction is nonzero.
            return self
                .astype(DType::I64)
                .matmul(&other.astype(DType::I64))?
                .binary_scalar(BinaryOp::Ne, Scalar::I64(0), false);
        }
        a.require_same_backend(&b, "matmul", "operands")?;
        let a = a.astype(dtype);
        let mut b = b.astype(dtype);
        if a.chunks().axis(1) != b.chunks().axis(0) {
            let sizes = vec![a.chunks().axis(1).to_vec(), b.chunks().axis(1).to_vec()];
            b = b.rechunk(Chunks::new(&sb, sizes)?)?;
        }
        let chunks = Chunks::new(
            &[sa[0], sb[1]],
            vec![a.chunks().axis(0).to_vec(), b.chunks().axis(1).to_vec()],
        )?;
        let out = Array::new(Op::Matmul(a.clone(), b), dtype, chunks, a.backend().clone());
        match (a_nd, b_nd) {
            (1, 1) => out.squeeze(None),
            (1, _) => out.squeeze(Some(&[0])),
            (_, 1) => out.squeeze(Some(&[1])),
            _ => Ok(out),
        }
    }

    /// `dot` for 1-d and 2-d arrays (same as `matmul` there).
    pub fn dot(&self, other: &Array) -> Result<Array> {
        self.matmul(other)
    }

    /// Sums products over `a_axes` of `self` and `b_axes` of `other` (NumPy `tensordot`).
    pub fn tensordot(&self, other: &Array, a_axes: &[usize], b_axes: &[usize]) -> Result<Array> {
        if a_axes.len() != b_axes.len() {
            return Err(Error::invalid(
                "tensordot",
                "a_axes and b_axes must have the same length",
            ));
        }
        let (sa, sb) = (self.shape(), other.shape());
        for (&i, &j) in a_axes.iter().zip(b_axes) {
            if i >= sa.len() || j >= sb.len() || sa[i] != sb[j] {
                return Err(Error::shape(
                    "tensordot",
                    format!("cannot contract axis {i} of {sa:?} with axis {j} of {sb:?}"),
                ));
            }
        }
        let free_a: Vec<usize> = (0..sa.len()).filter(|i| !a_axes.contains(i)).collect();
        let free_b: Vec<usize> = (0..sb.len()).filter(|j| !b_axes.contains(j)).collect();
        let perm_a: Vec<usize> = free_a.iter().chain(a_axes).copied().collect();
        let perm_b: Vec<usize> = b_axes.iter().chain(&free_b).copied().collect();
        let m: usize = free_a.iter().map(|&i| sa[i]).product();
        let k: usize = a_axes.iter().map(|&i| sa[i]).product();
        let n: usize = free_b.iter().map(|&j| sb[j]).product();
        let a2 = self.permute_dims(&perm_a)?.reshape(&[m as i64, k as i64])?;
        let b2 = other
            .permute_dims(&perm_b)?
            .reshape(&[k as i64, n as i64])?;
        let out_shape: Vec<i64> = free_a
            .iter()
            .map(|&i| sa[i] as i64)
            .chain(free_b.iter().map(|&j| sb[j] as i64))
            .collect();
        a2.matmul(&b2)?.reshape(&out_shape)
    }
}
