//! Spilling: what a plan keeps but cannot hold within `memory-limit` goes to disk and comes
//! back when it is needed.
//!
//! The engines decide *what* spills — `tessera-array` persisted chunks, `tessera-frame`
//! shuffle buckets, join sides and groupby states — and account for it against the
//! budget. This module owns *where* and *how*, so both engines (and a device backend's
//! host tier) share one mechanism:
//!
//! - **where**: a private directory per process, `tessera-spill-<pid>-<n>` under the
//!   `spill-dir` config key (the system temp dir by default), holding an exclusive lock on
//!   its `lock` file for as long as it exists ([`dir`]);
//! - **how**: each spilled value one LZ4 frame (the codec runs at several GB/s, so
//!   spilling is bound by the disk, not the CPU), appended to a segment file that one
//!   writer at a time fills up to 256 MiB, so a shuffle's thousands of small pieces are not
//!   thousands of file creations ([`mod@file`]);
//! - **how long**: a [`SpillFile`] releases its value when dropped — after the plan that
//!   read it back, when the plan fails, and while a panic unwinds; a segment file goes with
//!   its last value and the directory with its last segment. A process that is killed leaves its directory behind; the next
//!   process that spills removes every directory whose lock nobody holds.
//!
//! Tiers: a value spills one tier down from where it lives. Host chunks and partitions go
//! to disk from here. A device backend keeps its own device → host tier (the `cuda`
//! backend's `device/tiers`, per buffer, under `device.memory-limit`) and writes what
//! leaves host memory through [`SpillFile`], so every spilled byte of the process lives in
//! one directory and goes with its handle.
//!
//! [`stats`] counts what this process spilled and read back: tests use it to prove a plan
//! really spilled, benchmarks to report throughput.

pub mod dir;
pub mod file;
mod segment;

use std::sync::atomic::{AtomicU64, Ordering};

pub use dir::{clean_stale, SPILL_PREFIX};
pub use file::SpillFile;

/// What this process has spilled so far (monotonic counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpillStats {
    /// Values spilled.
    pub values: u64,
    /// Bytes handed to the spill writer (before compression).
    pub bytes_written: u64,
    /// Bytes on disk after compression.
    pub bytes_on_disk: u64,
    /// Bytes read back (after decompression).
    pub bytes_read: u64,
}

static VALUES: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);
static ON_DISK: AtomicU64 = AtomicU64::new(0);
static READ: AtomicU64 = AtomicU64::new(0);

/// The process's spill counters.
pub fn stats() -> SpillStats {
    SpillStats {
        values: VALUES.load(Ordering::Relaxed),
        bytes_written: WRITTEN.load(Ordering::Relaxed),
        bytes_on_disk: ON_DISK.load(Ordering::Relaxed),
        bytes_read: READ.load(Ordering::Relaxed),
    }
}

fn count_write(raw: u64, disk: u64) {
    VALUES.fetch_add(1, Ordering::Relaxed);
    WRITTEN.fetch_add(raw, Ordering::Relaxed);
    ON_DISK.fetch_add(disk, Ordering::Relaxed);
}

fn count_read(raw: u64) {
    READ.fetch_add(raw, Ordering::Relaxed);
}
