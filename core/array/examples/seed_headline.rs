//! The seed headline (GPU Dask Arrays, first steps): `(x + 1)[::2, ::2].sum()` on a
//! random normal (10, 1) array.
//!
//! ```text
//! cargo run --release --example seed_headline -- [N] [CHUNK]     (default 20000 2000)
//! ```
//! (from the repository root: the workspace's default members include this crate). It
//! lives with the array engine and links only the array half of tessera — the protocol,
//! the engine and the CPU backend — so a fresh clone builds it without arrow's kernels
//! or parquet.
//! Prints one JSON line: the answer, its expected value 11·(N/2)², seconds, logical GB/s
//! (bytes of the N×N float64 array the expression is defined over, per second), the
//! scheduler, and the process's peak RSS.

use std::time::Instant;

use tessera_array::{Index, RandomState};
use tessera_cpu as _; // links the `cpu` array backend

// The helpers the benchmark examples at the repository root share.
#[path = "../../../examples/common/mod.rs"]
mod common;

fn main() -> tessera_core::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let chunk: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let rs = RandomState::new(42);
    let x = rs.normal(10.0, 1.0, &[n, n], chunk, None)?;
    let y = (&x + 1.0)?
        .slice(&[Index::step(2), Index::step(2)])?
        .sum(None, false)?;
    let t = Instant::now();
    let answer = y.compute_f64()?;
    let secs = t.elapsed().as_secs_f64();
    let half = n.div_ceil(2) as f64;
    let expected = 11.0 * half * half;
    let logical = (n * n * 8) as f64;
    println!(
        "{}",
        serde_json::json!({
            "workload": "seed_headline",
            "n": n,
            "chunk": chunk,
            "backend": x.backend_name(),
            "scheduler": tessera_core::config::get("scheduler")?.0,
            "answer": answer,
            "expected": expected,
            "rel_error": (answer - expected).abs() / expected,
            "seconds": secs,
            "logical_gb_per_s": logical / secs / 1e9,
            "tasks": y.num_tasks()?,
            "peak_rss_bytes": common::peak_rss_bytes(),
        })
    );
    Ok(())
}
