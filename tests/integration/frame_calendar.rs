//! Calendar expressions (`offset_by`, `truncate`, `elapsed_since`) against pandas on random
//! dates and timestamps, over random partitionings, and their typing errors.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef, Date32Array, TimestampMicrosecondArray};
use tessera::frame::{col, DataFrame, DateUnit, Expr, Interval};

use crate::frames::{batch, computed, random_partitions, Rng};

/// Days from 1900-01-01 to 2100-12-31, around the epoch.
const DAYS: (i64, i64) = (-25_567, 47_846);

/// Dates (days since the epoch) and two timestamp columns (microseconds), nulls as `None`.
type Columns = (Vec<Option<i32>>, Vec<Option<i64>>, Vec<Option<i64>>);

/// Random dates (month ends and leap days among them) and microsecond timestamps over two
/// centuries, with missing values; `u` is `t` moved by up to ±400 days.
fn calendar_frame(rng: &mut Rng, n: usize) -> Columns {
    const MICROS_PER_DAY: i64 = 86_400_000_000;
    let mut d = Vec::with_capacity(n);
    let mut t = Vec::with_capacity(n);
    let mut u = Vec::with_capacity(n);
    for k in 0..n {
        let day = DAYS.0 + rng.below((DAYS.1 - DAYS.0) as u64) as i64;
        // Every fifth date is the last day of a month (day before the first of the next).
        let day = if k % 5 == 0 {
            let first = day - day.rem_euclid(30);
            first + 30 - (first.rem_euclid(7) % 3)
        } else {
            day
        };
        d.push((k % 11 != 4).then_some(day as i32));
        let micros = day * MICROS_PER_DAY + rng.below(MICROS_PER_DAY as u64) as i64;
        t.push((k % 13 != 6).then_some(micros));
        let shift = rng.below(800 * MICROS_PER_DAY as u64) as i64 - 400 * MICROS_PER_DAY;
        u.push((k % 17 != 8).then_some(micros + shift));
    }
    (d, t, u)
}

/// `offset_by`, `truncate` and `elapsed_since` against pandas (`DateOffset`,
/// `to_period(..).start_time`, `floor`, exact Timedelta arithmetic), through
/// `tests/scripts/frame_dates_pandas.py`. Runs when `python3` (or `$PYTHON`) can import
/// pandas; otherwise it says it was skipped.
#[test]
fn calendar_functions_match_pandas() {
    let Some(python) = crate::common::python_with("calendar_functions_match_pandas", "pandas")
    else {
        return;
    };
    let mut rng = Rng(1970);
    let n = 600;
    let (d, t, u) = calendar_frame(&mut rng, n);
    let show = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
    let mut text = String::from("d,t,u\n");
    for k in 0..n {
        text.push_str(&format!(
            "{},{},{}\n",
            show(d[k].map(i64::from)),
            show(t[k]),
            show(u[k])
        ));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_dates_pandas.py"
    );
    let want = crate::common::python_json(&python, script, "pandas-dates", &[("in.csv", text)]);

    let da: ArrayRef = Arc::new(Date32Array::from(d.clone()));
    let ta: ArrayRef = Arc::new(TimestampMicrosecondArray::from(t.clone()));
    let ua: ArrayRef = Arc::new(TimestampMicrosecondArray::from(u.clone()));
    let df = random_partitions(&batch(vec![("d", da), ("t", ta), ("u", ua)]), &mut rng);
    let hours = |h: i64| Interval::hours(h);
    let cases: Vec<(&str, Expr)> = vec![
        ("d+1mo", col("d").offset_by(Interval::months(1))),
        ("d-90d", col("d").offset_by(Interval::days(90).negated())),
        ("d+1y", col("d").offset_by(Interval::years(1))),
        ("d-13mo+2d", col("d").offset_by(Interval::new(-13, 2, 0))),
        (
            "t-3mo+14d+5h",
            col("t").offset_by(Interval::new(-3, 14, hours(5).nanos)),
        ),
        ("t+90s", col("t").offset_by(Interval::seconds(90))),
        ("d.year", col("d").truncate(DateUnit::Year)),
        ("d.quarter", col("d").truncate(DateUnit::Quarter)),
        ("d.month", col("d").truncate(DateUnit::Month)),
        ("d.week", col("d").truncate(DateUnit::Week)),
        ("t.year", col("t").truncate(DateUnit::Year)),
        ("t.month", col("t").truncate(DateUnit::Month)),
        ("t.week", col("t").truncate(DateUnit::Week)),
        ("t.day", col("t").truncate(DateUnit::Day)),
        ("t.hour", col("t").truncate(DateUnit::Hour)),
        ("t.minute", col("t").truncate(DateUnit::Minute)),
        ("t.second", col("t").truncate(DateUnit::Second)),
        ("t.millisecond", col("t").truncate(DateUnit::Millisecond)),
        ("u-t.days", col("u").elapsed_since(col("t"), DateUnit::Day)),
        (
            "u-t.weeks",
            col("u").elapsed_since(col("t"), DateUnit::Week),
        ),
        (
            "u-t.hours",
            col("u").elapsed_since(col("t"), DateUnit::Hour),
        ),
        (
            "u-t.seconds",
            col("u").elapsed_since(col("t"), DateUnit::Second),
        ),
        (
            "u-t.micros",
            col("u").elapsed_since(col("t"), DateUnit::Microsecond),
        ),
        ("t-d.days", col("t").elapsed_since(col("d"), DateUnit::Day)),
    ];
    for (name, e) in cases {
        let y = computed(&df, e);
        let got: Vec<Option<i64>> = match y.data_type() {
            arrow_schema::DataType::Date32 => {
                let y = y.as_primitive::<Date32Type>();
                (0..n)
                    .map(|k| y.is_valid(k).then(|| y.value(k).into()))
                    .collect()
            }
            arrow_schema::DataType::Timestamp(_, _) => {
                let y = y.as_primitive::<TimestampMicrosecondType>();
                (0..n).map(|k| y.is_valid(k).then(|| y.value(k))).collect()
            }
            arrow_schema::DataType::Int64 => {
                let y = y.as_primitive::<Int64Type>();
                (0..n).map(|k| y.is_valid(k).then(|| y.value(k))).collect()
            }
            other => panic!("{name}: unexpected type {other}"),
        };
        let want: Vec<Option<i64>> = want[name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64())
            .collect();
        for k in 0..n {
            assert_eq!(
                got[k], want[k],
                "{name} row {k} (d = {:?}, t = {:?}, u = {:?}): pandas {:?}, tessera {:?}",
                d[k], t[k], u[k], want[k], got[k]
            );
        }
    }
}

/// Month arithmetic clamps to the month's end, in both directions, by hand.
#[test]
fn month_offsets_clamp_to_the_last_day() {
    // 2024-01-31, 2024-02-29, 2023-03-31.
    let d: ArrayRef = Arc::new(Date32Array::from(vec![19753, 19782, 19447]));
    let df = DataFrame::from_record_batch(batch(vec![("d", d)]), 2, None).unwrap();
    let y = computed(&df, col("d").offset_by(Interval::months(1)));
    // 2024-02-29, 2024-03-29, 2023-04-30.
    assert_eq!(
        y.as_primitive::<Date32Type>().values().to_vec(),
        [19782, 19811, 19477]
    );
    let y = computed(&df, col("d").offset_by(Interval::years(-1)));
    // 2023-01-31, 2023-02-28, 2022-03-31.
    assert_eq!(
        y.as_primitive::<Date32Type>().values().to_vec(),
        [19388, 19416, 19082]
    );
}

/// Wrong inputs are plan-time errors that say what would be right.
#[test]
fn calendar_typing_errors_name_the_fix() {
    let d: ArrayRef = Arc::new(Date32Array::from(vec![0]));
    let s: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["2024-01-01"]));
    let df = DataFrame::from_record_batch(batch(vec![("d", d), ("s", s)]), 1, None).unwrap();
    let err = |e: Expr| df.with_column("y", e).unwrap_err().to_string();
    let e = err(col("d").offset_by(Interval::hours(1)));
    assert!(
        e.contains("whole days") && e.contains("cast it to a timestamp"),
        "{e}"
    );
    let e = err(col("s").truncate(DateUnit::Month));
    assert!(e.contains("needs a date or timestamp, got Utf8"), "{e}");
    let e = err(col("d").elapsed_since(col("d"), DateUnit::Month));
    assert!(e.contains("no fixed length"), "{e}");
    // A string literal cast to a date works as a date.
    let y = computed(
        &df,
        tessera::frame::lit("1998-12-01")
            .cast(arrow_schema::DataType::Date32)
            .offset_by(Interval::days(-90))
            .elapsed_since(col("d"), DateUnit::Day),
    );
    // 1998-09-02 is day 10471 after the epoch.
    assert_eq!(y.as_primitive::<Int64Type>().value(0), 10471);
}

/// Text compared with a timestamp or a date names the instant pandas reads from it, in
/// every form users write; text naming none is a typing error, not an empty result.
#[test]
fn text_instants_compare_as_pandas_reads_them() {
    const MICROS_PER_MINUTE: i64 = 60_000_000;
    // 2024-01-01 00:30, 01:10 and 2024-01-02 05:00.
    let base = 19_723 * 1_440 * MICROS_PER_MINUTE;
    let t: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
        base + 30 * MICROS_PER_MINUTE,
        base + 70 * MICROS_PER_MINUTE,
        base + (24 + 5) * 60 * MICROS_PER_MINUTE,
    ]));
    let d: ArrayRef = Arc::new(Date32Array::from(vec![19_723, 19_723, 19_724]));
    let df = DataFrame::from_record_batch(batch(vec![("t", t), ("d", d)]), 2, None).unwrap();
    let kept = |e: Expr| df.filter(e).unwrap().len().unwrap();
    use tessera::frame::lit;
    assert_eq!(kept(col("t").gt_eq(lit("2024-01-01 01:00"))), 2);
    assert_eq!(kept(col("t").gt_eq(lit("2024-01-01T01:10"))), 2);
    assert_eq!(kept(col("t").gt(lit("2024-01-01 01:10:00"))), 1);
    assert_eq!(kept(col("t").lt(lit("2024-01-01 00:30:00.000001Z"))), 1);
    assert_eq!(kept(lit("2024-01-02").lt_eq(col("t"))), 1);
    assert_eq!(kept(col("d").eq(lit("2024-01-02"))), 1);
    let e = df
        .filter(col("t").gt_eq(lit("2024-01-01 1am")))
        .and_then(|f| f.len())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is not a date or time") && e.contains("2015-01-10 08:30"),
        "{e}"
    );
}
