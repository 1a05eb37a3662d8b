//! Small tables joined first: an inner join with a small table moves below the join
//! whose input holds its keys.
//!
//! A chain of joins written in the order of a query's text joins the fact table with
//! every large table before the small, filtered ones that decide which rows survive. In
//! TPC-H Q7 (`supplier ⋈ lineitem ⋈ orders ⋈ customer ⋈ nation n1 ⋈ nation n2`, then
//! a filter on the two nations) the filter moves onto the two nation tables, but they are
//! joined last: 1.8 million line items meet all of `orders` and `customer` before the
//! nations keep one in twelve. Inner joins commute and associate, so
//! `(A ⋈ B) ⋈ D`, with `D`'s keys in `A`, is `(A ⋈ D) ⋈ B`; with its keys in `B` it is
//! `A ⋈ (B ⋈ D)`. Applied from the top of the plan down, the rule carries `n1` down to
//! `supplier`, so only France's and Germany's suppliers' line items reach `orders`.
//!
//! The move is made when `D` is a small table (guessed at most a mebibyte,
//! [`crate::join_guess`]) and guessed smaller than the input it overtakes: joining a small table earlier shrinks (a filtered one) or keeps
//! (a lookup) the rows the later joins see. The strict comparison also ends the
//! rewriting: moving `B` back above `D` would need `B` smaller than `D`. It applies only
//! to inner joins with the `Auto` strategy, whose keys have different names on their two
//! sides and whose three inputs have no column name in common, so the output has the same
//! columns, which a projection puts back in the written order; rows come in another
//! order, which an inner join does not promise.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::backend::{FrameStep, JoinSpec, JoinType};
use crate::error::Result;
use crate::expr::Expr;
use crate::plan::join_guess::expected_bytes;
use crate::plan::{JoinStrategy, Node};

/// The most bytes a table is guessed to hold for it to move below another join: a lookup
/// or filtered table (nations, regions, a filtered part or supplier list). A larger one
/// stays where the query put it: the guess of the input it would overtake is too rough to
/// reorder joins of large tables by (a fact table joined with a selective filtered table
/// is guessed as large as the fact table).
const SMALL_TABLE_BYTES: u64 = 1 << 20;

/// The rule: [`small_table_first`] at every node, repeated while it moves a table.
pub(crate) struct SmallTableFirst;

impl super::rule::NodeRule for SmallTableFirst {
    fn name(&self) -> &'static str {
        "small table first"
    }

    fn rewrite(&self, node: &Arc<Node>) -> Result<Option<super::rule::Rewritten>> {
        Ok(small_table_first(node)?.map(super::rule::Rewritten::Again))
    }
}

/// `node` with its right input moved below its left one, when `node` is an inner join of a
/// join and a table smaller than the input it would overtake; `None` otherwise.
pub(crate) fn small_table_first(node: &Arc<Node>) -> Result<Option<Arc<Node>>> {
    let Some((x, d, outer)) = plain_inner(node) else {
        return Ok(None);
    };
    let Some((a, b, inner)) = plain_inner(x) else {
        return Ok(None);
    };
    let (sa, sb, sd) = (a.schema(), b.schema(), d.schema());
    let mut names = BTreeSet::new();
    let distinct = [&sa, &sb, &sd]
        .iter()
        .flat_map(|s| s.fields().iter())
        .all(|f| names.insert(f.name().clone()));
    if !distinct {
        return Ok(None);
    }
    let holds =
        |s: &arrow_schema::SchemaRef| outer.left_on.iter().all(|k| s.field_with_name(k).is_ok());
    let small = expected_bytes(d);
    if small > SMALL_TABLE_BYTES {
        return Ok(None);
    }
    if holds(&sb) && small < expected_bytes(a) {
        // A ⋈ (B ⋈ D): the columns stay in the order A, B, D.
        let bd = join(b, d, outer)?;
        return Ok(Some(join(a, &bd, inner)?));
    }
    if holds(&sa) && small < expected_bytes(b) {
        // (A ⋈ D) ⋈ B, projected back to A, B, D.
        let ad = join(a, d, outer)?;
        let top = join(&ad, b, inner)?;
        let order = [&sa, &sb, &sd]
            .iter()
            .flat_map(|s| s.fields().iter())
            .map(|f| (f.name().clone(), Expr::Column(f.name().clone())))
            .collect();
        return Ok(Some(Arc::new(Node::map(top, FrameStep::Project(order))?)));
    }
    Ok(None)
}

/// The inputs and spec of an `Auto` inner join whose keys differ in name on each pair.
fn plain_inner(node: &Arc<Node>) -> Option<(&Arc<Node>, &Arc<Node>, &JoinSpec)> {
    match &**node {
        Node::Join {
            left,
            right,
            spec,
            strategy: JoinStrategy::Auto,
            ..
        } if spec.how == JoinType::Inner
            && spec.left_on.iter().zip(&spec.right_on).all(|(l, r)| l != r) =>
        {
            Some((left, right, spec))
        }
        _ => None,
    }
}

/// The inner join of `left` and `right` by `spec`.
fn join(left: &Arc<Node>, right: &Arc<Node>, spec: &JoinSpec) -> Result<Arc<Node>> {
    let schema = spec.output_schema(&left.schema(), &right.schema())?;
    Ok(Arc::new(Node::Join {
        left: left.clone(),
        right: right.clone(),
        spec: spec.clone(),
        strategy: JoinStrategy::Auto,
        schema,
    }))
}
