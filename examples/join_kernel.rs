//! What one partition's hash join costs as its build side grows: the CPU backend's `join`
//! (build the right side's table, probe it with the left side, gather the output) on
//! `rows × rows` partitions, for a short-string key and an integer key, inner and semi.
//! One JSON line per size and join, the best of `--repeat` runs, with nanoseconds per
//! build row. The shuffled join sizes its buckets from these figures
//! (`JOIN_BUCKET_ROWS`): past the caches a row costs twice as much.
//!
//! ```text
//! cargo run --release --example join_kernel -- [--rows 625000,156000,78000,39000] [--repeat 15]
//! ```
//!
//! Keys are drawn from a fixed mix: left keys below `4 × rows`, right keys even numbers
//! below that (so about a fifth of the left rows match, and the right side repeats some
//! keys); strings are the keys written as `s` and eight digits.

use std::sync::Arc;
use std::time::Instant;

use tessera::frame::arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use tessera::frame::{DataFrameBackend, JoinAlgorithm, JoinSpec, JoinType, Partition};
use tessera::tessera_cpu_frame::CpuFrameBackend;

/// A 64-bit mix (the finaliser of MurmurHash3) for reproducible keys.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

/// A partition of `rows` rows: integer key `k`, its string `s`, and a value column.
fn side(b: &CpuFrameBackend, keys: Vec<i64>, value: &str) -> tessera::Result<Partition> {
    let s: ArrayRef = Arc::new(StringArray::from_iter_values(
        keys.iter().map(|k| format!("s{k:08}")),
    ));
    let v: ArrayRef = Arc::new(Float64Array::from_iter_values(
        (0..keys.len()).map(|i| i as f64),
    ));
    let k: ArrayRef = Arc::new(Int64Array::from(keys));
    let batch = RecordBatch::try_from_iter(vec![("k", k), ("s", s), (value, v)])
        .map_err(|e| tessera::Error::invalid("join_kernel", e.to_string()))?;
    b.import_batch(batch)
}

fn main() -> tessera::Result<()> {
    let mut sizes = vec![625_000usize, 156_000, 78_000, 39_000];
    let mut repeat = 15;
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        match (pair[0].as_str(), pair.get(1)) {
            ("--rows", Some(v)) => {
                sizes = v.split(',').filter_map(|s| s.parse().ok()).collect();
            }
            ("--repeat", Some(v)) => repeat = v.parse().unwrap_or(repeat),
            _ => {
                eprintln!("usage: join_kernel [--rows N,N,...] [--repeat N]");
                std::process::exit(2);
            }
        }
    }
    let b = CpuFrameBackend::default();
    for rows in sizes {
        let n = rows as u64;
        let lk = (0..n).map(|i| (mix(i) % (4 * n)) as i64).collect();
        let rk = (0..n)
            .map(|i| (mix(i + (1 << 40)) % (2 * n)) as i64 * 2)
            .collect();
        let (l, r) = (side(&b, lk, "x")?, side(&b, rk, "y")?);
        for (key, how) in [
            ("s", JoinType::Inner),
            ("k", JoinType::Inner),
            ("s", JoinType::Semi),
            ("k", JoinType::Semi),
        ] {
            let spec = JoinSpec {
                left_on: vec![key.into()],
                right_on: vec![key.into()],
                how,
                suffixes: ("_x".into(), "_y".into()),
                algorithm: JoinAlgorithm::Hash,
            };
            let mut best = f64::INFINITY;
            let mut out = 0;
            for _ in 0..repeat.max(1) {
                let t = Instant::now();
                out = b.join(&l, &r, &spec)?.num_rows();
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{{\"rows\":{rows},\"key\":\"{}\",\"how\":\"{how:?}\",\"seconds\":{best:.5},\"ns_per_row\":{:.1},\"out_rows\":{out}}}",
                if key == "s" { "string" } else { "int" },
                best * 1e9 / rows as f64
            );
        }
    }
    Ok(())
}
