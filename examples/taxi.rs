//! The NYC-taxi queries of the seed talk, on tessera dataframes:
//!
//! 1. `len(read_csv(...))`;
//! 2. `groupby("passenger_count").trip_distance.mean()`;
//! 3. `tip_amount > 0 & fare_amount > 0` → `tip_fraction = tip / fare` → groupby the hour
//!    of `pickup_datetime` → mean.
//!
//! ```text
//! cargo run --release --example taxi                      # generates 5M rows (~215 MB)
//! cargo run --release --example taxi -- --rows 100000     # smaller
//! cargo run --release --example taxi -- --path my.csv     # your own file
//! ```
//! Prints one JSON line per query (seconds, rows, first result rows), then the tables.
//! The backend is `dataframe.backend` from config (`TESSERA_DATAFRAME_BACKEND`).

#[path = "common/taxi_data.rs"]
mod taxi_data;

use std::path::PathBuf;
use std::time::Instant;

use tessera::frame::{col, read_csv, CsvOptions};

fn main() -> tessera::Result<()> {
    let mut rows = 5_000_000usize;
    let mut path: Option<PathBuf> = None;
    let mut show = true;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => rows = args.next().and_then(|v| v.parse().ok()).expect("--rows N"),
            "--path" => path = args.next().map(PathBuf::from),
            "--quiet" => show = false,
            other => panic!("unknown argument {other}; use --rows N, --path FILE, --quiet"),
        }
    }
    let path = match path {
        Some(p) => p,
        None => {
            let p = std::env::temp_dir().join(format!("tessera-taxi-{rows}.csv"));
            if !p.exists() {
                let t = Instant::now();
                taxi_data::write_taxi_csv(&p, rows, 2015).map_err(|e| tessera::Error::Io {
                    path: p.display().to_string(),
                    source: e,
                })?;
                eprintln!(
                    "generated {} in {:.1} s",
                    p.display(),
                    t.elapsed().as_secs_f64()
                );
            }
            p
        }
    };
    let file = path.to_string_lossy().into_owned();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let options = || CsvOptions::default().parse_dates(&["pickup_datetime"]);

    // 1. len
    let t = Instant::now();
    let n = read_csv(&file, options())?.len()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{{\"query\":\"len\",\"seconds\":{secs:.4},\"rows\":{n},\"bytes\":{bytes},\"backend\":\"{}\"}}",
        read_csv(&file, options())?.backend()
    );

    // 2. groupby(passenger_count).trip_distance.mean()
    let t = Instant::now();
    let df = read_csv(&file, options())?;
    let by_passengers = df.groupby(&["passenger_count"])?.mean("trip_distance")?;
    let out2 = by_passengers.compute()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{{\"query\":\"groupby_passenger_count_mean_distance\",\"seconds\":{secs:.4},\"groups\":{},\"first\":[{},{}]}}",
        out2.num_rows(),
        out2.value("passenger_count", 0)?,
        out2.value("trip_distance", 0)?
    );

    // 3. tip fraction by hour
    let t = Instant::now();
    let df = read_csv(&file, options())?;
    let tipped = df
        .filter(col("tip_amount").gt(0) & col("fare_amount").gt(0))?
        .with_column("tip_fraction", col("tip_amount") / col("fare_amount"))?
        .with_column("hour", col("pickup_datetime").hour())?;
    let by_hour = tipped.groupby(&["hour"])?.mean("tip_fraction")?;
    let out3 = by_hour.compute()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{{\"query\":\"tip_fraction_by_hour\",\"seconds\":{secs:.4},\"groups\":{},\"first\":[{},{}]}}",
        out3.num_rows(),
        out3.value("hour", 0)?,
        out3.value("tip_fraction", 0)?
    );
    if show {
        eprintln!("{}", by_hour.explain()?);
        eprintln!("{out2}\n{out3}");
    }
    Ok(())
}
