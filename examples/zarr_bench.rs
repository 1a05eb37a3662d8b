//! Reading a Zarr array from local disk and reducing it: tessera's side of
//! `bench/compare_zarr.sh` (the peer is `dask.array.from_zarr` + zarr-python, in
//! `bench/dask_zarr.py`). Prints one JSON line per workload.
//!
//! ```text
//! cargo run --release --example zarr_bench -- --dir /tmp/z --write --n 16384 --chunk 2048
//! cargo run --release --example zarr_bench -- --dir /tmp/z --workloads sum,mean_axis0
//! ```
//!
//! `--write` first writes `normal(0, 1)` float64 of shape (n, n) in (chunk, chunk) chunks as
//! two arrays, `blosc` (Blosc LZ4 with byte shuffling, zarr-python's default) and `zstd`
//! (level 3), and prints how long that took. Each workload then runs `--repeat` times on
//! each array; the median is reported with every run, the answer and the peak RSS.

#[path = "common/mod.rs"]
mod common;

use std::time::Instant;

use tessera::io::zarr::{
    from_zarr, to_zarr, BloscCompressor, Compression, ZarrStore, ZarrWriteOptions,
};
use tessera::{RandomState, Result};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

const CODECS: [(&str, Compression); 2] = [
    (
        "blosc",
        Compression::Blosc {
            cname: BloscCompressor::Lz4,
            clevel: 5,
            shuffle: true,
        },
    ),
    ("zstd", Compression::Zstd { level: 3 }),
];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = arg(&args, "--dir").unwrap_or_else(|| "/tmp/tessera-zarr-bench".into());
    let n: usize = arg(&args, "--n")
        .and_then(|s| s.parse().ok())
        .unwrap_or(16_384);
    let chunk: usize = arg(&args, "--chunk")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_048);
    let repeat: usize = arg(&args, "--repeat")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let workloads = arg(&args, "--workloads").unwrap_or_else(|| "sum,mean_axis0".into());
    let store = ZarrStore::open(&dir)?;
    if args.iter().any(|a| a == "--write") {
        let x = RandomState::new(0).normal(0.0, 1.0, &[n, n], [chunk, chunk].as_slice(), None)?;
        for (name, compression) in CODECS {
            let t = Instant::now();
            let options = ZarrWriteOptions {
                compression,
                overwrite: true,
                ..ZarrWriteOptions::default()
            };
            let written = to_zarr(&x, &store, name, &options)?;
            println!(
                "{}",
                serde_json::json!({
                    "engine": "tessera", "workload": "write", "codec": name, "n": n,
                    "chunk": chunk, "seconds": t.elapsed().as_secs_f64(),
                    "stored_bytes": written.bytes, "raw_bytes": n * n * 8,
                })
            );
        }
    }
    for (codec, _) in CODECS {
        for w in workloads.split(',').filter(|w| *w != "none") {
            let x = from_zarr(&store, codec, None, None)?;
            let expr = match w {
                "sum" => x.sum(None, false)?,
                // The column means, then their sum: one number to compare.
                "mean_axis0" => x.mean(Some(&[0]), false)?.sum(None, false)?,
                other => {
                    return Err(tessera::Error::invalid(
                        "zarr_bench",
                        format!("unknown workload '{other}' (sum, mean_axis0)"),
                    ))
                }
            };
            let (secs, runs, answer) = common::timed_runs(repeat, || expr.compute_f64())?;
            println!(
                "{}",
                serde_json::json!({
                    "engine": "tessera", "workload": w, "codec": codec,
                    "n": x.shape()[0], "chunk": x.chunks().max_block_shape()[0],
                    "seconds": secs, "runs": runs, "answer": answer,
                    "raw_gb_per_s": x.nbytes() as f64 / secs / 1e9,
                    "peak_rss_bytes": common::peak_rss_bytes(),
                })
            );
        }
    }
    Ok(())
}
