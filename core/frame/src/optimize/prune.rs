//! Columns nobody reads pruned down into the scans, and simple predicates handed to the
//! formats that can skip partitions with them.
//!
//! 1. **Projections go down** into file scans — a CSV reader skips the bytes of unused
//!    columns, a Parquet reader never decodes them — and projected expressions nobody
//!    reads are dropped;
//! 2. **simple predicates** (`col op literal`, joined by `&`) go into scans whose format
//!    keeps statistics (Parquet row groups), which skip partitions that cannot match; the
//!    filter itself stays, since statistics only prove absence;
//! 3. on the way, arithmetic a projection repeats is computed once (`super::cse`), counts
//!    move onto columns read anyway (`super::count_rows`), and a head of a sort becomes a
//!    top-k.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow_schema::{Schema, SchemaRef};

use super::rule::PlanRule;
use super::{count_rows, cse};
use crate::backend::{program_schema, FrameProgram, FrameStep};
use crate::error::Result;
use crate::expr::{BinaryOp, Expr, Literal};
use crate::plan::{ColumnPredicate, Node};

/// The rule: [`prune`] from the root, which needs every column it has.
pub(crate) struct PruneColumns;

impl PlanRule for PruneColumns {
    fn name(&self) -> &'static str {
        "prune columns"
    }

    fn rewrite(&self, plan: &Arc<Node>) -> Result<Arc<Node>> {
        prune(plan, None)
    }
}

/// A projection of the columns of `schema` named in `keep`, in `schema`'s order.
fn columns_in(schema: &SchemaRef, keep: &BTreeSet<String>) -> Vec<(String, Expr)> {
    schema
        .fields()
        .iter()
        .filter(|f| keep.contains(f.name()))
        .map(|f| (f.name().clone(), Expr::Column(f.name().clone())))
        .collect()
}

/// `node` keeping only the columns in `required` (all, when `None`).
fn prune(node: &Arc<Node>, required: Option<&BTreeSet<String>>) -> Result<Arc<Node>> {
    Ok(match &**node {
        Node::Partitions { schema, .. } => match required {
            // Drop unused in-memory columns before a blocking node copies them.
            Some(r) if r.len() < schema.fields().len() => Arc::new(Node::map(
                node.clone(),
                FrameStep::Project(columns_in(schema, r)),
            )?),
            _ => node.clone(),
        },
        Node::Scan {
            source,
            projection,
            selected,
            pushed,
            stored,
        } => {
            let full = source.schema();
            let projection = match (required, projection) {
                (Some(req), None) => Some(
                    (0..full.fields().len())
                        .filter(|&i| req.contains(full.field(i).name()))
                        .collect(),
                ),
                (Some(req), Some(p)) => Some(
                    p.iter()
                        .copied()
                        .filter(|&i| req.contains(full.field(i).name()))
                        .collect(),
                ),
                (None, p) => p.clone(),
            };
            Arc::new(Node::Scan {
                source: source.clone(),
                projection,
                selected: selected.clone(),
                pushed: pushed.clone(),
                stored: stored.clone(),
            })
        }
        Node::Map { input, program, .. } => {
            // Walk the steps backwards, keeping only projected expressions someone reads.
            let mut steps = program.steps.clone();
            let mut need: Option<BTreeSet<String>> = required.cloned();
            for step in steps.iter_mut().rev() {
                match step {
                    FrameStep::Filter(e) => {
                        if let Some(n) = need.as_mut() {
                            e.columns_into(n);
                        }
                    }
                    FrameStep::Project(list) => {
                        if let Some(n) = &need {
                            list.retain(|(name, _)| n.contains(name));
                        }
                        let mut next = BTreeSet::new();
                        for (_, e) in list.iter() {
                            e.columns_into(&mut next);
                        }
                        need = Some(next);
                    }
                }
            }
            let program = FrameProgram { steps };
            let mut input = prune(input, need.as_ref())?;
            // Predicate pushdown: leading filters over a scan.
            if let Node::Scan {
                source,
                projection,
                selected,
                pushed,
                stored,
            } = &*input
            {
                let mut preds = pushed.clone();
                for step in &program.steps {
                    match step {
                        FrameStep::Filter(e) => simple_predicates(e, &mut preds),
                        FrameStep::Project(_) => break,
                    }
                }
                if preds.len() > pushed.len() {
                    if let Some(keep) = source.prune(&preds) {
                        let keep = match selected {
                            Some(s) => s.iter().copied().filter(|i| keep.contains(i)).collect(),
                            None => keep,
                        };
                        input = Arc::new(Node::Scan {
                            source: source.clone(),
                            projection: projection.clone(),
                            selected: Some(keep),
                            pushed: preds,
                            stored: stored.clone(),
                        });
                    }
                }
            }
            let mut program = cse::hoist_shared(&program, &input.schema())?;
            let mut schema = program_schema(&input.schema(), &program)?;
            // A filter passes on every column it read: those only its predicate needed
            // (TPC-H Q13's `o_comment`) are dropped right after it, not carried into the
            // join or shuffle above.
            if let Some(r) = required {
                if schema.fields().iter().any(|f| !r.contains(f.name())) {
                    program
                        .steps
                        .push(FrameStep::Project(columns_in(&schema, r)));
                    schema = program_schema(&input.schema(), &program)?;
                }
            }
            Arc::new(Node::Map {
                input,
                program,
                schema,
            })
        }
        Node::MapPartitions {
            input,
            func,
            schema,
        } => Arc::new(Node::MapPartitions {
            input: prune(input, None)?,
            func: func.clone(),
            schema: schema.clone(),
        }),
        Node::Aggregate {
            input,
            keys,
            aggs,
            strategy,
            schema,
        } => {
            let aggs = count_rows::counts_on_read_columns(&input.schema(), keys, aggs);
            let mut need: BTreeSet<String> = keys.iter().cloned().collect();
            need.extend(aggs.iter().flat_map(|a| a.inputs().map(str::to_string)));
            Arc::new(Node::Aggregate {
                input: prune(input, Some(&need))?,
                keys: keys.clone(),
                aggs,
                strategy: *strategy,
                schema: schema.clone(),
            })
        }
        Node::Join {
            left,
            right,
            spec,
            strategy,
            schema,
        } => {
            // Each side keeps its keys, the columns the output needs, and any column whose
            // name clashes with the other side (so suffixed output names stay the same).
            let (ls, rs) = (left.schema(), right.schema());
            let side = |own: &SchemaRef, other: &SchemaRef, keys: &[String], suffix: &str| {
                required.map(|r| {
                    own.fields()
                        .iter()
                        .map(|f| f.name())
                        .filter(|n| {
                            keys.contains(n)
                                || r.contains(*n)
                                || r.contains(&format!("{n}{suffix}"))
                                || other.field_with_name(n).is_ok()
                        })
                        .cloned()
                        .collect::<BTreeSet<String>>()
                })
            };
            let lneed = side(&ls, &rs, &spec.left_on, &spec.suffixes.0);
            let rneed = side(&rs, &ls, &spec.right_on, &spec.suffixes.1);
            let left = prune(left, lneed.as_ref())?;
            let right = prune(right, rneed.as_ref())?;
            let schema = if required.is_some() {
                spec.output_schema(&left.schema(), &right.schema())?
            } else {
                schema.clone()
            };
            Arc::new(Node::Join {
                left,
                right,
                spec: spec.clone(),
                strategy: *strategy,
                schema,
            })
        }
        Node::Sort { input, by } => {
            let need = required.map(|r| {
                let mut n = r.clone();
                n.extend(by.iter().map(|k| k.column.clone()));
                n
            });
            let input = prune(input, need.as_ref())?;
            Arc::new(Node::Sort {
                input,
                by: by.clone(),
            })
        }
        Node::Repartition { input, n } => Arc::new(Node::Repartition {
            input: prune(input, required)?,
            n: *n,
        }),
        // A head of a sort needs only the top rows: no full sort.
        Node::Head { input, n } => match &**input {
            Node::Sort { input: sorted, by } => prune(
                &Arc::new(Node::TopK {
                    input: sorted.clone(),
                    by: by.clone(),
                    n: *n,
                }),
                required,
            )?,
            _ => Arc::new(Node::Head {
                input: prune(input, required)?,
                n: *n,
            }),
        },
        Node::Tail { input, n } => Arc::new(Node::Tail {
            input: prune(input, required)?,
            n: *n,
        }),
        Node::Concat { inputs, schema } => {
            // Every input keeps the same columns, so they still line up.
            let inputs = inputs
                .iter()
                .map(|i| prune(i, required))
                .collect::<Result<Vec<_>>>()?;
            let schema = inputs.first().map_or_else(
                || schema.clone(),
                |i| {
                    let kept = i.schema();
                    Arc::new(Schema::new(
                        schema
                            .fields()
                            .iter()
                            .filter(|f| kept.field_with_name(f.name()).is_ok())
                            .cloned()
                            .collect::<Vec<_>>(),
                    ))
                },
            );
            Arc::new(Node::Concat { inputs, schema })
        }
        Node::TopK { input, by, n } => {
            let need = required.map(|r| {
                let mut need = r.clone();
                need.extend(by.iter().map(|k| k.column.clone()));
                need
            });
            Arc::new(Node::TopK {
                input: prune(input, need.as_ref())?,
                by: by.clone(),
                n: *n,
            })
        }
        Node::Window { input, spec, .. } => {
            let need = required.map(|r| {
                let mut need = r.clone();
                need.remove(&spec.output);
                need.extend(spec.keys.iter().cloned());
                need.insert(spec.column.clone());
                need
            });
            let input = prune(input, need.as_ref())?;
            let schema = spec.output_schema(&input.schema())?;
            Arc::new(Node::Window {
                input,
                spec: spec.clone(),
                schema,
            })
        }
    })
}

/// Collects `col op literal` conjuncts of `e`.
fn simple_predicates(e: &Expr, out: &mut Vec<ColumnPredicate>) {
    if let Expr::Binary { op, left, right } = e {
        if *op == BinaryOp::And {
            simple_predicates(left, out);
            simple_predicates(right, out);
            return;
        }
        if op.is_comparison() {
            let flip = |op: BinaryOp| match op {
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::LtEq => BinaryOp::GtEq,
                BinaryOp::Gt => BinaryOp::Lt,
                BinaryOp::GtEq => BinaryOp::LtEq,
                o => o,
            };
            match (&**left, &**right) {
                (Expr::Column(c), Expr::Literal(l)) if *l != Literal::Null => {
                    out.push(ColumnPredicate {
                        column: c.clone(),
                        op: *op,
                        value: l.clone(),
                    })
                }
                (Expr::Literal(l), Expr::Column(c)) if *l != Literal::Null => {
                    out.push(ColumnPredicate {
                        column: c.clone(),
                        op: flip(*op),
                        value: l.clone(),
                    })
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit};

    #[test]
    fn simple_predicates_are_conjuncts_of_column_comparisons() {
        let mut out = Vec::new();
        simple_predicates(
            &(col("a").gt(1) & lit(2.5).gt_eq(col("b")) & (col("c") + 1).lt(3)),
            &mut out,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].column, "a");
        assert_eq!(out[0].op, BinaryOp::Gt);
        assert_eq!(out[1].column, "b");
        assert_eq!(
            out[1].op,
            BinaryOp::LtEq,
            "literal on the left flips the operator"
        );
        let mut none = Vec::new();
        simple_predicates(&(col("a").gt(1) | col("b").lt(2)), &mut none);
        assert!(none.is_empty(), "a disjunction cannot prune");
    }
}
