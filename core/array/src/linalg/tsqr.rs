//! TSQR: the QR factorisation of a tall-and-skinny array in one pass over its row blocks.
//!
//! Level 0 factors every row block `X_i = Q_i R_i` in parallel. The R factors are stacked
//! in groups of `array.split-every` and each stack is factored again, recursively, until
//! one R remains. Each block's final Q is `Q_i P_i`, where `P_i` is its rows of the
//! (small) Q of the levels above; callers that multiply Q by a small matrix anyway — the
//! SVD's `U = Q U_R` — fold it into `P_i`, so the big level-0 blocks are multiplied once.
//! With `b` blocks of `m_i × n` this costs `O(m n²)` flops.
//!
//! Under a distributed scheduler the row blocks stay where they are computed
//! (`persist`), each rank factors its own, and only the R factors (`n × n` per block)
//! cross ranks: every rank gathers them all and runs the small levels above identically,
//! so the Q blocks are formed where their level-0 factors are and never move.

use rayon::prelude::*;

use super::factors::Qr;
use super::input::{as_float, require_2d, require_whole_rows, single};
use crate::array::Array;
use crate::backend::{ArrayBackend, AxisSlice, Chunk};
use crate::chunks::Chunks;
use crate::error::{Error, Result};
use crate::stored::Held;
use tessera_runtime::cluster::Cluster;

/// A factored tall-and-skinny array before its Q blocks are formed.
pub(crate) struct Factored {
    /// The input, as the float array that was factored.
    pub x: Array,
    /// Level-0 Q of every row block (placed on another rank's under a distributed
    /// scheduler: formed there).
    qs: Vec<Held>,
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
        let (m, _) = require_2d(&self.x, "tsqr")?;
        let cols = post.map_or(self.r.shape()[0], |u| u.shape()[1]);
        let rows = self.x.chunks().axis(0).to_vec();
        let blocks: Vec<Held> = self
            .qs
            .into_par_iter()
            .zip(self.pieces.into_par_iter())
            .zip(rows.par_iter())
            .map(|((q, piece), &rows)| {
                let rank = match &q {
                    Held::Placed {
                        rank, chunk: None, ..
                    } => {
                        return Ok(Held::Placed {
                            rank: *rank,
                            chunk: None,
                            shape: vec![rows, cols],
                        })
                    }
                    Held::Placed { rank, .. } => Some(*rank),
                    _ => None,
                };
                let q = q.load()?;
                let m = match (piece, post) {
                    (Some(p), Some(u)) => Some(b.matmul(&p, u)?),
                    (Some(p), None) => Some(p),
                    (None, Some(u)) => Some(u.clone()),
                    (None, None) => None,
                };
                let out = match m {
                    Some(m) => b.matmul(&q, &m)?,
                    None => q,
                };
                Ok(match rank {
                    Some(rank) => Held::Placed {
                        rank,
                        shape: out.shape().to_vec(),
                        chunk: Some(out),
                    },
                    None => Held::Resident(out),
                })
            })
            .collect::<Result<_>>()?;
        let grid = Chunks::new(&[m, cols], vec![rows, vec![cols]])?;
        Ok(Array::from_held(blocks, grid, self.x.dtype(), b))
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
    let fan_in = crate::config::split_every()?;
    if let Some(cluster) = tessera_runtime::cluster::current()?.filter(|c| c.size() > 1) {
        return factorize_distributed(x, &cluster, fan_in);
    }
    let blocks = x.compute_chunks()?;
    let (qs, pieces, r) = factor(x.backend().as_ref(), blocks, fan_in)?;
    let qs = qs.into_iter().map(Held::Resident).collect();
    Ok(Factored { x, qs, pieces, r })
}

/// TSQR over the ranks of `cluster`: level 0 where each row block is, the R factors
/// gathered by every rank, the levels above on every rank alike.
fn factorize_distributed(x: Array, cluster: &Cluster, fan_in: usize) -> Result<Factored> {
    let (me, size) = (cluster.rank(), cluster.size());
    let held = crate::exec::persist(&x)?;
    // A block every rank holds (`from_array`) is factored by one of them.
    let owner = |i: usize, h: &Held| match h {
        Held::Placed { rank, .. } => *rank,
        _ => i % size,
    };
    let b = x.backend().clone();
    let mine: Vec<(usize, Chunk, Chunk)> = held
        .par_iter()
        .enumerate()
        .filter(|(i, h)| owner(*i, h) == me)
        .map(|(i, h)| {
            let (q, r) = super::block::qr(b.as_ref(), &h.load()?)?;
            Ok((i, q, r))
        })
        .collect::<Result<_>>()?;
    let shared: Vec<(usize, crate::host::HostArray)> = mine
        .iter()
        .map(|(i, _, r)| Ok((*i, b.to_host(r)?)))
        .collect::<Result<_>>()?;
    let ex = cluster.begin()?;
    let mut rs: Vec<Option<Chunk>> = vec![None; held.len()];
    for share in ex.all_gather(crate::codec::encode_numbered(&shared)?)? {
        for (i, r) in crate::codec::decode_numbered(&share)? {
            let slot = rs.get_mut(i).ok_or_else(|| {
                Error::Internal(format!("an R factor of row block {i} of {}", held.len()))
            })?;
            *slot = Some(b.from_host_owned(r)?);
        }
    }
    let rs: Vec<Chunk> = rs
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.ok_or_else(|| Error::Internal(format!("no rank factored row block {i}"))))
        .collect::<Result<_>>()?;
    let (pieces, r) = combine(b.as_ref(), rs, fan_in)?;
    let mut qs: Vec<Held> = held
        .iter()
        .enumerate()
        .map(|(i, h)| Held::Placed {
            rank: owner(i, h),
            chunk: None,
            shape: Vec::new(),
        })
        .collect();
    for (i, q, _) in mine {
        qs[i] = Held::Placed {
            rank: me,
            shape: q.shape().to_vec(),
            chunk: Some(q),
        };
    }
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
    let (pieces, r) = combine(b, rs, fan_in)?;
    Ok((qs, pieces, r))
}

/// The levels above level 0: from the R factors of the row blocks, each block's
/// multiplier (`None`: the identity) and the final R.
fn combine(
    b: &dyn ArrayBackend,
    rs: Vec<Chunk>,
    fan_in: usize,
) -> Result<(Vec<Option<Chunk>>, Chunk)> {
    if let [r] = rs.as_slice() {
        return Ok((vec![None], r.clone()));
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
    Ok((pieces, r))
}
