//! Mirror symmetry of lazy expressions: reductions that compute only half the blocks.
//!
//! `x + x.T`, `x * x.T`, `v[:, None] + v[None, :]`, and any slice of them that takes the
//! same elements along both axes (`[::2, ::2]`, `[1:, 1:]`) are unchanged when two axes
//! are swapped. A reduction over both of those axes whose result does not depend on the
//! order of the elements (sums, products, extrema, counts, block moments) sees block
//! `(j, i)` as the same multiset of elements as block `(i, j)`, provided the chunk grid is
//! the same along both axes. So lowering gives block `(j, i)` the task of block `(i, j)`
//! and computes only the blocks on and above the diagonal: for a 10 × 10 grid, 55 block
//! tasks instead of 100. The merge downstream is unchanged (it reads the mirror's partial
//! twice), so the result differs from computing every block only in the order of the
//! additions, which the optimizer is allowed to change anyway.
//!
//! The test is structural and conservative. It proves `e[.., i, .., j, ..] ==
//! e[.., j, .., i, ..]` by matching the expression against itself with the two output
//! axes swapped: through elementwise ops (operands of `+`, `*`, `==`, `!=`, `&` and `|`
//! in either order, as these commute exactly, NaN included), casts, `where` and affine
//! views, down to leaves that are the same node read through the same affine map.
//! Whatever it cannot prove (a different random stream, a stored chunk read through
//! different maps, an operation it does not know) counts as not symmetric, so the plan
//! falls back to computing every block.

use crate::graph::{Array, Op};
use crate::program::{AxisMap, BinaryOp};

/// The most node pairs one proof may visit. Commutative ops try both operand orders, so
/// without a bound a deep chain of them could take exponential time; a proof that runs
/// out answers "not symmetric".
const BUDGET: usize = 4096;

/// The first pair `(p, q)`, `p < q`, of `axes` such that `a` is unchanged by swapping
/// axes `p` and `q` and its chunk grid is the same along both (so block `(j, i)` holds
/// the transpose of block `(i, j)`).
pub(super) fn mirror_pair(a: &Array, axes: &[usize]) -> Option<(usize, usize)> {
    let chunks = a.chunks();
    for (k, &p) in axes.iter().enumerate() {
        for &q in &axes[k + 1..] {
            if p != q && chunks.axis(p) == chunks.axis(q) && swap_symmetric(a, p, q) {
                return Some((p.min(q), p.max(q)));
            }
        }
    }
    None
}

/// Whether `a` provably equals itself with axes `p` and `q` swapped.
pub(super) fn swap_symmetric(a: &Array, p: usize, q: usize) -> bool {
    let n = a.ndim();
    if p >= n || q >= n || p == q || a.shape()[p] != a.shape()[q] {
        return false;
    }
    let identity: Vec<AxisMap> = (0..n)
        .map(|k| AxisMap {
            start: 0,
            step: 1,
            out_axis: Some(k),
        })
        .collect();
    let mut swapped = identity.clone();
    swapped[p].out_axis = Some(q);
    swapped[q].out_axis = Some(p);
    Prover { budget: BUDGET }.equal(a, &identity, a, &swapped)
}

/// Binary ops whose operands may be exchanged without changing a single result bit
/// (up to the payload of a NaN). Not `maximum`/`minimum`: they pick one of `+0`/`-0`.
fn commutes(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add | BinaryOp::Mul | BinaryOp::Eq | BinaryOp::Ne | BinaryOp::And | BinaryOp::Or
    )
}

/// One proof, with its remaining budget.
struct Prover {
    budget: usize,
}

impl Prover {
    /// Whether `x` read through `mx` equals `y` read through `my` at every output
    /// coordinate (`mx`, `my`: one map per axis of `x`, `y` in output coordinates).
    fn equal(&mut self, x: &Array, mx: &[AxisMap], y: &Array, my: &[AxisMap]) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        if let Op::View(inner, maps) = x.op() {
            return self.equal(inner, &AxisMap::compose(maps, mx), y, my);
        }
        if let Op::View(inner, maps) = y.op() {
            return self.equal(x, mx, inner, &AxisMap::compose(maps, my));
        }
        if x.dtype() != y.dtype() {
            return false;
        }
        if x.id() == y.id() && mx == my {
            return true;
        }
        match (x.op(), y.op()) {
            (Op::Const(a), Op::Const(b)) => a == b,
            (Op::Cast(a), Op::Cast(b)) => self.equal(a, mx, b, my),
            (Op::Unary(f, a), Op::Unary(g, b)) => f == g && self.equal(a, mx, b, my),
            (Op::Binary(f, a1, a2), Op::Binary(g, b1, b2)) => {
                f == g
                    && ((self.equal(a1, mx, b1, my) && self.equal(a2, mx, b2, my))
                        || (commutes(*f)
                            && self.equal(a1, mx, b2, my)
                            && self.equal(a2, mx, b1, my)))
            }
            (Op::Where(c, a1, a2), Op::Where(d, b1, b2)) => {
                self.equal(c, mx, d, my) && self.equal(a1, mx, b1, my) && self.equal(a2, mx, b2, my)
            }
            _ => false,
        }
    }
}
