//! Groupby: partial aggregation per partition, then a tree combine (fan-in
//! `array.split-every`) when the partial states are small, or a hash shuffle of them.

use std::sync::Arc;

use super::scan::{planned_key_types, scan};
use super::stage::staged;
use super::{pipeline, SHUFFLE_ROWS};
use crate::backend::{AggSpec, DataFrameBackend, Partition};
use crate::error::Result;
use crate::exec::spill::{stash, Spill, Stashed};
use crate::plan::{empty_batch, GroupStrategy, Node};

/// Partial aggregation fused with the input pipeline, then a tree or shuffle combine.
/// Over a spill budget, states that do not fit it are spilled and combined by shuffle into
/// buckets sized for one worker each.
pub(crate) fn aggregate(
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
    let mut partials = {
        let backend = backend.clone();
        staged("aggregate: partial", inner.n, move |i| {
            let part = task(i)?;
            let state = match program {
                Some(program) => backend.aggregate_partial_of(&part, program, keys, aggs)?,
                None => backend.aggregate_partial(&part, keys, aggs)?,
            };
            let state = if coded_keys {
                planned_key_types(&backend, state, keys, &planned)?
            } else {
                state
            };
            stash(spill, &backend, state)
        })?
    };
    if partials.is_empty() {
        let empty = backend.import_batch(empty_batch(&input.schema()))?;
        partials.push(stash(
            spill,
            backend,
            backend.aggregate_partial(&empty, keys, aggs)?,
        )?);
    }
    let rows: usize = partials.iter().map(|p| p.num_rows()).sum();
    let bytes: u64 = partials.iter().map(|p| p.nbytes() as u64).sum();
    let too_big = spill.as_ref().is_some_and(|b| bytes > b.task_bytes);
    let strategy = strategy.unwrap_or(if keys.is_empty() || (rows <= SHUFFLE_ROWS && !too_big) {
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
    let n = spill
        .as_ref()
        .map_or(partials.len(), |b| b.buckets(bytes, partials.len()));
    let buckets = {
        let backend = backend.clone();
        let partials = &partials;
        staged("shuffle: hash partition", partials.len(), move |i| {
            let state = partials[i].load(&backend)?;
            backend
                .hash_partition(&state, keys, n)?
                .into_iter()
                .map(|b| stash(spill, &backend, b))
                .collect::<Result<Vec<_>>>()
        })?
    };
    drop(partials);
    let backend2 = backend.clone();
    staged("aggregate: combine", n, move |j| {
        let pieces = buckets
            .iter()
            .map(|b| b[j].load(&backend2))
            .collect::<Result<Vec<_>>>()?;
        let state = backend2.aggregate_combine(&pieces, keys, aggs)?;
        drop(pieces);
        stash(
            spill,
            &backend2,
            backend2.aggregate_finalize(&state, keys, aggs)?,
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

pub(crate) fn total_bytes(parts: &[Stashed]) -> usize {
    parts.iter().map(|p| p.nbytes()).sum()
}

pub(crate) fn load_all(
    backend: &Arc<dyn DataFrameBackend>,
    parts: &[Stashed],
) -> Result<Vec<Partition>> {
    parts.iter().map(|p| p.load(backend)).collect()
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
