//! Sort: sample sort. Evenly spaced samples give range boundaries, every partition is
//! split by them, and each range is sorted.

use std::sync::Arc;

use arrow_array::RecordBatch;

use super::aggregate::concat_or_empty;
use super::join::column_program;
use super::stage::staged;
use crate::backend::{DataFrameBackend, Partition, SortKey};
use crate::error::{Error, Result};

/// Evenly spaced rows of partition `p` (about 64), its sort keys only: what a sort's range
/// boundaries are chosen from.
///
/// # Errors
/// The backend's.
pub(crate) fn sort_sample(
    backend: &Arc<dyn DataFrameBackend>,
    p: &Partition,
    by: &[SortKey],
) -> Result<Partition> {
    let columns: Vec<String> = by.iter().map(|k| k.column.clone()).collect();
    let key_program = column_program(&columns);
    let rows = p.num_rows();
    let k = 64.min(rows);
    let idx: Vec<u64> = (0..k).map(|i| (i * rows / k) as u64).collect();
    backend.evaluate(&backend.take(p, &idx)?, &key_program)
}

/// The `n - 1` boundaries of a sort into `n` ranges, from the partitions' samples in
/// partition order ([`sort_sample`]); `None` when every sample is empty.
///
/// # Errors
/// The backend's.
pub(crate) fn range_bounds(
    backend: &Arc<dyn DataFrameBackend>,
    samples: &[Partition],
    by: &[SortKey],
    n: usize,
) -> Result<Option<RecordBatch>> {
    let samples: Vec<Partition> = samples
        .iter()
        .filter(|s| s.num_rows() > 0)
        .cloned()
        .collect();
    if samples.is_empty() {
        return Ok(None);
    }
    let sample = backend.sort(&backend.concat(&samples)?, by)?;
    let s = sample.num_rows();
    let idx: Vec<u64> = (1..n).map(|j| (j * s / n).min(s - 1) as u64).collect();
    backend
        .export_batch(&backend.take(&sample, &idx)?)
        .map(Some)
}

/// Sample sort into as many range partitions as there are input partitions.
pub(crate) fn sort(
    backend: &Arc<dyn DataFrameBackend>,
    parts: Vec<Partition>,
    by: &[SortKey],
    schema: &arrow_schema::SchemaRef,
) -> Result<Vec<Partition>> {
    for k in by {
        if schema.field_with_name(&k.column).is_err() {
            return Err(Error::invalid(
                "sort_values",
                format!("no column '{}'", k.column),
            ));
        }
    }
    let n = parts.len();
    if n <= 1 {
        let all = concat_or_empty(backend, &parts, schema)?;
        return Ok(vec![backend.sort(&all, by)?]);
    }
    let samples = parts
        .iter()
        .filter(|p| p.num_rows() > 0)
        .map(|p| sort_sample(backend, p, by))
        .collect::<Result<Vec<_>>>()?;
    let Some(bounds) = range_bounds(backend, &samples, by, n)? else {
        return Ok(parts);
    };
    let pieces = {
        let backend = backend.clone();
        let parts = &parts;
        let bounds = &bounds;
        staged("sort: range partition", n, move |i| {
            backend.range_partition(&parts[i], by, bounds)
        })?
    };
    let backend = backend.clone();
    let schema = schema.clone();
    staged("sort: local", n, move |j| {
        let r: Vec<Partition> = pieces.iter().map(|p| p[j].clone()).collect();
        let all = concat_or_empty(&backend, &r, &schema)?;
        backend.sort(&all, by)
    })
}
