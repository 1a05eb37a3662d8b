//! The linear-algebra workloads of the seed (000: genomics SVD), one JSON line each, for
//! a side-by-side ratio with `bench/dask_linalg.py` run in the same session.
//!
//! ```text
//! cargo run --release --example linalg_bench -- tsqr         # svd of 2,000,000 x 20, chunks 125,000 rows
//! cargo run --release --example linalg_bench -- compressed   # svd_compressed(200,000 x 5,000, k=10)
//! TESSERA_ARRAY_BACKEND=cuda cargo run --release --example linalg_bench -- compressed 10000   # on a GPU
//! ```
//!
//! Both inputs are uniform on [0, 1), generated lazily (the compressed SVD regenerates its
//! input on each pass rather than keeping 8 GB in memory). The figures include computing
//! every factor to host memory, as `dask.compute(u, s, v)` does.

use std::time::Instant;

use tessera::chunks::{ChunkSpec, Chunks};
use tessera::linalg::{svd, svd_compressed};
use tessera::{RandomState, Result};

mod common;

fn chunks(shape: [usize; 2], rows: usize) -> Result<ChunkSpec> {
    let mut sizes = vec![rows; shape[0] / rows];
    if !shape[0].is_multiple_of(rows) {
        sizes.push(shape[0] % rows);
    }
    Ok(ChunkSpec::Exact(Chunks::new(
        &shape,
        vec![sizes, vec![shape[1]]],
    )?))
}

fn tsqr_svd() -> Result<()> {
    let shape = [2_000_000, 20];
    let t = Instant::now();
    let x = RandomState::new(0).uniform(0.0, 1.0, &shape, chunks(shape, 125_000)?, None)?;
    let d = svd(&x)?;
    let u = d.u.compute()?;
    let s = d.s.compute()?.to_f64_vec();
    let vt = d.vt.compute()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{{\"engine\":\"tessera\",\"workload\":\"tsqr_svd\",\"shape\":[2000000,20],\"chunk_rows\":125000,\"seconds\":{secs:.3},\"s0\":{:.4},\"u_shape\":{:?},\"vt_shape\":{:?},\"peak_rss_mb\":{:.0}}}",
        s[0],
        u.shape(),
        vt.shape(),
        common::peak_rss_mb()
    );
    Ok(())
}

fn compressed(rows: usize) -> Result<()> {
    let shape = [200_000, 5_000];
    let t = Instant::now();
    let x = RandomState::new(0).uniform(0.0, 1.0, &shape, chunks(shape, rows)?, None)?;
    let d = svd_compressed(&x, 10, 0, 10, 1)?;
    let u = d.u.compute()?;
    let s = d.s.compute()?.to_f64_vec();
    let vt = d.vt.compute()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{{\"engine\":\"tessera\",\"backend\":\"{}\",\"workload\":\"svd_compressed\",\"shape\":[200000,5000],\"chunk_rows\":{rows},\"k\":10,\"seconds\":{secs:.3},\"s0\":{:.1},\"u_shape\":{:?},\"vt_shape\":{:?},\"peak_rss_mb\":{:.0}}}",
        tessera::config::array_backend()?,
        s[0],
        u.shape(),
        vt.shape(),
        common::peak_rss_mb()
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let which = std::env::args().nth(1).unwrap_or_default();
    let rows: usize = std::env::args()
        .nth(2)
        .and_then(|r| r.parse().ok())
        .unwrap_or(4_000);
    let run = || -> Result<()> {
        if which != "compressed" {
            tsqr_svd()?;
        }
        if which != "tsqr" {
            compressed(rows)?;
        }
        Ok(())
    };
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
