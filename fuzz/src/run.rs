//! The runner: feeds a target the mutator's inputs, one at a time, and counts panics —
//! those that unwind out of the target and those tessera's task boundary catches and turns
//! into an error (a panic hook sees both) — keeping the first few panicking inputs.

use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::mutate::Mutator;
use crate::targets::{Scratch, Target};

/// What a run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The target's name.
    pub target: &'static str,
    /// The mutator's seed.
    pub seed: u64,
    /// Inputs run.
    pub inputs: u64,
    /// Inputs tessera accepted all the way (read, decoded, computed): how deep the
    /// mutated inputs reach, where the rest end in a typed error.
    pub accepted: u64,
    /// Inputs during which tessera's own code panicked, or any panic unwound out of
    /// tessera to the caller: bugs, each one.
    pub panics: u64,
    /// Inputs on which a third-party crate (a decoder) panicked and tessera caught it at
    /// its task boundary, answering a typed error: what tessera promises for code it
    /// does not own. Counted apart, with the first message, for a report upstream.
    pub caught_foreign: u64,
    /// The first caught third-party panic's message.
    pub first_foreign: Option<String>,
    /// The first panicking inputs (at most [`KEPT`]), with the panic message.
    pub crashes: Vec<(Vec<u8>, String)>,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The slowest input's time.
    pub slowest: Duration,
    /// The slowest input.
    pub slowest_input: Vec<u8>,
}

/// How many panicking inputs a report keeps.
pub const KEPT: usize = 8;

impl Report {
    /// The report as one JSON line.
    pub fn json(&self) -> String {
        serde_json::json!({
            "target": self.target,
            "seed": self.seed,
            "inputs": self.inputs,
            "accepted": self.accepted,
            "panics": self.panics,
            "caught_third_party_panics": self.caught_foreign,
            "first_third_party_panic": self.first_foreign,
            "seconds": (self.elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
            "inputs_per_second": (self.inputs as f64 / self.elapsed.as_secs_f64().max(1e-9)).round(),
            "slowest_input_ms": (self.slowest.as_secs_f64() * 1e6).round() / 1000.0,
            "first_panic": self.crashes.first().map(|(_, m)| m.clone()),
        })
        .to_string()
    }
}

/// Panics seen by the hook since it was installed: all of them, those raised in a
/// third-party crate's source (under cargo's registry or git checkouts), and the latest
/// message.
struct Seen {
    count: AtomicU64,
    foreign: AtomicU64,
    last: Mutex<String>,
}

/// Whether a panic's source file is a dependency's, not this workspace's. Cargo compiles
/// the workspace's crates with paths relative to its root and every other crate (the
/// registry's, git checkouts, vendored or path dependencies outside the workspace) with
/// absolute ones, wherever `CARGO_HOME` is; the standard library's are under `/rustc/`
/// and count as ours (a misuse of it by this workspace's code).
fn third_party(file: &str) -> bool {
    std::path::Path::new(file).is_absolute() && !file.starts_with("/rustc/")
}

/// Runs `inputs` inputs of `target` from the mutator seeded with `seed`, over the
/// target's corpus.
///
/// The panic hook is the process's for the run (it is put back after): run one target at
/// a time in a process.
///
/// # Errors
/// The scratch folder cannot be made.
pub fn run(target: Target, seed: u64, inputs: u64) -> std::io::Result<Report> {
    run_keeping(target, seed, inputs, None)
}

/// [`run`], writing each input to `last_input` before it runs: a process ended by an
/// abort, a signal or the out-of-memory killer leaves the input that ended it there.
///
/// # Errors
/// The scratch folder cannot be made, or `last_input` cannot be written.
pub fn run_keeping(
    target: Target,
    seed: u64,
    inputs: u64,
    last_input: Option<&Path>,
) -> std::io::Result<Report> {
    if let Some(path) = last_input {
        std::fs::write(path, b"")?;
    }
    run_with(
        target.name(),
        &target.corpus(),
        target.dictionary(),
        target.max_len(),
        seed,
        inputs,
        &|input, scratch| {
            if let Some(path) = last_input {
                let _ = std::fs::write(path, input);
            }
            target.run(input, scratch)
        },
    )
}

/// [`run`] with any target function (the tests plant one that panics).
///
/// # Errors
/// The scratch folder cannot be made.
pub fn run_with(
    name: &'static str,
    corpus: &[Vec<u8>],
    dictionary: &[&[u8]],
    max_len: usize,
    seed: u64,
    inputs: u64,
    f: &dyn Fn(&[u8], &Scratch) -> bool,
) -> std::io::Result<Report> {
    let scratch = Scratch::new()?;
    let seen = Arc::new(Seen {
        count: AtomicU64::new(0),
        foreign: AtomicU64::new(0),
        last: Mutex::new(String::new()),
    });
    let previous = panic::take_hook();
    {
        let seen = seen.clone();
        panic::set_hook(Box::new(move |info| {
            seen.count.fetch_add(1, Ordering::SeqCst);
            if info.location().is_some_and(|l| third_party(l.file())) {
                seen.foreign.fetch_add(1, Ordering::SeqCst);
            }
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            if let Ok(mut last) = seen.last.lock() {
                *last = format!("{msg}{at}");
            }
        }));
    }
    let mut mutator = Mutator::new(seed, corpus, dictionary, max_len);
    let mut report = Report {
        target: name,
        seed,
        inputs,
        accepted: 0,
        panics: 0,
        caught_foreign: 0,
        first_foreign: None,
        crashes: Vec::new(),
        elapsed: Duration::ZERO,
        slowest: Duration::ZERO,
        slowest_input: Vec::new(),
    };
    let start = Instant::now();
    for _ in 0..inputs {
        let input = mutator.next_input();
        let before = seen.count.load(Ordering::SeqCst);
        let foreign_before = seen.foreign.load(Ordering::SeqCst);
        let t = Instant::now();
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| f(&input, &scratch)));
        if t.elapsed() > report.slowest {
            report.slowest = t.elapsed();
            report.slowest_input = input.clone();
        }
        let panicked = seen.count.load(Ordering::SeqCst) - before;
        let foreign = seen.foreign.load(Ordering::SeqCst) - foreign_before;
        if panicked > 0 && panicked == foreign && outcome.is_ok() {
            report.caught_foreign += 1;
            if report.first_foreign.is_none() {
                report.first_foreign = seen.last.lock().ok().map(|m| m.clone());
            }
        } else if panicked > 0 || outcome.is_err() {
            report.panics += 1;
            if report.crashes.len() < KEPT {
                let msg = seen.last.lock().map(|m| m.clone()).unwrap_or_default();
                report.crashes.push((input, msg));
            }
        } else {
            report.accepted += u64::from(outcome.unwrap_or(false));
        }
    }
    report.elapsed = start.elapsed();
    panic::set_hook(previous);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::third_party;

    #[test]
    fn a_dependency_is_third_party_wherever_cargo_home_is() {
        for file in [
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/zarrs-0.23.14/src/a.rs",
            "/tmp/cold-cargo-home/registry/src/index.crates.io-1949cf8c6b5b557f/zarrs-0.23.14/src/a.rs",
            "/home/ci/cargo/git/checkouts/zarrs-0f3e/abc123/src/a.rs",
        ] {
            assert!(third_party(file), "{file}");
        }
        for file in [
            "core/io/src/zarr/read.rs",
            "fuzz/src/targets/zarr.rs",
            "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/num/mod.rs",
        ] {
            assert!(!third_party(file), "{file}");
        }
    }
}
