//! Which side of a join to compute first: a guess of each side's size in bytes.
//!
//! A broadcast join computes the side it will hash first and streams the other through it
//! (see `algorithms::join`), so it must pick that side before either is computed. The
//! plan's memory model ([`Node::memory`]) is an upper bound — it counts every row a filter
//! might keep — which is right for refusing a plan over the memory limit but makes a
//! fact table filtered down to a thousandth look as large as it is whole. This guess
//! applies the usual optimizer defaults instead: each conjunct of a filter keeps half the
//! rows (at least 1/64 of them in all), a semi or anti join keeps half of its left side,
//! an inner or outer join yields about as many rows as its larger side. A wrong guess
//! only costs time: the side computed first is measured, and past a bound the other one
//! is computed too and the smaller measured one is hashed.

use crate::backend::{FrameStep, JoinType};
use crate::expr::{BinaryOp, Expr};
use crate::plan::Node;

/// The smallest fraction of its input a filter is guessed to keep.
const MIN_SELECTIVITY: f64 = 1.0 / 64.0;

/// The guessed size in bytes of `node`'s output.
pub(crate) fn expected_bytes(node: &Node) -> u64 {
    match node {
        Node::Map {
            input,
            program,
            schema,
        } => {
            let from = input.schema().fields().len().max(1) as f64;
            let to = schema.fields().len() as f64;
            let kept: f64 = program
                .steps
                .iter()
                .map(|step| match step {
                    FrameStep::Filter(e) => 0.5f64.powi(conjuncts(e) as i32),
                    FrameStep::Project(_) => 1.0,
                })
                .product();
            (expected_bytes(input) as f64 * kept.max(MIN_SELECTIVITY) * to / from) as u64
        }
        Node::Join {
            left, right, spec, ..
        } => {
            let (l, r) = (expected_bytes(left), expected_bytes(right));
            match spec.how {
                JoinType::Semi | JoinType::Anti => l / 2,
                _ => l.max(r),
            }
        }
        Node::Aggregate { input, .. } => expected_bytes(input).min(node.memory(1).output),
        _ => node.memory(1).output,
    }
}

/// The number of terms of a conjunction (`a & b & c` is three; anything else one).
fn conjuncts(e: &Expr) -> usize {
    match e {
        Expr::Binary {
            op: BinaryOp::And,
            left,
            right,
        } => conjuncts(left) + conjuncts(right),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit};

    #[test]
    fn conjunctions_count_their_terms() {
        assert_eq!(conjuncts(&col("a").gt(lit(1))), 1);
        assert_eq!(
            conjuncts(
                &col("a")
                    .gt(lit(1))
                    .and(col("b").lt(lit(2)))
                    .and(col("c").eq(lit(3)))
            ),
            3
        );
        assert_eq!(conjuncts(&col("a").gt(lit(1)).or(col("b").lt(lit(2)))), 1);
    }
}
