//! The chunks a running plan holds: one slot per task, consumers counted down, each chunk
//! released as soon as its last consumer has run unless it is a result.
//!
//! Both executors — the local one (`scheduler`) and the distributed one (`distributed`),
//! which counts only the consumers on its own rank — keep their chunks here, and their
//! peak memory figure is this struct's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::backend::Chunk;

/// Task outputs held between tasks.
pub(super) struct Slots {
    chunks: Vec<Mutex<Option<Chunk>>>,
    /// Consumers still to run, per task.
    consumers: Vec<AtomicUsize>,
    /// Results the caller asked for: never released.
    keep: Vec<bool>,
    held: AtomicUsize,
    peak: AtomicUsize,
}

impl Slots {
    /// Slots for tasks with `consumers[i]` consumers each; `keep[i]` marks results.
    pub(super) fn new(consumers: Vec<usize>, keep: Vec<bool>) -> Slots {
        Slots {
            chunks: (0..keep.len()).map(|_| Mutex::new(None)).collect(),
            consumers: consumers.into_iter().map(AtomicUsize::new).collect(),
            keep,
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// True for a result the caller asked for.
    pub(super) fn is_kept(&self, i: usize) -> bool {
        self.keep[i]
    }

    /// The chunks of `deps`, or `None` when one is not there (yet, or any more).
    pub(super) fn inputs(&self, deps: &[usize]) -> Option<Vec<Chunk>> {
        deps.iter().map(|&d| self.get(d)).collect()
    }

    /// Task `i`'s chunk, when held.
    pub(super) fn get(&self, i: usize) -> Option<Chunk> {
        self.chunks[i]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Holds task `i`'s chunk; returns the bytes held now.
    pub(super) fn put(&self, i: usize, chunk: Chunk) -> usize {
        let bytes = chunk.nbytes();
        let now = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        *self.chunks[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(chunk);
        now
    }

    /// A consumer of each of `deps` has run: drops the chunks whose last consumer it was.
    pub(super) fn release(&self, deps: &[usize]) {
        for &d in deps {
            if self.consumers[d].fetch_sub(1, Ordering::AcqRel) == 1 && !self.keep[d] {
                if let Some(c) = self.chunks[d]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                {
                    self.held.fetch_sub(c.nbytes(), Ordering::Relaxed);
                }
            }
        }
    }

    /// Bytes held now.
    pub(super) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// The most bytes held at once.
    pub(super) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}
