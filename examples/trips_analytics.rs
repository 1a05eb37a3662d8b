//! Analytics a pandas user writes, on tessera dataframes: the taxi trips of the `taxi`
//! example, asked per weekday and hour —
//!
//! 1. percentiles of the fare (`describe`, exact) and the t-digest estimate of its 99th;
//! 2. each trip's fare rank within its hour, and a running count per passenger count
//!    (window functions over the rows in order);
//! 3. trips per weekday × passenger count (`crosstab`), mean tip by hour × weekday
//!    (`pivot_table`);
//! 4. the trips of the last day and the previous one (`truncate`, `offset_by`), matched by
//!    hour with a null-safe, indicated merge;
//! 5. a reproducible 1% sample, and the distinct (passenger count, weekday) pairs.
//!
//! ```text
//! cargo run --release --example trips_analytics                    # 200,000 trips
//! cargo run --release --example trips_analytics -- --rows 1000000
//! ```
//! The backend is `dataframe.backend` from config (`TESSERA_DATAFRAME_BACKEND`).

#[path = "common/taxi_data.rs"]
mod taxi_data;

use tessera::frame::arrow_schema::{DataType, TimeUnit};
use tessera::frame::{
    col, lit, read_csv, AggFunc, CsvOptions, DateUnit, Interval, JoinType, Keep, MergeOptions,
    RankMethod, Value, WindowFunc,
};

fn main() -> tessera::Result<()> {
    let mut rows = 200_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rows" => rows = args.next().and_then(|v| v.parse().ok()).expect("--rows N"),
            other => panic!("unknown argument {other}; use --rows N"),
        }
    }
    let path = taxi_data::cached_taxi_csv(rows)
        .map_err(|e| tessera::Error::invalid("trips_analytics", format!("writing the CSV: {e}")))?;
    let trips = read_csv(
        path.to_str().expect("a UTF-8 temporary path"),
        CsvOptions::default().parse_dates(&["pickup_datetime"]),
    )?
    .with_column("hour", col("pickup_datetime").hour())?
    .with_column("weekday", col("pickup_datetime").weekday())?;

    println!("1. fares\n{}", trips.select(&["fare_amount"])?.describe()?);
    let p99 = trips
        .approx_quantile(0.99)?
        .select(&["fare_amount"])?
        .compute()?;
    println!("99th percentile, estimated from a t-digest:\n{p99}");

    let ranked = trips
        .groupby(&["hour"])?
        .rank("fare_amount", RankMethod::Min, true, "fare_rank_in_hour")?
        .with_column("one", lit(1))?
        .groupby(&["passenger_count"])?
        .window("one", WindowFunc::CumSum, "nth_with_this_many")?;
    println!(
        "2. ranks and running counts\n{}",
        ranked
            .select(&[
                "hour",
                "fare_amount",
                "fare_rank_in_hour",
                "passenger_count",
                "nth_with_this_many"
            ])?
            .head(5)?
    );

    println!(
        "3. trips per weekday and passenger count\n{}",
        trips.crosstab(&["weekday"], "passenger_count")?.compute()?
    );
    let tips = trips.pivot_table(&["hour"], "weekday", "tip_amount", AggFunc::Mean)?;
    println!(
        "mean tip by hour (rows) and weekday (columns)\n{}",
        tips.compute()?
    );

    let days = trips.with_column("day", col("pickup_datetime").truncate(DateUnit::Day))?;
    let Value::TimestampMicros(last) = days.reduce("day", AggFunc::Max)? else {
        return Err(tessera::Error::invalid("trips_analytics", "no trips"));
    };
    let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
    let trips_by_hour_on = |offset: i32| {
        let day = lit(last)
            .cast(micros.clone())
            .offset_by(Interval::days(offset));
        days.filter(col("day").eq(day))?
            .groupby(&["hour"])?
            .agg_named(&[("fare_amount", AggFunc::Count, "trips")])
    };
    let compared = trips_by_hour_on(0)?.merge_with(
        &trips_by_hour_on(-1)?,
        &["hour"],
        &["hour"],
        MergeOptions::new(JoinType::Outer)
            .suffixes("_last_day", "_day_before")
            .indicator("seen")
            .nulls_equal(true),
    )?;
    println!(
        "4. trips by hour on the last day and the day before\n{}",
        compared.sort_values(&["hour"], &[true])?.compute()?
    );

    let sample = trips.sample(0.01, 7)?;
    println!(
        "5. a 1% sample: {} of {} trips",
        sample.len()?,
        trips.len()?
    );
    let pairs = trips
        .select(&["passenger_count", "weekday"])?
        .drop_duplicates(&[], Keep::First)?;
    println!(
        "distinct (passenger count, weekday) pairs: {}",
        pairs.len()?
    );
    Ok(())
}
