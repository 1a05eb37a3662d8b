//! Quantiles: exact ones (`quantile`, groupby `quantile`, `describe`'s percentiles) against
//! pandas over random partitionings, and the t-digest estimates against the exact values.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array};
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
    }
    let mut text = String::from("k,v,w\n");
    for i in 0..n {
        let x = if v[i].is_nan() {
            String::new()
        } else {
            format!("{:?}", v[i])
        };
        text.push_str(&format!("{},{x},{}\n", k[i], w[i]));
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
        let d = df.describe().unwrap();
        for (column, stats) in want["describe"].as_object().unwrap() {
            let stats = stats.as_object().unwrap();
            assert_eq!(d.num_rows(), stats.len());
            for row in 0..d.num_rows() {
                let Value::Str(stat) = d.value("statistic", row).unwrap() else {
                    panic!("statistic not a string")
                };
                let g = d.value(column, row).unwrap().as_f64();
                same(g, &stats[&stat], &format!("describe {column} {stat}"));
            }
        }
    }
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
