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
//!   on the keys, else a hash shuffle of both sides into matching buckets — or, within a
//!   spill budget, a grace hash join: the build side cut into buckets, those that fit kept
//!   with their tables, the rest spilled whole, and the probe side streamed through;
//! - **sort**: sample sort — evenly spaced samples give range boundaries, every partition is
//!   split by them, each range is sorted; within a spill budget (`external_sort`) the
//!   partitions and ranges spill, ranges are sized to a task, and one over it is cut again;
//! - **head** runs partitions in order until it has enough rows.
//!
//! Every stage runs under the configured scheduler (`threads` or `single-threaded`).
//!
//! The files:
//!
//! - `run`: the one door — every way a plan runs (computed, streamed, persisted, written)
//!   enters here, which chooses one process or the ranks of a job and sizes the budget;
//! - `budget`: what a plan may hold within `memory-limit`, decided before it runs, and
//!   the streamed output that keeps that budget alive;
//! - `pipeline`: the dispatcher, a plan node to its `partitions::Pipeline`, above the
//!   operators; they receive it as a `partitions::Build` to build their inputs;
//! - one file per operator: `scan`, `aggregate` (groupby), `join` (and `swap_join`,
//!   `grace_join`),
//!   `sort`, `repartition`, `window` (and head/tail);
//! - `persisted`: a frame persisted under `memory-limit`, in memory up to a share of
//!   the limit and in spill files past it;
//! - `stage` runs one step's tasks on the worker pool; `spill` keeps what a stage holds
//!   within the budget; `spill_plan` says in `explain()` what each blocking operator
//!   will hold and where it will spill; `tuning` holds the bounds at which the operators
//!   change algorithm; `ranks` runs the same operators over the ranks of a job
//!   (`scheduler = "mpi"`).

pub(crate) mod aggregate;
pub(crate) mod budget;
mod external_sort;
mod grace_join;
pub(crate) mod join;
pub(crate) mod partitions;
mod persisted;
pub(crate) mod pipeline;
pub(crate) mod ranks;
mod repartition;
pub(crate) mod run;
mod scan;
pub(crate) mod sort;
pub(crate) mod spill;
mod spill_plan;
pub(crate) mod stage;
pub(crate) mod swap_join;
pub mod tuning;
mod window;

pub use tuning::{
    BROADCAST_BYTES, BROADCAST_STRING_ROWS, JOIN_BUCKET_ROWS, SHUFFLE_ROWS,
    STREAMED_BROADCAST_BYTES, TREE_ROWS,
};
pub use window::window_carries;
