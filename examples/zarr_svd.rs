//! The seed's SVD workflow on stored data: a tall-and-skinny array written to a Zarr store
//! — a local directory, or an object store such as a local S3 server — then `svd` (TSQR)
//! and `svd_compressed` read from it, block by block, and checked against each other.
//!
//! ```text
//! cargo run --release --example zarr_svd                              # /tmp/tessera-zarr-svd
//! cargo run --release --example zarr_svd -- --rows 2000000 --cols 100
//! # On S3 (or any S3-compatible server), with the object-store feature:
//! AWS_ACCESS_KEY_ID=.. AWS_SECRET_ACCESS_KEY=.. TESSERA_STORAGE_ENDPOINT=http://127.0.0.1:9000 \
//!   TESSERA_STORAGE_ALLOW_HTTP=true cargo run --release --features object-store \
//!   --example zarr_svd -- --store s3://bucket/svd.zarr
//! ```
//! Prints one JSON line per step (write, svd, svd_compressed) with its seconds, and the
//! top singular values of both.

use std::time::Instant;

use tessera::io::zarr::{from_zarr, to_zarr, Compression, ZarrStore, ZarrWriteOptions};
use tessera::linalg::{svd, svd_compressed};
use tessera::{RandomState, Result};

fn main() -> Result<()> {
    let mut rows = 500_000usize;
    let mut cols = 50usize;
    let mut store = std::env::temp_dir()
        .join("tessera-zarr-svd")
        .display()
        .to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match a.as_str() {
            "--rows" => rows = value().parse().unwrap_or(rows),
            "--cols" => cols = value().parse().unwrap_or(cols),
            "--store" => store = value(),
            other => {
                return Err(tessera::Error::invalid(
                    "zarr_svd",
                    format!("unknown argument {other}; use --rows N, --cols N, --store URL"),
                ))
            }
        }
    }
    let block = (rows / 20).max(1);
    // A low-rank signal plus noise, so the top singular values stand out.
    let rs = RandomState::new(11);
    let left = rs.normal(0.0, 1.0, &[rows, 5], [block, 5].as_slice(), None)?;
    let right = rs.normal(0.0, 1.0, &[5, cols], [5, cols].as_slice(), None)?;
    let noise = rs.normal(0.0, 0.1, &[rows, cols], [block, cols].as_slice(), None)?;
    let x = (&left.matmul(&right)? + &noise)?;

    let zarr = ZarrStore::open(&store)?;
    let t = Instant::now();
    let options = ZarrWriteOptions {
        compression: Compression::Zstd { level: 3 },
        overwrite: true,
        ..ZarrWriteOptions::default()
    };
    let written = to_zarr(&x, &zarr, "x", &options)?;
    println!(
        "{}",
        serde_json::json!({"step": "write", "store": store, "rows": rows, "cols": cols,
            "blocks": written.blocks, "stored_bytes": written.bytes,
            "seconds": t.elapsed().as_secs_f64()})
    );

    let stored = from_zarr(&zarr, "x", None, None)?;
    let t = Instant::now();
    let exact = svd(&stored)?.s.compute()?.to_f64_vec();
    println!(
        "{}",
        serde_json::json!({"step": "svd", "seconds": t.elapsed().as_secs_f64(),
            "top": &exact[..5.min(exact.len())]})
    );
    let t = Instant::now();
    let approx = svd_compressed(&stored, 5, 2, 10, 7)?
        .s
        .compute()?
        .to_f64_vec();
    println!(
        "{}",
        serde_json::json!({"step": "svd_compressed", "k": 5, "seconds": t.elapsed().as_secs_f64(),
            "top": approx})
    );
    let worst = approx
        .iter()
        .zip(&exact)
        .map(|(a, e)| (a - e).abs() / e)
        .fold(0.0, f64::max);
    if worst > 1e-3 {
        return Err(tessera::Error::Internal(format!(
            "svd_compressed's top values differ from svd's by {worst:e}"
        )));
    }
    println!("svd and svd_compressed agree on the top 5 singular values (worst relative difference {worst:.1e})");
    Ok(())
}
