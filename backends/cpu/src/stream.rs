//! Matrix products that stream a fused program's output into the product
//! ([`ArrayBackend::matmul_program`](tessera_core::ArrayBackend::matmul_program)).
//!
//! Why: `svd_compressed` multiplies a generated 200,000 × 5,000 input twice, one
//! 500-row block (20 MB) per task. Materialising each block cost more than generating it:
//! every block is fresh memory whose pages fault in (`perf`: about 40% of the run in the
//! kernel's page-fault path) and whose tiles are copied into place. Here the program runs
//! over a band of rows at a time into one reused buffer of about 1 MiB, which stays in
//! cache, and each band goes straight into faer's GEMM: `P @ B` fills the band's rows of
//! the result, `A @ P` accumulates `A[:, band] @ P[band, :]`.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{ArrayD, IxDyn};
use tessera_core::program::Program;
use tessera_core::{Error, HostArray, Result};

use crate::exec::{DenseRanges, FloatOut};
use crate::linalg::Real;

/// Elements per band: 1 MiB of `f64`, well inside L2 next to the GEMM's packed panels.
const BAND: usize = 1 << 17;

/// `P @ other` (`program_left`) or `other @ P`, `P` being `program`'s one dense output.
pub fn matmul_program(
    program: &Program,
    inputs: &[&HostArray],
    other: &HostArray,
    program_left: bool,
) -> Result<HostArray> {
    let ranges = DenseRanges::new(program, inputs)?;
    let pshape = program.output_shape(0);
    let &[prows, pcols] = pshape.as_slice() else {
        return Err(Error::shape(
            "matmul",
            format!("a streamed operand must be 2-d, got {pshape:?}"),
        ));
    };
    match other {
        HostArray::F64(o) => Ok(HostArray::F64(product(
            &ranges,
            [prows, pcols],
            o,
            program_left,
        )?)),
        HostArray::F32(o) => Ok(HostArray::F32(product(
            &ranges,
            [prows, pcols],
            o,
            program_left,
        )?)),
        h => Err(Error::dtype(
            "matmul",
            h.dtype(),
            format!(
                "operands must share a dtype; the streamed one is {}",
                program.output_dtype(0)
            ),
        )),
    }
}

fn product<T: Real + FloatOut>(
    ranges: &DenseRanges<'_>,
    [prows, pcols]: [usize; 2],
    other: &ArrayD<T>,
    program_left: bool,
) -> Result<ArrayD<T>> {
    let oshape = other.shape();
    let fits = oshape.len() == 2
        && if program_left {
            oshape[0] == pcols
        } else {
            oshape[1] == prows
        };
    if !fits {
        let (l, r) = if program_left {
            (vec![prows, pcols], oshape.to_vec())
        } else {
            (oshape.to_vec(), vec![prows, pcols])
        };
        return Err(Error::shape("matmul", format!("{l:?} @ {r:?}")));
    }
    let os = other
        .as_slice()
        .ok_or_else(|| Error::Internal("a cpu chunk is not C-contiguous".into()))?;
    let (m, n) = if program_left {
        (prows, oshape[1])
    } else {
        (oshape[0], pcols)
    };
    let mut out = vec![T::zero_impl(); m * n];
    let rows_per_band = (BAND / pcols.max(1)).max(1);
    let mut band: Vec<T> = Vec::with_capacity(rows_per_band * pcols);
    let mut r0 = 0;
    while r0 < prows {
        let len = rows_per_band.min(prows - r0);
        ranges.fill(r0 * pcols, (r0 + len) * pcols, &mut band)?;
        let p = MatRef::from_row_major_slice(&band, len, pcols);
        if program_left {
            // Rows r0.. of the result are the band times `other`.
            let dst = MatMut::from_row_major_slice_mut(&mut out, m, n).subrows_mut(r0, len);
            let b = MatRef::from_row_major_slice(os, pcols, n);
            matmul(dst, Accum::Replace, p, b, T::one_impl(), Par::Seq);
        } else {
            // The band is rows r0.. of the contraction: add `other[:, band] @ band`.
            let dst = MatMut::from_row_major_slice_mut(&mut out, m, n);
            let a = MatRef::from_row_major_slice(os, m, prows).subcols(r0, len);
            let accum = if r0 == 0 { Accum::Replace } else { Accum::Add };
            matmul(dst, accum, a, p, T::one_impl(), Par::Seq);
        }
        r0 += len;
    }
    ArrayD::from_shape_vec(IxDyn(&[m, n]), out)
        .map_err(|e| Error::Internal(format!("streamed matmul result: {e}")))
}
