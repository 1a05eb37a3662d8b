//! Running a dataframe plan: the distributed algorithms, built from a backend's
//! partition-level primitives.
//!
//! Blockwise nodes (scans, fused programs, `map_partitions`) become a `Pipeline`: a
//! function from partition index to partition. Nothing between a scan and the next
//! blocking node is materialised for the whole frame — a groupby runs "read range *i*,
//! filter, project, aggregate partially" as one task per partition and keeps only the small
//! partial result. Blocking nodes:
//!
//! - **groupby**: partial aggregation per partition, then a tree combine (fan-in
//!   `array.split-every`) into one partition when the partial results are small, or a hash
//!   shuffle of the partial results into one bucket per input partition when they are large
//!   (many groups) — the choice is made on the measured size of the partial results unless
//!   the user forces one;
//! - **join**: broadcast the small side (its hash table built once, the other side's
//!   pipeline streamed through it partition by partition, so a broadcast join is as
//!   blockwise as a filter), a sorted merge of aligned ranges when both sides are sorted
//!   on the keys, else a hash shuffle of both sides into matching buckets;
//! - **sort**: sample sort — evenly spaced samples give range boundaries, every partition is
//!   split by them, each range is sorted;
//! - **head** runs partitions in order until it has enough rows.
//!
//! Every stage runs under the configured scheduler (`threads` or `single-threaded`).
//!
//! One file per operator: `scan`, `aggregate` (groupby), `join`, `sort`, `repartition`,
//! `window` (and head/tail); `stage` runs one step's tasks on the worker pool; `spill`
//! keeps what a stage holds within `memory-limit`; `ranks` runs the same operators over
//! the ranks of a job (`scheduler = "mpi"`). The dispatcher, `pipeline`, is here, above
//! the operators, which call it back for their inputs.

pub(crate) mod aggregate;
pub(crate) mod join;
pub(crate) mod ranks;
mod repartition;
mod scan;
pub(crate) mod sort;
pub(crate) mod spill;
pub(crate) mod stage;
pub(crate) mod swap_join;
mod window;

use std::sync::Arc;

use crate::backend::{DataFrameBackend, Partition};
use crate::error::{Error, Result};
use crate::exec::spill::{stash, Spill, Stashed};
use crate::plan::Node;
use aggregate::aggregate;
use aggregate::concat_or_empty;
use join::join;
use repartition::repartition;
use scan::leading_filter;
use scan::scan;
use sort::sort;
use stage::{note_read, staged};
use window::first_rows;

pub use window::window_carries;

/// Partial results with more rows than this (in total) are combined by shuffle instead of
/// a tree: a tree would funnel them all through one task.
pub const SHUFFLE_ROWS: usize = 1 << 20;

/// In one process, a groupby whose partial results have more rows than this (in total)
/// combines them by shuffle: the tree's last combine (and its sort by the keys) runs on
/// one thread while the others wait. Measured on 2 cores (`frame_classes`, 16 partitions):
/// 160k partial rows (10k groups) combine in 14 ms by tree and 17 ms by shuffle, 630k
/// (1M rows into 630k groups) in 200 ms by tree and 110 ms by shuffle.
pub const TREE_ROWS: usize = 1 << 18;

/// In one process, a side of a join at most this many bytes is broadcast to every
/// partition of the other: it is hashed once and shared, and the other side streams
/// through it. The shuffle it replaces holds both sides too, and copies both into
/// buckets: TPC-H Q9 at scale factor 10 shuffled its 300 MB `partsupp` and `orders` sides
/// at a 256 MiB bound, 8.5 s at a 2.2 GB peak, against 3.5 s at 1.5 GB broadcast. (Across
/// the ranks of a job, where a broadcast side is sent to every rank, the bound is 256
/// MiB.)
pub const BROADCAST_BYTES: usize = 1 << 30;

/// A join side keyed by strings with more rows than this is not broadcast when the process
/// has more than one worker: its hash table is built by one thread while the others wait
/// (a random insert into a table past the caches costs about 170 ns), where a shuffle
/// builds a table per bucket on every worker. Measured on 2 cores (`frame_classes`,
/// 10M x 10M rows on a string key): 2.7 s broadcast, 1.9 s shuffled. Integer keys are
/// exempt: their tables are mostly direct-indexed and cheap to build (the same join on
/// integers: 0.57 s broadcast, 0.69 s shuffled; TPC-H Q9 at scale 10: 3.5 s against 8.5 s).
pub const BROADCAST_STRING_ROWS: usize = 4 << 20;

/// The build-side rows a shuffled hash join aims at per bucket: the join shuffles into at
/// least `rows / JOIN_BUCKET_ROWS` buckets (up to the shuffle's fan), so that each
/// bucket's hash table stays near the caches. One partition's join of 625k rows with 625k
/// on a short-string key (a 10M-row side in 16 buckets) took 173 ns a build row; of 78k,
/// 51 ns; of 39k, 49 ns. On an integer key: 53, 20 and 18 ns (`cargo run --release
/// --example join_kernel`, an Intel Xeon with a 2 MiB L2 per core).
pub const JOIN_BUCKET_ROWS: usize = 1 << 16;

/// A join side computed first (the one `join_guess` expects smaller) is broadcast while
/// the other side streams only when it measures at most this many bytes. The guess knows
/// no statistics, so it can pick the larger side: past this
/// size the other side is computed too and the smaller of the two measured is broadcast,
/// which bounds what a wrong guess costs to hashing this much. It is the broadcast bound
/// itself: at 64 MiB, TPC-H Q5 at scale factor 10 (whose customers-with-orders side
/// measures past it) computed all 60 million line items before choosing, 4.0 s at a 3 GB
/// peak, against 2.5 s at 254 MB streamed through the hashed side.
pub const STREAMED_BROADCAST_BYTES: usize = BROADCAST_BYTES;

/// A lazily computed sequence of partitions: `task(i)` produces partition `i`.
pub(crate) struct Pipeline {
    /// Number of partitions.
    pub n: usize,
    /// Produces one partition.
    pub task: Arc<dyn Fn(usize) -> Result<Partition> + Send + Sync>,
}

impl Pipeline {
    fn ready(parts: Vec<Partition>) -> Pipeline {
        let parts = Arc::new(parts);
        Pipeline {
            n: parts.len(),
            task: Arc::new(move |i| {
                note_read(parts[i].nbytes() as u64);
                Ok(parts[i].clone())
            }),
        }
    }

    /// Partitions kept between stages (see [`crate::exec::spill`]).
    fn stashed(parts: Vec<Stashed>, backend: &Arc<dyn DataFrameBackend>) -> Pipeline {
        let parts = Arc::new(parts);
        let backend = backend.clone();
        Pipeline {
            n: parts.len(),
            task: Arc::new(move |i| parts[i].load(&backend)),
        }
    }

    /// Runs every task.
    pub fn materialize(&self) -> Result<Vec<Partition>> {
        let task = self.task.clone();
        staged("partitions", self.n, move |i| task(i))
    }

    /// Runs every task, keeping the partitions within the spill budget.
    fn materialize_stashed(
        &self,
        spill: &Spill,
        backend: &Arc<dyn DataFrameBackend>,
    ) -> Result<Vec<Stashed>> {
        let task = self.task.clone();
        staged("partitions", self.n, move |i| {
            stash(spill, backend, task(i)?)
        })
    }
}

/// Builds the pipeline of `node` on `backend`, running blocking nodes below it; what they
/// keep between stages goes through `spill`'s budget.
pub(crate) fn pipeline(
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
) -> Result<Pipeline> {
    match node {
        Node::Concat { inputs, .. } => {
            let pipes = inputs
                .iter()
                .map(|i| pipeline(i, backend, spill))
                .collect::<Result<Vec<_>>>()?;
            // Partition i of the concat: (input, its partition), by the inputs' counts.
            let mut index = Vec::new();
            for (k, p) in pipes.iter().enumerate() {
                index.extend((0..p.n).map(|j| (k, j)));
            }
            let index = Arc::new(index);
            Ok(Pipeline {
                n: index.len(),
                task: Arc::new(move |i| {
                    let (k, j) = index[i];
                    (pipes[k].task)(j)
                }),
            })
        }
        Node::Partitions { parts, .. } => {
            match parts
                .iter()
                .find_map(crate::exec::ranks::on_rank::held_elsewhere)
            {
                Some(e) => Err(e),
                None => Ok(Pipeline::ready(parts.clone())),
            }
        }
        Node::Scan { .. } => Ok(scan(node, backend, None, Vec::new())),
        Node::Map { input, program, .. } => {
            // The filters a program over a scan starts with go to the reader too, which
            // may drop rows early; the program still runs whole.
            let inner = match (&**input, leading_filter(program)) {
                (Node::Scan { .. }, Some(filter)) => scan(input, backend, Some(filter), Vec::new()),
                _ => pipeline(input, backend, spill)?,
            };
            let program = program.clone();
            let backend = backend.clone();
            let task = inner.task.clone();
            Ok(Pipeline {
                n: inner.n,
                task: Arc::new(move |i| backend.evaluate(&task(i)?, &program)),
            })
        }
        Node::MapPartitions {
            input,
            func,
            schema,
        } => {
            let inner = pipeline(input, backend, spill)?;
            let func = func.clone();
            let schema = schema.clone();
            let backend = backend.clone();
            let task = inner.task.clone();
            Ok(Pipeline {
                n: inner.n,
                task: Arc::new(move |i| {
                    let batch = backend.export_batch(&task(i)?)?;
                    let out = tessera_core::error::catch_panic(
                        || func(batch),
                        |m| {
                            Error::user_function(
                                "map_partitions",
                                format!("the function panicked on partition {i}: {m}"),
                            )
                        },
                    )
                    .map_err(|e| match e {
                        e @ Error::UserFunction { .. } => e,
                        e => Error::user_function("map_partitions", format!("partition {i}: {e}")),
                    })?;
                    if out.schema().fields() != schema.fields() {
                        return Err(Error::user_function("map_partitions", format!(
                            "partition {i} returned schema {:?} but the declared/inferred schema is {:?}",
                            out.schema(),
                            schema
                        )));
                    }
                    backend.import_batch(out)
                }),
            })
        }
        Node::Aggregate {
            input,
            keys,
            aggs,
            strategy,
            ..
        } => Ok(Pipeline::stashed(
            aggregate(backend, spill, input, keys, aggs, *strategy)?,
            backend,
        )),
        Node::Join {
            left,
            right,
            spec,
            strategy,
            ..
        } => join(backend, spill, left, right, spec, *strategy),
        Node::Sort { input, by } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            Ok(Pipeline::ready(sort(backend, parts, by, &input.schema())?))
        }
        Node::Repartition { input, n } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            Ok(Pipeline::ready(repartition(backend, parts, *n)?))
        }
        Node::TopK { input, by, n } => {
            let inner = pipeline(input, backend, spill)?;
            let task = inner.task.clone();
            let tops = {
                let backend = backend.clone();
                staged("top-k", inner.n, move |i| {
                    backend.sort_limit(&task(i)?, by, *n)
                })?
            };
            // A stable top-k of the partitions' winners in partition order: ties keep the
            // order a full sort would give them.
            let all = concat_or_empty(backend, &tops, &input.schema())?;
            Ok(Pipeline::ready(vec![backend.sort_limit(&all, by, *n)?]))
        }
        Node::Window { input, spec, .. } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            let carries = window_carries(backend, &parts, spec)?;
            let (backend, spec) = (backend.clone(), spec.clone());
            let parts = Arc::new(parts);
            Ok(Pipeline {
                n: parts.len(),
                task: Arc::new(move |i| backend.window(&parts[i], &spec, carries[i].as_ref())),
            })
        }
        Node::Tail { input, n } => Ok(Pipeline::ready(first_rows(
            &pipeline(input, backend, spill)?,
            backend,
            *n,
            true,
            &input.schema(),
        )?)),
        Node::Head { input, n } => Ok(Pipeline::ready(first_rows(
            &pipeline(input, backend, spill)?,
            backend,
            *n,
            false,
            &input.schema(),
        )?)),
    }
}
