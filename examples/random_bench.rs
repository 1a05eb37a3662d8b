//! Counter-based random generation throughput, per SIMD path, side by side with NumPy's
//! Philox bit generator: one JSON line per (path, kind), then one per NumPy kind.
//!
//! Each line times generating `n` values of one kind through the protocol's samplers —
//! the code every backend calls — single-threaded, best of `repeat` runs:
//! `uniform_f64` and `normal_f64` (a contiguous run, as a chunk of `random(...)`),
//! `normal_f32`, and `normal_f64_step2` (every other element, as `x[::2]` pushed into
//! the generator). Every SIMD path this CPU supports runs (`tessera_core::simd`), so the
//! figure per instruction set is measured, not assumed. With a Python that has NumPy
//! (`--numpy PYTHON`), NumPy's `Generator(Philox)` generates the same counts in the same
//! run, and each tessera line gets `ratio_vs_numpy` (NumPy's time over tessera's, on the
//! best path).
//!
//! ```text
//! cargo run --release --example random_bench [-- --n 16777216 --repeat 5 --numpy /path/to/venv/bin/python]
//! ```

use std::process::Command;
use std::time::Instant;

use tessera::random::{Distribution, RandomSpec};
use tessera::simd::{self, SimdPath};
use tessera::DType;

struct Args {
    n: usize,
    repeat: usize,
    numpy: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        n: 1 << 24,
        repeat: 5,
        numpy: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_default();
        match flag.as_str() {
            "--n" => a.n = value.parse().expect("--n takes a count"),
            "--repeat" => a.repeat = value.parse().expect("--repeat takes a count"),
            "--numpy" => a.numpy = Some(value),
            other => panic!("unknown argument {other}; see the module docs"),
        }
    }
    a
}

/// The kinds measured: name, distribution, dtype, step.
fn kinds() -> Vec<(&'static str, Distribution, DType, i64)> {
    let uniform = Distribution::Uniform {
        low: 0.0,
        high: 1.0,
    };
    let normal = Distribution::Normal {
        mean: 0.0,
        std: 1.0,
    };
    vec![
        ("uniform_f64", uniform, DType::F64, 1),
        ("normal_f64", normal, DType::F64, 1),
        ("normal_f32", normal, DType::F32, 1),
        ("normal_f64_step2", normal, DType::F64, 2),
    ]
}

/// Best-of-`repeat` seconds to generate `n` values of one kind.
fn time_kind(dist: Distribution, dtype: DType, step: i64, n: usize, repeat: usize) -> (f64, f64) {
    let spec = RandomSpec {
        seed: 20261123,
        stream: 0,
        dist,
        dtype,
    };
    let mut out = vec![0.0f64; n];
    let mut best = f64::INFINITY;
    for _ in 0..repeat {
        let t = Instant::now();
        spec.sample_runs_into(&[(0, step, n)], &mut out);
        best = best.min(t.elapsed().as_secs_f64());
    }
    // A checksum keeps the work observable (and shows every path gives the same values).
    (best, out.iter().step_by(4099).sum())
}

/// NumPy's seconds per kind (best of `repeat`), from the given Python.
fn numpy_times(python: &str, n: usize, repeat: usize) -> Option<serde_json::Value> {
    let script = format!(
        r#"
import json, time, numpy as np
g = np.random.Generator(np.random.Philox(20261123))
n, r = {n}, {repeat}
def best(f):
    b = float("inf")
    for _ in range(r):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b
print(json.dumps({{
    "numpy": np.__version__,
    "uniform_f64": best(lambda: g.random(n)),
    "normal_f64": best(lambda: g.standard_normal(n)),
    "normal_f32": best(lambda: g.standard_normal(n, dtype=np.float32)),
    "normal_f64_step2": best(lambda: g.standard_normal(2 * n)[::2].copy()),
}}))
"#
    );
    let out = Command::new(python).arg("-c").arg(script).output().ok()?;
    if !out.status.success() {
        eprintln!(
            "numpy run failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn main() {
    let a = args();
    let peer = a
        .numpy
        .as_deref()
        .and_then(|p| numpy_times(p, a.n, a.repeat));
    for (name, dist, dtype, step) in kinds() {
        let mut best_path = f64::INFINITY;
        for path in SimdPath::ALL {
            let Some((secs, checksum)) =
                simd::run_on(path, || time_kind(dist, dtype, step, a.n, a.repeat))
            else {
                continue;
            };
            best_path = best_path.min(secs);
            println!(
                "{}",
                serde_json::json!({
                    "workload": "random",
                    "kind": name,
                    "simd_path": path.name(),
                    "detected": path == simd::detected(),
                    "n": a.n,
                    "seconds": secs,
                    "ns_per_value": secs / a.n as f64 * 1e9,
                    "checksum": checksum,
                })
            );
        }
        if let Some(p) = &peer {
            let numpy = p[name].as_f64().unwrap_or(f64::NAN);
            println!(
                "{}",
                serde_json::json!({
                    "workload": "random",
                    "kind": name,
                    "peer": format!("numpy {} Generator(Philox)", p["numpy"].as_str().unwrap_or("?")),
                    "n": a.n,
                    "seconds": numpy,
                    "ns_per_value": numpy / a.n as f64 * 1e9,
                    "ratio_vs_numpy": numpy / best_path,
                })
            );
        }
    }
}
