//! Spill throughput against the disk's own rate, measured side by side in the same run.
//!
//! 1. `dd` writes and reads back a file of `--mib` MiB in the spill directory (page cache
//!    included, no fsync: spill files are scratch and are never synced either), and once
//!    more with `conv=fdatasync` for the device's sustained rate;
//! 2. tessera spills the same number of bytes of normally distributed f64 data (what a
//!    persisted array holds; it barely compresses) to LZ4 spill files of 8 MiB and reads
//!    them back — alternating with 1 for `--rounds` rounds, medians reported;
//! 3. `persist()` of an array of `--mib` MiB under a `memory-limit` of a fifth of that,
//!    then a sum over it (every spilled chunk read back), against the same with no limit.
//!
//! 4. a dataframe groupby with more groups than fit, under a `memory-limit`, against the
//!    same with no limit.
//!
//! One JSON line per figure; ratios are tessera's rate over the peer's.
//!
//! ```text
//! cargo run --release --example spill_bench [-- --mib 1024 --rounds 3 --dir /tmp] 2>/dev/null
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use tessera::spill::SpillFile;
use tessera::RandomState;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Seconds `dd` takes for `args`, or `None` when dd is missing or fails.
fn dd(args: &[String]) -> Option<f64> {
    let t = Instant::now();
    let out = Command::new("dd").args(args).output().ok()?;
    out.status.success().then(|| t.elapsed().as_secs_f64())
}

fn main() -> tessera::Result<()> {
    let mib: usize = arg("--mib").and_then(|v| v.parse().ok()).unwrap_or(1024);
    let base = arg("--dir").map_or_else(std::env::temp_dir, PathBuf::from);
    let bytes = (mib as u64) << 20;
    let gb = bytes as f64 / 1e9;
    let machine = format!(
        "{} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );

    // 1 and 2, alternating for `--rounds` rounds (medians): the disk through dd, then the
    // same bytes through spill files of 8 MiB blocks of normal f64 data.
    let rounds: usize = arg("--rounds").and_then(|v| v.parse().ok()).unwrap_or(3);
    let probe = base.join(format!("tessera-spill-bench-dd-{}", std::process::id()));
    let of = format!("of={}", probe.display());
    let iff = format!("if={}", probe.display());
    let block = RandomState::new(5)
        .normal(0.0, 1.0, &[1 << 20], 1 << 20, None)?
        .compute()?
        .to_f64_vec();
    let block_bytes: Vec<u8> = block.iter().flat_map(|x| x.to_le_bytes()).collect();
    let files = (bytes as usize).div_ceil(block_bytes.len());
    let (mut dd_w, mut dd_r, mut sp_w, mut sp_r) = (vec![], vec![], vec![], vec![]);
    let mut on_disk = 0u64;
    for _ in 0..rounds {
        let write = ["if=/dev/zero", &of, "bs=1M", &format!("count={mib}")];
        dd_w.push(dd(&write.map(String::from)));
        dd_r.push(dd(&[iff.clone(), "of=/dev/null".into(), "bs=1M".into()]));
        let _ = std::fs::remove_file(&probe);
        let t = Instant::now();
        let spilled: Vec<SpillFile> = (0..files)
            .map(|_| {
                SpillFile::write(&base, block_bytes.len() as u64, |w| {
                    w.write_all(&block_bytes)
                        .map_err(|e| tessera::Error::io(&base, e))
                })
            })
            .collect::<tessera::Result<_>>()?;
        sp_w.push(t.elapsed().as_secs_f64());
        on_disk = spilled.iter().map(|f| f.disk_bytes()).sum();
        let t = Instant::now();
        for f in &spilled {
            let back = f.read_to_vec()?;
            assert_eq!(back.len(), block_bytes.len());
        }
        sp_r.push(t.elapsed().as_secs_f64());
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let median_dd = |v: Vec<Option<f64>>| v.into_iter().collect::<Option<Vec<f64>>>().map(median);
    // The device's sustained rate, for context: dd with the data synced to disk.
    let synced = dd(&[
        "if=/dev/zero".into(),
        format!("of={}", probe.display()),
        "bs=1M".into(),
        format!("count={mib}"),
        "conv=fdatasync".into(),
    ]);
    let _ = std::fs::remove_file(&probe);
    let written = (files * block_bytes.len()) as f64 / 1e9;
    for (what, secs, peer) in [
        ("spill write", median(sp_w), median_dd(dd_w)),
        ("spill read back", median(sp_r), median_dd(dd_r)),
    ] {
        let rate = written / secs;
        let peer_rate = peer.map(|p| gb / p);
        println!(
            "{}",
            serde_json::json!({
                "workload": what,
                "gb": written,
                "seconds_median": secs,
                "rounds": rounds,
                "gb_per_s": rate,
                "compressed_ratio": on_disk as f64 / (files * block_bytes.len()) as f64,
                "peer": "dd bs=1M (page cache, no fsync, as spill files)",
                "peer_gb_per_s": peer_rate,
                "ratio_vs_peer": peer_rate.map(|p| rate / p),
                "disk_synced_write_gb_per_s": synced.map(|s| gb / s),
                "machine": machine,
            })
        );
    }

    // 3. persist() over the limit, then every chunk read back by a sum.
    let n = (bytes / 8) as usize;
    let side = 4096usize;
    let rows = n / side;
    let x = RandomState::new(9).normal(0.0, 1.0, &[rows, side], 256, None)?;
    let run = |limit: Option<u64>, dir: &Path| -> tessera::Result<(f64, f64, f64)> {
        let limit_text = limit.map_or("none".to_string(), |l| l.to_string());
        let _g = tessera::config::set(&[
            ("memory-limit", limit_text.as_str()),
            ("spill-dir", dir.to_str().unwrap_or("")),
        ])?;
        let t = Instant::now();
        let p = x.persist()?;
        let persist = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let s = p.sum(None, false)?.compute()?.to_f64_vec()[0];
        Ok((persist, t.elapsed().as_secs_f64(), s))
    };
    let before = tessera::spill::stats();
    let (p_spill, s_spill, sum_spill) = run(Some(bytes / 5), &base)?;
    let after = tessera::spill::stats();
    let (p_mem, s_mem, sum_mem) = run(None, &base)?;
    assert_eq!(
        sum_spill, sum_mem,
        "the spilled run computes what the unlimited one does"
    );
    println!(
        "{}",
        serde_json::json!({
            "workload": "persist 5x memory-limit, then sum",
            "gb": gb,
            "spilled_gb": (after.bytes_written - before.bytes_written) as f64 / 1e9,
            "persist_seconds": p_spill,
            "sum_seconds": s_spill,
            "peer": "the same with no memory-limit (all in memory)",
            "peer_persist_seconds": p_mem,
            "peer_sum_seconds": s_mem,
            "ratio_vs_peer": (p_mem + s_mem) / (p_spill + s_spill),
            "machine": machine,
        })
    );
    frame_groupby(&base, &machine)?;
    Ok(())
}

/// 4. A groupby with more groups than fit (8 Mi rows, 4 Mi groups, Parquet in 64 Ki-row
///    files) under a 64 MiB `memory-limit` on two workers, against the same with no limit.
fn frame_groupby(base: &Path, machine: &str) -> tessera::Result<()> {
    use std::sync::Arc;
    use tessera::frame::arrow_array::{ArrayRef, Float64Array, Int64Array};
    use tessera::frame::{read_parquet, AggFunc, DataFrame};
    let rows: i64 = 8 << 20;
    let groups: i64 = 4 << 20;
    let dir = base.join(format!("tessera-spill-bench-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| tessera::Error::io(&dir, e))?;
    let pattern = dir.join("part-*.parquet");
    let pattern = pattern.to_str().unwrap_or_default().to_string();
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values(
        (0..rows).map(|i| (i * 7919) % groups),
    ));
    let v: ArrayRef = Arc::new(Float64Array::from_iter_values((0..rows).map(|i| i as f64)));
    DataFrame::from_columns(vec![("k", k), ("v", v)], (rows >> 16) as usize)?
        .to_parquet(&pattern)?;
    let query = || -> tessera::Result<f64> {
        let df = read_parquet(&pattern)?;
        let g = df.groupby(&["k"])?.sum("v")?;
        match g.agg(&[("v", AggFunc::Sum)])?.reduce("v", AggFunc::Sum)? {
            tessera::frame::Value::Float(f) => Ok(f),
            other => Err(tessera::Error::Internal(format!("sum is {other:?}"))),
        }
    };
    let timed = |limit: &str| -> tessera::Result<(f64, f64, u64)> {
        let _g = tessera::config::set(&[
            ("memory-limit", limit),
            ("spill-dir", base.to_str().unwrap_or("")),
            ("num-threads", "2"),
        ])?;
        let before = tessera::spill::stats().bytes_written;
        let t = Instant::now();
        let sum = query()?;
        Ok((
            t.elapsed().as_secs_f64(),
            sum,
            tessera::spill::stats().bytes_written - before,
        ))
    };
    let (spill_s, spill_sum, spilled) = timed("64MiB")?;
    let (mem_s, mem_sum, _) = timed("none")?;
    assert_eq!(
        spill_sum, mem_sum,
        "the spilled run computes what the unlimited one does"
    );
    std::fs::remove_dir_all(&dir).map_err(|e| tessera::Error::io(&dir, e))?;
    println!(
        "{}",
        serde_json::json!({
            "workload": "groupby 8Mi rows, 4Mi groups, memory-limit 64MiB",
            "seconds": spill_s,
            "spilled_gb": spilled as f64 / 1e9,
            "peer": "the same with no memory-limit",
            "peer_seconds": mem_s,
            "ratio_vs_peer": mem_s / spill_s,
            "machine": machine,
        })
    );
    Ok(())
}
