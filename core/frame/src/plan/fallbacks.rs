//! The steps of a plan its backend will not run natively, asked before the plan runs
//! ([`DataFrameBackend::fallback_note`]): `explain()` lists every one, and under
//! `dataframe.fallback = "error"` the plan is refused with that list instead of running.

use super::Node;
use crate::backend::{DataFrameBackend, PlanStep};

impl Node {
    /// Every node of the plan that `backend` will run through a fallback, as
    /// `"<node>: <what the backend does instead, and why>"`, in the order `explain()`
    /// prints the nodes (all of them, not the first).
    pub fn fallback_notes(&self, backend: &dyn DataFrameBackend) -> Vec<String> {
        let mut out = Vec::new();
        self.notes_into(backend, &mut out);
        out
    }

    fn notes_into(&self, backend: &dyn DataFrameBackend, out: &mut Vec<String>) {
        let (label, step) = match self {
            Node::Map { input, program, .. } => {
                let schema = input.schema();
                (
                    format!("fused per partition ({} steps)", program.steps.len()),
                    Some(backend.fallback_note(PlanStep::Evaluate {
                        schema: &schema,
                        program,
                    })),
                )
            }
            Node::Aggregate {
                input, keys, aggs, ..
            } => {
                let schema = input.schema();
                (
                    if keys.is_empty() {
                        "aggregate".to_string()
                    } else {
                        format!("groupby [{}]", keys.join(", "))
                    },
                    Some(backend.fallback_note(PlanStep::Aggregate {
                        schema: &schema,
                        keys,
                        aggs,
                    })),
                )
            }
            Node::Join {
                left, right, spec, ..
            } => {
                let (l, r) = (left.schema(), right.schema());
                (
                    format!("{} join on [{}]", spec.how.name(), spec.left_on.join(", ")),
                    Some(backend.fallback_note(PlanStep::Join {
                        left: &l,
                        right: &r,
                        spec,
                    })),
                )
            }
            Node::Sort { input, by } | Node::TopK { input, by, .. } => {
                let schema = input.schema();
                let top = matches!(self, Node::TopK { .. });
                (
                    match self {
                        Node::TopK { n, .. } => format!("top {n}"),
                        _ => "sort".to_string(),
                    },
                    Some(backend.fallback_note(PlanStep::Sort {
                        schema: &schema,
                        by,
                        top,
                    })),
                )
            }
            Node::Repartition { input, n } => {
                let schema = input.schema();
                (
                    format!("repartition into {n}"),
                    Some(backend.fallback_note(PlanStep::Repartition { schema: &schema })),
                )
            }
            Node::Window { spec, .. } => (
                format!("window {}({})", spec.func.name(), spec.column),
                Some(backend.fallback_note(PlanStep::Window(spec))),
            ),
            _ => (String::new(), None),
        };
        if let Some(Some(note)) = step {
            out.push(format!("{label}: {note}"));
        }
        match self {
            Node::Partitions { .. } | Node::Scan { .. } => {}
            Node::Map { input, .. }
            | Node::MapPartitions { input, .. }
            | Node::Aggregate { input, .. }
            | Node::Sort { input, .. }
            | Node::Repartition { input, .. }
            | Node::Head { input, .. }
            | Node::Tail { input, .. }
            | Node::TopK { input, .. }
            | Node::Window { input, .. } => input.notes_into(backend, out),
            Node::Join { left, right, .. } => {
                left.notes_into(backend, out);
                right.notes_into(backend, out);
            }
            Node::Concat { inputs, .. } => {
                for i in inputs {
                    i.notes_into(backend, out);
                }
            }
        }
    }
}
