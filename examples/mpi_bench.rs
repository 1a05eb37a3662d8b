//! The `mpi` scheduler's workloads, for BENCHMARKS.md: the seed headline, mean/std over
//! an axis, and `svd_compressed`, with the wall time and the bytes every rank sent and
//! received. Run it under mpirun (feature `mpi`):
//!
//! ```text
//! cargo build --release --features mpi --example mpi_bench
//! TESSERA_SCHEDULER=mpi TESSERA_NUM_THREADS=1 mpirun -n 2 target/release/examples/mpi_bench [N] [CHUNK] [REPEAT] [CSV]
//! ```
//!
//! With `CSV` (a file of `key,fare` rows, as `bench/mpi/groupby_csv.py` writes), also a
//! shuffle groupby of it. (`bench/compare_mpi.sh` runs it at 1 and 2 ranks next to Dask
//! distributed.) Rank 0
//! prints one JSON line per workload: the median seconds over `REPEAT` runs (the slowest
//! rank's), the answer, and per rank the bytes sent and received in one run.

use std::time::Instant;

use tessera::cluster;
use tessera::linalg::svd_compressed;
use tessera::{Index, RandomState};

#[path = "common/mod.rs"]
mod common;

/// A workload's figures: the median of the slowest rank's seconds, the last answer, and
/// every rank's (sent, received) bytes of the last run.
type Measured = (f64, f64, Vec<(u64, u64)>);

/// Runs `f` `repeat` times on every rank and measures it.
fn measure(
    repeat: usize,
    mut f: impl FnMut() -> tessera::Result<f64>,
) -> tessera::Result<Measured> {
    let c = cluster::current()?.ok_or_else(|| {
        tessera::Error::Config("mpi_bench needs scheduler = \"mpi\" (TESSERA_SCHEDULER=mpi)".into())
    })?;
    let mut runs = Vec::new();
    let mut answer = f64::NAN;
    let mut traffic = Default::default();
    for _ in 0..repeat.max(1) {
        let before = c.traffic();
        let t = Instant::now();
        answer = f()?;
        let secs = t.elapsed().as_secs_f64();
        traffic = c.traffic().since(&before);
        // The slowest rank's time is the run's.
        let all = c.begin()?.all_gather(secs.to_le_bytes().to_vec())?;
        let slowest = all
            .iter()
            .filter_map(|b| b.as_slice().try_into().ok().map(f64::from_le_bytes))
            .fold(0.0, f64::max);
        runs.push(slowest);
    }
    let t: tessera::cluster::Traffic = traffic;
    let mine = [t.sent_bytes.to_le_bytes(), t.received_bytes.to_le_bytes()].concat();
    let per_rank = c
        .begin()?
        .all_gather(mine)?
        .iter()
        .map(|b| {
            let word =
                |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
            (word(0), word(1))
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    Ok((runs[runs.len() / 2], answer, per_rank))
}

fn report(workload: &str, n: usize, chunk: usize, m: Measured) {
    if cluster::rank() != 0 {
        return;
    }
    let (seconds, answer, per_rank) = m;
    println!(
        "{}",
        serde_json::json!({
            "engine": "tessera-mpi",
            "workload": workload,
            "ranks": cluster::size(),
            "n": n,
            "chunk": chunk,
            "seconds": seconds,
            "answer": answer,
            "sent_bytes_per_rank": per_rank.iter().map(|p| p.0).collect::<Vec<_>>(),
            "received_bytes_per_rank": per_rank.iter().map(|p| p.1).collect::<Vec<_>>(),
            "peak_rss_mb_rank0": common::peak_rss_mb(),
        })
    );
}

fn main() -> tessera::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let chunk: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2_000);
    let repeat: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let x = RandomState::new(42).normal(10.0, 1.0, &[n, n], chunk, None)?;

    let headline = (&x + 1.0)?
        .slice(&[Index::step(2), Index::step(2)])?
        .sum(None, false)?;
    report(
        "headline_sum",
        n,
        chunk,
        measure(repeat, || headline.compute_f64())?,
    );

    let std0 = x.std(Some(&[0]), 0, false)?.sum(None, false)?;
    report(
        "std_axis0",
        n,
        chunk,
        measure(repeat, || std0.compute_f64())?,
    );

    // The linear-algebra benchmark's svd_compressed shape, scaled by N: N*10 × N/4 in
    // row blocks of CHUNK*5 rows, k = 10.
    let (rows, cols) = (n * 10, n / 4);
    let a = RandomState::new(1).uniform(0.0, 1.0, &[rows, cols], &[chunk * 5, cols][..], None)?;
    report(
        "svd_compressed",
        rows,
        chunk * 5,
        measure(repeat, || {
            let d = svd_compressed(&a, 10, 0, 10, 1)?;
            Ok(d.s.compute()?.to_f64_vec()[0])
        })?,
    );

    // A shuffle groupby: N * 100 rows of (key, fare) in a CSV, N * 10 groups.
    if let Some(csv) = args.get(4) {
        use tessera::frame::{read_csv, AggFunc, CsvOptions, GroupStrategy};
        // 1 MiB partitions: several per rank, as a larger file would have at the default.
        let frame = read_csv(
            csv,
            CsvOptions {
                partition_bytes: 1 << 20,
                ..CsvOptions::default()
            },
        )?;
        let g = frame
            .groupby(&["key"])?
            .strategy(GroupStrategy::Shuffle)
            .agg_named(&[("fare", AggFunc::Sum, "fare")])?;
        report(
            "groupby_shuffle",
            n * 100,
            0,
            measure(repeat, || Ok(g.compute()?.num_rows() as f64))?,
        );
    }
    Ok(())
}
