//! Which side of a join to compute first: a guess of each side's size in bytes.
//!
//! A broadcast join computes the side it will hash first and streams the other through it
//! (see `crate::exec::join`), so it must pick that side before either is computed. The
//! plan's memory model ([`Node::memory`]) is an upper bound — it counts every row a filter
//! might keep — which is right for refusing a plan over the memory limit but makes a
//! fact table filtered down to a thousandth look as large as it is whole. This guess
//! applies the usual optimizer defaults instead: each conjunct of a filter keeps half the
//! rows (at least 1/64 of them in all), a semi or anti join keeps half of its left side,
//! an inner or outer join yields about as many rows as its larger side. A wrong guess
//! only costs time: the side computed first is measured, and past a bound the other one
//! is computed too and the smaller measured one is hashed.

use crate::backend::{FrameProgram, FrameStep, JoinType};
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
            (expected_bytes(input) as f64 * kept(program) * to / from) as u64
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

/// The guessed fraction of its input's rows that `program` keeps: half per conjunct of
/// each filter, at least [`MIN_SELECTIVITY`].
fn kept(program: &FrameProgram) -> f64 {
    let kept: f64 = program
        .steps
        .iter()
        .map(|step| match step {
            FrameStep::Filter(e) => 0.5f64.powi(e.conjuncts().len() as i32),
            FrameStep::Project(_) => 1.0,
        })
        .product();
    kept.max(MIN_SELECTIVITY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit, Expr};

    #[test]
    fn each_conjunct_of_each_filter_halves_the_rows_down_to_a_floor() {
        let filter = |e: Expr| FrameStep::Filter(e);
        let program = |steps| FrameProgram { steps };
        assert_eq!(kept(&program(vec![])), 1.0);
        assert_eq!(
            kept(&program(vec![
                filter(col("a").gt(lit(1)).and(col("b").lt(lit(2)))),
                FrameStep::Project(vec![("a".into(), col("a"))]),
                filter(col("c").eq(lit(3)).or(col("d").eq(lit(4)))),
            ])),
            0.125
        );
        let many = (0..10).fold(col("a").gt(lit(0)), |e, i| e.and(col("a").gt(lit(i))));
        assert_eq!(kept(&program(vec![filter(many)])), MIN_SELECTIVITY);
    }
}
