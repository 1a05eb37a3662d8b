//! One large chunk is split into fixed segments that run in parallel under the threaded
//! scheduler: results must not depend on the scheduler (bit for bit), and must agree with
//! the same computation over many small chunks.
//!
//! A separate test binary: the scheduler override is process-wide.

use tessera::{Array, DType, Index, RandomState};

fn on<T>(scheduler: &str, f: impl Fn() -> tessera::Result<T>) -> T {
    let _g = tessera::config::set(&[("scheduler", scheduler)]).unwrap();
    f().unwrap()
}

#[test]
fn a_large_chunk_gives_the_same_answer_on_either_scheduler() {
    let _serial = crate::serial();
    // 700 x 800: 560k elements in one chunk, three segments.
    let x = |c: usize| RandomState::new(3).normal(1.0, 2.0, &[700, 800], c, None);
    let reductions = |c: usize| -> tessera::Result<Vec<f64>> {
        let x = x(c)?;
        let y = (&x + 1.0)?.slice(&[Index::step(2), Index::FULL])?;
        let nans = Array::full(&[700, 800], f64::NAN, c, None)?;
        let nan = x.gt_scalar(5.0)?.where_(&nans, &x)?;
        Ok(vec![
            y.sum(None, false)?.compute_f64()?,
            y.mean(None, false)?.compute_f64()?,
            x.var(None, 1, false)?.compute_f64()?,
            nan.nansum(None, false)?.compute_f64()?,
            nan.isnan()?
                .astype(DType::I64)
                .sum(None, false)?
                .compute_f64()?,
            x.gt_scalar(7.0)?.any(None, false)?.compute_f64()?,
            x.gt_scalar(-20.0)?.all(None, false)?.compute_f64()?,
            // Reduced over one axis: per-row sums land in different segments.
            x.sum(Some(&[0]), false)?.sum(None, false)?.compute_f64()?,
        ])
    };
    let big = 800;
    let threads = on("threads", || reductions(big));
    let single = on("single-threaded", || reductions(big));
    assert_eq!(threads, single, "bit-identical across schedulers");
    let small = on("threads", || reductions(100));
    for (i, (a, b)) in threads.iter().zip(&small).enumerate() {
        assert!(
            (a - b).abs() <= 1e-9 * a.abs().max(1.0),
            "reduction {i}: one chunk {a} vs small chunks {b}"
        );
    }
    // Dense output of a large chunk: the same elements as with small chunks.
    let dense = |c: usize| -> tessera::Result<tessera::HostArray> { (&x(c)? * 3.0)?.compute() };
    assert_eq!(on("threads", || dense(big)), on("threads", || dense(100)));
    let ones = Array::ones(&[2000, 700], DType::F32, 2000, None).unwrap();
    assert_eq!(
        on("threads", || ones.sum(None, false)?.compute_f64()),
        1_400_000.0
    );
}
