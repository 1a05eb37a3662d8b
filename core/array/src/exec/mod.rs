//! Execution: lowering the lazy graph to tasks, and running them.
//!
//! `lower` turns the arrays asked for into a task graph with one task per output chunk
//! of every materialisation point; every blockwise chain feeding a chunk is fused into
//! one [`Program`](crate::program::Program) whose leaves are generators or stored chunks
//! read through affine maps (this is where slices are pushed into sources). The
//! schedulers then run tasks in dependency order and drop each intermediate chunk as soon
//! as its last consumer has run. Reductions over an array that equals its transpose compute
//! only the blocks on and above the diagonal (`symmetry`).

mod distributed;
mod explain;
mod lower;
mod placement;
mod plan;
mod scheduler;
mod slots;
mod symmetry;
mod task;

pub(crate) use lower::lower;
pub use scheduler::run_plan_stats;
pub(crate) use scheduler::{compute, compute_chunks, persist, persist_many};
pub use task::RunStats;

/// Computes several arrays in one plan, like `dask.compute(a, b)`: what they share is
/// computed once, and the results come back in the order asked.
///
/// # Errors
/// As [`Array::compute`](crate::Array::compute).
pub fn compute_many(arrays: &[crate::Array]) -> crate::error::Result<Vec<crate::host::HostArray>> {
    scheduler::compute(arrays)
}
