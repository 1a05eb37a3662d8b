//! A groupby on the device — partial aggregation, the combine of states, and a shuffle's
//! hash partitioning — with integer atomics only and a result that is the same on every
//! run.
//!
//! One kernel text per structure (key types, aggregations and their input types), whose
//! entries are:
//!
//! 1. `_insert`: each row with no null key hashes its keys into an open-addressing table
//!    of row numbers (`atomicCAS` claims an empty slot; a taken slot holding equal keys is
//!    the row's group, another is passed by linear probing) and writes its slot;
//! 2. `_minrow`: each slot keeps the first row of its group (`atomicMin`);
//! 3. `_firstcount` and 4. `_assign`: the first rows, counted per block and numbered by a
//!    block-wide scan in row order (the block bases folded on the host, as a filter's
//!    select does): group `g` is the `g`-th group to appear, whatever the table's layout
//!    or the order the threads ran in — so the result is deterministic;
//! 5. `_accumulate`: per row, its group's accumulators, 64-bit words updated by
//!    `atomicAdd` (counts, wrapping integer sums, the three words of an exact 192-bit
//!    decimal or integer-mean sum with its carries) and `atomicMin`/`atomicMax` (integers
//!    mapped to an order-preserving unsigned word): integer atomics are exact whatever
//!    their order;
//! 6. `_rowgid` and `_fsum`: float sums, which atomics would add in a different order on
//!    every run — the rows sorted stably by group, one thread per group adding its rows
//!    in row order, as the CPU backend adds them (the same bits);
//! 7. `_states`: eight groups a thread, the state columns in core's layout
//!    ([`AggFunc::state_fields`](tessera_core::frame::AggFunc::state_fields)) and the fixed-width key columns, read at each group's
//!    first row; string keys are gathered by [`crate::strings`];
//! 8. `_bucket`: each row's hash bucket among `n`, for [`partition`].
//!
//! Covered: keys of integer, boolean, date, time, timestamp, duration and string types;
//! `count` of any column; `sum` and `mean` of integers, floats and decimals; `min` and
//! `max` of integer-like columns. Anything else runs on the host, recorded.

mod driver;
mod kernels;
mod native;
mod plan;

pub use driver::{buckets, partition, run, States};
pub(crate) use driver::{by_group, group, ByGroup};
pub use native::{native, native_combine};
pub use plan::{NativeGroupby, Refusal};
