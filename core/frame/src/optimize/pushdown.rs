//! Filters moved below inner joins, where they shrink the join's inputs instead of its
//! output.
//!
//! A filter over an inner join is split into its conjuncts. A conjunct that reads columns
//! of one side only is evaluated on that side, before the join (for an inner join a row
//! survives only when both of its halves do, so where the conjunct is evaluated does not
//! change the answer). A disjunction that reads both sides stays above the join, but when
//! every one of its arms has conjuncts of one side, the disjunction of those is implied by
//! it and is evaluated on that side as well: TPC-H Q19's three `brand / container /
//! quantity / ship mode` arms leave of six million line items the few hundred thousand
//! that can match, and of the parts those of three brands, before anything is joined.
//!
//! The moved filters land on new map nodes over the join's inputs, so the planner's
//! pruning then carries them further down (into nested joins, and into scans' statistics).

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::backend::{program_schema, FrameProgram, FrameStep, JoinType};
use crate::error::Result;
use crate::expr::{BinaryOp, Expr};
use crate::plan::Node;

/// A side of a join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Left,
    Right,
}

/// The arms of a disjunction (`a or (b or c)` gives `a, b, c`).
fn disjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary {
            op: BinaryOp::Or,
            left,
            right,
        } => {
            disjuncts(left, out);
            disjuncts(right, out);
        }
        other => out.push(other.clone()),
    }
}

/// `parts` joined by `op` (`None` when empty).
fn fold(parts: Vec<Expr>, op: BinaryOp) -> Option<Expr> {
    parts.into_iter().reduce(|a, b| Expr::Binary {
        op,
        left: Box::new(a),
        right: Box::new(b),
    })
}

/// The side whose columns are all that `e` reads: a name of one input only (a name both
/// inputs have is ambiguous above the join, or suffixed there, and stays put).
fn side_of(e: &Expr, left: &SchemaRef, right: &SchemaRef) -> Option<Side> {
    let mut cols = BTreeSet::new();
    e.columns_into(&mut cols);
    if cols.is_empty() {
        return None;
    }
    let only = |own: &SchemaRef, other: &SchemaRef| {
        cols.iter()
            .all(|c| own.field_with_name(c).is_ok() && other.field_with_name(c).is_err())
    };
    if only(left, right) {
        Some(Side::Left)
    } else if only(right, left) {
        Some(Side::Right)
    } else {
        None
    }
}

/// For a disjunction over both sides, the disjunction of each arm's conjuncts on `side`
/// (with what all arms share factored out): implied by `e`, so true wherever `e` is. `None` when some arm has none (nothing is
/// implied) or `e` is not a disjunction.
fn implied_on(e: &Expr, side: Side, left: &SchemaRef, right: &SchemaRef) -> Option<Expr> {
    let mut arms = Vec::new();
    disjuncts(e, &mut arms);
    if arms.len() < 2 {
        return None;
    }
    let mut implied = Vec::with_capacity(arms.len());
    for arm in &arms {
        let mine: Vec<Expr> = arm
            .conjuncts()
            .into_iter()
            .filter(|p| side_of(p, left, right) == Some(side))
            .cloned()
            .collect();
        if mine.is_empty() {
            return None;
        }
        implied.push(mine);
    }
    factor_disjunction(implied)
}

/// `(c and r1) or (c and r2) or ...` as `c and (r1 or r2 or ...)`, from each arm's
/// conjuncts: a conjunct every arm has is evaluated once instead of once per arm (Q19's ship
/// mode and instruction tests, common to its three arms). Distribution and absorption hold
/// in SQL's three-valued logic too, so the rows kept are the same; an arm left with nothing
/// makes the disjunction true, leaving the common conjuncts alone.
/// `None` when there are no arms.
fn factor_disjunction(arms: Vec<Vec<Expr>>) -> Option<Expr> {
    let common: Vec<Expr> = arms
        .first()?
        .iter()
        .filter(|c| arms[1..].iter().all(|arm| arm.contains(c)))
        .cloned()
        .collect();
    let rests: Vec<Vec<Expr>> = arms
        .into_iter()
        .map(|arm| arm.into_iter().filter(|c| !common.contains(c)).collect())
        .collect();
    let any_of = if rests.iter().any(Vec::is_empty) {
        None
    } else {
        fold(
            rests
                .into_iter()
                .filter_map(|r| fold(r, BinaryOp::And))
                .collect(),
            BinaryOp::Or,
        )
    };
    let mut all = common;
    all.extend(any_of);
    fold(all, BinaryOp::And)
}

/// The rule: a `Map` over an inner join with its leading filters moved below the join
/// ([`below_inner_join`]). When no filter is left the join takes the `Map`'s place and the
/// rules run on it again; otherwise the `Map` of what is left stays on top, once.
pub(crate) struct FiltersBelowInnerJoins;

impl super::rule::NodeRule for FiltersBelowInnerJoins {
    fn name(&self) -> &'static str {
        "filters below inner joins"
    }

    fn rewrite(&self, node: &Arc<Node>) -> Result<Option<super::rule::Rewritten>> {
        let Node::Map { input, program, .. } = &**node else {
            return Ok(None);
        };
        Ok(match below_inner_join(input, program)? {
            None => None,
            Some((join, rest)) if rest.steps.is_empty() => {
                Some(super::rule::Rewritten::Again(join))
            }
            Some((join, rest)) => {
                let schema = program_schema(&join.schema(), &rest)?;
                Some(super::rule::Rewritten::Next(Arc::new(Node::Map {
                    input: join,
                    program: rest,
                    schema,
                })))
            }
        })
    }
}

/// When `input` is an inner join and `program` starts with filters, the join with what
/// those filters say of each side evaluated on that side, and the program with what is
/// left of the filters (`None`: nothing moves).
///
/// # Errors
/// A pushed filter that does not type over its side (not expected: it read only that
/// side's columns).
pub(crate) fn below_inner_join(
    input: &Arc<Node>,
    program: &FrameProgram,
) -> Result<Option<(Arc<Node>, FrameProgram)>> {
    let Node::Join {
        left,
        right,
        spec,
        strategy,
        schema,
    } = &**input
    else {
        return Ok(None);
    };
    if spec.how != JoinType::Inner {
        return Ok(None);
    }
    let lead = super::rule::leading_filters(program);
    let mut all = Vec::new();
    for step in &program.steps[..lead] {
        if let FrameStep::Filter(e) = step {
            all.extend(e.conjuncts().into_iter().cloned());
        }
    }
    let (ls, rs) = (left.schema(), right.schema());
    let (mut to_left, mut to_right, mut keep) = (Vec::new(), Vec::new(), Vec::new());
    for c in all {
        match side_of(&c, &ls, &rs) {
            Some(Side::Left) => to_left.push(c),
            Some(Side::Right) => to_right.push(c),
            None => {
                to_left.extend(implied_on(&c, Side::Left, &ls, &rs));
                to_right.extend(implied_on(&c, Side::Right, &ls, &rs));
                keep.push(c);
            }
        }
    }
    if to_left.is_empty() && to_right.is_empty() {
        return Ok(None);
    }
    let filtered = |side: &Arc<Node>, preds: Vec<Expr>| -> Result<Arc<Node>> {
        Ok(match fold(preds, BinaryOp::And) {
            Some(p) => Arc::new(Node::map(side.clone(), FrameStep::Filter(p))?),
            None => side.clone(),
        })
    };
    let join = Arc::new(Node::Join {
        left: filtered(left, to_left)?,
        right: filtered(right, to_right)?,
        spec: spec.clone(),
        strategy: *strategy,
        schema: schema.clone(),
    });
    let mut steps: Vec<FrameStep> = fold(keep, BinaryOp::And)
        .map(FrameStep::Filter)
        .into_iter()
        .collect();
    steps.extend(program.steps[lead..].iter().cloned());
    Ok(Some((join, FrameProgram { steps })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit};
    use arrow_schema::{DataType, Field, Schema};

    fn schema(names: &[&str]) -> SchemaRef {
        Arc::new(Schema::new(
            names
                .iter()
                .map(|n| Field::new(*n, DataType::Int64, true))
                .collect::<Vec<_>>(),
        ))
    }

    #[test]
    fn conjuncts_go_to_the_side_whose_columns_they_read() {
        let (l, r) = (
            schema(&["a", "k", "shared"]),
            schema(&["b", "k2", "shared"]),
        );
        assert_eq!(side_of(&col("a").gt(lit(1)), &l, &r), Some(Side::Left));
        assert_eq!(side_of(&col("b").eq(col("k2")), &l, &r), Some(Side::Right));
        assert_eq!(side_of(&col("a").lt(col("b")), &l, &r), None, "both sides");
        assert_eq!(
            side_of(&col("shared").gt(lit(0)), &l, &r),
            None,
            "ambiguous"
        );
        assert_eq!(side_of(&lit(true), &l, &r), None, "reads nothing");
    }

    #[test]
    fn a_disjunction_implies_the_disjunction_of_each_sides_conjuncts() {
        let (l, r) = (schema(&["a", "x"]), schema(&["b", "y"]));
        let arm = |i: i64| {
            col("a")
                .eq(lit(i))
                .and(col("b").eq(lit(i)))
                .and(col("x").gt(col("y")))
        };
        let e = arm(1).or(arm(2));
        let on_left = implied_on(&e, Side::Left, &l, &r).expect("implied");
        assert_eq!(on_left, col("a").eq(lit(1)).or(col("a").eq(lit(2))));
        let on_right = implied_on(&e, Side::Right, &l, &r).expect("implied");
        assert_eq!(on_right, col("b").eq(lit(1)).or(col("b").eq(lit(2))));
        // An arm with nothing of the left side: nothing is implied there.
        let partial = arm(1).or(col("b").eq(lit(3)));
        assert!(implied_on(&partial, Side::Left, &l, &r).is_none());
        assert!(implied_on(&partial, Side::Right, &l, &r).is_some());
        assert!(implied_on(&col("a").eq(lit(1)), Side::Left, &l, &r).is_none());
    }

    #[test]
    fn what_every_arm_shares_is_tested_once() {
        let (l, r) = (schema(&["q", "mode", "kind"]), schema(&["b"]));
        let shared = || col("mode").eq(lit(1)).and(col("kind").gt(lit(0)));
        let arm = |i: i64| {
            col("q")
                .between(lit(i), lit(i + 10))
                .and(shared())
                .and(col("b").eq(lit(i)))
        };
        let e = arm(1).or(arm(10)).or(arm(20));
        assert_eq!(
            implied_on(&e, Side::Left, &l, &r).unwrap(),
            col("mode").eq(lit(1)).and(col("kind").gt(lit(0))).and(
                col("q")
                    .between(lit(1), lit(11))
                    .or(col("q").between(lit(10), lit(20)))
                    .or(col("q").between(lit(20), lit(30)))
            )
        );
        // An arm that is only the shared part absorbs the others.
        let bare = shared().and(col("b").eq(lit(0)));
        assert_eq!(
            implied_on(&arm(1).or(bare), Side::Left, &l, &r).unwrap(),
            shared()
        );
        // Nothing shared: the plain disjunction.
        let (x, y) = (col("q").eq(lit(1)), col("q").eq(lit(2)));
        let e = x
            .clone()
            .and(col("b").eq(lit(1)))
            .or(y.clone().and(col("b").eq(lit(2))));
        assert_eq!(implied_on(&e, Side::Left, &l, &r).unwrap(), x.or(y));
    }
}
