//! Windows across partitions (the carries each partition needs from the ones before it:
//! running totals, the rows a rolling window reaches back to) and `head`/`tail`.

use std::sync::Arc;

use super::stage::staged;
use crate::backend::{DataFrameBackend, Partition};
use crate::error::Result;
use crate::exec::partitions::Pipeline;
use crate::plan::empty_batch;
use crate::window::WindowSpec;

/// The carry each partition of a window receives: every partition's own carry in
/// parallel, then folded in partition order (from the last partition for a backward
/// function), where the carry of carries is the carry of their concatenation. The
/// conformance suite runs backends through this same fold.
///
/// # Errors
/// What the backend's `window_carry` or `concat` returns.
pub fn window_carries(
    backend: &Arc<dyn DataFrameBackend>,
    parts: &[Partition],
    spec: &WindowSpec,
) -> Result<Vec<Option<Partition>>> {
    let own = {
        let backend = backend.clone();
        staged("window: carry", parts.len(), move |i| {
            backend.window_carry(&parts[i], spec)
        })?
    };
    let n = parts.len();
    let mut carries: Vec<Option<Partition>> = vec![None; n];
    let order: Vec<usize> = if spec.func.backward() {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    let mut running: Option<Partition> = None;
    for (step, &i) in order.iter().enumerate() {
        carries[i] = running.clone();
        if step + 1 == n {
            break;
        }
        let mine = &own[i];
        running = Some(match running {
            None => mine.clone(),
            Some(r) if mine.num_rows() == 0 => r,
            Some(r) => {
                // Earlier rows first: the running carry precedes this partition's going
                // forward, and follows it going backward.
                let pair = if spec.func.backward() {
                    [mine.clone(), r]
                } else {
                    [r, mine.clone()]
                };
                backend.window_carry(&backend.concat(&pair)?, spec)?
            }
        });
    }
    Ok(carries)
}

/// The first `n` rows of `inner` (the last `n` with `from_end`), in order, running only
/// the partitions it needs; one empty partition of `schema` when there are none.
pub(crate) fn first_rows(
    inner: &Pipeline,
    backend: &Arc<dyn DataFrameBackend>,
    n: usize,
    from_end: bool,
    schema: &arrow_schema::SchemaRef,
) -> Result<Vec<Partition>> {
    let order: Box<dyn Iterator<Item = usize>> = if from_end {
        Box::new((0..inner.n).rev())
    } else {
        Box::new(0..inner.n)
    };
    let mut out = Vec::new();
    let mut have = 0;
    for i in order {
        if have >= n {
            break;
        }
        let p = (inner.task)(i)?;
        let take = (n - have).min(p.num_rows());
        have += take;
        out.push(if take == p.num_rows() {
            p
        } else if from_end {
            backend.slice(&p, p.num_rows() - take, take)?
        } else {
            backend.slice(&p, 0, take)?
        });
    }
    if from_end {
        out.reverse();
    }
    if out.is_empty() {
        out.push(backend.import_batch(empty_batch(schema))?);
    }
    Ok(out)
}
