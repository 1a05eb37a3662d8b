//! The plan in words: [`Node::explain`], one line per node, inputs indented.

use std::fmt::Write as _;

use arrow_schema::{DataType, SchemaRef};

use super::{GroupStrategy, JoinStrategy, Node};
use crate::backend::{FrameStep, SortKey};
use crate::expr::Expr;

impl Node {
    /// The plan in words: one line per node, inputs indented.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        self.explain_into(&mut out, 0);
        out
    }

    fn explain_into(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        let cols = |s: &SchemaRef| {
            s.fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Node::Partitions { parts, schema } => {
                let rows: usize = parts.iter().map(|p| p.num_rows()).sum();
                let _ = writeln!(
                    out,
                    "{pad}in memory: {} partitions, {rows} rows [{}]",
                    parts.len(),
                    cols(schema)
                );
            }
            Node::Scan {
                source,
                projection,
                selected,
                pushed,
                stored,
            } => {
                let total = source.partitions();
                let read = selected.as_ref().map_or(total, |s| s.len());
                let _ = write!(
                    out,
                    "{pad}scan {} {}: {read} of {total} partitions",
                    source.format(),
                    source.describe()
                );
                match projection {
                    Some(_) => {
                        let _ = write!(
                            out,
                            ", projection pushed down: reads {} of {} columns [{}]",
                            self.schema().fields().len(),
                            source.schema().fields().len(),
                            cols(&self.schema())
                        );
                    }
                    None => {
                        let _ = write!(out, ", all columns");
                    }
                }
                if !pushed.is_empty() {
                    let p: Vec<String> = pushed
                        .iter()
                        .map(|p| format!("{} {} {}", p.column, p.op.symbol(), p.value))
                        .collect();
                    let _ = write!(out, ", predicates pushed down: {}", p.join(" & "));
                }
                if !stored.is_empty() {
                    let full = source.schema();
                    let forms: Vec<String> = stored
                        .iter()
                        .map(|&i| {
                            let f = full.field(i);
                            let form = match f.data_type() {
                                DataType::Decimal128(..) => "64-bit decimals",
                                // Views of plain pages for a backend that takes them.
                                _ => "dictionary codes or views",
                            };
                            format!("{} as {form}", f.name())
                        })
                        .collect();
                    let _ = write!(
                        out,
                        ", stored forms for the groupby (where the file keeps them): {}",
                        forms.join(", ")
                    );
                }
                out.push('\n');
            }
            Node::Map { input, program, .. } => {
                let steps: Vec<String> = program
                    .steps
                    .iter()
                    .map(|s| match s {
                        FrameStep::Filter(e) => format!("filter {e}"),
                        FrameStep::Project(list) => {
                            let items: Vec<String> = list
                                .iter()
                                .map(|(n, e)| match e {
                                    Expr::Column(c) if c == n => n.clone(),
                                    _ => format!("{n} = {e}"),
                                })
                                .collect();
                            format!("project [{}]", items.join(", "))
                        }
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{pad}fused per partition ({} steps, one pass): {}",
                    program.steps.len(),
                    steps.join(" -> ")
                );
                input.explain_into(out, depth + 1);
            }
            Node::MapPartitions { input, .. } => {
                let _ = writeln!(out, "{pad}map_partitions (user function on RecordBatch)");
                input.explain_into(out, depth + 1);
            }
            Node::Aggregate {
                input,
                keys,
                aggs,
                strategy,
                ..
            } => {
                let a: Vec<String> = aggs
                    .iter()
                    .map(|a| {
                        let read: Vec<&str> = a.inputs().collect();
                        format!("{} = {}({})", a.output, a.func.name(), read.join(", "))
                    })
                    .collect();
                let how = match strategy {
                    Some(GroupStrategy::Tree) => "tree combine (forced)",
                    Some(GroupStrategy::Shuffle) => "shuffle combine (forced)",
                    None => "tree combine, or shuffle if the partial results are large",
                };
                if keys.is_empty() {
                    let _ = writeln!(
                        out,
                        "{pad}aggregate [{}]: partial per partition (fused with its input), {how}",
                        a.join(", ")
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "{pad}groupby [{}] agg [{}]: partial per partition (fused with its input), {how}",
                        keys.join(", "),
                        a.join(", ")
                    );
                }
                input.explain_into(out, depth + 1);
            }
            Node::Join {
                left,
                right,
                spec,
                strategy,
                ..
            } => {
                let how = match strategy {
                    JoinStrategy::Auto => "broadcast the small side, sorted merge if both are sorted on the keys, else hash shuffle",
                    JoinStrategy::Broadcast => "broadcast (forced)",
                    JoinStrategy::Shuffle => "hash shuffle (forced)",
                    JoinStrategy::SortedMerge => "sorted merge (forced)",
                };
                let _ = writeln!(
                    out,
                    "{pad}{} join on [{}] = [{}]: {how}",
                    spec.how.name(),
                    spec.left_on.join(", "),
                    spec.right_on.join(", ")
                );
                left.explain_into(out, depth + 1);
                right.explain_into(out, depth + 1);
            }
            Node::Sort { input, by } => {
                let _ = writeln!(
                    out,
                    "{pad}sort by [{}] (sample sort into range partitions)",
                    sort_keys(by)
                );
                input.explain_into(out, depth + 1);
            }
            Node::Repartition { input, n } => {
                let _ = writeln!(out, "{pad}repartition into {n}");
                input.explain_into(out, depth + 1);
            }
            Node::Concat { inputs, .. } => {
                let _ = writeln!(
                    out,
                    "{pad}concat of {} frames (their partitions in order)",
                    inputs.len()
                );
                for i in inputs {
                    i.explain_into(out, depth + 1);
                }
            }
            Node::Head { input, n } => {
                let _ = writeln!(
                    out,
                    "{pad}head {n} (reads partitions in order until it has enough)"
                );
                input.explain_into(out, depth + 1);
            }
            Node::Tail { input, n } => {
                let _ = writeln!(
                    out,
                    "{pad}tail {n} (reads partitions from the last until it has enough)"
                );
                input.explain_into(out, depth + 1);
            }
            Node::TopK { input, by, n } => {
                let _ = writeln!(
                    out,
                    "{pad}top {n} by [{}] (each partition keeps its top {n}, no full sort)",
                    sort_keys(by)
                );
                input.explain_into(out, depth + 1);
            }
            Node::Window { input, spec, .. } => {
                let over = if spec.keys.is_empty() {
                    "all rows".to_string()
                } else {
                    format!("each group of [{}]", spec.keys.join(", "))
                };
                let _ = writeln!(
                    out,
                    "{pad}window {}({}) as {} over {over} in row order (carries between partitions)",
                    spec.func.name(),
                    spec.column,
                    spec.output
                );
                input.explain_into(out, depth + 1);
            }
        }
    }
}

/// Sort keys as `explain()` shows them: `a, b desc`.
fn sort_keys(by: &[SortKey]) -> String {
    by.iter()
        .map(|k| format!("{}{}", k.column, if k.descending { " desc" } else { "" }))
        .collect::<Vec<_>>()
        .join(", ")
}
