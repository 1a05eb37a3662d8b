//! The one-pass range sketch: `Y = X Ω` and `Xᵀ Y` from a single pass over `X`.
//!
//! `svd_compressed` needs `Y = X Ω`, the orthonormal `Q` of `Y = Q R`, and `B = Qᵀ X`.
//! Computed as written that is two passes over `X`, and for an input that is generated
//! (or read from storage) each pass costs the whole input again: on the seed's 8 GB
//! random matrix the generator, not the arithmetic, is half the run. But `Qᵀ X =
//! R⁻ᵀ Yᵀ X`, and `Yᵀ X = Σ_b Y_bᵀ X_b` over row blocks `b` needs only the rows of the
//! block that made `Y_b`. So one task per row block computes both `Y_b = X_b Ω` and
//! `X_bᵀ Y_b`, reading each row of `X_b` once (the CPU backend streams a generated block
//! through cache), and a tree of sums adds the `X_bᵀ Y_b`.
//!
//! The price is accuracy when `Y` is ill-conditioned: the error of `R⁻ᵀ (Yᵀ X)` grows
//! with `cond(R)`, where `Qᵀ X` formed directly does not. `svd_compressed` therefore
//! uses the sketch only when `cond(R)` is small (it checks after the pass, from the
//! small R) and makes the second pass otherwise.
//!
//! The task's output packs both products into one `(rows + n) × l` chunk, `[Y_b ;
//! X_bᵀ Y_b]`, because a task has one output chunk. [`sketch`] returns the two parts as
//! lazy arrays over the packed one: `Y`'s blocks are the packed blocks' upper rows, and
//! `Xᵀ Y` a tree of sums over their lower rows, so a packed block is freed as soon as
//! both have read it.

use super::{as_float, require_2d, require_whole_rows};
use crate::chunks::{ChunkSpec, Chunks};
use crate::error::{Error, Result};
use crate::graph::{Array, Op};

/// A range sketch of `x`: `y = x Ω` and `xty = xᵀ y`, both lazy over one packed pass.
#[derive(Clone, Debug)]
pub struct Sketch {
    /// `x Ω` (m × l), chunked by rows like `x`.
    pub y: Array,
    /// `xᵀ (x Ω)` (n × l), one chunk.
    pub xty: Array,
}

impl Sketch {
    /// Computes both in one plan, so the input is read (or generated) once, and keeps
    /// the results on the backend: `(y's chunks, xty's one chunk)`.
    pub fn persist(&self) -> Result<(Array, Array)> {
        let mut outs = crate::exec::persist_many(&[self.y.clone(), self.xty.clone()])?;
        let xty = outs.pop().unwrap_or_default();
        let y = outs.pop().unwrap_or_default();
        Ok((self.y.with_held(y), self.xty.with_held(xty)))
    }
}

/// `x Ω` and `xᵀ x Ω` for a tall `x` with one chunk along axis 1 and `omega` (n × l), as
/// lazy arrays that one pass over `x` computes together ([`Sketch::persist`]). Integer
/// input is taken as `float64`; `omega` is cast to `x`'s float dtype.
pub fn sketch(x: &Array, omega: &Array) -> Result<Sketch> {
    let (m, n) = require_2d(x, "sketch")?;
    let (on, l) = require_2d(omega, "sketch")?;
    if on != n {
        return Err(Error::shape(
            "sketch",
            format!(
                "x is {:?} and omega {:?}: omega needs as many rows as x has columns",
                x.shape(),
                omega.shape()
            ),
        ));
    }
    require_whole_rows(x, "sketch", "the sketch reads whole rows of x")?;
    x.require_same_backend(omega, "sketch", "x and omega")?;
    let x = as_float(x);
    let omega = omega
        .astype(x.dtype())
        .rechunk(ChunkSpec::Exact(Chunks::single(&[n, l])))?;
    let rows = x.chunks().axis(0).to_vec();
    let packed_rows: Vec<usize> = rows.iter().map(|r| r + n).collect();
    let total: usize = packed_rows.iter().sum();
    let grid = Chunks::new(&[total, l], vec![packed_rows, vec![l]])?;
    let packed = Array::new(
        Op::Sketch(x.clone(), omega),
        x.dtype(),
        grid,
        x.backend().clone(),
    );
    let b = x.backend().clone();
    let y = Array::new(
        Op::SketchPart {
            packed: packed.clone(),
            xty: false,
        },
        x.dtype(),
        Chunks::new(&[m, l], vec![rows, vec![l]])?,
        b.clone(),
    );
    let xty = Array::new(
        Op::SketchPart { packed, xty: true },
        x.dtype(),
        Chunks::single(&[n, l]),
        b,
    );
    Ok(Sketch { y, xty })
}
