//! The sort of a frame larger than the memory it may use: the sample sort of
//! [`crate::exec::sort`] with every partition, range piece and sorted range kept within
//! the spill budget, and ranges no larger than a task.
//!
//! Without a budget a sort holds its whole input: it computes every partition, cuts each
//! into as many ranges as there are partitions and sorts each range. Within a budget:
//!
//! 1. Each input partition is kept (spilled past the budget) with its sample of
//!    evenly spaced rows taken while it is in memory, so nothing is read back to sample.
//! 2. The range count is chosen from the bytes, so that a range is about two thirds of a
//!    task, and each partition is cut into the ranges (the pieces kept within the
//!    budget, the partition dropped once cut).
//! 3. Each range's pieces, in partition order, are concatenated and sorted stably, one
//!    range a task — unless the range is over a task after all (the samples missed a
//!    heavy region): it is sampled again and cut into smaller ranges, up to
//!    [`SORT_MAX_DEPTH`] times.
//! 4. A range that cutting does not shrink is held by one key: its pieces are sorted one
//!    at a time into runs, and each run is cut into its rows below that key, equal to it
//!    and above it. The rows equal to the key need no sorting — in input order they are
//!    as a stable sort leaves them — and the rows below and above are ranges of their
//!    own, without that key. Only a range still over a task after [`SORT_MAX_DEPTH`]
//!    cuts, or whose key does not equal itself (NaN), is sorted whole.
//!
//! The output is the ranges in order, each a partition kept within the budget: a writer
//! streams them one at a time, so a sorted frame many times the limit can be written.
//! Top-k and `sort_values(...).head(n)` never come here: each partition keeps its `n`
//! first rows (`Node::TopK`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_schema::SchemaRef;

use super::aggregate::{load_whole, total_bytes};
use super::join::column_program;
use super::sort::{range_bounds, sort_sample};
use super::stage::{staged, TaskOutput};
use crate::backend::{DataFrameBackend, Partition, SortKey};
use crate::error::{Error, Result};
use crate::exec::partitions::Pipeline;
use crate::exec::spill::{stash, Spill, SpillBudget, Stashed};
use crate::exec::tuning::{SORT_MAX_DEPTH, SORT_MIN_RANGE_ROWS};

/// What an external sort did: for tests and the reasons in its doc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SortReport {
    /// Ranges the input was first cut into.
    pub ranges: usize,
    /// Ranges (or parts of them) over a task, cut again.
    pub splits: usize,
    /// Ranges that cutting did not shrink, split around the key that holds them.
    pub key_splits: usize,
    /// Ranges over a task sorted whole (neither cutting nor one key applied).
    pub whole: usize,
}

#[derive(Default)]
struct Counts {
    splits: AtomicUsize,
    key_splits: AtomicUsize,
    whole: AtomicUsize,
}

/// A partition kept, with its sample.
struct Kept {
    part: Stashed,
    sample: Partition,
}

impl TaskOutput for Kept {
    fn bytes(&self) -> u64 {
        self.part.nbytes() as u64
    }
}

/// `input` sorted by `by` within `budget` (see the module doc): its ranges in order.
///
/// # Errors
///
/// A sort key that is not a column of `schema`; what the backend or the spill files
/// report.
pub(crate) fn external_sort(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    input: Pipeline,
    by: &[SortKey],
    schema: &SchemaRef,
) -> Result<(Vec<Stashed>, SortReport)> {
    for k in by {
        if schema.field_with_name(&k.column).is_err() {
            return Err(Error::invalid(
                "sort_values",
                format!("no column '{}'", k.column),
            ));
        }
    }
    let spill: Spill = Some(budget.clone());
    let task = input.task;
    let kept = staged("sort: keep", input.n, |i| {
        let part = task(i)?;
        let sample = sort_sample(backend, &part, by)?;
        Ok(Kept {
            part: stash(&spill, backend, part)?,
            sample,
        })
    })?;
    let bytes: u64 = kept.iter().map(|k| k.part.nbytes() as u64).sum();
    // Never ranges of fewer than SORT_MIN_RANGE_ROWS rows on average: `nbytes` is an
    // estimate, and partitions whose arrays share a larger one's buffers count them whole.
    let rows: usize = kept.iter().map(|k| k.part.num_rows()).sum();
    let n = budget
        .buckets(bytes.saturating_mul(3) / 2, kept.len())
        .min(rows.div_ceil(SORT_MIN_RANGE_ROWS).max(kept.len()));
    let samples: Vec<Partition> = kept.iter().map(|k| k.sample.clone()).collect();
    let mut report = SortReport {
        ranges: n,
        ..SortReport::default()
    };
    let bounds = match range_bounds(backend, &samples, by, n)? {
        Some(bounds) if n > 1 => bounds,
        // One range, or no rows at all: the input is one range.
        _ => {
            let parts: Vec<Stashed> = kept.into_iter().map(|k| k.part).collect();
            let counts = Counts::default();
            let out = sort_range(backend, budget, &parts, by, schema, 0, &counts)?;
            report.ranges = 1;
            return Ok((out, counts.report(report)));
        }
    };
    drop(samples);
    let parts: Vec<Mutex<Option<Stashed>>> =
        kept.into_iter().map(|k| Mutex::new(Some(k.part))).collect();
    let cut = staged("sort: range partition", parts.len(), |i| {
        let stashed = lock(&parts[i])?
            .take()
            .ok_or_else(|| Error::Internal("external sort: a part cut twice".into()))?;
        let part = stashed.load(backend)?;
        drop(stashed);
        backend
            .range_partition(&part, by, &bounds)?
            .into_iter()
            .map(|piece| stash(&spill, backend, piece))
            .collect::<Result<Vec<_>>>()
    })?;
    let mut ranges: Vec<Vec<Stashed>> = (0..n).map(|_| Vec::with_capacity(cut.len())).collect();
    for pieces in cut {
        for (j, piece) in pieces.into_iter().enumerate() {
            ranges[j].push(piece);
        }
    }
    let counts = Counts::default();
    let sorted = staged("sort: local", n, |j| {
        sort_range(backend, budget, &ranges[j], by, schema, 0, &counts)
    })?;
    Ok((
        sorted.into_iter().flatten().collect(),
        counts.report(report),
    ))
}

impl Counts {
    fn report(&self, report: SortReport) -> SortReport {
        SortReport {
            splits: self.splits.load(Ordering::Relaxed),
            key_splits: self.key_splits.load(Ordering::Relaxed),
            whole: self.whole.load(Ordering::Relaxed),
            ..report
        }
    }
}

/// One range's pieces (in input order) sorted: directly when they fit a task, else cut
/// into smaller ranges by a new sample, `depth` cuts down.
fn sort_range(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    pieces: &[Stashed],
    by: &[SortKey],
    schema: &SchemaRef,
    depth: usize,
    counts: &Counts,
) -> Result<Vec<Stashed>> {
    let spill: Spill = Some(budget.clone());
    let bytes = total_bytes(pieces) as u64;
    let rows: usize = pieces.iter().map(Stashed::num_rows).sum();
    let fits = bytes <= budget.task_bytes || rows <= SORT_MIN_RANGE_ROWS;
    if fits || depth >= SORT_MAX_DEPTH {
        if !fits {
            counts.whole.fetch_add(1, Ordering::Relaxed);
        }
        let all = load_whole(backend, pieces, schema)?;
        return Ok(vec![stash(&spill, backend, backend.sort(&all, by)?)?]);
    }
    counts.splits.fetch_add(1, Ordering::Relaxed);
    let m = usize::try_from(bytes.saturating_mul(3) / 2 / budget.task_bytes.max(1))
        .unwrap_or(usize::MAX)
        .min(rows.div_ceil(SORT_MIN_RANGE_ROWS))
        .clamp(4, 64);
    let samples = pieces
        .iter()
        .filter(|p| p.num_rows() > 0)
        .map(|p| sort_sample(backend, &p.load(backend)?, by))
        .collect::<Result<Vec<_>>>()?;
    let Some(bounds) = range_bounds(backend, &samples, by, m)? else {
        return Ok(Vec::new());
    };
    let mut sub: Vec<Vec<Stashed>> = (0..m).map(|_| Vec::new()).collect();
    for p in pieces.iter().filter(|p| p.num_rows() > 0) {
        let cut = backend.range_partition(&p.load(backend)?, by, &bounds)?;
        for (k, piece) in cut.into_iter().enumerate() {
            if piece.num_rows() > 0 {
                sub[k].push(stash(&spill, backend, piece)?);
            }
        }
    }
    let mut out = Vec::new();
    for s in &sub {
        let sub_bytes = total_bytes(s) as u64;
        let sub_rows: usize = s.iter().map(Stashed::num_rows).sum();
        if sub_bytes > budget.task_bytes
            && sub_rows > SORT_MIN_RANGE_ROWS
            && sub_bytes.saturating_mul(4) >= bytes.saturating_mul(3)
        {
            out.extend(split_at_key(backend, budget, s, by, schema, depth, counts)?);
        } else if !s.is_empty() {
            out.extend(sort_range(
                backend,
                budget,
                s,
                by,
                schema,
                depth + 1,
                counts,
            )?);
        }
    }
    Ok(out)
}

/// A range that cutting did not shrink: one key's rows hold it. Its pieces are sorted
/// one at a time into runs, and the key of the last row of the largest run taken as that
/// key: each run is cut into its rows below the key, equal to it (the end of what is not
/// above it, found by bisection) and above it. The rows equal to the key are the middle
/// of the range as they stand, in input order (as a stable sort leaves them), and the
/// rows below and above, which no longer hold that key, are sorted as ranges of their own.
#[allow(clippy::too_many_arguments)]
fn split_at_key(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    pieces: &[Stashed],
    by: &[SortKey],
    schema: &SchemaRef,
    depth: usize,
    counts: &Counts,
) -> Result<Vec<Stashed>> {
    let spill: Spill = Some(budget.clone());
    let keys = column_program(&by.iter().map(|k| k.column.clone()).collect::<Vec<_>>());
    let key_row = |run: &Partition, row: usize| -> Result<arrow_array::RecordBatch> {
        backend.export_batch(&backend.evaluate(&backend.slice(run, row, 1)?, &keys)?)
    };
    let runs = pieces
        .iter()
        .filter(|p| p.num_rows() > 0)
        .map(|p| stash(&spill, backend, backend.sort(&p.load(backend)?, by)?))
        .collect::<Result<Vec<_>>>()?;
    let Some(largest) = runs.iter().max_by_key(|r| r.num_rows()) else {
        return Ok(Vec::new());
    };
    let largest = largest.load(backend)?;
    let key = key_row(&largest, largest.num_rows() - 1)?;
    drop(largest);
    let (mut below, mut equal, mut above) = (Vec::new(), Vec::new(), Vec::new());
    for run in &runs {
        let run = run.load(backend)?;
        let mut cut = backend.range_partition(&run, by, &key)?.into_iter();
        let (not_above, over) = match (cut.next(), cut.next()) {
            (Some(a), Some(b)) => (a, b),
            _ => {
                return Err(Error::Internal(
                    "external sort: a cut by one bound is not two ranges".into(),
                ))
            }
        };
        drop(run);
        // `not_above` is sorted and none of it is past the key: the rows equal to it are
        // its end.
        let (mut lo, mut hi) = (0, not_above.num_rows());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key_row(&not_above, mid)? == key {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let rows = not_above.num_rows();
        if lo > 0 {
            below.push(stash(&spill, backend, backend.slice(&not_above, 0, lo)?)?);
        }
        if lo < rows {
            equal.push(stash(
                &spill,
                backend,
                backend.slice(&not_above, lo, rows - lo)?,
            )?);
        }
        if over.num_rows() > 0 {
            above.push(stash(&spill, backend, over)?);
        }
    }
    drop(runs);
    if equal.is_empty() {
        // Not even the key taken had rows equal to it (a key that does not equal itself,
        // such as NaN): the range is sorted whole.
        return sort_range(backend, budget, pieces, by, schema, SORT_MAX_DEPTH, counts);
    }
    counts.key_splits.fetch_add(1, Ordering::Relaxed);
    let mut out = sort_range(backend, budget, &below, by, schema, depth + 1, counts)?;
    out.extend(equal);
    out.extend(sort_range(
        backend,
        budget,
        &above,
        by,
        schema,
        depth + 1,
        counts,
    )?);
    Ok(out)
}

/// Locks `m`, naming a task that panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| Error::Internal("external sort: a task panicked holding a part".into()))
}

#[cfg(test)]
mod tests;
