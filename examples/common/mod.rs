//! Helpers shared by the benchmark examples (`mod common;` in each).

/// The process's peak resident set size (`VmHWM` in `/proc/self/status`), where the
/// platform reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// [`peak_rss_bytes`] in MiB, NaN where unknown (for JSON lines).
#[allow(dead_code)] // not every example prints MiB
pub fn peak_rss_mb() -> f64 {
    peak_rss_bytes().map_or(f64::NAN, |b| b as f64 / (1024.0 * 1024.0))
}

/// Runs `f` `repeat` times; returns the median seconds (the upper middle one for an even
/// count, as the Dask scripts take it), every run's seconds, and the last answer.
#[allow(dead_code)] // not every example times repeated runs
pub fn timed_runs<E>(
    repeat: usize,
    mut f: impl FnMut() -> Result<f64, E>,
) -> Result<(f64, Vec<f64>, f64), E> {
    let mut runs = Vec::with_capacity(repeat);
    let mut answer = f64::NAN;
    for _ in 0..repeat.max(1) {
        let t = std::time::Instant::now();
        answer = f()?;
        runs.push(t.elapsed().as_secs_f64());
    }
    let mut sorted = runs.clone();
    sorted.sort_by(f64::total_cmp);
    Ok((sorted[sorted.len() / 2], runs, answer))
}
