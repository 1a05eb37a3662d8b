//! The sparse backend against the dense CPU backend, and its memory at scale. Prints one
//! JSON line per measurement.
//!
//! ```text
//! cargo run --release --example sparse_bench            # both parts
//! cargo run --release --example sparse_bench -- memory  # only the 100,000 x 100,000 part
//! cargo run --release --example sparse_bench -- compare # only the density sweep
//! ```
//!
//! *memory*: a 100,000 x 100,000 `float64` array at density 1e-4 (dense: 80 GB) is
//! created, summed along each axis and multiplied with a dense vector; the line reports
//! each step's time and the process's peak RSS.
//!
//! *compare*: a 4,000 x 4,000 array (chunks 1,000) at densities 1e-4, 1e-2 and 0.3, the
//! same data on `sparse` and on `cpu` (persisted, so creation is not timed), through four
//! workloads: a column sum, an elementwise chain with a full reduction, a matrix-vector
//! product, and a sparse x sparse product with its transpose slice.

use std::time::Instant;

use tessera::{Array, DType, Index, Result};

mod common;

fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<(T, f64)> {
    let t = Instant::now();
    let v = f()?;
    Ok((v, t.elapsed().as_secs_f64()))
}

fn memory() -> Result<()> {
    let n = 100_000;
    let sparse = tessera::registry::array_backend("sparse")?;
    let (x, t_create) =
        timed(|| tessera::tessera_sparse::random(&sparse, &[n, n], 1e-4, 10_000, 42))?;
    let (cols, t_sum0) = timed(|| x.sum(Some(&[0]), false)?.compute())?;
    let (rows, t_sum1) = timed(|| x.sum(Some(&[1]), false)?.compute())?;
    let v = Array::ones(&[n, 1], DType::F64, 10_000, Some("sparse"))?;
    let (xv, t_mv) = timed(|| x.matmul(&v)?.compute())?;
    let total: f64 = cols.to_f64_vec().iter().sum();
    let total_rows: f64 = rows.to_f64_vec().iter().sum();
    let total_xv: f64 = xv.to_f64_vec().iter().sum();
    let nnz = tessera::tessera_sparse::to_coo(&x)?.nnz();
    if ((total - total_rows) / total).abs() > 1e-9 || ((total - total_xv) / total).abs() > 1e-9 {
        return Err(tessera::Error::Internal(format!(
            "sums disagree: {total} {total_rows} {total_xv}"
        )));
    }
    println!(
        "{{\"bench\":\"sparse_memory\",\"shape\":[{n},{n}],\"density\":1e-4,\"nnz\":{nnz},\"dense_gb\":{:.0},\"create_s\":{t_create:.3},\"sum_axis0_s\":{t_sum0:.3},\"sum_axis1_s\":{t_sum1:.3},\"matvec_s\":{t_mv:.3},\"total\":{total:.6},\"peak_rss_mb\":{:.1}}}",
        (n * n * 8) as f64 / 1e9,
        common::peak_rss_mb()
    );
    Ok(())
}

/// A workload over (matrix, vector) on one backend.
type Workload = dyn Fn(&Array, &Array) -> Result<Array>;

fn compare() -> Result<()> {
    let n = 4000;
    let sparse = tessera::registry::array_backend("sparse")?;
    for density in [1e-4, 1e-2, 0.3] {
        let xs = tessera::tessera_sparse::random(&sparse, &[n, n], density, 1000, 7)?;
        let xd = xs.to_backend("cpu")?.persist()?;
        let v = Array::arange(0.0, n as f64, 1.0, DType::F64, 1000, Some("cpu"))?
            .reshape(&[n as i64, 1])?;
        let vs = v.to_backend("sparse")?.persist()?;
        let workloads: [(&str, &Workload); 4] = [
            ("sum_axis0", &|x, _| x.sum(Some(&[0]), false)),
            ("elementwise_sum", &|x, _| {
                ((x * 2.0)? + 1.0)?.sum(None, false)
            }),
            ("matvec", &|x, v| x.matmul(v)),
            ("spgemm_slice", &|x, _| {
                let a = x.slice(&[Index::range(0, 1000), Index::range(0, 1000)])?;
                a.matmul(&a.transpose()?)?.sum(None, false)
            }),
        ];
        for (name, w) in workloads {
            let (rs, ts) = timed(|| w(&xs, &vs)?.compute())?;
            let (rd, td) = timed(|| w(&xd, &v)?.compute())?;
            let (a, b) = (rs.to_f64_vec(), rd.to_f64_vec());
            let err = a
                .iter()
                .zip(&b)
                .map(|(p, q)| (p - q).abs() / q.abs().max(1.0))
                .fold(0.0, f64::max);
            println!(
                "{{\"bench\":\"sparse_vs_dense\",\"shape\":[{n},{n}],\"density\":{density},\"workload\":\"{name}\",\"sparse_s\":{ts:.4},\"cpu_s\":{td:.4},\"speedup\":{:.2},\"max_rel_diff\":{err:.1e}}}",
                td / ts
            );
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let which = std::env::args().nth(1).unwrap_or_default();
    let run = || -> Result<()> {
        if which != "memory" {
            compare()?;
        }
        if which != "compare" {
            memory()?;
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
