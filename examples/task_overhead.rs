//! Per-task scheduler overhead on `ones((10000, 10000), chunks=100).sum()`, as one JSON
//! line. The array equals its transpose, so the plan sums only the 5,050 chunks on and
//! above the diagonal (the other 4,950 reuse their mirror's partial sum), plus the
//! reduction tree; `us_per_task` divides by the tasks that run. `bench --workloads
//! ones_sum` measures the pure overhead on a non-square array, where every chunk is a task.
//!
//! ```text
//! cargo run --release --example task_overhead [-- N CHUNK]
//! ```

use tessera::{Array, DType};

fn main() -> tessera::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let c: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let x = Array::ones(&[n, n], DType::F64, c, None)?;
    let s = x.sum(None, false)?;
    let stats = tessera::exec::run_plan_stats(&s)?;
    let total = s.compute_f64()?;
    assert_eq!(total, (n * n) as f64);
    println!(
        "{}",
        serde_json::json!({
            "workload": "ones_sum_overhead",
            "n": n, "chunk": c,
            "scheduler": tessera::config::get("scheduler")?.0,
            "tasks": stats.tasks,
            "lower_seconds": stats.lower_seconds,
            "run_seconds": stats.seconds,
            "us_per_task": stats.seconds / stats.tasks as f64 * 1e6,
            "us_per_task_incl_lowering": (stats.seconds + stats.lower_seconds) / stats.tasks as f64 * 1e6,
        })
    );
    Ok(())
}
