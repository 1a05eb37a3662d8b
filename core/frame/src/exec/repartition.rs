//! Repartitioning into `n` partitions of about equal rows.

use std::sync::Arc;

use super::aggregate::concat_or_empty;
use super::stage::staged;
use crate::backend::{DataFrameBackend, Partition};
use crate::error::{Error, Result};

/// `n` partitions of about equal rows, row order kept.
pub(crate) fn repartition(
    backend: &Arc<dyn DataFrameBackend>,
    parts: Vec<Partition>,
    n: usize,
) -> Result<Vec<Partition>> {
    if n == 0 {
        return Err(Error::invalid("repartition", "n must be at least 1"));
    }
    let total: usize = parts.iter().map(|p| p.num_rows()).sum();
    let starts: Vec<usize> = parts
        .iter()
        .scan(0, |acc, p| {
            let s = *acc;
            *acc += p.num_rows();
            Some(s)
        })
        .collect();
    let schema = match parts.first() {
        Some(p) => p.schema(),
        None => return Ok(parts),
    };
    let backend = backend.clone();
    staged("repartition", n, move |j| {
        let (lo, hi) = (j * total / n, (j + 1) * total / n);
        let mut pieces = Vec::new();
        for (p, &s) in parts.iter().zip(&starts) {
            let e = s + p.num_rows();
            if e <= lo || s >= hi {
                continue;
            }
            let (a, b) = (lo.max(s) - s, hi.min(e) - s);
            pieces.push(backend.slice(p, a, b - a)?);
        }
        concat_or_empty(&backend, &pieces, &schema)
    })
}
