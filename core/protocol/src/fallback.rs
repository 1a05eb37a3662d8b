//! Fallbacks a backend takes at run time — a sparse chunk densified, a block factored on
//! the host — made visible instead of silent.
//!
//! A backend's [`Capabilities`](crate::Capabilities) say what it does natively. When it
//! still answers something another way (correctly, but at another cost), it calls
//! [`record`]: the log says so once per backend, op and reason, and the calling thread's
//! record gets an entry, which the conformance suite reads after each case (its own
//! outcome, `fallback`, in the report and the matrix). Plans say beforehand where a
//! backend may fall back ([`ArrayBackend::primitive_note`](crate::ArrayBackend::primitive_note),
//! shown by `explain()`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// One fallback: which backend, which op, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fallback {
    /// The backend's name.
    pub backend: String,
    /// The op it fell back on.
    pub op: String,
    /// What it did instead, and why.
    pub why: String,
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "backend '{}': {}: {}", self.backend, self.op, self.why)
    }
}

/// Entries kept per thread until someone takes them: distinct fallbacks are few, and a
/// program that never looks must not grow without bound.
const KEPT: usize = 64;

thread_local! {
    static RECORD: RefCell<Vec<Fallback>> = const { RefCell::new(Vec::new()) };
}

/// Fallbacks already logged.
static LOGGED: Mutex<BTreeSet<Fallback>> = Mutex::new(BTreeSet::new());

/// Every thread's records, numbered, the last [`RECENT`] of them: what a caller whose
/// work ran on other threads (a dataframe plan's stages on the pool) reads back with
/// [`mark`] and [`since`].
static SEQUENCE: Mutex<(u64, std::collections::VecDeque<(u64, Fallback)>)> =
    Mutex::new((0, std::collections::VecDeque::new()));
const RECENT: usize = 256;

/// A mark to read the fallbacks recorded after it, on any thread ([`since`]).
pub fn mark() -> u64 {
    SEQUENCE.lock().unwrap_or_else(|p| p.into_inner()).0
}

/// The distinct fallbacks of `backend` recorded on any thread after `mark` (among the
/// last 256 of the process), in the order first seen.
pub fn since(mark: u64, backend: &str) -> Vec<Fallback> {
    let seq = SEQUENCE.lock().unwrap_or_else(|p| p.into_inner());
    let mut out: Vec<Fallback> = Vec::new();
    for (n, f) in &seq.1 {
        if *n > mark && f.backend == backend && !out.contains(f) {
            out.push(f.clone());
        }
    }
    out
}

/// Records that `backend` answered `op` through a fallback (`why`: what it did instead).
/// Logs it once per process at `info` level, and adds it to this thread's record.
pub fn record(backend: &str, op: &str, why: &str) {
    let f = Fallback {
        backend: backend.to_string(),
        op: op.to_string(),
        why: why.to_string(),
    };
    let first = LOGGED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(f.clone());
    if first {
        log::info!("{f}");
    }
    {
        let mut seq = SEQUENCE.lock().unwrap_or_else(|p| p.into_inner());
        seq.0 += 1;
        let n = seq.0;
        if seq.1.len() == RECENT {
            seq.1.pop_front();
        }
        seq.1.push_back((n, f.clone()));
    }
    RECORD.with(|r| {
        let mut r = r.borrow_mut();
        if r.len() < KEPT && !r.contains(&f) {
            r.push(f);
        }
    });
}

/// The fallbacks recorded on this thread since the last call, in order.
pub fn take() -> Vec<Fallback> {
    RECORD.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_per_thread_deduplicated_and_drained() {
        take();
        record("b", "matmul", "densified");
        record("b", "matmul", "densified");
        record("b", "concatenate", "densified");
        std::thread::spawn(|| record("b", "other thread", "x"))
            .join()
            .unwrap();
        let got = take();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].to_string(), "backend 'b': matmul: densified");
        assert!(take().is_empty());
    }

    #[test]
    fn marks_read_back_what_other_threads_recorded() {
        let m = mark();
        std::thread::spawn(|| {
            record("marked", "join", "on the host");
            record("marked", "join", "on the host");
            record("someone else", "sort", "on the host");
        })
        .join()
        .unwrap();
        let got = since(m, "marked");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].op, "join");
        assert!(since(mark(), "marked").is_empty());
    }
}
