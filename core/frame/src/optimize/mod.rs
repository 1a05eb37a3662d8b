//! The rewrites a plan goes through before it runs, as rules a driver applies in order.
//!
//! Fusion of filters and projections happens as the plan is built (`Node::map`); what is
//! left are rewrites that need the whole tree:
//!
//! 1. **sorts** (`ORDER_RULES`, node by node from the root down): a filter over a sort
//!    moves below it, and a sort under an aggregation that does not depend on row order
//!    is dropped (`sort_order`);
//! 2. **joins** (`JOIN_RULES`, applied node by node from the root down): filters over
//!    an inner join move below it, onto the side whose columns they read
//!    (`pushdown`), and a small table moves below the join that holds its keys
//!    (`join_order`);
//! 3. **columns** (`prune::PruneColumns`): columns nobody reads are dropped down into the
//!    scans, simple predicates go into formats that skip partitions with them, arithmetic
//!    a projection repeats is computed once (`cse`), counts move onto columns read
//!    anyway (`count_rows`), and a head of a sort becomes a top-k;
//! 4. **stored forms** (`stored_forms::StoredFormsPass`, for the backend the plan runs
//!    on): the columns a scan under a groupby reads as the file stores them
//!    (dictionary-coded keys, 64-bit decimals), where the backend takes them.
//!
//! A rule comes in one of two shapes. A `NodeRule` rewrites one node (not its inputs);
//! `TopDown` applies a list of them at every node from the root down, each rule once per
//! node in order, starting over at a node a rule asks to see again (a join reordered
//! into another join may be reordered further). A `PlanRule` rewrites the whole plan.
//! The driver, [`optimize`], checks after every rule that the plan's output schema is
//! unchanged — names, types and order — so a rule that would change what a query returns
//! fails there, naming itself, instead of returning other columns.
//!
//! Adding a rule: a file here with a type implementing `NodeRule` or `PlanRule`, and
//! its place in `JOIN_RULES` or `PASSES`. The order matters: joins are rewritten
//! before columns are pruned, because the join rules guess sizes from every column a side
//! has.

pub(crate) mod count_rows;
pub(crate) mod cse;
pub(crate) mod join_order;
pub(crate) mod prune;
pub(crate) mod pushdown;
pub(crate) mod rule;
pub(crate) mod sort_order;
pub(crate) mod stored_forms;

use std::sync::Arc;

use crate::backend::StoredForms;
use crate::error::Result;
use crate::plan::Node;
use rule::{same_schema, NodeRule, PlanRule, TopDown};

/// The node rules of the first pass, in the order they are tried at each node.
pub(crate) const JOIN_RULES: &[&dyn NodeRule] = &[
    &join_order::SmallTableFirst,
    &pushdown::FiltersBelowInnerJoins,
];

/// The node rules of the pass before it: sorts the plan above has no use for.
pub(crate) const ORDER_RULES: &[&dyn NodeRule] = &[
    &sort_order::FiltersBelowSorts,
    &sort_order::SortsUnderAggregates,
];

/// The passes, in order.
pub(crate) const PASSES: &[&dyn PlanRule] = &[
    &TopDown {
        name: "sorts",
        rules: ORDER_RULES,
    },
    &TopDown {
        name: "joins",
        rules: JOIN_RULES,
    },
    &prune::PruneColumns,
];

/// Rewrites a plan with every pass of `PASSES` in order, then the stored-forms pass for a
/// backend that takes `forms` (see the module docs).
///
/// # Errors
/// A rewrite that does not type, or one that changed the plan's output schema (a bug of
/// that rule, named in the error).
pub fn optimize(node: &Arc<Node>, forms: StoredForms) -> Result<Arc<Node>> {
    let mut plan = node.clone();
    let stored = stored_forms::StoredFormsPass { forms };
    for pass in PASSES.iter().copied().chain([&stored as &dyn PlanRule]) {
        let next = pass.rewrite(&plan)?;
        same_schema(pass.name(), &plan.schema(), &next.schema())?;
        plan = next;
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::rule::Rewritten;
    use super::*;
    use crate::backend::FrameStep;
    use crate::expr::{col, lit};
    use arrow_array::{Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use tessera_cpu_frame as _;

    fn frame(names: &[&str]) -> Arc<Node> {
        let schema = Arc::new(Schema::new(
            names
                .iter()
                .map(|n| Field::new(*n, DataType::Int64, false))
                .collect::<Vec<_>>(),
        ));
        let columns = names
            .iter()
            .map(|_| Arc::new(Int64Array::from(vec![1, 2])) as _)
            .collect();
        let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
        let backend = tessera_core::registry::dataframe_backend("cpu").unwrap();
        let part = backend.import_batch(batch).unwrap();
        Arc::new(Node::Partitions {
            parts: vec![part],
            schema,
        })
    }

    /// A rule that swaps a two-column projection's columns: it changes what the query
    /// returns, and the driver must say so.
    struct Swap;

    impl NodeRule for Swap {
        fn name(&self) -> &'static str {
            "swap"
        }

        fn rewrite(&self, node: &Arc<Node>) -> Result<Option<Rewritten>> {
            let Node::Map { input, .. } = &**node else {
                return Ok(None);
            };
            let swapped = Node::map(
                input.clone(),
                FrameStep::Project(vec![("b".into(), col("b")), ("a".into(), col("a"))]),
            )?;
            Ok(Some(Rewritten::Next(Arc::new(swapped))))
        }
    }

    #[test]
    fn a_rule_that_changes_the_output_is_refused_by_name() {
        let plan = Arc::new(
            Node::map(
                frame(&["a", "b"]),
                FrameStep::Project(vec![("a".into(), col("a")), ("b".into(), col("b"))]),
            )
            .unwrap(),
        );
        let pass = TopDown {
            name: "test",
            rules: &[&Swap],
        };
        let e = pass.rewrite(&plan).unwrap_err().to_string();
        assert!(e.contains("'swap'"), "{e}");
        assert!(
            e.contains("[a: Int64, b: Int64]") && e.contains("[b: Int64, a: Int64]"),
            "{e}"
        );
    }

    #[test]
    fn the_passes_keep_the_output_and_reach_every_node() {
        // A filter over an inner join: the joins pass moves it below, onto the left side,
        // and the output stays the join's columns.
        let left = frame(&["k", "x"]);
        let right = frame(&["k2", "y"]);
        let spec = crate::backend::JoinSpec {
            left_on: vec!["k".into()],
            right_on: vec!["k2".into()],
            how: crate::backend::JoinType::Inner,
            suffixes: ("_x".into(), "_y".into()),
            algorithm: crate::backend::JoinAlgorithm::Hash,
        };
        let schema = spec.output_schema(&left.schema(), &right.schema()).unwrap();
        let join = Arc::new(Node::Join {
            left,
            right,
            spec,
            strategy: crate::plan::JoinStrategy::Auto,
            schema,
        });
        let plan = Arc::new(Node::map(join, FrameStep::Filter(col("x").gt(lit(1)))).unwrap());
        let out = optimize(&plan, StoredForms::default()).unwrap();
        assert_eq!(out.schema().fields(), plan.schema().fields());
        let Node::Join { left, .. } = &*out else {
            panic!("the filter should have left the top:\n{}", out.explain());
        };
        assert!(
            matches!(&**left, Node::Map { .. }),
            "the filter should be on the left side:\n{}",
            out.explain()
        );
    }
}
