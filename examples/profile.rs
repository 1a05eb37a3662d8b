//! Profiles of the seed headline and of the taxi groupby, each written as a Chrome trace
//! (open it in <https://ui.perfetto.dev> or `chrome://tracing`) and a self-contained HTML
//! report (open it in any browser): the task stream per worker coloured by kind, memory in
//! use over time, the longest tasks and the plan. Prints one JSON line per profile.
//!
//! ```text
//! cargo run --release --example profile [-- --n 20000 --chunk 2000 --rows 1000000 --out DIR]
//! ```
//! The default directory is `target/tessera-profile`.

#[path = "common/taxi_data.rs"]
mod taxi_data;

use std::path::{Path, PathBuf};

use tessera::frame::{read_csv, CsvOptions};
use tessera::observe::Profile;
use tessera::{Index, RandomState};

fn save(profile: &Profile, dir: &Path, name: &str) -> tessera::Result<()> {
    let trace = dir.join(format!("{name}.trace.json"));
    let html = dir.join(format!("{name}.html"));
    profile.write_chrome_trace(&trace)?;
    profile.write_html(&html)?;
    println!(
        "{}",
        serde_json::json!({
            "profile": name,
            "tasks": profile.spans.len(),
            "wall_seconds": profile.wall_us as f64 / 1e6,
            "peak_bytes": profile.peak_bytes(),
            "trace": trace.display().to_string(),
            "html": html.display().to_string(),
        })
    );
    Ok(())
}

fn main() -> tessera::Result<()> {
    let (mut n, mut chunk, mut rows) = (20_000usize, 2_000usize, 1_000_000usize);
    let mut out = PathBuf::from("target/tessera-profile");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().unwrap_or_default();
        match a.as_str() {
            "--n" => n = value.parse().expect("--n N"),
            "--chunk" => chunk = value.parse().expect("--chunk C"),
            "--rows" => rows = value.parse().expect("--rows R"),
            "--out" => out = PathBuf::from(value),
            other => panic!("unknown argument {other}; see the module docs"),
        }
    }
    std::fs::create_dir_all(&out).map_err(|source| tessera::Error::Io {
        path: out.display().to_string(),
        source,
    })?;

    // The seed headline: (x + 1)[::2, ::2].sum() on a random normal (10, 1) array.
    let x = RandomState::new(42).normal(10.0, 1.0, &[n, n], chunk, None)?;
    let y = (&x + 1.0)?
        .slice(&[Index::step(2), Index::step(2)])?
        .sum(None, false)?;
    let (_, mut profile) = y.compute_with_profile()?;
    profile.title = format!("tessera profile: (x + 1)[::2, ::2].sum(), {n}², chunks {chunk}");
    save(&profile, &out, "seed_headline")?;

    // The taxi groupby: tip fraction by passenger count, on a generated CSV.
    let path = taxi_data::cached_taxi_csv(rows).map_err(|source| tessera::Error::Io {
        path: format!("the generated taxi CSV of {rows} rows"),
        source,
    })?;
    let df = read_csv(
        &path.to_string_lossy(),
        CsvOptions::default().parse_dates(&["pickup_datetime"]),
    )?;
    let q = df.groupby(&["passenger_count"])?.mean("trip_distance")?;
    let (_, mut profile) = q.compute_with_profile()?;
    profile.title =
        format!("tessera profile: taxi groupby(passenger_count).trip_distance.mean(), {rows} rows");
    save(&profile, &out, "taxi_groupby")?;
    Ok(())
}
