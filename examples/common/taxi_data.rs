//! A NYC-taxi-like CSV generator (deterministic), shared by the taxi example and the
//! dataframe benchmark: `pickup_datetime, passenger_count, trip_distance, fare_amount,
//! tip_amount, total_amount`, about 45 bytes a row, January 2015 timestamps.

use std::io::Write;
use std::path::{Path, PathBuf};

/// SplitMix64: a small, good, deterministic generator for test data.
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The generated file of `rows` rows in the temporary directory (`tessera-taxi-{rows}.csv`,
/// seed 2015), written first if it is not there yet.
#[allow(dead_code)] // not every example that includes this module generates on demand
pub fn cached_taxi_csv(rows: usize) -> std::io::Result<PathBuf> {
    let path = std::env::temp_dir().join(format!("tessera-taxi-{rows}.csv"));
    if !path.exists() {
        write_taxi_csv(&path, rows, 2015)?;
    }
    Ok(path)
}

/// Writes `rows` rows to `path` (atomically: a temporary file, then rename).
pub fn write_taxi_csv(path: &Path, rows: usize, seed: u64) -> std::io::Result<()> {
    let tmp = path.with_extension("csv.partial");
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        writeln!(
            w,
            "pickup_datetime,passenger_count,trip_distance,fare_amount,tip_amount,total_amount"
        )?;
        let mut rng = SplitMix(seed);
        let start = 1_420_070_400i64; // 2015-01-01 00:00:00 UTC
        for _ in 0..rows {
            let t = start + (rng.uniform() * 31.0 * 86_400.0) as i64;
            let (days, secs) = (t / 86_400, t % 86_400);
            let day = days - 16_436 + 1; // day of January
            let passengers = match rng.uniform() {
                u if u < 0.70 => 1,
                u if u < 0.85 => 2,
                u if u < 0.90 => 3,
                u if u < 0.93 => 4,
                u if u < 0.96 => 5,
                u if u < 0.995 => 6,
                _ => 0,
            };
            let dist = (rng.uniform() * rng.uniform() * 20.0 * 100.0).round() / 100.0;
            let fare = ((2.5 + dist * 2.5 + rng.uniform() * 3.0) * 2.0).round() / 2.0;
            let tip = if rng.uniform() < 0.4 {
                0.0
            } else {
                (fare * rng.uniform() * 0.3 * 100.0).round() / 100.0
            };
            let total = fare + tip + 0.8;
            writeln!(
                w,
                "2015-01-{day:02} {:02}:{:02}:{:02},{passengers},{dist},{fare},{tip},{total:.2}",
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            )?;
        }
        w.flush()?;
    }
    std::fs::rename(tmp, path)
}
