//! Joins: the small side broadcast (hashed once, the other side streamed through it), a
//! sorted merge of aligned ranges when both sides are sorted on the keys, or a hash
//! shuffle of both sides into matching buckets; semi and anti joins by matched keys.

use std::sync::Arc;

use arrow_array::RecordBatch;

use super::aggregate::{
    buckets_of, concat_or_empty, load_all, load_bucket, shuffle_buckets, total_bytes, total_rows,
};
use super::stage::staged;
use crate::backend::{
    DataFrameBackend, FrameProgram, FrameStep, JoinAlgorithm, JoinSpec, JoinType, Partition,
    SortKey,
};
use crate::error::{Error, Result};
use crate::exec::grace_join::{grace_join, Oriented};
use crate::exec::partitions::{Build, Pipeline};
use crate::exec::spill::{stash, Spill, Stashed};
pub(crate) use crate::exec::swap_join::Side;
use crate::exec::tuning::{
    BROADCAST_BYTES, BROADCAST_STRING_ROWS, GRACE_GUESS_MARGIN, JOIN_BUCKET_ROWS,
    STREAMED_BROADCAST_BYTES,
};
use crate::expr::Expr;
use crate::plan::{JoinStrategy, Node};

/// Broadcast, sorted-merge or shuffle join. Over a spill budget a side is broadcast only
/// when it fits one worker's share, both sides are kept (and spilled) as partitions, and
/// the shuffle makes buckets small enough for a worker to join one (a grace hash join).
///
/// A broadcast join streams: the side guessed smaller (`join_guess`; of those the join
/// type lets be whole, and the right one when the user forces a broadcast of an inner
/// join, as [`JoinStrategy::Broadcast`] says) is computed first, and when it is small enough its
/// hash table is built once and the other side's pipeline runs through it partition by
/// partition — a scan, filter, probe and whatever follows the join run as one task, and
/// the large side is never held whole. Only when that side turns out too large is the
/// other one computed too, and the choice made on both measured sizes.
pub(crate) fn join(
    pipeline: Build,
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    left_node: &Node,
    right_node: &Node,
    spec: &JoinSpec,
    strategy: JoinStrategy,
) -> Result<Pipeline> {
    let both_sorted = sorted_on_keys(backend, left_node, right_node, spec);
    let (lschema, rschema) = (left_node.schema(), right_node.schema());
    let hash = JoinSpec {
        algorithm: JoinAlgorithm::Hash,
        ..spec.clone()
    };
    let broadcast_max = spill.as_ref().map_or(BROADCAST_BYTES, |b| {
        BROADCAST_BYTES.min(b.task_bytes as usize)
    });
    let stream_max = broadcast_max.min(STREAMED_BROADCAST_BYTES);
    // Whether a side measured at `bytes` may be broadcast: within the bound, and not a
    // large string-keyed build that a shuffle would build on every worker.
    let workers = tessera_runtime::pool::worker_threads()?;
    let string_keys = |schema: &arrow_schema::SchemaRef, keys: &[String]| {
        keys.iter().any(|k| {
            schema
                .field_with_name(k)
                .is_ok_and(|f| crate::expr::is_string(f.data_type()))
        })
    };
    let (lstrings, rstrings) = (
        string_keys(&lschema, &spec.left_on),
        string_keys(&rschema, &spec.right_on),
    );
    let cheap_build = |parts: &[Stashed], strings: bool| {
        !strings || workers < 2 || total_rows(parts) <= BROADCAST_STRING_ROWS
    };
    let may_stream =
        !both_sorted && matches!(strategy, JoinStrategy::Auto | JoinStrategy::Broadcast);
    let (mut left, mut right) = (None, None);
    if may_stream {
        let (lguess, rguess) = (
            crate::plan::join_guess::expected_bytes(left_node),
            crate::plan::join_guess::expected_bytes(right_node),
        );
        let can_left = matches!(spec.how, JoinType::Inner | JoinType::Right);
        let can_right = matches!(
            spec.how,
            JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti
        );
        let forced = strategy == JoinStrategy::Broadcast;
        // A semi or anti join of a small left side with a large right one: the left keys
        // are hashed, not the right side's.
        let distinct =
            |keys: &[String]| keys.iter().enumerate().all(|(i, k)| !keys[..i].contains(k));
        if matches!(spec.how, JoinType::Semi | JoinType::Anti)
            && lguess < rguess
            && !forced
            && distinct(&spec.left_on)
            && distinct(&spec.right_on)
        {
            let l = pipeline(left_node, backend, spill)?.materialize_stashed(spill, backend)?;
            if total_bytes(&l) <= stream_max {
                let probe = pipeline(right_node, backend, spill)?;
                return semi_by_matched_keys(
                    backend, spill, l, probe, hash, stream_max, &lschema, &rschema,
                );
            }
            left = Some(l);
        }
        let first = match (can_left, can_right) {
            (true, true) if lguess < rguess && !forced => Some(Side::Left),
            (_, true) => Some(Side::Right),
            (true, false) => Some(Side::Left),
            (false, false) => None,
        };
        match first {
            _ if left.is_some() => {}
            Some(Side::Right) => {
                let r =
                    pipeline(right_node, backend, spill)?.materialize_stashed(spill, backend)?;
                if forced || total_bytes(&r) <= stream_max && cheap_build(&r, rstrings) {
                    let probe = pipeline(left_node, backend, spill)?;
                    return broadcast(backend, &r, Side::Right, probe, hash, &lschema, &rschema);
                }
                // Within a budget the side computed first is built on whatever its size,
                // and the other streams (`grace_join`) — unless it measures well past
                // what the other is guessed to be: then the other is computed too and
                // the smaller built on.
                if let (Some(budget), Some(o), JoinStrategy::Auto, true) = (
                    spill,
                    Oriented::new(Side::Right, &hash, &lschema, &rschema),
                    strategy,
                    total_bytes(&r) as u64 <= lguess.saturating_mul(GRACE_GUESS_MARGIN),
                ) {
                    let probe = pipeline(left_node, backend, spill)?;
                    return Ok(grace_join(backend, budget, r, probe, o)?.0);
                }
                right = Some(r);
            }
            Some(Side::Left) => {
                let l = pipeline(left_node, backend, spill)?.materialize_stashed(spill, backend)?;
                if forced || total_bytes(&l) <= stream_max && cheap_build(&l, lstrings) {
                    let probe = pipeline(right_node, backend, spill)?;
                    return broadcast(backend, &l, Side::Left, probe, hash, &lschema, &rschema);
                }
                if let (Some(budget), Some(o), JoinStrategy::Auto, true) = (
                    spill,
                    Oriented::new(Side::Left, &hash, &lschema, &rschema),
                    strategy,
                    total_bytes(&l) as u64 <= rguess.saturating_mul(GRACE_GUESS_MARGIN),
                ) {
                    let probe = pipeline(right_node, backend, spill)?;
                    return Ok(grace_join(backend, budget, l, probe, o)?.0);
                }
                left = Some(l);
            }
            None => {}
        }
    }
    let left = match left {
        Some(l) => l,
        None => pipeline(left_node, backend, spill)?.materialize_stashed(spill, backend)?,
    };
    let right = match right {
        Some(r) => r,
        None => pipeline(right_node, backend, spill)?.materialize_stashed(spill, backend)?,
    };
    let (lbytes, rbytes) = (total_bytes(&left), total_bytes(&right));
    // A side too costly to build alone counts as too large to broadcast.
    let side = broadcast_side(
        spec,
        strategy,
        if cheap_build(&left, lstrings) {
            lbytes
        } else {
            usize::MAX
        },
        if cheap_build(&right, rstrings) {
            rbytes
        } else {
            usize::MAX
        },
        broadcast_max,
    );
    let fits = spill
        .as_ref()
        .is_none_or(|b| (lbytes + rbytes) as u64 <= b.task_bytes);
    let keep = |parts: Vec<Partition>| -> Result<Pipeline> {
        let parts = parts
            .into_iter()
            .map(|p| stash(spill, backend, p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Pipeline::stashed(parts, backend))
    };
    if both_sorted && fits && matches!(strategy, JoinStrategy::Auto | JoinStrategy::SortedMerge) {
        let (left, right) = (load_all(backend, &left)?, load_all(backend, &right)?);
        return keep(sorted_merge_join(
            backend, left, right, spec, &lschema, &rschema,
        )?);
    }
    // A side measured small enough after all (the guess picked the other one first).
    match side {
        Some(Side::Right) => {
            let probe = Pipeline::stashed(left, backend);
            return broadcast(
                backend,
                &right,
                Side::Right,
                probe,
                hash,
                &lschema,
                &rschema,
            );
        }
        Some(Side::Left) => {
            let probe = Pipeline::stashed(right, backend);
            return broadcast(backend, &left, Side::Left, probe, hash, &lschema, &rschema);
        }
        None => {}
    }
    // Within a budget, the smaller side is built on when the join allows it, and the
    // other runs through its buckets (`grace_join`). A join that can only build on its
    // larger side (a left join of a small left side) shuffles, as outer joins do: the
    // shuffle's many small buckets keep the large side's tables near the caches (TPC-H
    // Q13 at scale 10 under 1 GiB: 1.9 s shuffled, 2.7 s built on its 15 million orders).
    if let (Some(budget), JoinStrategy::Auto) = (spill, strategy) {
        let smaller = if rbytes <= lbytes {
            Side::Right
        } else {
            Side::Left
        };
        if let Some((side, o)) =
            Oriented::new(smaller, &hash, &lschema, &rschema).map(|o| (smaller, o))
        {
            let (build, probe) = match side {
                Side::Right => (right, left),
                Side::Left => (left, right),
            };
            let probe = Pipeline::stashed(probe, backend);
            return Ok(grace_join(backend, budget, build, probe, o)?.0);
        }
    }
    // The right side is each bucket's build side: enough buckets to keep its tables small.
    let n = shuffle_buckets(
        spill,
        (lbytes + rbytes) as u64,
        left.len()
            .max(right.len())
            .max(total_rows(&right).div_ceil(JOIN_BUCKET_ROWS)),
    );
    let lb = buckets_of(
        "join: partition left",
        backend,
        spill,
        &left,
        &spec.left_on,
        n,
    )?;
    drop(left);
    let rb = buckets_of(
        "join: partition right",
        backend,
        spill,
        &right,
        &spec.right_on,
        n,
    )?;
    drop(right);
    let b = backend.clone();
    staged("join: hash", n, move |j| {
        let (l, r) = (load_bucket(&b, &lb, j)?, load_bucket(&b, &rb, j)?);
        let l = concat_or_empty(&b, &l, &lschema)?;
        let r = concat_or_empty(&b, &r, &rschema)?;
        stash(spill, &b, b.join(&l, &r, &hash)?)
    })
    .map(|parts| Pipeline::stashed(parts, backend))
}

/// `probe`'s partitions each joined with the whole `small` side (the join's `side`), whose
/// hash table is built once: as written for a small right side, turned around
/// (`swap_join`) for a small left one where the join allows, else the small left side
/// joined whole with each right partition.
pub(crate) fn broadcast(
    backend: &Arc<dyn DataFrameBackend>,
    small: &[Stashed],
    side: Side,
    probe: Pipeline,
    hash: JoinSpec,
    lschema: &arrow_schema::SchemaRef,
    rschema: &arrow_schema::SchemaRef,
) -> Result<Pipeline> {
    let schema = if side == Side::Right {
        rschema
    } else {
        lschema
    };
    let small = concat_or_empty(backend, &load_all(backend, small)?, schema)?;
    let (task, b) = (probe.task.clone(), backend.clone());
    let task: Arc<dyn Fn(usize) -> Result<Partition> + Send + Sync> = match side {
        Side::Right => {
            let r = backend.prepare_broadcast(&small, &hash)?;
            Arc::new(move |i| b.join(&task(i)?, &r, &hash))
        }
        Side::Left => match crate::exec::swap_join::swapped(&hash, lschema, rschema) {
            Some(turned) => {
                let l = backend.prepare_broadcast(&small, &turned.spec)?;
                Arc::new(move |j| {
                    let joined = b.join(&task(j)?, &l, &turned.spec)?;
                    b.evaluate(&joined, &turned.restore)
                })
            }
            None => Arc::new(move |j| b.join(&small, &task(j)?, &hash)),
        },
    };
    Ok(Pipeline { n: probe.n, task })
}

/// A semi or anti join whose left side is the small one. The left rows that have a match
/// are those whose keys some right row has; found the other way around, only the left
/// keys are hashed: each partition of the right side, streamed in parallel, keeps its
/// rows whose keys are among them (its keys only), and the left partitions are then
/// joined with those keys as written. TPC-H Q4 at scale 10 semi-joins 570 thousand orders
/// with 38 million late line items, whose keys would otherwise be hashed in one table.
/// Key equality is the join's either way: the matched keys are right values equal to
/// left ones, and a left row has a match on the right exactly when it has one among
/// them.
///
/// Within a spill budget the keys found could be as many as the right side's rows: each
/// partition keeps its distinct ones (at most the left side's keys each; TPC-H Q4's line
/// items, sorted by order, find each order's key in one or two partitions), kept within
/// the budget, and when they are still past `max` bytes they are the build side of a
/// grace join that the left side streams through (`grace_join`).
#[allow(clippy::too_many_arguments)]
fn semi_by_matched_keys(
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    small: Vec<Stashed>,
    probe: Pipeline,
    hash: JoinSpec,
    max: usize,
    lschema: &arrow_schema::SchemaRef,
    rschema: &arrow_schema::SchemaRef,
) -> Result<Pipeline> {
    let left = load_all(backend, &small)?;
    // Only the key columns are copied into the table's side.
    let key_program = column_program(&hash.left_on);
    let left_keys = left
        .iter()
        .map(|p| backend.evaluate(p, &key_program))
        .collect::<Result<Vec<_>>>()?;
    let left_keys = concat_or_empty(
        backend,
        &left_keys,
        &key_schema(lschema, &hash.left_on, "join")?,
    )?;
    let find = JoinSpec {
        left_on: hash.right_on.clone(),
        right_on: hash.left_on.clone(),
        how: JoinType::Semi,
        suffixes: hash.suffixes.clone(),
        algorithm: JoinAlgorithm::Hash,
    };
    let table = backend.prepare_broadcast(&left_keys, &find)?;
    drop(left_keys);
    let right_keys = column_program(&hash.right_on);
    let (task, b, keys_of) = (probe.task.clone(), backend.clone(), &hash.right_on);
    let matched = staged("join: match keys", probe.n, move |i| {
        let keys = b.evaluate(&b.join(&task(i)?, &table, &find)?, &right_keys)?;
        match spill {
            None => Ok(Stashed::Resident {
                part: keys,
                _charge: None,
            }),
            Some(_) => stash(spill, &b, b.aggregate_partial(&keys, keys_of, &[])?),
        }
    })?;
    if let Some(budget) = spill {
        if total_bytes(&matched) > max {
            let o = Oriented::new(Side::Right, &hash, lschema, rschema)
                .ok_or_else(|| Error::Internal("a semi join that cannot build right".into()))?
                .with_build_schema(key_schema(rschema, &hash.right_on, "join")?);
            let left = Pipeline::stashed(small, backend);
            return Ok(grace_join(backend, budget, matched, left, o)?.0);
        }
    }
    drop(small);
    let matched = load_all(backend, &matched)?;
    let matched = concat_or_empty(
        backend,
        &matched,
        &key_schema(rschema, &hash.right_on, "join")?,
    )?;
    let matched = backend.prepare_broadcast(&matched, &hash)?;
    let b = backend.clone();
    Ok(Pipeline {
        n: left.len(),
        task: Arc::new(move |i| b.join(&left[i], &matched, &hash)),
    })
}

/// A program that keeps the columns `names`, in that order.
pub(crate) fn column_program(names: &[String]) -> FrameProgram {
    FrameProgram {
        steps: vec![FrameStep::Project(
            names
                .iter()
                .map(|k| (k.clone(), Expr::Column(k.clone())))
                .collect(),
        )],
    }
}

/// `schema` projected onto the key columns `keys` (errors name `op`).
fn key_schema(
    schema: &arrow_schema::SchemaRef,
    keys: &[String],
    op: &str,
) -> Result<arrow_schema::SchemaRef> {
    let at = |e| Error::arrow(op, e);
    let indices = keys
        .iter()
        .map(|k| schema.index_of(k))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(at)?;
    Ok(Arc::new(schema.project(&indices).map_err(at)?))
}

/// The side a join broadcasts, if any: one of at most `max` bytes (`Auto`) or any
/// (`Broadcast`) that the join type allows to be whole (the right side of inner, left, semi
/// and anti joins, the left side of inner and right joins; outer joins shuffle), the smaller when
/// both could be.
pub(crate) fn broadcast_side(
    spec: &JoinSpec,
    strategy: JoinStrategy,
    lbytes: usize,
    rbytes: usize,
    max: usize,
) -> Option<Side> {
    let (auto, forced) = (
        strategy == JoinStrategy::Auto,
        strategy == JoinStrategy::Broadcast,
    );
    let small_right = (auto && rbytes <= max || forced)
        && matches!(
            spec.how,
            JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti
        );
    let small_left =
        (auto && lbytes <= max || forced) && matches!(spec.how, JoinType::Inner | JoinType::Right);
    if small_right && (rbytes <= lbytes || !small_left || forced) {
        Some(Side::Right)
    } else if small_left {
        Some(Side::Left)
    } else {
        None
    }
}

/// True when both sides are sorted ascending on their join keys and the backend can merge
/// them: the sorted-merge join applies.
pub(crate) fn sorted_on_keys(
    backend: &Arc<dyn DataFrameBackend>,
    left: &Node,
    right: &Node,
    spec: &JoinSpec,
) -> bool {
    let ascending = |keys: &[String], sorted: Option<Vec<SortKey>>| {
        sorted.is_some_and(|by| {
            by.len() >= keys.len()
                && by
                    .iter()
                    .zip(keys)
                    .all(|(k, c)| !k.descending && &k.column == c)
        })
    };
    ascending(&spec.left_on, left.sorted_by())
        && ascending(&spec.right_on, right.sorted_by())
        && !backend
            .capabilities()
            .missing_join_algorithms
            .contains(&JoinAlgorithm::SortedMerge)
}

/// Both sides are globally sorted on the keys: split the right side at the left
/// partitions' last keys, so range `i` of the right meets left partition `i`, and merge.
pub(crate) fn sorted_merge_join(
    backend: &Arc<dyn DataFrameBackend>,
    left: Vec<Partition>,
    right: Vec<Partition>,
    spec: &JoinSpec,
    lschema: &arrow_schema::SchemaRef,
    rschema: &arrow_schema::SchemaRef,
) -> Result<Vec<Partition>> {
    let mut left: Vec<Partition> = left.into_iter().filter(|p| p.num_rows() > 0).collect();
    if left.is_empty() {
        // Still one (empty) left partition: right and outer joins keep every right row.
        left.push(concat_or_empty(backend, &[], lschema)?);
    }
    // Bounds: the last key row of every left partition but the last, as a host batch of
    // the key columns renamed to the right side's names.
    let key_program = FrameProgram {
        steps: vec![FrameStep::Project(
            spec.left_on
                .iter()
                .zip(&spec.right_on)
                .map(|(l, r)| (r.clone(), Expr::Column(l.clone())))
                .collect(),
        )],
    };
    let mut last_rows = Vec::new();
    for p in &left[..left.len() - 1] {
        let last = backend.slice(p, p.num_rows().saturating_sub(1), 1)?;
        last_rows.push(backend.export_batch(&backend.evaluate(&last, &key_program)?)?);
    }
    let by: Vec<SortKey> = spec
        .right_on
        .iter()
        .map(|c| SortKey {
            column: c.clone(),
            descending: false,
        })
        .collect();
    let bounds = if last_rows.is_empty() {
        RecordBatch::new_empty(key_schema(rschema, &spec.right_on, "merge")?)
    } else {
        arrow_select::concat::concat_batches(&last_rows[0].schema(), &last_rows)
            .map_err(|e| Error::arrow_in("merge", "join bounds", e))?
    };
    let pieces = {
        let backend = backend.clone();
        let right = &right;
        let (by, bounds) = (&by, &bounds);
        staged("join: range partition", right.len(), move |j| {
            backend.range_partition(&right[j], by, bounds)
        })?
    };
    let merge = JoinSpec {
        algorithm: JoinAlgorithm::SortedMerge,
        ..spec.clone()
    };
    let backend = backend.clone();
    let rschema = rschema.clone();
    // Right ranges past the last left partition only matter for right/outer joins; they
    // all fall into the last range, which meets the last left partition.
    staged("join: sorted merge", left.len(), move |i| {
        let r: Vec<Partition> = pieces.iter().map(|p| p[i].clone()).collect();
        let r = concat_or_empty(&backend, &r, &rschema)?;
        backend.join(&left[i], &r, &merge)
    })
}
