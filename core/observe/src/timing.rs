//! What an engine says about one finished task: the record both the progress report
//! ([`crate::progress`]) and a profile ([`crate::profile`]) are made from.

use std::time::Instant;

/// What an engine knows about a task it finished, for [`Stage::task_finished`](crate::Stage::task_finished).
#[derive(Debug, Clone, Copy)]
pub struct TaskTiming {
    /// What the task did (`generate`, `program`, `reduce`, `matmul`, `scan`, ...).
    pub kind: &'static str,
    /// When it started.
    pub start: Instant,
    /// Bytes of its inputs (0 where unknown).
    pub bytes_in: u64,
    /// Bytes of its result (0 where unknown).
    pub bytes_out: u64,
    /// Bytes the scheduler held after it, where the scheduler tracks them.
    pub held_bytes: Option<u64>,
}
