//! Visible skips for tests whose prerequisite is missing (a Python package, a GPU, a
//! tmpfs mount).
//!
//! libtest captures what a passing test prints with `println!`, so a test that returned
//! early looked like any other `ok`. [`skip`] writes `skipped: <test>: <reason>` straight
//! to the process's standard output, which the harness does not capture: the line shows
//! in `cargo test` output, and `.ci/run` counts these lines and prints the total.

use std::io::Write;

/// Reports that `test` did not run because of `reason` (write a complete sentence: what is
/// missing and how to provide it).
pub fn skip(test: &str, reason: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "skipped: {test}: {reason}");
    let _ = out.flush();
}
