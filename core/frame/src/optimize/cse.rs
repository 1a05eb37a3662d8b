//! Arithmetic a projection repeats, computed once.
//!
//! Aggregations over expressions put every expression in one projection, and queries
//! repeat themselves: TPC-H Q1 sums `price * (1 - discount)` and
//! `price * (1 - discount) * (1 + tax)`, so a backend evaluating each expression on its
//! own multiplies six million decimals twice more than needed. Before a projection, this
//! rewrite computes each arithmetic subtree that occurs more than once into a column of
//! its own (one projection step per shared subtree, which a backend runs in the same pass
//! over the partition) and makes the expressions read that column. The largest shared
//! subtree goes first, so `price * (1 - discount)` is shared rather than `1 - discount`
//! inside it.
//!
//! Only trees of binary operators are looked into (the subtrees a user repeats in
//! arithmetic); an expression is the same as another when they are equal as written.
//! Replacing a subtree by a column of its value leaves every type as it was: the column
//! has the subtree's type.

use arrow_schema::SchemaRef;

use crate::backend::{program_schema, FrameProgram, FrameStep};
use crate::error::Result;
use crate::expr::Expr;

/// The prefix of the columns holding shared subexpressions.
const PREFIX: &str = "__tessera_cse";

/// `program` with each projection's repeated arithmetic computed once; `input` is the
/// program's input schema.
///
/// # Errors
/// A step that does not type-check over its input (as [`program_schema`] reports it).
pub(crate) fn hoist_shared(program: &FrameProgram, input: &SchemaRef) -> Result<FrameProgram> {
    let mut steps = Vec::with_capacity(program.steps.len());
    let mut schema = input.clone();
    for step in &program.steps {
        match step {
            FrameStep::Project(list) if list.len() > 1 => {
                steps.extend(hoist_in(list, &schema));
            }
            other => steps.push(other.clone()),
        }
        schema = program_schema(
            &schema,
            &FrameProgram {
                steps: vec![step.clone()],
            },
        )?;
    }
    Ok(FrameProgram { steps })
}

/// The steps computing `list` over `schema`: one per shared subtree, then `list` itself
/// reading them (just `list` when nothing repeats).
fn hoist_in(list: &[(String, Expr)], schema: &SchemaRef) -> Vec<FrameStep> {
    let mut exprs: Vec<Expr> = list.iter().map(|(_, e)| e.clone()).collect();
    let mut defs: Vec<(String, Expr)> = Vec::new();
    let taken = |name: &str| schema.field_with_name(name).is_ok();
    loop {
        let mut seen: Vec<(Expr, usize)> = Vec::new();
        for e in exprs.iter().chain(defs.iter().map(|(_, d)| d)) {
            binary_subtrees(e, &mut seen);
        }
        let Some(shared) = seen
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(e, _)| e)
            .max_by_key(size)
        else {
            break;
        };
        let mut k = defs.len();
        let mut name = format!("{PREFIX}{k}");
        while taken(&name) {
            k += 1;
            name = format!("{PREFIX}{k}");
        }
        let by = Expr::Column(name.clone());
        for e in exprs.iter_mut() {
            *e = replaced(e, &shared, &by);
        }
        for (_, d) in defs.iter_mut() {
            *d = replaced(d, &shared, &by);
        }
        defs.push((name, shared));
    }
    if defs.is_empty() {
        return vec![FrameStep::Project(list.to_vec())];
    }
    // One step per definition, each after those it reads.
    let mut columns: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let mut steps = Vec::with_capacity(defs.len() + 1);
    while !defs.is_empty() {
        let ready = defs
            .iter()
            .position(|(_, d)| {
                let mut reads = std::collections::BTreeSet::new();
                d.columns_into(&mut reads);
                reads.iter().all(|c| columns.contains(c))
            })
            .unwrap_or(0);
        let (name, def) = defs.remove(ready);
        let mut project: Vec<(String, Expr)> = columns
            .iter()
            .map(|c| (c.clone(), Expr::Column(c.clone())))
            .collect();
        project.push((name.clone(), def));
        columns.push(name);
        steps.push(FrameStep::Project(project));
    }
    steps.push(FrameStep::Project(
        list.iter()
            .zip(exprs)
            .map(|((n, _), e)| (n.clone(), e))
            .collect(),
    ));
    steps
}

/// Counts every binary-operator subtree of `e` (and `e` itself when it is one) in `seen`.
fn binary_subtrees(e: &Expr, seen: &mut Vec<(Expr, usize)>) {
    if let Expr::Binary { left, right, .. } = e {
        match seen.iter_mut().find(|(s, _)| s == e) {
            Some((_, n)) => *n += 1,
            None => seen.push((e.clone(), 1)),
        }
        binary_subtrees(left, seen);
        binary_subtrees(right, seen);
    }
}

/// The number of binary operators in `e`'s binary tree.
fn size(e: &Expr) -> usize {
    match e {
        Expr::Binary { left, right, .. } => 1 + size(left) + size(right),
        _ => 0,
    }
}

/// `e` with every occurrence of `what` in its binary tree replaced by `by`.
fn replaced(e: &Expr, what: &Expr, by: &Expr) -> Expr {
    if e == what {
        return by.clone();
    }
    match e {
        Expr::Binary { op, left, right } => Expr::Binary {
            op: *op,
            left: Box::new(replaced(left, what, by)),
            right: Box::new(replaced(right, what, by)),
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("price", DataType::Float64, false),
            Field::new("discount", DataType::Float64, false),
            Field::new("tax", DataType::Float64, false),
        ]))
    }

    #[test]
    fn the_largest_repeated_subtree_is_computed_once() {
        let net = col("price") * (lit(1.0) - col("discount"));
        let list = vec![
            ("disc_price".to_string(), net.clone()),
            ("charge".to_string(), net.clone() * (lit(1.0) + col("tax"))),
            ("plain".to_string(), col("tax")),
        ];
        let program = FrameProgram {
            steps: vec![FrameStep::Project(list)],
        };
        let out = hoist_shared(&program, &schema()).unwrap();
        assert_eq!(out.steps.len(), 2, "{out:?}");
        let FrameStep::Project(first) = &out.steps[0] else {
            panic!("a projection");
        };
        assert_eq!(first.last().unwrap(), &("__tessera_cse0".to_string(), net));
        let FrameStep::Project(last) = &out.steps[1] else {
            panic!("a projection");
        };
        assert_eq!(last[0].1, col("__tessera_cse0"));
        assert_eq!(last[1].1, col("__tessera_cse0") * (lit(1.0) + col("tax")));
        assert_eq!(last[2].1, col("tax"));
        // The output schema is the written projection's.
        assert_eq!(
            program_schema(&schema(), &out).unwrap(),
            program_schema(&schema(), &program).unwrap()
        );
    }

    #[test]
    fn a_projection_without_repeats_is_left_alone() {
        let program = FrameProgram {
            steps: vec![
                FrameStep::Filter(col("tax").gt(lit(0.0))),
                FrameStep::Project(vec![
                    ("a".to_string(), col("price") * col("tax")),
                    ("b".to_string(), col("price") + col("tax")),
                ]),
            ],
        };
        assert_eq!(hoist_shared(&program, &schema()).unwrap(), program);
    }
}
