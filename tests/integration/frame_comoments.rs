//! Pair aggregations: `cov` and `corr` per group against pandas (`Series.cov` /
//! `Series.corr` of each group) over random partitionings, with missing values on either
//! side, groups of one complete pair, a constant group, and values far from zero.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array};
use tessera::frame::{AggFunc, AggSpec, Value};

use crate::frames::{batch, random_partitions, Rng};

#[test]
fn cov_and_corr_match_pandas() {
    let Some(python) = crate::common::python_with("cov_and_corr_match_pandas", "pandas") else {
        return;
    };
    let mut rng = Rng(51);
    let n = 1200;
    let (mut k, mut x, mut y) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        // Key 0: one complete pair; key 1: x constant; key 2: far from zero; the rest
        // drawn from 3..60, x and y related with noise.
        let key = match i {
            0 | 1 => 0,
            2..=5 => 1,
            _ if i % 13 == 0 => 2,
            _ => 3 + rng.below(57) as i64,
        };
        let t = rng.float() * 10.0 - 5.0;
        let (mut a, b) = match key {
            1 => (3.5, t),
            2 => (1e9 + t, 5e8 - 2.0 * t + rng.float()),
            _ => (t, 0.5 * t + rng.float() * 3.0),
        };
        if i == 1 {
            a = f64::NAN; // key 0's second row is incomplete
        }
        k.push(key);
        x.push((i % 17 != 3).then_some(a).filter(|v| !v.is_nan()));
        y.push((i % 19 != 5).then_some(b));
    }
    let cell = |v: &Option<f64>| v.map_or(String::new(), |v| format!("{v:?}"));
    let mut text = String::from("k,x,y\n");
    for i in 0..n {
        text.push_str(&format!("{},{},{}\n", k[i], cell(&x[i]), cell(&y[i])));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_comoments_pandas.py"
    );
    let want = crate::common::python_json(&python, script, "pandas-comoments", &[("in.csv", text)]);
    let b = batch(vec![
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("x", Arc::new(Float64Array::from(x))),
        ("y", Arc::new(Float64Array::from(y))),
    ]);
    for round in 0..3 {
        let df = random_partitions(&b, &mut rng);
        let got = df
            .groupby(&["k"])
            .unwrap()
            .agg_specs(vec![
                AggSpec::pair("x", AggFunc::Cov, "y", "cov"),
                AggSpec::pair("x", AggFunc::Corr, "y", "corr"),
            ])
            .unwrap()
            .compute()
            .unwrap();
        assert_eq!(got.num_rows(), want["cov"].as_object().unwrap().len());
        let mut checked = 0;
        for row in 0..got.num_rows() {
            let Value::Int(key) = got.value("k", row).unwrap() else {
                panic!("key not an integer")
            };
            for f in ["cov", "corr"] {
                let g = got.value(f, row).unwrap().as_f64();
                let w = want[f][key.to_string()].as_f64();
                match (g, w) {
                    (None, None) => {}
                    // Values far from zero keep about eight digits whichever way they
                    // are computed; pandas' two passes and tessera's co-moments agree
                    // to that.
                    (Some(g), Some(w)) => {
                        let tol = if key == 2 { 1e-6 } else { 1e-12 };
                        assert!(
                            (g - w).abs() <= tol * (1.0 + w.abs()),
                            "round {round}: key {key} {f}: pandas {w}, tessera {g}"
                        );
                        checked += 1;
                    }
                    (g, w) => panic!("round {round}: key {key} {f}: pandas {w:?}, tessera {g:?}"),
                }
            }
        }
        assert!(checked > 100, "{checked} values compared");
        // The hand-made groups: one pair (null), a constant x (cov 0, corr null).
        let row = |key: i64| {
            (0..got.num_rows())
                .find(|&r| got.value("k", r).unwrap() == Value::Int(key))
                .unwrap()
        };
        assert_eq!(got.value("cov", row(0)).unwrap().as_f64(), None);
        assert_eq!(got.value("cov", row(1)).unwrap().as_f64(), Some(0.0));
        assert_eq!(got.value("corr", row(1)).unwrap().as_f64(), None);
    }
}

#[test]
fn pair_functions_need_their_second_column_and_name_it() {
    let b = batch(vec![
        ("k", Arc::new(Int64Array::from(vec![1, 1, 2])) as ArrayRef),
        ("x", Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0]))),
    ]);
    let df = tessera::frame::DataFrame::from_record_batch(b, 1, None).unwrap();
    let g = df.groupby(&["k"]).unwrap();
    let e = g.agg(&[("x", AggFunc::Corr)]).unwrap_err().to_string();
    assert!(e.contains("takes a second column"), "{e}");
    let e = g.corr("x", "nope").unwrap_err().to_string();
    assert!(e.contains("no column 'nope'"), "{e}");
    let plan = g.cov("x", "x").unwrap().explain().unwrap();
    assert!(plan.contains("x_x_cov = cov(x, x)"), "{plan}");
}
