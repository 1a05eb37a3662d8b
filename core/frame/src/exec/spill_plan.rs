//! What `explain()` says, under `memory-limit`, of each blocking operator: its share of
//! the memory the plan is projected to hold, and what it will do past a task's bytes —
//! broadcast, grace hash join, shuffle, tree or shuffled combine, in-memory or external
//! sort — so that a user sees before running where a plan will spill.
//!
//! The operators decide on the sizes they measure as they run (`exec/join.rs`,
//! `exec/aggregate.rs`, `exec/sort.rs`); this projects the same rules onto the plan's
//! guesses: a side's size from [`crate::plan::join_guess`] (filters keep a fraction of
//! their rows), an operator's share from the memory model ([`Node::memory`], an upper
//! bound). A projected choice is what the operator does when the guess is right; where it
//! is wrong the operator changes course at run time, and the note says so.

use arrow_schema::SchemaRef;

use crate::backend::{JoinSpec, JoinType};
use crate::exec::grace_join::Oriented;
use crate::exec::spill::SpillBudget;
use crate::exec::swap_join::Side;
use crate::exec::tuning::{BROADCAST_BYTES, STREAMED_BROADCAST_BYTES};
use crate::plan::join_guess::expected_bytes;
use crate::plan::{JoinStrategy, Node};

/// One line per blocking operator of `node` (inputs first, indented by depth), each with
/// its projected share of the memory, and what it does within `budget` at the sizes the
/// plan guesses.
pub(crate) fn operator_notes(node: &Node, budget: &SpillBudget, workers: u64) -> Vec<String> {
    let total = node.memory(workers).held.max(1);
    let mut notes = Vec::new();
    walk(node, budget, workers, total, 0, &mut notes);
    notes
}

fn walk(
    node: &Node,
    budget: &SpillBudget,
    workers: u64,
    total: u64,
    depth: usize,
    notes: &mut Vec<String>,
) {
    if let Some(what) = note(node, budget, workers) {
        let own = own_bytes(node, workers);
        notes.push(format!(
            "{}{what}; share ≈ {} ({}% of the {} the plan is projected to hold)",
            "  ".repeat(depth),
            fb(own),
            own.saturating_mul(100) / total,
            fb(total)
        ));
    }
    let depth = depth + usize::from(is_blocking(node));
    for input in node.inputs() {
        walk(input, budget, workers, total, depth, notes);
    }
}

fn is_blocking(node: &Node) -> bool {
    matches!(
        node,
        Node::Aggregate { .. }
            | Node::Join { .. }
            | Node::Sort { .. }
            | Node::TopK { .. }
            | Node::Repartition { .. }
            | Node::Window { .. }
    )
}

/// What `node` holds on top of its inputs, by the memory model.
fn own_bytes(node: &Node, workers: u64) -> u64 {
    let inputs: u64 = node
        .inputs()
        .iter()
        .map(|i| i.memory(workers).held)
        .fold(0, u64::saturating_add);
    node.memory(workers).held.saturating_sub(inputs)
}

fn fb(bytes: u64) -> String {
    tessera_core::chunks::format_bytes(bytes)
}

/// The buckets of `bytes` at two thirds of a task each (as the grace join and the
/// external sort cut them).
fn two_thirds_buckets(budget: &SpillBudget, bytes: u64) -> usize {
    budget.buckets(bytes.saturating_mul(3) / 2, 1)
}

fn note(node: &Node, budget: &SpillBudget, workers: u64) -> Option<String> {
    let task = budget.task_bytes;
    Some(match node {
        Node::Aggregate { input, keys, .. } => {
            if keys.is_empty() {
                "aggregate (no keys): one state per partition, combined in a tree, never spilled"
                    .to_string()
            } else {
                // The states' size is known only as they are made: at most a group per row.
                let most = input.memory(workers).output;
                format!(
                    "groupby [{}]: partial states measured as they are made, at most ≈ {} (a group per row): within a task ({}) combined in a tree, past it hash shuffled into buckets of about a task (up to {}); states past {} spill",
                    keys.join(", "),
                    fb(most),
                    fb(task),
                    budget.buckets(most, 1),
                    fb(budget.keep)
                )
            }
        }
        Node::Join {
            left,
            right,
            spec,
            strategy,
            ..
        } => join_note(left, right, spec, *strategy, budget),
        Node::Sort { input, by } => {
            let bytes = input.memory(1).output;
            let cols: Vec<&str> = by.iter().map(|k| k.column.as_str()).collect();
            if bytes <= task {
                format!(
                    "sort by [{}]: ≈ {} fits a task ({}): sorted in memory",
                    cols.join(", "),
                    fb(bytes),
                    fb(task)
                )
            } else {
                format!(
                    "sort by [{}]: ≈ {} over a task ({}): external sort in about {} ranges, partitions and ranges past {} spilled, a range still over a task cut again",
                    cols.join(", "),
                    fb(bytes),
                    fb(task),
                    two_thirds_buckets(budget, bytes),
                    fb(budget.keep)
                )
            }
        }
        Node::TopK { n, .. } => {
            format!("top {n}: streams, keeping each partition's top rows; never spills")
        }
        Node::Repartition { input, .. } | Node::Window { input, .. } => {
            let what = if matches!(node, Node::Window { .. }) {
                "window function"
            } else {
                "repartition"
            };
            format!(
                "{what}: holds its whole input, ≈ {}, in memory (does not spill; refused over {})",
                fb(input.memory(1).output),
                fb(budget.keep)
            )
        }
        _ => return None,
    })
}

/// The join's projected course, as `exec/join.rs` takes it on the guessed sizes.
fn join_note(
    left: &Node,
    right: &Node,
    spec: &JoinSpec,
    strategy: JoinStrategy,
    budget: &SpillBudget,
) -> String {
    let (lschema, rschema): (SchemaRef, SchemaRef) = (left.schema(), right.schema());
    let (lguess, rguess) = (expected_bytes(left), expected_bytes(right));
    let head = format!(
        "{} join on [{}]: left ≈ {}, right ≈ {} (guessed)",
        spec.how.name(),
        spec.left_on.join(", "),
        fb(lguess),
        fb(rguess)
    );
    let stream_max = (BROADCAST_BYTES.min(STREAMED_BROADCAST_BYTES) as u64).min(budget.task_bytes);
    let course = match strategy {
        JoinStrategy::Broadcast => "broadcast (forced): one hash table of the small side, the other side streamed through it".to_string(),
        JoinStrategy::SortedMerge => "sorted merge of aligned ranges".to_string(),
        JoinStrategy::Shuffle => shuffle_course(lguess.saturating_add(rguess), budget),
        JoinStrategy::Auto => auto_course(spec, &lschema, &rschema, (lguess, rguess), stream_max, budget),
    };
    format!("{head}: {course} (decided again on the sizes measured as it runs)")
}

fn shuffle_course(bytes: u64, budget: &SpillBudget) -> String {
    format!(
        "hash shuffle of both sides into at least {} buckets of about a task ({}) each, spilled past {}",
        budget.buckets(bytes, 1),
        fb(budget.task_bytes),
        fb(budget.keep)
    )
}

/// What a join left to choose does: broadcast the smaller side the join may build on
/// when it fits, else a grace hash join on it, else (outer joins) a shuffle.
fn auto_course(
    spec: &JoinSpec,
    lschema: &SchemaRef,
    rschema: &SchemaRef,
    (lguess, rguess): (u64, u64),
    stream_max: u64,
    budget: &SpillBudget,
) -> String {
    if matches!(spec.how, JoinType::Semi | JoinType::Anti) && lguess < rguess {
        return format!(
            "the left side's distinct keys hashed{}, the right side streamed through them",
            if lguess <= stream_max {
                String::new()
            } else {
                format!(
                    " in a grace hash join (≈ {} past the broadcast bound {})",
                    fb(lguess),
                    fb(stream_max)
                )
            }
        );
    }
    let builds = |side: Side| Oriented::new(side, spec, lschema, rschema).is_some();
    let side = match (builds(Side::Left), builds(Side::Right)) {
        (true, true) if lguess < rguess => Side::Left,
        (_, true) => Side::Right,
        (true, false) => Side::Left,
        (false, false) => return shuffle_course(lguess.saturating_add(rguess), budget),
    };
    let (built, streamed, bytes) = match side {
        Side::Left => ("left", "right", lguess),
        Side::Right => ("right", "left", rguess),
    };
    if bytes <= stream_max {
        return format!(
            "broadcast: the {built} side's hash table built once (at most {}), the {streamed} side streamed through it",
            fb(stream_max)
        );
    }
    // As `grace_join` sizes them: buckets of two thirds of a task, a quarter more for
    // uneven hashing and the tables.
    let n = two_thirds_buckets(budget, bytes);
    let share = (bytes / n as u64).saturating_mul(5) / 4;
    let resident = usize::try_from(budget.keep / share.max(1))
        .unwrap_or(usize::MAX)
        .min(n);
    let plural = if n == 1 { "" } else { "s" };
    if resident == n {
        format!(
            "grace hash join: the {built} side cut into {n} bucket{plural}, all kept in memory with their tables; the {streamed} side streamed through them, never held"
        )
    } else {
        format!(
            "grace hash join: the {built} side cut into {n} bucket{plural}, {resident} kept in memory with their tables and the rest spilled whole; the {streamed} side streamed, its pieces for the spilled buckets written out and joined a bucket at a time"
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::backend::{AggFunc, AggSpec, DataFrameBackend, JoinAlgorithm, SortKey};

    /// A frame in memory of `parts` partitions of `rows` rows of `k` and `v` (16 bytes a row).
    fn frame(parts: usize, rows: i64) -> Arc<Node> {
        let b: Arc<dyn DataFrameBackend> = Arc::new(tessera_cpu_frame::CpuFrameBackend::default());
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, false),
            Field::new("v", DataType::Int64, false),
        ]));
        let parts = (0..parts)
            .map(|_| {
                let k: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
                let v: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
                b.import_batch(RecordBatch::try_new(schema.clone(), vec![k, v]).unwrap())
                    .unwrap()
            })
            .collect();
        Arc::new(Node::Partitions { parts, schema })
    }

    fn budget() -> SpillBudget {
        // Keeps 8 MiB; tasks of 1 MiB.
        SpillBudget::new(PathBuf::from("/nonexistent"), 8 << 20, 1 << 20)
    }

    #[test]
    fn buckets_are_two_thirds_of_a_task() {
        let b = budget();
        assert_eq!(two_thirds_buckets(&b, 0), 1);
        assert_eq!(two_thirds_buckets(&b, 2 << 20), 3);
        assert_eq!(two_thirds_buckets(&b, 100 << 20), 150);
    }

    /// A sort over a task is external, one within it in memory; a groupby's states over a
    /// task are shuffled; each line names its share; inputs come indented below.
    #[test]
    fn sorts_and_groupbys_say_whether_they_fit_a_task() {
        let by = vec![SortKey {
            column: "k".into(),
            descending: false,
        }];
        let big = Node::Sort {
            input: frame(8, 64 << 10),
            by: by.clone(),
        };
        let big_schema = big.schema();
        let notes = operator_notes(&big, &budget(), 2);
        assert_eq!(notes.len(), 1, "{notes:?}");
        // 8 MiB and a few bytes, in ranges of two thirds of a task: 13.
        let bytes = big.inputs()[0].memory(1).output;
        assert!(bytes > 8 << 20 && bytes < 9 << 20, "{bytes}");
        assert_eq!(two_thirds_buckets(&budget(), bytes), 13);
        assert!(
            notes[0].starts_with(
                "sort by [k]: ≈ 8.00 MiB over a task (1.00 MiB): external sort in about 13 ranges"
            ),
            "{notes:?}"
        );
        assert!(
            notes[0].contains("share ≈ 8.00 MiB (50% of the 16.00 MiB"),
            "{notes:?}"
        );
        let small = Node::Sort {
            input: frame(1, 1 << 10),
            by,
        };
        assert!(operator_notes(&small, &budget(), 2)[0].contains("sorted in memory"));
        let grouped = Node::Aggregate {
            input: Arc::new(big),
            keys: vec!["k".into()],
            aggs: vec![AggSpec {
                column: "v".into(),
                func: AggFunc::Sum,
                output: "v".into(),
                with: None,
            }],
            strategy: None,
            schema: big_schema,
        };
        let notes = operator_notes(&grouped, &budget(), 2);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "groupby [k]: partial states measured as they are made, at most ≈ 8.00 MiB"
            ),
            "{notes:?}"
        );
        assert!(notes[0].contains("(up to 9)"), "{notes:?}");
        assert!(notes[1].starts_with("  sort by [k]"), "{notes:?}");
    }

    /// A join side within the broadcast bound is broadcast; past it, a grace hash join
    /// says how many of its buckets the budget keeps; an outer join shuffles.
    #[test]
    fn joins_say_what_they_build_on_and_what_spills() {
        let spec = |how| JoinSpec {
            left_on: vec!["k".into()],
            right_on: vec!["k".into()],
            how,
            suffixes: ("_x".into(), "_y".into()),
            algorithm: JoinAlgorithm::Hash,
        };
        let join = |l: Arc<Node>, r: Arc<Node>, how| {
            let schema = spec(how).output_schema(&l.schema(), &r.schema()).unwrap();
            Node::Join {
                left: l,
                right: r,
                spec: spec(how),
                strategy: JoinStrategy::Auto,
                schema,
            }
        };
        let tiny = || frame(1, 1 << 10);
        let large = || frame(16, 64 << 10); // 16 MiB
        let n = operator_notes(&join(large(), tiny(), JoinType::Inner), &budget(), 2);
        assert!(
            n[0].contains("broadcast: the right side's hash table built once"),
            "{n:?}"
        );
        // 16 MiB and a few bytes in 25 buckets of 2/3 MiB, 5/4 of that each: 8 MiB keeps
        // 9 of them.
        let n = operator_notes(
            &join(large(), frame(32, 64 << 10), JoinType::Inner),
            &budget(),
            2,
        );
        assert!(
            n[0].contains("grace hash join: the left side cut into 25 buckets, 9 kept in memory"),
            "{n:?}"
        );
        assert!(n[0].contains("joined a bucket at a time"), "{n:?}");
        let n = operator_notes(&join(large(), large(), JoinType::Outer), &budget(), 2);
        assert!(n[0].contains("hash shuffle of both sides"), "{n:?}");
        let n = operator_notes(&join(tiny(), large(), JoinType::Semi), &budget(), 2);
        assert!(
            n[0].contains("the left side's distinct keys hashed, the right side streamed"),
            "{n:?}"
        );
    }
}
