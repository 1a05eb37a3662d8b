//! Dataframe benchmarks, one JSON line per workload (best of `--repeat` runs), the same
//! workloads as `bench/dataframe_peers.py` runs through Dask, pandas and Polars:
//!
//! - `taxi_groupby`: `read_csv` + `groupby(passenger_count).trip_distance.mean()`;
//! - `taxi_tip_hour`: `read_csv(parse_dates)` + filter + `tip_fraction` + groupby hour;
//! - `join`: inner join of 20M × 1M rows on an int64 key (16 × 1 partitions), then `len`;
//! - `multi_agg`: groupby of 20M rows into 100k groups, 7 aggregations;
//! - `group_top2`: the two largest values of each of 100k groups over 10M rows
//!   (`groupby(key).nlargest(2, "x")`, a bounded selection per group).
//!
//! ```text
//! cargo run --release --example frame_bench -- [--csv FILE] [--queries a,b] [--repeat N]
//! ```
//! `--csv FILE` names the taxi CSV, written there first when it does not exist. Without
//! `--csv` it writes (once) the 5-million-row taxi CSV of the `taxi` example to
//! the temporary directory. `bench/compare_dataframes.sh` runs tessera and the peers in
//! one go and prints the ratios.

mod common;
#[path = "common/taxi_data.rs"]
mod taxi_data;

use std::sync::Arc;
use std::time::Instant;

use taxi_data::SplitMix;
use tessera::frame::arrow_array::{ArrayRef, Float64Array, Int64Array};
use tessera::frame::{col, read_csv, AggFunc, CsvOptions, DataFrame, JoinType};

fn best<T>(repeat: usize, mut f: impl FnMut() -> tessera::Result<T>) -> tessera::Result<(f64, T)> {
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let v = f()?;
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(v);
    }
    Ok((best, out.expect("ran at least once")))
}

fn emit(query: &str, seconds: f64, extra: &str) {
    println!(
        "{{\"engine\":\"tessera\",\"query\":\"{query}\",\"seconds\":{seconds:.4},{extra},\"peak_rss_mb\":{:.0}}}",
        common::peak_rss_mb()
    );
}

fn frame(columns: Vec<(&str, ArrayRef)>, parts: usize) -> tessera::Result<DataFrame> {
    DataFrame::from_columns(columns, parts)
}

fn main() -> tessera::Result<()> {
    let mut csv: Option<String> = None;
    let mut queries = "taxi_groupby,taxi_tip_hour,join,multi_agg,group_top2".to_string();
    let mut repeat = 3;
    let (mut join_left, mut join_right) = (20_000_000usize, 1_000_000usize);
    let (mut agg_rows, mut agg_groups) = (20_000_000usize, 100_000u64);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().expect("a value after the flag");
        match a.as_str() {
            "--csv" => csv = Some(val()),
            "--queries" => queries = val(),
            "--repeat" => repeat = val().parse().expect("--repeat N"),
            "--join-left" => join_left = val().parse().expect("--join-left N"),
            "--join-right" => join_right = val().parse().expect("--join-right N"),
            "--agg-rows" => agg_rows = val().parse().expect("--agg-rows N"),
            "--agg-groups" => agg_groups = val().parse().expect("--agg-groups N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let want = |q: &str| queries.split(',').any(|x| x == q);
    let taxi = want("taxi_groupby") || want("taxi_tip_hour");
    let csv = match csv {
        // A path given for the taxi queries is written first when it is not there yet
        // (`bench/compare_dataframes.sh` names one before anything has made it).
        Some(p) if taxi && !std::path::Path::new(&p).exists() => {
            let path = std::path::PathBuf::from(&p);
            taxi_data::write_taxi_csv(&path, 5_000_000, 2015).map_err(|e| tessera::Error::Io {
                path: p.clone(),
                source: e,
            })?;
            Some(p)
        }
        Some(p) => Some(p),
        None if taxi => {
            let p = std::env::temp_dir().join("tessera-taxi-5000000.csv");
            if !p.exists() {
                taxi_data::write_taxi_csv(&p, 5_000_000, 2015).map_err(|e| tessera::Error::Io {
                    path: p.display().to_string(),
                    source: e,
                })?;
            }
            Some(p.to_string_lossy().into_owned())
        }
        None => None,
    };
    if let Some(path) = &csv {
        if want("taxi_groupby") {
            let (s, out) = best(repeat, || {
                read_csv(path, CsvOptions::default())?
                    .groupby(&["passenger_count"])?
                    .mean("trip_distance")?
                    .compute()
            })?;
            emit("taxi_groupby", s, &format!("\"groups\":{}", out.num_rows()));
        }
        if want("taxi_tip_hour") {
            let (s, out) = best(repeat, || {
                read_csv(
                    path,
                    CsvOptions::default().parse_dates(&["pickup_datetime"]),
                )?
                .filter(col("tip_amount").gt(0) & col("fare_amount").gt(0))?
                .with_column("tip_fraction", col("tip_amount") / col("fare_amount"))?
                .with_column("hour", col("pickup_datetime").hour())?
                .groupby(&["hour"])?
                .mean("tip_fraction")?
                .compute()
            })?;
            emit(
                "taxi_tip_hour",
                s,
                &format!("\"groups\":{}", out.num_rows()),
            );
        }
    }
    if want("join") {
        let mut rng = SplitMix(42);
        let lk: Int64Array = (0..join_left)
            .map(|_| Some((rng.next_u64() % (2 * join_right as u64)) as i64))
            .collect();
        let lx: Float64Array = (0..join_left).map(|_| Some(rng.uniform())).collect();
        let rk: Int64Array = (0..join_right as i64).map(|i| Some(2 * i)).collect();
        let ry: Float64Array = (0..join_right).map(|_| Some(rng.uniform())).collect();
        let left = frame(vec![("key", Arc::new(lk)), ("x", Arc::new(lx))], 16)?.persist()?;
        let right = frame(vec![("key", Arc::new(rk)), ("y", Arc::new(ry))], 1)?.persist()?;
        let (s, rows) = best(repeat, || {
            left.merge(&right, &["key"], JoinType::Inner)?.len()
        })?;
        emit("join", s, &format!("\"rows\":{rows}"));
    }
    if want("multi_agg") {
        let mut rng = SplitMix(7);
        let k: Int64Array = (0..agg_rows)
            .map(|_| Some((rng.next_u64() % agg_groups) as i64))
            .collect();
        let x: Float64Array = (0..agg_rows).map(|_| Some(rng.uniform())).collect();
        let y: Int64Array = (0..agg_rows)
            .map(|_| Some((rng.next_u64() % 1000) as i64))
            .collect();
        let g = frame(
            vec![("key", Arc::new(k)), ("x", Arc::new(x)), ("y", Arc::new(y))],
            16,
        )?
        .persist()?;
        let (s, out) = best(repeat, || {
            g.groupby(&["key"])?
                .agg(&[
                    ("x", AggFunc::Sum),
                    ("x", AggFunc::Mean),
                    ("x", AggFunc::Min),
                    ("x", AggFunc::Max),
                    ("x", AggFunc::Std),
                    ("y", AggFunc::Count),
                    ("y", AggFunc::Max),
                ])?
                .compute()
        })?;
        emit("multi_agg", s, &format!("\"groups\":{}", out.num_rows()));
    }
    if want("group_top2") {
        let rows = agg_rows / 2;
        let mut rng = SplitMix(11);
        let k: Int64Array = (0..rows)
            .map(|_| Some((rng.next_u64() % agg_groups) as i64))
            .collect();
        let x: Float64Array = (0..rows).map(|_| Some(rng.uniform())).collect();
        let g = frame(vec![("key", Arc::new(k)), ("x", Arc::new(x))], 16)?.persist()?;
        let (s, out) = best(repeat, || g.groupby(&["key"])?.nlargest(2, "x")?.compute())?;
        emit("group_top2", s, &format!("\"rows\":{}", out.num_rows()));
    }
    Ok(())
}
