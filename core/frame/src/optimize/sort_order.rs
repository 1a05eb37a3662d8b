//! Global sorts moved or dropped where the plan above does not need their order.
//!
//! A sort (`sort_values`, `set_index`) is the most expensive node a frame plan has: every
//! row is sampled, split by range and moved. Two common plans ask for one and then do not
//! need all of it:
//!
//! - **a filter over a sort** (`set_index("t").loc["2015-01-10":"2015-01-12"]`): a row's
//!   place in the order does not decide whether the filter keeps it, so the filter runs
//!   first and the sort orders only what is left. The filter then sits over the scan,
//!   where pruning reads only the row groups its statistics allow;
//! - **an aggregation over a sort**, through filters and projections
//!   (`set_index("t").x.resample("1h").mean()`, `...loc[a:b].x.sum()`): a sum, a mean or
//!   a count of a group does not depend on the order its rows come in, so the sort is
//!   dropped. `first` and `last` do, and the t-digest of an approximate quantile
//!   depends slightly on it, so a sort under those stays. Sums of floats may differ in
//!   their last bits from the sorted order's, as any engine's parallel sum does.

use std::sync::Arc;

use crate::backend::{program_schema, AggFunc, FrameProgram};
use crate::error::Result;
use crate::plan::Node;

use super::rule::Rewritten;

/// The rule: a `Map` whose program starts with filters, over a `Sort`, becomes the sort
/// over those filters, with what is left of the program on top.
pub(crate) struct FiltersBelowSorts;

impl super::rule::NodeRule for FiltersBelowSorts {
    fn name(&self) -> &'static str {
        "filters below sorts"
    }

    fn rewrite(&self, node: &Arc<Node>) -> Result<Option<Rewritten>> {
        let Node::Map { input, program, .. } = &**node else {
            return Ok(None);
        };
        let Node::Sort { input: below, by } = &**input else {
            return Ok(None);
        };
        let lead = super::rule::leading_filters(program);
        if lead == 0 {
            return Ok(None);
        }
        let mut filtered = below.clone();
        for step in &program.steps[..lead] {
            filtered = Arc::new(Node::map(filtered, step.clone())?);
        }
        let sort = Arc::new(Node::Sort {
            input: filtered,
            by: by.clone(),
        });
        let rest = FrameProgram {
            steps: program.steps[lead..].to_vec(),
        };
        if rest.steps.is_empty() {
            return Ok(Some(Rewritten::Again(sort)));
        }
        let schema = program_schema(&sort.schema(), &rest)?;
        Ok(Some(Rewritten::Next(Arc::new(Node::Map {
            input: sort,
            program: rest,
            schema,
        }))))
    }
}

/// The rule: an `Aggregate` of functions that do not depend on row order, over a `Sort`
/// reached through `Map`s only, loses the sort.
pub(crate) struct SortsUnderAggregates;

impl super::rule::NodeRule for SortsUnderAggregates {
    fn name(&self) -> &'static str {
        "sorts under order-blind aggregates"
    }

    fn rewrite(&self, node: &Arc<Node>) -> Result<Option<Rewritten>> {
        let Node::Aggregate {
            input,
            keys,
            aggs,
            strategy,
            schema,
        } = &**node
        else {
            return Ok(None);
        };
        if aggs.iter().any(|a| order_matters(a.func)) {
            return Ok(None);
        }
        let Some(unsorted) = without_sort(input)? else {
            return Ok(None);
        };
        Ok(Some(Rewritten::Next(Arc::new(Node::Aggregate {
            input: unsorted,
            keys: keys.clone(),
            aggs: aggs.clone(),
            strategy: *strategy,
            schema: schema.clone(),
        }))))
    }
}

/// Whether an aggregation's answer depends on the order of a group's rows.
fn order_matters(f: AggFunc) -> bool {
    matches!(
        f,
        AggFunc::First | AggFunc::Last | AggFunc::ApproxQuantile(_)
    )
}

/// `node` without the `Sort` found under its chain of `Map`s, or `None` when the chain
/// reaches anything else first.
fn without_sort(node: &Arc<Node>) -> Result<Option<Arc<Node>>> {
    match &**node {
        Node::Sort { input, .. } => Ok(Some(input.clone())),
        Node::Map { input, program, .. } => Ok(match without_sort(input)? {
            None => None,
            Some(below) => {
                let schema = program_schema(&below.schema(), program)?;
                Some(Arc::new(Node::Map {
                    input: below,
                    program: program.clone(),
                    schema,
                }))
            }
        }),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit};
    use crate::DataFrame;
    use arrow_array::{Float64Array, Int64Array};
    use tessera_cpu_frame as _;

    fn frame() -> DataFrame {
        let k: Vec<i64> = (0..1000).map(|i| (i * 7919) % 1000).collect();
        let x: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
        DataFrame::from_columns(
            vec![
                ("k", Arc::new(Int64Array::from(k))),
                ("x", Arc::new(Float64Array::from(x))),
            ],
            4,
        )
        .unwrap()
    }

    fn has_sort(node: &Arc<Node>) -> bool {
        matches!(&**node, Node::Sort { .. }) || node.inputs().into_iter().any(has_sort)
    }

    #[test]
    fn a_filter_over_a_sort_runs_first_and_keeps_the_order() {
        let df = frame().set_index("k").unwrap();
        let cond = col("k").gt_eq(lit(100i64)).and(col("k").lt(lit(110i64)));
        let kept = df.filter(cond).unwrap();
        let plan = kept.planned().unwrap();
        let Node::Sort { input, .. } = &*plan else {
            panic!("the sort is on top: {}", kept.explain().unwrap());
        };
        assert!(matches!(&**input, Node::Map { .. }), "the filter is below");
        let out = kept.compute().unwrap().concat().unwrap();
        let keys = out.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(keys.values().to_vec(), (100..110).collect::<Vec<i64>>());
    }

    #[test]
    fn an_order_blind_aggregate_drops_the_sort_and_gives_the_same_answer() {
        let sorted = frame().set_index("k").unwrap();
        let filtered = sorted.filter(col("k").lt(lit(500i64))).unwrap();
        let sum = filtered.agg(&[("x", AggFunc::Sum)]).unwrap();
        let plan = sum.planned().unwrap();
        assert!(!has_sort(&plan), "{}", sum.explain().unwrap());
        let want: f64 = (0..1000)
            .filter(|i| (i * 7919) % 1000 < 500)
            .map(|i| i as f64 * 0.5)
            .sum();
        assert_eq!(sum.reduce("x", AggFunc::Sum).unwrap().as_f64(), Some(want));
        // `first` needs the order: the sort stays, and the first row is the smallest key's.
        let first = sorted.agg(&[("x", AggFunc::First)]).unwrap();
        let plan = first.planned().unwrap();
        assert!(has_sort(&plan));
        let at_zero = (0..1000).find(|i| (i * 7919) % 1000 == 0).unwrap() as f64 * 0.5;
        assert_eq!(
            sorted.reduce("x", AggFunc::First).unwrap().as_f64(),
            Some(at_zero)
        );
    }
}
