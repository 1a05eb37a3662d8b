//! Quantiles: exact ones (`quantile`, groupby `quantile`, `describe`'s percentiles) against
//! pandas over random partitionings, and the t-digest estimates against the exact values;
//! beside them the higher moments (`skew`, `kurt`, per group and per column) against pandas.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, TimestampMicrosecondArray};
use tessera::frame::{AggFunc, Quantile, Value};

use crate::frames::{batch, random_partitions, Rng};

/// `quantile`, `groupby(..).quantile` and `describe` against pandas through
/// `tests/scripts/frame_quantiles_pandas.py`, over random partitionings, with NaN and groups
/// of one value and of no values (missing values are nulls, as a CSV reader gives them). Runs when `python3` (or `$PYTHON`) can import pandas;
/// otherwise it says it was skipped.
#[test]
fn quantiles_match_pandas() {
    let Some(python) = crate::common::python_with("quantiles_match_pandas", "pandas") else {
        return;
    };
    let mut rng = Rng(25);
    let n = 900;
    let mut k = Vec::with_capacity(n);
    let mut v = Vec::with_capacity(n);
    let mut w = Vec::with_capacity(n);
    // Instants over two centuries (seconds since the epoch), some missing.
    let mut t: Vec<Option<i64>> = Vec::with_capacity(n);
    for i in 0..n {
        // Key 0 holds one value, key 1 only NaN; the rest are drawn from 2..40.
        let key = match i {
            0 => 0,
            1 | 2 => 1,
            _ => 2 + rng.below(38) as i64,
        };
        k.push(key);
        v.push(if key == 1 || i % 9 == 4 {
            f64::NAN
        } else {
            // Ties are common: halves between -20 and 20.
            (rng.below(81) as f64 - 40.0) / 2.0 + if i % 5 == 0 { rng.float() } else { 0.0 }
        });
        w.push(rng.below(1000) as i64 - 300);
        t.push((i % 11 != 7).then(|| rng.below(6_000_000_000) as i64 - 2_000_000_000));
    }
    let mut text = String::from("k,v,w,t\n");
    for i in 0..n {
        let x = if v[i].is_nan() {
            String::new()
        } else {
            format!("{:?}", v[i])
        };
        let ti = t[i].map_or(String::new(), |s| s.to_string());
        text.push_str(&format!("{},{x},{},{ti}\n", k[i], w[i]));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_quantiles_pandas.py"
    );
    let want = crate::common::python_json(&python, script, "pandas-quantiles", &[("in.csv", text)]);

    let cols: Vec<(&str, ArrayRef)> = vec![
        ("k", Arc::new(Int64Array::from(k))),
        // Missing as null, as a CSV reader gives it (pandas reads NaN).
        (
            "v",
            Arc::new(Float64Array::from(
                v.iter()
                    .map(|x| (!x.is_nan()).then_some(*x))
                    .collect::<Vec<_>>(),
            )),
        ),
        ("w", Arc::new(Int64Array::from(w))),
        (
            "t",
            Arc::new(TimestampMicrosecondArray::from(
                t.iter()
                    .map(|s| s.map(|s| s * 1_000_000))
                    .collect::<Vec<_>>(),
            )),
        ),
    ];
    let b = batch(cols);
    let same = |got: Option<f64>, want: &serde_json::Value, what: &str| match (got, want.as_f64()) {
        (None, None) => {}
        (Some(g), Some(w)) => assert!(
            (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
            "{what}: pandas {w}, tessera {g}"
        ),
        (g, _) => panic!("{what}: pandas {want}, tessera {g:?}"),
    };
    for round in 0..3 {
        let df = random_partitions(&b, &mut rng);
        for (level, groups) in want["groupby"].as_object().unwrap() {
            let q: f64 = level.parse().unwrap();
            let got = df
                .groupby(&["k"])
                .unwrap()
                .quantile("v", q)
                .unwrap()
                .compute()
                .unwrap();
            assert_eq!(got.num_rows(), groups.as_object().unwrap().len());
            for row in 0..got.num_rows() {
                let Value::Int(key) = got.value("k", row).unwrap() else {
                    panic!("key not an integer")
                };
                let g = got.value("v", row).unwrap().as_f64();
                same(
                    g,
                    &groups[key.to_string()],
                    &format!("round {round}: key {key} q {q}"),
                );
            }
        }
        for (column, levels) in want["frame"].as_object().unwrap() {
            for (level, w) in levels.as_object().unwrap() {
                let q: f64 = level.parse().unwrap();
                let got = df.quantile(q).unwrap().compute().unwrap();
                same(
                    got.value(column, 0).unwrap().as_f64(),
                    w,
                    &format!("{column} q {q}"),
                );
            }
        }
        // Skewness and kurtosis, per group and of whole columns (streamed and merged
        // central sums against pandas' own): a relative 1e-9.
        let close =
            |got: Option<f64>, want: &serde_json::Value, what: &str| match (got, want.as_f64()) {
                (None, None) => {}
                (Some(g), Some(w)) => assert!(
                    (g - w).abs() <= 1e-9 * (1.0 + w.abs()),
                    "{what}: pandas {w}, tessera {g}"
                ),
                (g, _) => panic!("{what}: pandas {want}, tessera {g:?}"),
            };
        let moments = df
            .groupby(&["k"])
            .unwrap()
            .agg_named(&[("v", AggFunc::Skew, "skew"), ("v", AggFunc::Kurt, "kurt")])
            .unwrap()
            .compute()
            .unwrap();
        for stat in ["skew", "kurt"] {
            let groups = want["moments"][stat].as_object().unwrap();
            assert_eq!(moments.num_rows(), groups.len());
            for row in 0..moments.num_rows() {
                let Value::Int(key) = moments.value("k", row).unwrap() else {
                    panic!("key not an integer")
                };
                let g = moments.value(stat, row).unwrap().as_f64();
                close(
                    g,
                    &groups[&key.to_string()],
                    &format!("round {round}: key {key} {stat}"),
                );
            }
        }
        for (column, stats) in want["frame_moments"].as_object().unwrap() {
            for (stat, w) in stats.as_object().unwrap() {
                let got = match stat.as_str() {
                    "skew" => df.skew(),
                    _ => df.kurt(),
                }
                .unwrap()
                .compute()
                .unwrap();
                close(
                    got.value(column, 0).unwrap().as_f64(),
                    w,
                    &format!("{column} {stat}"),
                );
            }
        }
        let d = df.describe().unwrap();
        for (column, stats) in want["describe"].as_object().unwrap() {
            let stats = stats.as_object().unwrap();
            assert_eq!(d.num_rows(), stats.len());
            for row in 0..d.num_rows() {
                let Value::Str(stat) = d.value("statistic", row).unwrap() else {
                    panic!("statistic not a string")
                };
                let what = format!("describe {column} {stat}");
                if column == "t" {
                    same_instant(&d.value(column, row).unwrap(), &stats[&stat], &what);
                    continue;
                }
                let g = d.value(column, row).unwrap().as_f64();
                same(g, &stats[&stat], &what);
            }
        }
    }
}

/// A statistic of a datetime column as `describe` writes it (`2024-01-23 12:00:00.25`, the
/// count as a number) against pandas' (nanoseconds since the epoch, or the count), within
/// a microsecond: the column's unit.
fn same_instant(got: &Value, want: &serde_json::Value, what: &str) {
    let text = match got {
        Value::Null => {
            assert!(want.is_null(), "{what}: pandas {want}, tessera null");
            return;
        }
        Value::Str(s) => s,
        other => panic!("{what}: not text: {other:?}"),
    };
    if what.ends_with("count") {
        assert_eq!(text.parse::<i64>().ok(), want.as_i64(), "{what}");
        return;
    }
    let ns = instant_ns(text).unwrap_or_else(|| panic!("{what}: cannot read '{text}'"));
    let want = want
        .as_i64()
        .unwrap_or_else(|| panic!("{what}: pandas {want}")) as i128;
    assert!(
        (ns - want).abs() <= 1_000,
        "{what}: pandas {want} ns, tessera '{text}' = {ns} ns"
    );
}

/// `YYYY-MM-DD HH:MM:SS[.fraction]` (a proleptic Gregorian date, UTC) as nanoseconds since
/// the epoch.
fn instant_ns(s: &str) -> Option<i128> {
    let (date, time) = s.split_once(' ')?;
    let mut d = date.rsplitn(3, '-');
    let (day, month) = (
        d.next()?.parse::<i64>().ok()?,
        d.next()?.parse::<i64>().ok()?,
    );
    let year: i64 = d.next()?.parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut p = hms.split(':').map(|x| x.parse::<i64>());
    let secs = p.next()?.ok()? * 3600 + p.next()?.ok()? * 60 + p.next()?.ok()?;
    let nanos: i128 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}")[..9].parse().ok()?
    };
    Some((i128::from(days) * 86_400 + i128::from(secs)) * 1_000_000_000 + nanos)
}

#[test]
fn instants_are_read_back() {
    assert_eq!(instant_ns("1970-01-01 00:00:00"), Some(0));
    assert_eq!(
        instant_ns("1970-01-02 00:00:01.5"),
        Some(86_401_500_000_000)
    );
    assert_eq!(instant_ns("1969-12-31 23:59:59"), Some(-1_000_000_000));
    assert_eq!(
        instant_ns("2024-02-29 12:00:00"),
        Some(1_709_208_000 * 1_000_000_000)
    );
}

/// A datetime column's `describe`, by hand: pandas 3.1 gives these for
/// `[2024-01-01, 2024-03-01, NaT, 2024-02-15]`; dates and zoned instants are described too.
#[test]
fn describe_writes_datetime_statistics_as_instants() {
    use arrow_array::{Date32Array, TimestampSecondArray};
    let day = 86_400i64;
    let (jan1, feb15, mar1) = (19_723i64, 19_768i64, 19_783i64);
    let cols: Vec<(&str, ArrayRef)> = vec![
        (
            "t",
            Arc::new(TimestampSecondArray::from(vec![
                Some(jan1 * day),
                Some(mar1 * day),
                None,
                Some(feb15 * day),
            ])),
        ),
        (
            "d",
            Arc::new(Date32Array::from(vec![
                Some(jan1 as i32),
                Some(mar1 as i32),
                None,
                Some(feb15 as i32),
            ])),
        ),
        (
            "z",
            Arc::new(
                TimestampSecondArray::from(vec![Some(jan1 * day), None, None, None])
                    .with_timezone("Europe/Berlin"),
            ),
        ),
    ];
    let df = tessera::frame::DataFrame::from_columns(cols, 2).unwrap();
    let d = df.describe().unwrap();
    let column =
        |c: &str| -> Vec<Value> { (0..d.num_rows()).map(|r| d.value(c, r).unwrap()).collect() };
    let s = |x: &str| Value::Str(x.to_string());
    let want = vec![
        s("3"),
        s("2024-02-05 00:00:00"),
        Value::Null,
        s("2024-01-01 00:00:00"),
        s("2024-01-23 12:00:00"),
        s("2024-02-15 00:00:00"),
        s("2024-02-22 12:00:00"),
        s("2024-03-01 00:00:00"),
    ];
    assert_eq!(column("t"), want);
    assert_eq!(
        column("d"),
        want,
        "a date column reads as midnight instants"
    );
    let z = column("z");
    assert_eq!(z[0], s("1"));
    assert_eq!(z[3], s("2024-01-01 01:00:00+01:00"), "in the column's zone");
    let only_text = tessera::frame::DataFrame::from_columns(
        vec![(
            "name",
            Arc::new(arrow_array::StringArray::from(vec!["a"])) as ArrayRef,
        )],
        1,
    )
    .unwrap();
    let e = only_text.describe().unwrap_err().to_string();
    assert!(
        e.contains("no numeric, date or timestamp columns (columns: name)"),
        "{e}"
    );
}

/// The t-digest estimates of `approx_quantile` over 300,000 skewed values in random
/// partitions fall within a small rank error of the exact quantile, per group and for the
/// frame, and `describe_with(.., true)` uses them.
#[test]
fn approximate_quantiles_are_close_in_rank() {
    let mut rng = Rng(99);
    let n = 300_000;
    let k: Vec<i64> = (0..n).map(|_| rng.below(3) as i64).collect();
    // Exponential values, scaled per group.
    let v: Vec<f64> = k
        .iter()
        .map(|&g| -(1.0 - rng.float()).ln() * (1.0 + g as f64 * 10.0))
        .collect();
    let b = batch(vec![
        ("k", Arc::new(Int64Array::from(k.clone())) as ArrayRef),
        ("v", Arc::new(Float64Array::from(v.clone()))),
    ]);
    let df = random_partitions(&b, &mut rng);
    let mut by_group: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for (g, x) in k.iter().zip(&v) {
        by_group[*g as usize].push(*x);
    }
    by_group
        .iter_mut()
        .for_each(|xs| xs.sort_by(f64::total_cmp));
    let rank = |xs: &[f64], x: f64| xs.partition_point(|v| *v < x) as f64 / xs.len() as f64;
    for q in [0.01, 0.25, 0.5, 0.9, 0.99] {
        let got = df
            .groupby(&["k"])
            .unwrap()
            .approx_quantile("v", q)
            .unwrap()
            .compute()
            .unwrap();
        for row in 0..3 {
            let Value::Int(g) = got.value("k", row).unwrap() else {
                panic!()
            };
            let est = got.value("v", row).unwrap().as_f64().unwrap();
            let err = (rank(&by_group[g as usize], est) - q).abs();
            assert!(
                err < 0.005,
                "group {g} q {q}: estimate {est} has rank error {err}"
            );
        }
    }
    let d = df.describe_with(&[0.5], true).unwrap();
    let Value::Str(stat) = d.value("statistic", 4).unwrap() else {
        panic!()
    };
    assert_eq!(stat, "50%");
    let mut all = v.clone();
    all.sort_by(f64::total_cmp);
    let est = d.value("v", 4).unwrap().as_f64().unwrap();
    assert!(
        (rank(&all, est) - 0.5).abs() < 0.005,
        "median estimate {est}"
    );
    // The exact and the approximate function are told apart on the wire and in errors.
    assert_eq!(
        AggFunc::parse("approx_quantile(0.9)").unwrap(),
        AggFunc::ApproxQuantile(Quantile::new(0.9).unwrap())
    );
    let e = df.quantile(1.5).unwrap_err().to_string();
    assert!(e.contains("1.5 is outside [0, 1]"), "{e}");
}
