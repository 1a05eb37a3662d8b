//! Device memory in tiers on a GPU, one JSON line per measurement: the host ↔ device copy
//! rate of the `cuda` backend (its pageable staging, the path spilling takes), then an
//! array `--times` x `device.memory-limit` persisted on `cuda` and summed, with the bytes
//! each tier took and the spill and unspill throughput, next to that copy rate.
//!
//! ```text
//! cargo run --release --example gpu_spill -- [--limit 16GiB] [--times 3] [--chunk 10000]
//! ```
//!
//! The limit is set before the backend opens (`device.memory-limit`); host memory takes
//! what leaves the device (`device.host-limit` unbounded unless `memory-limit` is set), so
//! the machine needs about `(times - 1) x limit` of free memory. Without a usable GPU it
//! prints the backend's reason and exits 1. `bench/gpu/run.sh` runs it (`spill` step).

use std::time::Instant;

use tessera::{config, HostArray, RandomState};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let limit = arg(&args, "--limit").unwrap_or_else(|| "16GiB".to_string());
    let times: f64 = arg(&args, "--times")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let chunk: usize = arg(&args, "--chunk")
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    if let Err(e) = run(&limit, times, chunk) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn gbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs.max(1e-9) / 1e9
}

fn run(limit: &str, times: f64, chunk: usize) -> tessera::Result<()> {
    let _g = config::set(&[("device.memory-limit", limit), ("array.backend", "cuda")])?;
    let limit_bytes = tessera::config::parse_bytes(limit).ok_or_else(|| {
        tessera::Error::invalid("--limit", format!("'{limit}' is not a byte size"))
    })?;
    let backend = tessera::registry::array_backend("cuda")?;
    let tiers = tessera_cuda::device::open_gpus(1)?;

    // The copy rate, as a spill copies: 1 GiB through the backend's upload and download.
    let n = 1usize << 27;
    let host = HostArray::full(&[n], tessera::Scalar::F64(1.0), tessera::DType::F64);
    let (mut h2d, mut d2h) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        let t = Instant::now();
        let c = backend.from_host(&host)?;
        h2d = h2d.min(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let back = backend.to_host(&c)?;
        d2h = d2h.min(t.elapsed().as_secs_f64());
        if back.len() != n {
            return Err(tessera::Error::Internal("a copy came back short".into()));
        }
    }
    let bytes = (n * 8) as u64;
    println!(
        "{{\"check\":\"copy_rate\",\"bytes\":{bytes},\"h2d_gb_per_s\":{:.2},\"d2h_gb_per_s\":{:.2}}}",
        gbps(bytes, h2d),
        gbps(bytes, d2h)
    );

    // An array `times` x the limit, persisted and summed through the tiers.
    let side = ((limit_bytes as f64 * times / 8.0).sqrt() as usize).max(chunk);
    let x = RandomState::new(42).normal(10.0, 1.0, &[side, side], chunk, None)?;
    let before = tiers.moves();
    let t = Instant::now();
    let held = x.persist()?;
    let persist_s = t.elapsed().as_secs_f64();
    let after_persist = tiers.moves();
    let usage = tiers.usage();
    let t = Instant::now();
    let sum = held.sum(None, false)?.compute_f64()?;
    let sum_s = t.elapsed().as_secs_f64();
    let m = tiers.moves();
    let down = (m.device_to_host.1 + m.to_disk.1) - (before.device_to_host.1 + before.to_disk.1);
    let up = (m.host_to_device.1 + m.disk_to_device.1)
        - (before.host_to_device.1 + before.disk_to_device.1);
    let elements = (side * side) as f64;
    println!(
        "{{\"check\":\"spill\",\"limit\":{limit_bytes},\"array_bytes\":{},\"persist_s\":{persist_s:.3},\"sum_s\":{sum_s:.3},\"held\":{{\"device\":{},\"host\":{},\"disk\":{}}},\"spilled_bytes\":{down},\"unspilled_bytes\":{up},\"spill_gb_per_s\":{:.2},\"unspill_gb_per_s\":{:.2},\"persist_spilled_bytes\":{},\"retries\":{},\"mean\":{},\"expected_mean\":10.0}}",
        side * side * 8,
        usage.device.iter().sum::<u64>(),
        usage.host,
        usage.disk,
        gbps(down, (m.spill_ns - before.spill_ns) as f64 / 1e9),
        gbps(up, (m.unspill_ns - before.unspill_ns) as f64 / 1e9),
        after_persist.device_to_host.1 - before.device_to_host.1,
        m.retries - before.retries,
        sum / elements
    );
    Ok(())
}
