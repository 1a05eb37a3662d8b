//! Groupby: partial aggregation per partition — or per run of partitions folded into one
//! state, where the same keys recur from one partition to the next — then a tree combine
//! (fan-in `array.split-every`) when the partial states are small, or a hash shuffle of
//! them.

use std::sync::Arc;

use super::scan::{planned_key_types, scan};
use super::stage::{staged, TaskOutput};
use crate::backend::{AggFunc, AggSpec, DataFrameBackend, Partition};
use crate::error::Result;
use crate::exec::partitions::Build;
use crate::exec::spill::{stash, Spill, Stashed};
use crate::exec::tuning::{
    FOLD_BYTES, FOLD_KEEP_64THS, FOLD_ROWS, PASS_MIN_ROWS, SHUFFLE_FAN, TREE_ROWS,
};
use crate::plan::{empty_batch, GroupStrategy, Node};

/// Partial aggregation fused with the input pipeline, then a tree or shuffle combine.
/// Over a spill budget, states that do not fit it are spilled and combined by shuffle into
/// buckets sized for one worker each.
pub(crate) fn aggregate(
    pipeline: Build,
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    input: &Node,
    keys: &[String],
    aggs: &[AggSpec],
    strategy: Option<GroupStrategy>,
) -> Result<Vec<Stashed>> {
    // A fused program under the groupby goes to the backend with the aggregation, which
    // may aggregate what the program's filter keeps without materialising it.
    let (below, program) = match input {
        Node::Map {
            input: below,
            program,
            ..
        } => (&**below, Some(program)),
        _ => (input, None),
    };
    // Columns the optimizer chose to read in their stored forms
    // (`optimize/stored_forms.rs`); string keys among them come back as dictionaries.
    let (inner, coded_keys) = match below {
        Node::Scan { source, stored, .. } if !stored.is_empty() => {
            let schema = source.schema();
            let keys_coded = stored
                .iter()
                .any(|&i| keys.contains(schema.field(i).name()));
            (scan(below, backend, None, stored.clone()), keys_coded)
        }
        _ => (pipeline(below, backend, spill)?, false),
    };
    let planned = input.schema();
    let task = inner.task.clone();
    // Partial aggregation that keeps most of a partition's rows (as many groups as rows)
    // only copies them. The first partitions (one per worker) are aggregated first; when
    // one of their states keeps more than half of its rows, no partition is aggregated on
    // its own: every partition's rows are hash partitioned as they are, and each bucket
    // aggregates its rows in one pass (DuckDB and Polars switch their partial aggregation
    // off the same way). Not for `first`/`last` (a bucket's rows would be aggregated out
    // of partition order), keys read in a stored form, or under a memory budget.
    let may_pass = !keys.is_empty()
        && inner.n > 2
        && strategy != Some(GroupStrategy::Tree)
        && !coded_keys
        && spill.is_none()
        && aggs
            .iter()
            .all(|a| !matches!(a.func, AggFunc::First | AggFunc::Last));
    let partial = {
        let backend = backend.clone();
        move |part: &Partition| -> Result<Partition> {
            let state = match program {
                Some(program) => backend.aggregate_partial_of(part, program, keys, aggs)?,
                None => backend.aggregate_partial(part, keys, aggs)?,
            };
            if coded_keys {
                planned_key_types(&backend, state, keys, &planned)
            } else {
                Ok(state)
            }
        }
    };
    // The rows a partition passes through: its program's output.
    let rows_of = |part: Partition| -> Result<Partition> {
        match program {
            Some(program) => backend.evaluate(&part, program),
            None => Ok(part),
        }
    };
    // Folding runs of partitions into one state each: for any keyed groupby with more
    // partitions than the first aggregated ones can say anything of (not for keys read in
    // a stored form: each partition's dictionary codes its own values).
    let workers = tessera_runtime::pool::worker_threads()?.max(1);
    let may_fold = !keys.is_empty() && inner.n > 2 * workers && !coded_keys;
    let first = if may_pass || may_fold {
        inner.n.min(workers)
    } else {
        0
    };
    let probed = {
        let task = task.clone();
        let partial = &partial;
        staged("aggregate: partial", first, move |i| {
            let part = task(i)?;
            let state = partial(&part)?;
            Ok(Probed { part, state })
        })?
    };
    if probed
        .iter()
        .any(|p| p.part.num_rows() >= PASS_MIN_ROWS && 2 * p.state.num_rows() > p.part.num_rows())
    {
        let mut rows = probed
            .into_iter()
            .map(|p| stash(spill, backend, rows_of(p.part)?))
            .collect::<Result<Vec<_>>>()?;
        let rest = {
            let backend = backend.clone();
            let rows_of = &rows_of;
            staged("aggregate: pass rows", inner.n - first, move |i| {
                stash(spill, &backend, rows_of(task(first + i)?)?)
            })?
        };
        rows.extend(rest);
        return passed_through(backend, spill, rows, keys, aggs);
    }
    let states: Vec<Partition> = probed.into_iter().map(|p| p.state).collect();
    let fold = if may_fold && states.len() > 1 {
        folds(backend, &states, keys, aggs)?
    } else {
        None
    };
    let folding = fold.is_some();
    let mut partials = match fold {
        Some(combined) => vec![stash(spill, backend, combined)?],
        None => states
            .into_iter()
            .map(|s| stash(spill, backend, s))
            .collect::<Result<Vec<_>>>()?,
    };
    if folding {
        // A run gathers what each partition's program keeps (a selective filter keeps
        // the run small), and is aggregated as plain rows.
        let kept = |i: usize| rows_of(task(i)?);
        let aggregate = |run: &Partition| backend.aggregate_partial(run, keys, aggs);
        partials.extend(folded_runs(
            backend, spill, &kept, &aggregate, first, inner.n, workers,
        )?);
    } else {
        let rest = {
            let backend = backend.clone();
            let partial = &partial;
            staged("aggregate: partial", inner.n - first, move |i| {
                stash(spill, &backend, partial(&task(first + i)?)?)
            })?
        };
        partials.extend(rest);
    }
    if partials.is_empty() {
        let empty = backend.import_batch(empty_batch(&input.schema()))?;
        partials.push(stash(
            spill,
            backend,
            backend.aggregate_partial(&empty, keys, aggs)?,
        )?);
    }
    let rows = total_rows(&partials);
    let bytes: u64 = partials.iter().map(|p| p.nbytes() as u64).sum();
    let too_big = spill.as_ref().is_some_and(|b| bytes > b.task_bytes);
    let strategy = strategy.unwrap_or(if keys.is_empty() || (rows <= TREE_ROWS && !too_big) {
        GroupStrategy::Tree
    } else {
        GroupStrategy::Shuffle
    });
    if keys.is_empty() || strategy == GroupStrategy::Tree || partials.len() == 1 && !too_big {
        let states = partials
            .iter()
            .map(|p| p.load(backend))
            .collect::<Result<Vec<_>>>()?;
        drop(partials);
        let state = tree_combine(backend, states, keys, aggs)?;
        let out = backend.aggregate_finalize(&state, keys, aggs)?;
        return Ok(vec![stash(spill, backend, out)?]);
    }
    let n = shuffle_buckets(spill, bytes, partials.len());
    let buckets = buckets_of(
        "shuffle: hash partition",
        backend,
        spill,
        &partials,
        keys,
        n,
    )?;
    drop(partials);
    let backend2 = backend.clone();
    staged("aggregate: combine", n, move |j| {
        let pieces = load_bucket(&backend2, &buckets, j)?;
        let state = backend2.aggregate_combine(&pieces, keys, aggs)?;
        drop(pieces);
        stash(
            spill,
            &backend2,
            backend2.aggregate_finalize(&state, keys, aggs)?,
        )
    })
}

/// The first partitions' `states` combined, when that keeps fewer than
/// [`FOLD_KEEP_64THS`] of their rows: the keys recur across partitions, and the rest are
/// folded in runs ([`folded_runs`]). `None` where each state holds keys of its own.
fn folds(
    backend: &Arc<dyn DataFrameBackend>,
    states: &[Partition],
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<Option<Partition>> {
    let rows: usize = states.iter().map(|s| s.num_rows()).sum();
    if rows < PASS_MIN_ROWS / 4 {
        return Ok(None);
    }
    let combined = backend.aggregate_combine(states, keys, aggs)?;
    Ok((combined.num_rows() * 64 < rows * FOLD_KEEP_64THS).then_some(combined))
}

/// Partitions `first..n` (`task(i)`) aggregated in runs: a task per worker takes its
/// share of them, in order, and gathers consecutive partitions until they hold
/// [`FOLD_ROWS`] rows or [`FOLD_BYTES`] bytes (a task's bytes within a spill budget, if
/// fewer), then aggregates the run at once (`partial`) — one table for the run, where a
/// state per partition would repeat the keys each holds. The states stay in partition
/// order (`first`/`last` keep theirs).
fn folded_runs(
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    task: &(dyn Fn(usize) -> Result<Partition> + Sync),
    partial: &(dyn Fn(&Partition) -> Result<Partition> + Sync),
    first: usize,
    n: usize,
    workers: usize,
) -> Result<Vec<Stashed>> {
    let max_bytes = spill
        .as_ref()
        .map_or(FOLD_BYTES, |b| FOLD_BYTES.min(b.task_bytes));
    let per = (n - first).div_ceil(workers).max(1);
    let runs: Vec<std::ops::Range<usize>> = (first..n)
        .step_by(per)
        .map(|s| s..(s + per).min(n))
        .collect();
    let states = staged("aggregate: fold", runs.len(), |r| {
        let mut out = Vec::new();
        let mut held: Vec<Partition> = Vec::new();
        let (mut rows, mut bytes) = (0usize, 0u64);
        let mut flush = |held: &mut Vec<Partition>| -> Result<()> {
            let run = match held.len() {
                0 => return Ok(()),
                1 => held.pop().expect("one partition"),
                _ => backend.concat(held)?,
            };
            held.clear();
            out.push(stash(spill, backend, partial(&run)?)?);
            Ok(())
        };
        for i in runs[r].clone() {
            let part = task(i)?;
            rows += part.num_rows();
            bytes = bytes.saturating_add(part.nbytes() as u64);
            held.push(part);
            if rows >= FOLD_ROWS || bytes >= max_bytes {
                flush(&mut held)?;
                (rows, bytes) = (0, 0);
            }
        }
        flush(&mut held)?;
        Ok(out)
    })?;
    Ok(states.into_iter().flatten().collect())
}

/// A partition aggregated first, kept with its rows in case they pass through.
struct Probed {
    part: Partition,
    state: Partition,
}

impl TaskOutput for Probed {
    /// The state: what the task made (its rows are its input, kept only in case they pass
    /// through).
    fn bytes(&self) -> u64 {
        self.state.bytes()
    }
}

/// The groupby of partitions that pass their rows through: the rows are hash partitioned
/// on the keys into as many buckets as partitions (up to [`SHUFFLE_FAN`]), and each
/// bucket aggregates its rows in one pass and finalizes that state (there is nothing to
/// combine it with).
fn passed_through(
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    rows: Vec<Stashed>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<Vec<Stashed>> {
    let n = shuffle_buckets(spill, total_bytes(&rows) as u64, rows.len());
    let buckets = buckets_of("shuffle: hash partition", backend, spill, &rows, keys, n)?;
    drop(rows);
    let backend = backend.clone();
    staged("aggregate: buckets", n, move |j| {
        let pieces = load_bucket(&backend, &buckets, j)?;
        let rows = backend.concat(&pieces)?;
        drop(pieces);
        let state = backend.aggregate_partial(&rows, keys, aggs)?;
        drop(rows);
        stash(
            spill,
            &backend,
            backend.aggregate_finalize(&state, keys, aggs)?,
        )
    })
}

/// Combines states `split_every` at a time until one is left (order preserved, so
/// `first`/`last` stay in partition order).
pub(crate) fn tree_combine(
    backend: &Arc<dyn DataFrameBackend>,
    mut parts: Vec<Partition>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<Partition> {
    let fan_in = crate::config::split_every()?.max(2);
    if parts.len() == 1 {
        return backend.aggregate_combine(&parts, keys, aggs);
    }
    while parts.len() > 1 {
        let groups: Vec<Vec<Partition>> = parts.chunks(fan_in).map(|c| c.to_vec()).collect();
        let backend = backend.clone();
        parts = staged("aggregate: tree", groups.len(), move |g| {
            backend.aggregate_combine(&groups[g], keys, aggs)
        })?;
    }
    Ok(parts.pop().expect("one state left"))
}

/// Buckets for a shuffle of `parts` partitions holding `bytes`: a bucket per partition,
/// at most [`SHUFFLE_FAN`], and under a spill budget at least enough for one bucket to fit
/// a task ([`SpillBudget::buckets`](super::spill::SpillBudget::buckets)).
pub(crate) fn shuffle_buckets(spill: &Spill, bytes: u64, parts: usize) -> usize {
    let n = parts.clamp(1, SHUFFLE_FAN);
    spill.as_ref().map_or(n, |b| b.buckets(bytes, n))
}

/// Consecutive runs of parts (of `sizes` bytes each) cut together into buckets: one part
/// each while there are at most [`SHUFFLE_FAN`], else about `len / SHUFFLE_FAN` parts
/// each, a run ending early where it would pass `max_bytes` (so there may then be more
/// runs than the fan).
pub(crate) fn shuffle_groups(sizes: &[u64], max_bytes: u64) -> Vec<std::ops::Range<usize>> {
    let per = sizes.len().div_ceil(SHUFFLE_FAN).max(1);
    let mut groups = Vec::new();
    let mut start = 0;
    let mut bytes = 0u64;
    for (i, &b) in sizes.iter().enumerate() {
        if i > start && (i - start == per || bytes.saturating_add(b) > max_bytes) {
            groups.push(start..i);
            start = i;
            bytes = 0;
        }
        bytes = bytes.saturating_add(b);
    }
    if start < sizes.len() {
        groups.push(start..sizes.len());
    }
    groups
}

/// `parts` hash partitioned on `keys` into `n` buckets (stage `stage`): bucket `j` of
/// every group holds the rows whose keys hash to `j`. Parts are cut in consecutive groups
/// ([`shuffle_groups`]; one part each unless there are more than [`SHUFFLE_FAN`]), so a
/// bucket's pieces stay in part order.
pub(crate) fn buckets_of(
    stage: &str,
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    parts: &[Stashed],
    keys: &[String],
    n: usize,
) -> Result<Vec<Vec<Stashed>>> {
    let max_bytes = spill.as_ref().map_or(u64::MAX, |b| b.task_bytes);
    let sizes: Vec<u64> = parts.iter().map(|p| p.nbytes() as u64).collect();
    let groups = shuffle_groups(&sizes, max_bytes);
    staged(stage, groups.len(), |g| {
        let loaded = load_all(backend, &parts[groups[g].clone()])?;
        let part = if loaded.len() == 1 {
            loaded
                .into_iter()
                .next()
                .ok_or_else(|| crate::error::Error::Internal("shuffle: an empty group".into()))?
        } else {
            let whole = backend.concat(&loaded)?;
            drop(loaded);
            whole
        };
        backend
            .hash_partition(&part, keys, n)?
            .into_iter()
            .map(|b| stash(spill, backend, b))
            .collect()
    })
}

/// Bucket `j` of every part [`buckets_of`] made, loaded, in part order.
pub(crate) fn load_bucket(
    backend: &Arc<dyn DataFrameBackend>,
    buckets: &[Vec<Stashed>],
    j: usize,
) -> Result<Vec<Partition>> {
    buckets.iter().map(|b| b[j].load(backend)).collect()
}

/// The bytes of `parts`' buffers.
pub(crate) fn total_bytes(parts: &[Stashed]) -> usize {
    parts.iter().map(|p| p.nbytes()).sum()
}

/// The rows of `parts`.
pub(crate) fn total_rows(parts: &[Stashed]) -> usize {
    parts.iter().map(|p| p.num_rows()).sum()
}

pub(crate) fn load_all(
    backend: &Arc<dyn DataFrameBackend>,
    parts: &[Stashed],
) -> Result<Vec<Partition>> {
    parts.iter().map(|p| p.load(backend)).collect()
}

/// `parts` read back and concatenated into one partition of `schema` (an empty one when
/// there are none).
pub(crate) fn load_whole(
    backend: &Arc<dyn DataFrameBackend>,
    parts: &[Stashed],
    schema: &arrow_schema::SchemaRef,
) -> Result<Partition> {
    concat_or_empty(backend, &load_all(backend, parts)?, schema)
}

pub(crate) fn concat_or_empty(
    backend: &Arc<dyn DataFrameBackend>,
    parts: &[Partition],
    schema: &arrow_schema::SchemaRef,
) -> Result<Partition> {
    if parts.is_empty() {
        backend.import_batch(empty_batch(schema))
    } else if parts.len() == 1 {
        Ok(parts[0].clone())
    } else {
        backend.concat(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The groups cover every part once, in order, without an empty one.
    fn check_cover(groups: &[std::ops::Range<usize>], len: usize) {
        let mut next = 0;
        for g in groups {
            assert_eq!(g.start, next);
            assert!(g.end > g.start, "{groups:?}");
            next = g.end;
        }
        assert_eq!(next, len);
    }

    #[test]
    fn shuffle_groups_bound_the_pieces_and_keep_part_order() {
        // Up to the fan, one part a group (nothing is concatenated).
        let few = shuffle_groups(&[10; 200], u64::MAX);
        check_cover(&few, 200);
        assert!(few.iter().all(|g| g.len() == 1));
        // TPC-H SF 100's line items: 5,232 partitions in at most SHUFFLE_FAN groups.
        let many = shuffle_groups(&vec![8 << 20; 5232], u64::MAX);
        check_cover(&many, 5232);
        assert!(many.len() <= SHUFFLE_FAN, "{}", many.len());
        assert!(many
            .iter()
            .all(|g| g.len() <= 5232usize.div_ceil(SHUFFLE_FAN)));
        // A group ends before it passes the task bound, and a part over the bound is a
        // group of its own.
        // 600 parts make runs of 3, cut to 2 where 3 would pass the bound (more groups
        // than the fan then: the bound on a task's bytes comes first).
        let sized = shuffle_groups(&[40; 600], 100);
        check_cover(&sized, 600);
        assert!(sized.iter().all(|g| g.len() == 2), "{sized:?}");
        assert_eq!(shuffle_groups(&[40; 600], u64::MAX).len(), 200);
        let bounded = shuffle_groups(&vec![60; 1000], 100);
        check_cover(&bounded, 1000);
        assert!(bounded.iter().all(|g| g.len() == 1));
        assert!(shuffle_groups(&[], 100).is_empty());
    }

    #[test]
    fn shuffle_buckets_follow_partitions_up_to_the_fan() {
        assert_eq!(shuffle_buckets(&None, 1 << 40, 0), 1);
        assert_eq!(shuffle_buckets(&None, 1 << 40, 100), 100);
        assert_eq!(shuffle_buckets(&None, 1 << 40, 5232), SHUFFLE_FAN);
        // A budget asks for buckets that fit its tasks, past the fan if it must.
        let budget = Some(std::sync::Arc::new(super::super::spill::SpillBudget::new(
            std::env::temp_dir(),
            1 << 30,
            1 << 20,
        )));
        assert_eq!(shuffle_buckets(&budget, 1 << 30, 5232), 1024);
        assert_eq!(shuffle_buckets(&budget, 1 << 20, 10), 10);
    }
}
