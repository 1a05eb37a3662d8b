//! The stored-forms pass: which columns a scan under a groupby reads in the forms the
//! format stores them in — string keys as dictionary codes, decimals of at most 18 digits
//! in 64 bits — decided once, when the plan is optimized for a backend, and written on the
//! scan (`Node::Scan::stored`), where `explain()` shows it and the executor follows it.
//!
//! A column is read as stored only where the backend takes that form
//! ([`StoredForms`], from its capabilities) and only where the plan's answer cannot tell:
//! a string key the program passes through unchanged and no aggregation but a count
//! reads (its states are cast back to the plan's type), a decimal whose values reach
//! nothing but `+`, `-`, `*` and `sum`/`mean`/`count` (whose results the backend gives in
//! the plan's types). The rule changes no schema, so the driver's check holds trivially.

use std::sync::Arc;

use arrow_schema::DataType;

use super::rule::PlanRule;
use crate::backend::{AggFunc, AggSpec, FrameProgram, FrameStep, StoredForms};
use crate::error::Result;
use crate::expr::{col, BinaryOp, Expr};
use crate::plan::Node;

/// The pass, for a backend that takes `forms`.
pub(crate) struct StoredFormsPass {
    /// What the backend takes.
    pub(crate) forms: StoredForms,
}

impl PlanRule for StoredFormsPass {
    fn name(&self) -> &'static str {
        "stored forms"
    }

    fn rewrite(&self, plan: &Arc<Node>) -> Result<Arc<Node>> {
        if self.forms == StoredForms::default() {
            return Ok(plan.clone());
        }
        self.visit(plan)
    }
}

impl StoredFormsPass {
    fn visit(&self, node: &Arc<Node>) -> Result<Arc<Node>> {
        if let Node::Aggregate {
            input, keys, aggs, ..
        } = &**node
        {
            if let Some(input) = self.mark_scan(input, keys, aggs)? {
                return node.with_inputs(vec![input]);
            }
        }
        super::rule::map_inputs(node, |input| self.visit(input))
    }

    /// `input` (a scan, or a fused program over one) with the scan's stored columns set,
    /// or `None` when no column qualifies.
    ///
    /// # Errors
    /// The program rebuilt over the marked scan does not type (a bug of this rule).
    fn mark_scan(
        &self,
        input: &Arc<Node>,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Option<Arc<Node>>> {
        let (below, program) = match &**input {
            Node::Map {
                input: below,
                program,
                ..
            } => (below, Some(program)),
            _ => (input, None),
        };
        let stored = stored_columns(self.forms, below, program, keys, aggs);
        let Node::Scan {
            source,
            projection,
            selected,
            pushed,
            ..
        } = &**below
        else {
            return Ok(None);
        };
        if stored.is_empty() {
            return Ok(None);
        }
        let scan = Arc::new(Node::Scan {
            source: source.clone(),
            projection: projection.clone(),
            selected: selected.clone(),
            pushed: pushed.clone(),
            stored,
        });
        match &**input {
            Node::Map { .. } => input.with_inputs(vec![scan]).map(Some),
            _ => Ok(Some(scan)),
        }
    }
}

/// The columns a scan under a groupby may read in their stored forms
/// ([`crate::plan::FileSource::read_coded`]) when the backend takes `forms`, as indices
/// into the scan's file schema:
///
/// - string group keys, when the backend groups dictionary keys by their codes or takes
///   string views (`StoredForms::view_keys`), and only
///   keys the program passes through unchanged under their own name and no aggregation
///   but a count or other expression reads (the backend then sees a dictionary only where
///   it groups or counts);
/// - decimals of at most 18 digits, when the backend reads them in 64 bits, and only
///   columns whose values reach nothing but arithmetic and sums ([`summed_only`]):
///   everything the backend computes from them is then in the plan's types.
fn stored_columns(
    forms: StoredForms,
    below: &Node,
    program: Option<&FrameProgram>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Vec<usize> {
    let Node::Scan {
        source, projection, ..
    } = below
    else {
        return Vec::new();
    };
    let schema = source.schema();
    let passed_through = |k: &str| {
        program.is_none_or(|p| {
            p.steps.iter().all(|step| match step {
                FrameStep::Filter(e) => !reads(e, k),
                FrameStep::Project(list) => {
                    list.iter()
                        .filter(|(name, e)| name == k || reads(e, k))
                        .map(|(name, e)| name == k && *e == col(k))
                        .collect::<Vec<_>>()
                        == [true]
                }
            })
        })
    };
    let in_scan = |i: &usize| projection.as_ref().is_none_or(|p| p.contains(i));
    let strings = keys
        .iter()
        .filter(|_| forms.dictionary_keys || forms.view_keys)
        // A count reads only a column's nulls, which a dictionary keeps (the plan counts
        // rows on a non-nullable key column).
        .filter(|k| {
            aggs.iter()
                .all(|a| a.inputs().all(|c| c != **k) || a.func == AggFunc::Count)
                && passed_through(k)
        })
        .filter_map(|k| schema.index_of(k).ok())
        .filter(|i| {
            matches!(
                schema.field(*i).data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            )
        });
    let decimals = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|_| forms.narrow_decimals)
        .filter(|(_, f)| matches!(f.data_type(), DataType::Decimal128(p, _) if *p <= 18))
        .filter(|(_, f)| summed_only(f.name(), program, keys, aggs))
        .map(|(i, _)| i);
    strings
        .filter(in_scan)
        .chain(decimals.filter(in_scan))
        .collect()
}

/// Whether the values of column `k` reach only arithmetic and sums: through the program
/// (under `k` or under names a projection gives them unchanged), no filter reads them and
/// every other expression reads them only as operands of `+`, `-` or `*`
/// ([`read_as_operand`]); no group key is one of those names, and no aggregation but
/// `sum`, `mean` and `count` reads one.
fn summed_only(k: &str, program: Option<&FrameProgram>, keys: &[String], aggs: &[AggSpec]) -> bool {
    // The names holding `k`'s values after each step.
    let mut names = vec![k.to_string()];
    for step in program.map_or(&[][..], |p| &p.steps[..]) {
        match step {
            FrameStep::Filter(e) => {
                if names.iter().any(|n| reads(e, n)) {
                    return false;
                }
            }
            FrameStep::Project(list) => {
                let mut next = Vec::new();
                for (name, e) in list {
                    match e {
                        Expr::Column(c) if names.contains(c) => next.push(name.clone()),
                        _ if names.iter().all(|n| read_as_operand(e, n)) => {}
                        _ => return false,
                    }
                }
                names = next;
            }
        }
    }
    let summed = [AggFunc::Sum, AggFunc::Mean, AggFunc::Count];
    names.iter().all(|n| !keys.contains(n))
        && aggs
            .iter()
            .all(|a| a.inputs().all(|c| !names.iter().any(|n| n == c)) || summed.contains(&a.func))
}

/// Whether every read of column `k` in `e` is an operand of `+`, `-` or `*` (whose
/// result is a new column: a backend computes it in the plan's type whatever the width
/// of the decimal it reads).
fn read_as_operand(e: &Expr, k: &str) -> bool {
    match e {
        Expr::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul,
            left,
            right,
        } => [left, right]
            .into_iter()
            .all(|side| matches!(&**side, Expr::Column(c) if c == k) || read_as_operand(side, k)),
        _ => !reads(e, k),
    }
}

/// Whether `e` reads column `k`.
fn reads(e: &Expr, k: &str) -> bool {
    let mut read = std::collections::BTreeSet::new();
    e.columns_into(&mut read);
    read.contains(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::lit;

    fn project(list: &[(&str, Expr)]) -> FrameStep {
        FrameStep::Project(
            list.iter()
                .map(|(n, e)| (n.to_string(), e.clone()))
                .collect(),
        )
    }

    fn sum(column: &str) -> AggSpec {
        AggSpec::new(column, AggFunc::Sum, "out")
    }

    /// A decimal whose values reach only arithmetic and sums, under its name or under
    /// names projections give it, may come in 64 bits; a filter, a comparison, a key or a
    /// `min` reading those values rules it out.
    #[test]
    fn decimals_are_narrowed_only_where_their_values_reach_arithmetic_and_sums() {
        let keys = ["k".to_string()];
        let program = |steps: Vec<FrameStep>| FrameProgram { steps };
        let q1 = program(vec![
            FrameStep::Filter(col("date").lt_eq(lit("1998-09-02"))),
            project(&[
                ("k", col("k")),
                ("p", col("p")),
                ("d", col("p") * (lit(1) - col("r"))),
            ]),
            project(&[("a0", col("p")), ("a1", col("d") * (lit(1) + col("r")))]),
        ]);
        let ok = |k: &str, p: &FrameProgram, aggs: &[AggSpec]| summed_only(k, Some(p), &keys, aggs);
        assert!(ok("p", &q1, &[sum("a0"), sum("a1")]));
        assert!(ok("r", &q1, &[sum("a0"), sum("a1")]));
        // The alias `a0` holds p's values: a mean or count may read it, a min may not.
        assert!(ok("p", &q1, &[AggSpec::new("a0", AggFunc::Mean, "m")]));
        assert!(ok("p", &q1, &[AggSpec::new("a0", AggFunc::Count, "c")]));
        assert!(!ok("p", &q1, &[AggSpec::new("a0", AggFunc::Min, "m")]));
        // `a1` is computed: any aggregation reads a Decimal128.
        assert!(ok("r", &q1, &[AggSpec::new("a1", AggFunc::Max, "m")]));
        // Read by a filter, a comparison, a function, or as a key.
        let filtered = program(vec![FrameStep::Filter(col("p").gt(lit(3)))]);
        assert!(!ok("p", &filtered, &[sum("p")]));
        let compared = program(vec![project(&[("b", col("p").gt(lit(3)))])]);
        assert!(!ok("p", &compared, &[]));
        let inside = program(vec![project(&[("b", col("p").abs() * lit(2))])]);
        assert!(!ok("p", &inside, &[]));
        // Arithmetic is followed through arithmetic only: under a function the rule stays
        // on the safe side.
        let nested = program(vec![project(&[("b", (col("p") * lit(2)).abs())])]);
        assert!(!ok("p", &nested, &[]));
        let deep = program(vec![project(&[(
            "b",
            (col("p") * lit(2) + lit(1)) * col("r"),
        )])]);
        assert!(ok("p", &deep, &[]));
        let keyed = program(vec![project(&[("k", col("p"))])]);
        assert!(!ok("p", &keyed, &[]));
        // A name given a computed value no longer holds the column's values.
        let replaced = program(vec![project(&[("p", col("p") * lit(2))])]);
        assert!(ok("p", &replaced, &[AggSpec::new("p", AggFunc::Min, "m")]));
        // Without a program, the aggregations read the column itself.
        assert!(summed_only("p", None, &keys, &[sum("p")]));
        assert!(!summed_only(
            "p",
            None,
            &keys,
            &[AggSpec::new("p", AggFunc::First, "f")]
        ));
        assert!(!summed_only("k", None, &keys, &[]));
    }
}
