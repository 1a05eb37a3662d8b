//! How a plan runs within `memory-limit`: [`check_memory`] projects what it holds and
//! decides, before anything runs, whether it runs unbudgeted, under a spill budget, or
//! not at all; [`BatchStream`] is the output of a plan streamed to a writer, keeping that
//! budget alive while the writer reads it.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::backend::FrameBackendRef;
use crate::error::{Error, Result};
use crate::exec::spill::{Spill, SpillBudget};
use crate::io::write::Parts;
use crate::plan::Node;

/// A plan's output, one partition at a time ([`super::run::stream`]).
pub(crate) struct BatchStream {
    /// Partitions.
    pub n: usize,
    /// Their schema.
    pub schema: SchemaRef,
    /// Produces partition `i`.
    pub batch: Arc<dyn Fn(usize) -> Result<RecordBatch> + Send + Sync>,
    /// Keeps the plan's spill budget (and the stashes it accounts) alive while streaming.
    pub(crate) _spill: Spill,
}

impl BatchStream {
    /// The stream as the writers take it.
    pub(crate) fn parts(&self) -> Parts<'_> {
        Parts {
            n: self.n,
            schema: &self.schema,
            batch: self.batch.as_ref(),
        }
    }
}

/// Where a plan's output goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Output {
    /// All of it in memory at once (`compute`, `persist`).
    InMemory,
    /// A partition at a time (writers).
    Streamed,
}

/// How a plan runs within `memory-limit`: unbudgeted when its projected peak — what it
/// holds while running plus its output — fits; with a spill budget when only what its
/// groupbys, joins and shuffles keep between stages is over; refused before anything
/// runs when what must be in memory at once is over (the output, which `compute` returns
/// in memory; a repartition's or window's whole input; a partition per worker), or when
/// `spill-dir` is `none`.
///
/// A backend with a memory budget of its own (a device's, which spills within the backend)
/// gets tasks sized to a quarter of it: shuffle buckets, broadcast sides and groupby
/// combines then fit on the device, with `memory-limit` or without.
pub(crate) fn check_memory(
    node: &Arc<Node>,
    output: Output,
    backend: &FrameBackendRef,
) -> Result<Spill> {
    let device_task = backend.memory_budget().map(|d| (d / 4).max(1));
    let Some(limit) = crate::config::memory_limit()? else {
        return Ok(device_task.map(|task| {
            let base = crate::config::spill_dir()
                .ok()
                .flatten()
                .unwrap_or_else(std::env::temp_dir);
            // Nothing is kept back by the engine: the backend moves what its devices
            // cannot hold.
            Arc::new(SpillBudget::new(base, u64::MAX, task))
        }));
    };
    let workers = tessera_runtime::pool::worker_threads()? as u64;
    let m = node.memory(workers);
    let out_held = match output {
        Output::InMemory => m.output,
        Output::Streamed => m.largest.saturating_mul(workers),
    };
    let projected = m.held.saturating_add(out_held);
    let spill_dir = crate::config::spill_dir()?;
    // Half the limit for what stages keep (spilled beyond it), half for the tasks running.
    let keep = limit / 2;
    let task_bytes = (limit / 2 / workers.max(1) / 4).min(device_task.unwrap_or(u64::MAX));
    let budget = |base: PathBuf| Some(Arc::new(SpillBudget::new(base, keep, task_bytes)));
    if projected <= limit {
        // The projection is a model: what stages keep is also measured as they run (a
        // groupby's states grow with its number of groups), and spills when it is over.
        return Ok(spill_dir.and_then(budget));
    }
    let refuse = |why: String| {
        Err(Error::MemoryLimit {
            projected,
            limit,
            advice: format!(
                "the frame plan holds about {} bytes while running and {} bytes of output; \
                 {why}filter or select earlier, aggregate instead of collecting, write the result \
                 with to_parquet/to_csv in partitions, or raise memory-limit",
                m.held, m.output
            ),
        })
    };
    let Some(base) = spill_dir else {
        return refuse("spilling is off (spill-dir = none); ".into());
    };
    if output == Output::InMemory && m.output > keep {
        return refuse(format!(
            "its output must be in memory at once and is over half the limit ({keep} bytes; the rest is for the tasks producing it); "
        ));
    }
    if let Some(whole) = node.held_whole() {
        if whole > keep {
            return refuse(format!(
                "a repartition or window function holds its whole input, {whole} bytes, at once (groupbys, joins, sorts and shuffles spill; these do not); "
            ));
        }
    }
    let largest = node.largest_partition(workers);
    if largest > task_bytes {
        return refuse(format!(
            "partitions of up to {largest} bytes, one per worker ({workers}), leave no room to spill within the limit: each should be at most {task_bytes} bytes (smaller partitions or fewer threads); "
        ));
    }
    Ok(budget(base))
}
