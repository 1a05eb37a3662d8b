//! TSQR: the QR factorisation of a tall-and-skinny array in one pass over its row blocks.
//!
//! Level 0 factors every row block `X_i = Q_i R_i` in parallel. The R factors are stacked
//! in groups of `array.split-every` and each stack is factored again, recursively, until
//! one R remains; on the way back each block's Q is multiplied by its rows of the Q of the
//! level above (`Q_i ← Q_i · Q'_[rows of R_i]`). With `b` blocks of `m_i × n` this costs
//! `O(m n²)` flops and keeps the `R` stacks at `fan-in · n` rows.

use rayon::prelude::*;

use super::{as_float, require_2d, single, Qr};
use crate::array::Array;
use crate::backend::{ArrayBackend, AxisSlice, Chunk};
use crate::chunks::Chunks;
use crate::error::{Error, Result};

/// QR of a tall-and-skinny array: one chunk along axis 1, any number of row chunks.
/// `q` is chunked by rows like `x`; `r` is one chunk. Integer input is factored as
/// `float64`.
pub fn tsqr(x: &Array) -> Result<Qr> {
    let (m, _) = require_2d(x, "tsqr")?;
    if x.chunks().axis(1).len() != 1 {
        return Err(Error::invalid(
            "tsqr",
            format!(
                "needs one chunk along axis 1 (tall-and-skinny); {:?} has {} column chunks: rechunk axis 1 into one chunk, or use svd_compressed",
                x.shape(),
                x.chunks().axis(1).len()
            ),
        ));
    }
    let x = as_float(x);
    let backend = x.backend().clone();
    let blocks = x.compute_chunks()?;
    let fan_in = crate::config::split_every()?;
    let (qs, r) = factor(backend.as_ref(), &blocks, fan_in)?;
    let k = r.shape()[0];
    let grid = Chunks::new(&[m, k], vec![x.chunks().axis(0).to_vec(), vec![k]])?;
    Ok(Qr {
        q: Array::from_chunks(qs, grid, backend)?,
        r: single(&x, r)?,
    })
}

/// Factors the vertical stack of `blocks`: each block's final Q piece, and the R.
fn factor(b: &dyn ArrayBackend, blocks: &[Chunk], fan_in: usize) -> Result<(Vec<Chunk>, Chunk)> {
    let qrs: Vec<(Chunk, Chunk)> = blocks.par_iter().map(|c| b.qr(c)).collect::<Result<_>>()?;
    if let [(q, r)] = qrs.as_slice() {
        return Ok((vec![q.clone()], r.clone()));
    }
    let groups: Vec<&[(Chunk, Chunk)]> = qrs.chunks(fan_in.max(2)).collect();
    let stacked: Vec<Chunk> = groups
        .par_iter()
        .map(|g| {
            let rs: Vec<Chunk> = g.iter().map(|(_, r)| r.clone()).collect();
            b.concatenate(&rs, 0)
        })
        .collect::<Result<_>>()?;
    let (upper, r) = factor(b, &stacked, fan_in)?;
    let k = r.shape()[0];
    // Each member's rows of its group's Q, then Q_i times that piece.
    let mut jobs: Vec<(&Chunk, &Chunk, usize, usize)> = Vec::with_capacity(qrs.len());
    for (g, q_up) in groups.iter().zip(&upper) {
        let mut offset = 0;
        for (q_i, r_i) in g.iter() {
            let rows = r_i.shape()[0];
            jobs.push((q_i, q_up, offset, rows));
            offset += rows;
        }
    }
    let qs = jobs
        .par_iter()
        .map(|&(q_i, q_up, offset, rows)| {
            let piece = b.slice(
                q_up,
                &[
                    AxisSlice {
                        start: offset,
                        step: 1,
                        len: rows,
                    },
                    AxisSlice {
                        start: 0,
                        step: 1,
                        len: k,
                    },
                ],
            )?;
            b.matmul(q_i, &piece)
        })
        .collect::<Result<_>>()?;
    Ok((qs, r))
}
