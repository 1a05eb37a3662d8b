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
//!
//! The range sketch (`[P Ω ; Pᵀ P Ω]`, [`ArrayBackend::sketch_program`](tessera_core::ArrayBackend::sketch_program))
//! streams the same way: each band's `Y` rows are `band @ Ω`, and `band ᵀ @ Y_band` is
//! added to `Pᵀ Y` while the band is still in cache, so the block is generated once for
//! both products.

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use ndarray::{ArrayD, IxDyn};
use tessera_core::program::Program;
use tessera_core::{Error, HostArray, Result};

use crate::fused::{DenseRanges, FloatOut};
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
    streamed(
        "matmul",
        Streamed::Product { program_left },
        program,
        inputs,
        other,
    )
}

/// `[P Ω ; Pᵀ P Ω]`, `P` being `program`'s one dense output (rows × n) and `omega` n × l.
pub fn sketch_program(
    program: &Program,
    inputs: &[&HostArray],
    omega: &HostArray,
) -> Result<HostArray> {
    streamed("sketch", Streamed::Sketch, program, inputs, omega)
}

/// What is computed from a streamed operand `P` and one other chunk of `P`'s dtype.
enum Streamed {
    /// `P @ other` (`program_left`) or `other @ P`.
    Product { program_left: bool },
    /// `[P Ω ; Pᵀ P Ω]`, `other` being `Ω`.
    Sketch,
}

impl Streamed {
    /// The result from `P` (read through `ranges`, `[rows, cols]`) and `other`.
    fn run<T: Real + FloatOut>(
        &self,
        ranges: &DenseRanges<'_>,
        pshape: [usize; 2],
        other: &ArrayD<T>,
    ) -> Result<ArrayD<T>> {
        match *self {
            Streamed::Product { program_left } => product(ranges, pshape, other, program_left),
            Streamed::Sketch => sketch(ranges, pshape, other),
        }
    }
}

/// Checks the operand program (one dense 2-d output) and runs `s` in the dtype that
/// `other` shares with it.
fn streamed(
    op: &str,
    s: Streamed,
    program: &Program,
    inputs: &[&HostArray],
    other: &HostArray,
) -> Result<HostArray> {
    let ranges = DenseRanges::new(program, inputs)?;
    let pshape = program.output_shape(0);
    let &[prows, pcols] = pshape.as_slice() else {
        return Err(Error::shape(
            op,
            format!("a streamed operand must be 2-d, got {pshape:?}"),
        ));
    };
    match other {
        HostArray::F64(o) => Ok(HostArray::F64(s.run(&ranges, [prows, pcols], o)?)),
        HostArray::F32(o) => Ok(HostArray::F32(s.run(&ranges, [prows, pcols], o)?)),
        h => Err(Error::dtype(
            op,
            h.dtype(),
            format!(
                "operands must share a dtype; the streamed one is {}",
                program.output_dtype(0)
            ),
        )),
    }
}

fn sketch<T: Real + FloatOut>(
    ranges: &DenseRanges<'_>,
    [prows, pcols]: [usize; 2],
    omega: &ArrayD<T>,
) -> Result<ArrayD<T>> {
    let &[on, l] = omega.shape() else {
        return Err(Error::shape(
            "sketch",
            format!("omega must be 2-d, got {:?}", omega.shape()),
        ));
    };
    if on != pcols {
        return Err(Error::shape(
            "sketch",
            format!("block [{prows}, {pcols}] with omega [{on}, {l}]"),
        ));
    }
    let os = omega
        .as_slice()
        .ok_or_else(|| Error::Internal("a cpu chunk is not C-contiguous".into()))?;
    let om = MatRef::from_row_major_slice(os, on, l);
    // Rows 0..prows hold Y = P Ω, rows prows.. hold Pᵀ Y. Yᵀ P (l × n) is accumulated
    // and transposed into place once: GEMM with the long n axis as its columns keeps the
    // accumulator rows contiguous, where `Pᵀ Y` directly runs masked 20-wide tiles.
    let mut out = vec![T::zero_impl(); (prows + pcols) * l];
    let (y, g) = out.split_at_mut(prows * l);
    let mut yt_p = vec![T::zero_impl(); l * pcols];
    bands(ranges, [prows, pcols], |r0, p: MatRef<'_, T>| {
        let len = p.nrows();
        let yb = &mut y[r0 * l..(r0 + len) * l];
        matmul(
            MatMut::from_row_major_slice_mut(yb, len, l),
            Accum::Replace,
            p,
            om,
            T::one_impl(),
            Par::Seq,
        );
        let accum = if r0 == 0 { Accum::Replace } else { Accum::Add };
        matmul(
            MatMut::from_row_major_slice_mut(&mut yt_p, l, pcols),
            accum,
            MatRef::from_row_major_slice(yb, len, l).transpose(),
            p,
            T::one_impl(),
            Par::Seq,
        );
    })?;
    // `max(1)`: with an empty sketch (l = 0) there is nothing to transpose, and a chunk
    // size of zero would panic.
    for (j, row) in g.chunks_exact_mut(l.max(1)).enumerate() {
        for (i, v) in row.iter_mut().enumerate() {
            *v = yt_p[i * pcols + j];
        }
    }
    ArrayD::from_shape_vec(IxDyn(&[prows + pcols, l]), out)
        .map_err(|e| Error::Internal(format!("sketch result: {e}")))
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
    bands(ranges, [prows, pcols], |r0, p: MatRef<'_, T>| {
        let len = p.nrows();
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
    })?;
    ArrayD::from_shape_vec(IxDyn(&[m, n]), out)
        .map_err(|e| Error::Internal(format!("streamed matmul result: {e}")))
}

/// Calls `f(r0, band)` for `P`'s rows in bands of about [`BAND`] elements, `band` being
/// rows `r0 .. r0 + band.nrows()` of `P`, generated into one reused buffer.
fn bands<T: FloatOut>(
    ranges: &DenseRanges<'_>,
    [prows, pcols]: [usize; 2],
    mut f: impl FnMut(usize, MatRef<'_, T>),
) -> Result<()> {
    let rows_per_band = (BAND / pcols.max(1)).max(1);
    let mut band: Vec<T> = Vec::with_capacity(rows_per_band * pcols);
    let mut r0 = 0;
    while r0 < prows {
        let len = rows_per_band.min(prows - r0);
        ranges.fill(r0 * pcols, (r0 + len) * pcols, &mut band)?;
        f(r0, MatRef::from_row_major_slice(&band, len, pcols));
        r0 += len;
    }
    Ok(())
}
