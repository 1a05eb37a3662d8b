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
