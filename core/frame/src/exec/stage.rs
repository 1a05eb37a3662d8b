//! A stage of a plan: one step's tasks over every partition, run on the worker pool and
//! reported to progress and profiles with the bytes each task read and produced.

use crate::backend::Partition;
use crate::error::Result;
use tessera_runtime::pool::parallel_map;

/// What a stage's task produced, in bytes, for progress and profiles.
pub(crate) trait TaskOutput {
    /// Bytes of the partitions held.
    fn bytes(&self) -> u64;
}

impl TaskOutput for Partition {
    fn bytes(&self) -> u64 {
        self.nbytes() as u64
    }
}

impl<T: TaskOutput> TaskOutput for Vec<T> {
    fn bytes(&self) -> u64 {
        self.iter().map(|p| p.bytes()).sum()
    }
}

thread_local! {
    /// Bytes the task running on this thread has read from outside itself.
    static READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `bytes` a task reads from outside itself — a file range, a partition held in
/// memory, a stash read back — as its profile's bytes in.
pub(crate) fn note_read(bytes: u64) {
    READ.with(|r| r.set(r.get().saturating_add(bytes)));
}

/// `f(0..n)` on the worker pool as one progress stage named `stage` (`tessera-observe`).
pub(crate) fn staged<T, F>(stage: &str, n: usize, f: F) -> Result<Vec<T>>
where
    T: Send + TaskOutput,
    F: Fn(usize) -> Result<T> + Send + Sync,
{
    let progress = tessera_observe::Stage::start(stage, n)?;
    let kind = match stage.split(':').next().unwrap_or("") {
        "partitions" => "scan",
        "aggregate" => "aggregate",
        "shuffle" | "repartition" | "join: partition left" | "join: partition right" => "shuffle",
        "join" => "join",
        "sort" | "top-k" => "sort",
        _ => "other",
    };
    let out = parallel_map(n, |i| {
        let start = std::time::Instant::now();
        READ.with(|r| r.set(0));
        let r = f(i);
        progress.task_finished(tessera_observe::TaskTiming {
            kind,
            start,
            bytes_in: READ.with(|r| r.get()),
            bytes_out: r.as_ref().map_or(0, |out| out.bytes()),
            held_bytes: None,
        });
        r
    });
    progress.finish();
    out
}
