//! TSQR: the QR factorisation of a tall-and-skinny array in one pass over its row blocks.
//!
//! Level 0 factors every row block `X_i = Q_i R_i` in parallel. The R factors are stacked
//! in groups of `array.split-every` and each stack is factored again, recursively, until
//! one R remains. Each block's final Q is `Q_i P_i`, where `P_i` is its rows of the
//! (small) Q of the levels above; callers that multiply Q by a small matrix anyway — the
//! SVD's `U = Q U_R` — fold it into `P_i`, so the big level-0 blocks are multiplied once.
//! With `b` blocks of `m_i × n` this costs `O(m n²)` flops.

use rayon::prelude::*;

use super::{as_float, require_2d, require_whole_rows, single, Qr};
use crate::array::Array;
use crate::backend::{ArrayBackend, AxisSlice, Chunk};
use crate::chunks::Chunks;
use crate::error::Result;

/// A factored tall-and-skinny array before its Q blocks are formed.
pub(crate) struct Factored {
    /// The input, as the float array that was factored.
    pub x: Array,
    /// Level-0 Q of every row block.
    qs: Vec<Chunk>,
    /// Every block's multiplier from the levels above (`None`: the identity).
    pieces: Vec<Option<Chunk>>,
    /// The R factor.
    pub r: Chunk,
}

impl Factored {
    /// The Q blocks times `post` (k × p) when given: `Q_i P_i post`, consuming the
    /// level-0 blocks as it goes.
    pub fn q_times(self, post: Option<&Chunk>) -> Result<Array> {
        let b = self.x.backend().clone();
        let blocks: Vec<Chunk> = self
            .qs
            .into_par_iter()
            .zip(self.pieces.into_par_iter())
            .map(|(q, piece)| {
                let m = match (piece, post) {
                    (Some(p), Some(u)) => Some(b.matmul(&p, u)?),
                    (Some(p), None) => Some(p),
                    (None, Some(u)) => Some(u.clone()),
                    (None, None) => None,
                };
                match m {
                    Some(m) => b.matmul(&q, &m),
                    None => Ok(q),
                }
            })
            .collect::<Result<_>>()?;
        let cols = blocks.first().map_or(0, |c| c.shape()[1]);
        let (m, _) = require_2d(&self.x, "tsqr")?;
        let grid = Chunks::new(
            &[m, cols],
            vec![self.x.chunks().axis(0).to_vec(), vec![cols]],
        )?;
        Array::from_chunks(blocks, grid, b)
    }
}

/// Factors a tall-and-skinny array (one chunk along axis 1).
pub(crate) fn factorize(x: &Array) -> Result<Factored> {
    require_2d(x, "tsqr")?;
    require_whole_rows(
        x,
        "tsqr",
        "needs one chunk along axis 1 (tall-and-skinny; for wide arrays use svd_compressed)",
    )?;
    let x = as_float(x);
    let blocks = x.compute_chunks()?;
    let fan_in = crate::config::split_every()?;
    let (qs, pieces, r) = factor(x.backend().as_ref(), blocks, fan_in)?;
    Ok(Factored { x, qs, pieces, r })
}

/// QR of a tall-and-skinny array: one chunk along axis 1, any number of row chunks.
/// `q` is chunked by rows like `x`; `r` is one chunk. Integer input is factored as
/// `float64`.
pub fn tsqr(x: &Array) -> Result<Qr> {
    let f = factorize(x)?;
    let r = single(&f.x, f.r.clone())?;
    Ok(Qr {
        q: f.q_times(None)?,
        r,
    })
}

type Level = (Vec<Chunk>, Vec<Option<Chunk>>, Chunk);

/// Factors the vertical stack of `blocks` (consumed): level-0 Qs, their multipliers, R.
fn factor(b: &dyn ArrayBackend, blocks: Vec<Chunk>, fan_in: usize) -> Result<Level> {
    let (qs, rs): (Vec<Chunk>, Vec<Chunk>) = blocks
        .into_par_iter()
        .map(|c| super::block::qr(b, &c))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    if let [r] = rs.as_slice() {
        return Ok((qs, vec![None], r.clone()));
    }
    let fan_in = fan_in.max(2);
    let stacked: Vec<Chunk> = rs
        .par_chunks(fan_in)
        .map(|g| b.concatenate(g, 0))
        .collect::<Result<_>>()?;
    let (uq, up, r) = factor(b, stacked, fan_in)?;
    // The Q of each stack, formed (it is small: fan-in * n rows).
    let upper: Vec<Chunk> = uq
        .into_par_iter()
        .zip(up.into_par_iter())
        .map(|(q, p)| match p {
            Some(p) => b.matmul(&q, &p),
            None => Ok(q),
        })
        .collect::<Result<_>>()?;
    let k = r.shape()[0];
    let mut slices = Vec::with_capacity(rs.len());
    for (g, q_up) in rs.chunks(fan_in).zip(&upper) {
        let mut offset = 0;
        for r_i in g {
            let rows = r_i.shape()[0];
            slices.push((q_up, offset, rows));
            offset += rows;
        }
    }
    let pieces = slices
        .par_iter()
        .map(|&(q_up, offset, rows)| {
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
            Ok(Some(piece))
        })
        .collect::<Result<_>>()?;
    Ok((qs, pieces, r))
}
