//! The benchmark workloads of issue 4, one JSON line each (same fields as
//! `bench/dask_workloads.py`, so `bench/compare_dask.sh` can put them side by side).
//!
//! ```text
//! cargo run --release --example bench -- [--n N] [--chunk C] [--workloads a,b,...] [--repeat R]
//! ```
//!
//! Each workload computes its expression `R` times (default 3); `seconds` is the median
//! and `runs` lists every time, as in the Dask script, so one slow minute on a shared
//! machine does not decide a ratio.
//!
//! Workloads: `headline_sum` (`(x + 1)[::2, ::2].sum()`, x = normal(10, 1) of N×N),
//! `headline_mean` (the same with `.mean()`), `transposed_std`
//! (`(x + x.T)[::2, ::2].std()`), `normal_sum` (`x.sum()`: every element generated),
//! `ones_sum` (`ones((10000, 10000), chunks=100).sum()`,
//! the per-task overhead graph). Peak RSS is the process's, so run one workload per
//! process when comparing memory.

use std::time::Instant;

use tessera::{Array, DType, Index, RandomState};

mod common;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The expression of a workload, its N and chunk, and the expected answer.
fn workload(w: &str, n: usize, c: usize) -> tessera::Result<(Array, usize, usize, f64)> {
    let every_other = [Index::step(2), Index::step(2)];
    let half = n.div_ceil(2) as f64;
    Ok(match w {
        "headline_sum" | "headline_mean" => {
            let x = RandomState::new(42).normal(10.0, 1.0, &[n, n], c, None)?;
            let y = (&x + 1.0)?.slice(&every_other)?;
            if w == "headline_sum" {
                (y.sum(None, false)?, n, c, 11.0 * half * half)
            } else {
                (y.mean(None, false)?, n, c, 11.0)
            }
        }
        "transposed_std" => {
            // x + x.T has variance 2 off the diagonal (4 on it): std ≈ sqrt(2).
            let x = RandomState::new(42).normal(10.0, 1.0, &[n, n], c, None)?;
            let y = (&x + &x.T()?)?.slice(&every_other)?.std(None, 0, false)?;
            (y, n, c, 2f64.sqrt())
        }
        "normal_sum" => {
            // No slice: every element is generated, so this measures the generator on
            // contiguous rows (one Philox block per two elements, as for a step-2 slice).
            let x = RandomState::new(42).normal(10.0, 1.0, &[n, n], c, None)?;
            (x.sum(None, false)?, n, c, 10.0 * (n * n) as f64)
        }
        "ones_sum" => {
            let x = Array::ones(&[10_000, 10_000], DType::F64, 100, None)?;
            (x.sum(None, false)?, 10_000, 100, 1e8)
        }
        other => {
            return Err(tessera::Error::invalid(
                "bench",
                format!("unknown workload '{other}'; known: headline_sum, headline_mean, transposed_std, normal_sum, ones_sum"),
            ))
        }
    })
}

/// Pure per-task overhead, without the compute: the single-threaded time of
/// `ones((10000, 10100), chunks=100).sum()` minus that of the same sum over one chunk per
/// 100 rows (100 tasks doing the same arithmetic), divided by the extra tasks.
///
/// Not the square `ones((10000, 10000))` of the `ones_sum` workload: that array equals
/// its transpose, so the optimizer sums only the blocks on and above the diagonal, and
/// the two plans would no longer do the same arithmetic. 100 more columns keep every
/// block a task of its own.
fn overhead() -> tessera::Result<serde_json::Value> {
    let _single = tessera::config::set(&[("scheduler", "single-threaded")])?;
    let time = |chunks: [usize; 2]| -> tessera::Result<(f64, usize)> {
        let x = Array::ones(&[10_000, 10_100], DType::F64, chunks, None)?;
        let s = x.sum(None, false)?;
        let tasks = s.num_tasks()?;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            s.compute_f64()?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok((best, tasks))
    };
    let (small, n_small) = time([100, 100])?;
    let (big, n_big) = time([100, 10_100])?;
    Ok(serde_json::json!({
        "engine": "tessera",
        "workload": "ones_sum_overhead",
        "scheduler": "single-threaded",
        "seconds_chunks_100": small,
        "tasks_chunks_100": n_small,
        "seconds_rows_of_100": big,
        "tasks_rows_of_100": n_big,
        "overhead_us_per_task": (small - big) / (n_small - n_big) as f64 * 1e6,
    }))
}

fn main() -> tessera::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = arg(&args, "--n")
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let chunk: usize = arg(&args, "--chunk")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let repeat: usize = arg(&args, "--repeat")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let list = arg(&args, "--workloads")
        .unwrap_or_else(|| "headline_sum,headline_mean,transposed_std,ones_sum".into());
    for w in list.split(',') {
        if w == "ones_sum" {
            println!("{}", overhead()?);
        }
        let (expr, n, c, expected) = workload(w, n, chunk)?;
        let tasks = expr.num_tasks()?;
        let (secs, runs, answer) = common::timed_runs(repeat, || expr.compute_f64())?;
        println!(
            "{}",
            serde_json::json!({
                "engine": "tessera",
                "workload": w,
                "n": n,
                "chunk": c,
                "scheduler": tessera::config::get("scheduler")?.0,
                "seconds": secs,
                "runs": runs,
                "answer": answer,
                "expected": expected,
                "rel_error": (answer - expected).abs() / expected,
                "tasks": tasks,
                "us_per_task": secs / tasks as f64 * 1e6,
                "logical_gb_per_s": (n * n * 8) as f64 / secs / 1e9,
                "peak_rss_bytes": common::peak_rss_bytes(),
            })
        );
    }
    Ok(())
}
