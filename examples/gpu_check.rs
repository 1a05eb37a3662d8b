//! The CUDA backend against the CPU backend on one machine, one JSON line per check: the
//! seed headline's random array element for element (bit for bit), then the headline
//! `(x + 1)[::2, ::2].sum()` timed on `cuda` at each requested size.
//!
//! ```text
//! cargo run --release --example gpu_check -- [--check-n N] [--chunk C] [--sizes 20000,40000] [--repeat R]
//! ```
//!
//! Without a usable GPU it prints the backend's reason and exits 1. `bench/gpu/run.sh`
//! runs it on a GPU machine next to the CuPy + Dask peer.

use tessera::{config, Array, Index, RandomState};

mod common;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// The headline's random array, `normal(10, 1)` of N x N, on `backend`.
fn random_on(backend: &str, n: usize, chunk: usize) -> tessera::Result<Array> {
    let _g = config::set(&[("array.backend", backend)])?;
    RandomState::new(42).normal(10.0, 1.0, &[n, n], chunk, None)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let check_n: usize = arg(&args, "--check-n")
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    let chunk: usize = arg(&args, "--chunk")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let repeat: usize = arg(&args, "--repeat")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let sizes: Vec<usize> = arg(&args, "--sizes")
        .unwrap_or_else(|| "20000".to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    if let Err(e) = run(check_n, chunk, repeat, &sizes) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(check_n: usize, chunk: usize, repeat: usize, sizes: &[usize]) -> tessera::Result<()> {
    // 1. Bit for bit: the same counter-based stream on both backends.
    let gpu = random_on("cuda", check_n, chunk)?.to_ndarray::<f64>()?;
    let cpu = random_on("cpu", check_n, chunk)?.to_ndarray::<f64>()?;
    let differ = gpu
        .iter()
        .zip(cpu.iter())
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    println!(
        "{{\"check\":\"random_bits\",\"n\":{check_n},\"chunk\":{chunk},\"elements\":{},\"differ\":{differ}}}",
        gpu.len()
    );
    // 2. The headline on the GPU.
    for &n in sizes {
        let (secs, runs, answer) = common::timed_runs(repeat, || {
            let x = random_on("cuda", n, chunk)?;
            (&x + 1.0)?
                .slice(&[Index::step(2), Index::step(2)])?
                .sum(None, false)?
                .compute_f64()
        })?;
        let half = n.div_ceil(2) as f64;
        println!(
            "{{\"check\":\"headline_sum\",\"backend\":\"cuda\",\"n\":{n},\"chunk\":{chunk},\"answer\":{answer},\"expected\":{},\"seconds\":{secs},\"runs\":{runs:?},\"logical_gb_per_s\":{}}}",
            11.0 * half * half,
            (n * n * 8) as f64 / secs / 1e9
        );
    }
    Ok(())
}
