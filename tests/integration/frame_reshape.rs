//! `rank` (five tie methods, both directions, over the frame and per group), `pivot_table`
//! and `crosstab` against pandas on random partitionings.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};
use tessera::frame::{AggFunc, Computed, RankMethod};

use crate::frames::{batch, random_partitions, Rng};

fn numbers(c: &Computed, column: &str) -> Vec<Option<f64>> {
    (0..c.num_rows())
        .map(|r| c.value(column, r).unwrap().as_f64())
        .collect()
}

fn json_numbers(v: &serde_json::Value) -> Vec<Option<f64>> {
    v.as_array().unwrap().iter().map(|x| x.as_f64()).collect()
}

/// Ranks, pivots and crosstabs against pandas through
/// `tests/scripts/frame_reshape_pandas.py`. Runs when `python3` (or `$PYTHON`) can import
/// pandas; otherwise it says it was skipped.
#[test]
fn ranks_and_pivots_match_pandas() {
    let Some(python) = crate::common::python_with("ranks_and_pivots_match_pandas", "pandas") else {
        return;
    };
    let mut rng = Rng(8);
    let n = 240;
    let k: Vec<Option<i64>> = (0..n)
        .map(|j| (j % 13 != 6).then(|| rng.below(5) as i64))
        .collect();
    let c: Vec<String> = (0..n).map(|_| format!("c{}", rng.below(4))).collect();
    // Few distinct values: many ties.
    let v: Vec<Option<f64>> = (0..n)
        .map(|j| (j % 10 != 3).then(|| rng.below(12) as f64 / 2.0))
        .collect();
    let i: Vec<i64> = (0..n).map(|_| rng.below(30) as i64 - 10).collect();
    let show = |x: Option<String>| x.unwrap_or_default();
    let mut text = String::from("k,c,v,i\n");
    for j in 0..n {
        text.push_str(&format!(
            "{},{},{},{}\n",
            show(k[j].map(|x| x.to_string())),
            c[j],
            show(v[j].map(|x| format!("{x:?}"))),
            i[j]
        ));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_reshape_pandas.py"
    );
    let want = crate::common::python_json(&python, script, "pandas-reshape", &[("in.csv", text)]);

    let b = batch(vec![
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("c", Arc::new(StringArray::from(c))),
        ("v", Arc::new(Float64Array::from(v))),
        ("i", Arc::new(Int64Array::from(i))),
    ]);
    let df = random_partitions(&b, &mut rng);
    let methods = [
        (RankMethod::Average, "average"),
        (RankMethod::Min, "min"),
        (RankMethod::Max, "max"),
        (RankMethod::First, "first"),
        (RankMethod::Dense, "dense"),
    ];
    for over in ["all", "group", "groupnull"] {
        for column in ["v", "i"] {
            for (method, name) in methods {
                for descending in [false, true] {
                    let ranked = if over == "all" {
                        df.rank(column, method, descending, "r")
                    } else {
                        df.groupby(&["k"])
                            .unwrap()
                            .dropna(over == "group")
                            .rank(column, method, descending, "r")
                    }
                    .unwrap();
                    let key = format!(
                        "rank.{over}.{column}.{name}.{}",
                        if descending { "desc" } else { "asc" }
                    );
                    assert_eq!(
                        numbers(&ranked.compute().unwrap(), "r"),
                        json_numbers(&want[&key]),
                        "{key}"
                    );
                }
            }
        }
    }
    let columns: Vec<String> = want["pivot.columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    for (func, name) in [
        (AggFunc::Sum, "sum"),
        (AggFunc::Mean, "mean"),
        (AggFunc::Count, "count"),
        (AggFunc::Max, "max"),
    ] {
        let p = df.pivot_table(&["k"], "c", "v", func).unwrap();
        let mut expect_cols = vec!["k".to_string()];
        expect_cols.extend(columns.iter().cloned());
        assert_eq!(p.columns(), expect_cols, "pivot {name}");
        let p = p.compute().unwrap();
        let got: Vec<Vec<Option<f64>>> = (0..p.num_rows())
            .map(|r| {
                expect_cols
                    .iter()
                    .map(|c| p.value(c, r).unwrap().as_f64())
                    .collect()
            })
            .collect();
        let expected: Vec<Vec<Option<f64>>> = want[format!("pivot.{name}")]
            .as_array()
            .unwrap()
            .iter()
            .map(json_numbers)
            .collect();
        assert_eq!(got.len(), expected.len(), "pivot {name}");
        for (g, w) in got.iter().zip(&expected) {
            for (a, b) in g.iter().zip(w) {
                match (a, b) {
                    (Some(a), Some(b)) => assert!(
                        (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
                        "pivot {name}: {g:?} vs {w:?}"
                    ),
                    _ => assert_eq!(a, b, "pivot {name}: {g:?} vs {w:?}"),
                }
            }
        }
    }
    let ct = df.crosstab(&["k"], "c").unwrap().compute().unwrap();
    let got: Vec<Vec<Option<f64>>> = (0..ct.num_rows())
        .map(|r| {
            std::iter::once("k".to_string())
                .chain(columns.iter().cloned())
                .map(|c| ct.value(&c, r).unwrap().as_f64())
                .collect()
        })
        .collect();
    let expected: Vec<Vec<Option<f64>>> = want["crosstab"]
        .as_array()
        .unwrap()
        .iter()
        .map(json_numbers)
        .collect();
    assert_eq!(got, expected, "crosstab");
}
