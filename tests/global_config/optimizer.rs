//! Results with and without the optimizer (`optimize = false` materialises every
//! intermediate block and generates whole random chunks, as Dask does): the same random
//! data bit for bit, and reductions equal up to float reassociation.
//!
//! A separate test binary: the config override is process-wide.

use tessera::{Array, Index, RandomState};

fn both<T>(f: impl Fn() -> tessera::Result<T>) -> (T, T) {
    let on = f().unwrap();
    let off = {
        let _g = tessera::config::set(&[("optimize", "false")]).unwrap();
        f().unwrap()
    };
    (on, off)
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / a.abs().max(b.abs()).max(1e-300)
}

#[test]
fn the_optimizer_changes_the_plan_not_the_results() {
    let _serial = crate::serial();
    let x = || RandomState::new(7).normal(10.0, 1.0, &[301, 257], [40usize, 33], None);
    let every_other = [Index::step(2), Index::step(2)];

    // The random array itself, and a strided slice of it: identical bits.
    let (a, b) = both(|| x()?.slice(&every_other)?.compute());
    assert_eq!(a, b);

    // The seed headline, its mean, and the transposed std (a square array).
    let (a, b) = both(|| {
        (&x()? + 1.0)?
            .slice(&every_other)?
            .sum(None, false)?
            .compute_f64()
    });
    assert!(rel(a, b) < 1e-12, "{a} vs {b}");
    let (a, b) = both(|| {
        (&x()? + 1.0)?
            .slice(&every_other)?
            .mean(None, false)?
            .compute_f64()
    });
    assert!(rel(a, b) < 1e-12, "{a} vs {b}");
    let sq = || RandomState::new(9).normal(0.0, 1.0, &[120, 120], 25, None);
    let (a, b) = both(|| {
        (&sq()? + &sq()?.T()?)?
            .slice(&every_other)?
            .std(None, 0, false)?
            .compute_f64()
    });
    assert!(rel(a, b) < 1e-12, "{a} vs {b}");

    // Without the optimizer the plan has more tasks: every intermediate is materialised.
    let y = || (&x()? + 1.0)?.slice(&every_other)?.sum(None, false);
    let (fused, unfused) = both(|| y()?.num_tasks());
    assert!(unfused > fused, "fused {fused} tasks, unfused {unfused}");
    let (e_on, e_off) = both(|| y()?.explain());
    assert_ne!(e_on, e_off);

    // Elementwise chains on stored data too.
    let h = || Array::arange(0.0, 1000.0, 1.0, tessera::DType::F64, 64, None);
    let (a, b) = both(|| (&h()?.sqrt()? * 3.0)?.compute());
    assert_eq!(a, b);
}
