//! What watching costs: the seed headline and the taxi groupby computed plainly, with the
//! progress machinery on (`progress = "auto"`, stderr not a terminal: the default in CI
//! logs and pipes) and with a profile recorded, alternating, median of `--rounds`. One
//! JSON line per workload with the three medians and the overheads against `progress =
//! "never"`.
//!
//! ```text
//! cargo run --release --example observe_overhead [-- --n 20000 --rows 2000000 --rounds 7] 2>/dev/null
//! ```

#[path = "common/taxi_data.rs"]
mod taxi_data;

use std::time::Instant;

use tessera::frame::{read_csv, CsvOptions};
use tessera::{Index, RandomState};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds of `f` under `progress = mode`.
fn timed(mode: &str, f: &dyn Fn() -> tessera::Result<()>) -> tessera::Result<f64> {
    let _g = tessera::config::set(&[("progress", mode)])?;
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64())
}

fn report(
    name: &str,
    rounds: usize,
    run: &dyn Fn(bool) -> tessera::Result<()>,
) -> tessera::Result<()> {
    let (mut plain, mut progress, mut profiled) = (Vec::new(), Vec::new(), Vec::new());
    run(false)?; // warm up: page cache, pool threads
    for _ in 0..rounds {
        plain.push(timed("never", &|| run(false))?);
        progress.push(timed("auto", &|| run(false))?);
        profiled.push(timed("never", &|| run(true))?);
    }
    let (a, b, c) = (median(plain), median(progress), median(profiled));
    println!(
        "{}",
        serde_json::json!({
            "workload": name,
            "rounds": rounds,
            "seconds_progress_never": a,
            "seconds_progress_auto_not_a_terminal": b,
            "seconds_profiled": c,
            "progress_overhead_pct": (b / a - 1.0) * 100.0,
            "profile_overhead_pct": (c / a - 1.0) * 100.0,
        })
    );
    Ok(())
}

fn main() -> tessera::Result<()> {
    let (mut n, mut rows, mut rounds) = (20_000usize, 2_000_000usize, 7usize);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--n" => n = v.parse().expect("--n N"),
            "--rows" => rows = v.parse().expect("--rows R"),
            "--rounds" => rounds = v.parse().expect("--rounds K"),
            other => panic!("unknown argument {other}; see the module docs"),
        }
    }
    let x = RandomState::new(42).normal(10.0, 1.0, &[n, n], 2_000, None)?;
    let y = (&x + 1.0)?
        .slice(&[Index::step(2), Index::step(2)])?
        .sum(None, false)?;
    report("seed_headline", rounds, &|profile| {
        if profile {
            y.compute_with_profile().map(|_| ())
        } else {
            y.compute().map(|_| ())
        }
    })?;

    let path = taxi_data::cached_taxi_csv(rows).map_err(|source| tessera::Error::Io {
        path: format!("the generated taxi CSV of {rows} rows"),
        source,
    })?;
    let file = path.to_string_lossy().into_owned();
    report("taxi_groupby", rounds, &|profile| {
        let q = read_csv(&file, CsvOptions::default())?
            .groupby(&["passenger_count"])?
            .mean("trip_distance")?;
        if profile {
            q.compute_with_profile().map(|_| ())
        } else {
            q.compute().map(|_| ())
        }
    })?;
    Ok(())
}
