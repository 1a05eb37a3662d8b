//! Timing helpers the overhead benchmarks share: many calls timed as one, and two
//! variants timed in alternation so that drift on a shared machine hits both alike.

use std::time::Instant;

/// Seconds per iteration of `f` over `iters` iterations.
pub fn time(iters: usize, f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_secs_f64() / iters as f64
}

/// Best seconds per iteration of `a` and of `b` over `runs` alternating runs.
pub fn best_pair(
    runs: usize,
    iters: usize,
    a: &mut dyn FnMut(),
    b: &mut dyn FnMut(),
) -> (f64, f64) {
    (0..runs).fold((f64::INFINITY, f64::INFINITY), |(x, y), _| {
        (x.min(time(iters, a)), y.min(time(iters, b)))
    })
}
