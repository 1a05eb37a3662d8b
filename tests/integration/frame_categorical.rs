//! Categorical columns (`Expr::categorical`: strings as a dictionary with 32-bit codes,
//! pandas' `astype("category")`): the cast keeps every value, and a groupby on it, a
//! merge on it, a sort by it and a filter of it give pandas' answers for the same
//! categorical column.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, Int64Array, StringArray};
use arrow_schema::DataType;
use tessera::frame::{categorical_type, col, lit, AggFunc, JoinType, Value};

use crate::frames::{batch, random_partitions, Rng};

fn cell(v: Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Str(s) => s,
        Value::Int(i) => i.to_string(),
        other => format!("{other}"),
    }
}

#[test]
fn categoricals_match_pandas() {
    let Some(python) = crate::common::python_with("categoricals_match_pandas", "pandas") else {
        return;
    };
    let mut rng = Rng(77);
    let names = ["b", "a", "delta", "c", "e e", "a", "zeta"];
    let n = 400;
    let s: Vec<Option<&str>> = (0..n)
        .map(|i| (i % 23 != 4).then(|| names[rng.below(names.len() as u64) as usize]))
        .collect();
    let v: Vec<i64> = (0..n).map(|i| (i * 7 % 31) as i64 - 9).collect();
    let right_s = ["a", "c", "zeta", "nope"];
    let right_w: Vec<i64> = vec![10, 20, 30, 40];
    let mut left_csv = String::from("s,v\n");
    for i in 0..n {
        left_csv.push_str(&format!("{},{}\n", s[i].unwrap_or(""), v[i]));
    }
    let mut right_csv = String::from("s,w\n");
    for (a, b) in right_s.iter().zip(&right_w) {
        right_csv.push_str(&format!("{a},{b}\n"));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_categorical_pandas.py"
    );
    let want = crate::common::python_json(
        &python,
        script,
        "pandas-categorical",
        &[("left.csv", left_csv), ("right.csv", right_csv)],
    );
    let strings = |w: &serde_json::Value| -> Vec<Vec<String>> {
        w.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|c| match c {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect()
            })
            .collect()
    };
    let left = batch(vec![
        ("s", Arc::new(StringArray::from(s.clone())) as ArrayRef),
        ("v", Arc::new(Int64Array::from(v.clone()))),
    ]);
    let right = batch(vec![
        (
            "s",
            Arc::new(StringArray::from(right_s.to_vec())) as ArrayRef,
        ),
        ("w", Arc::new(Int64Array::from(right_w))),
    ]);
    for round in 0..2 {
        let df = random_partitions(&left, &mut rng)
            .with_column("s", col("s").categorical())
            .unwrap();
        assert_eq!(
            df.schema().field_with_name("s").unwrap().data_type(),
            &categorical_type()
        );
        // The cast keeps every value (nulls too).
        let c = df.compute().unwrap();
        let mut back: Vec<Option<String>> = Vec::new();
        for b in &c.batches {
            let a = b.column_by_name("s").unwrap();
            assert!(matches!(a.data_type(), DataType::Dictionary(_, _)));
            let d = a.as_dictionary::<Int32Type>();
            let t = d.downcast_dict::<StringArray>().unwrap();
            back.extend(t.into_iter().map(|x| x.map(str::to_string)));
        }
        let mut want_back: Vec<Option<String>> = s.iter().map(|x| x.map(str::to_string)).collect();
        back.sort();
        want_back.sort();
        assert_eq!(back, want_back, "round {round}");

        // groupby (observed categories in sorted order; pandas drops the null key).
        let g = df
            .groupby(&["s"])
            .unwrap()
            .agg_named(&[("v", AggFunc::Sum, "total"), ("v", AggFunc::Count, "n")])
            .unwrap()
            .sort_values(&["s"], &[true])
            .unwrap()
            .compute()
            .unwrap();
        let got: Vec<Vec<String>> = (0..g.num_rows())
            .map(|r| {
                ["s", "total", "n"]
                    .iter()
                    .map(|c| cell(g.value(c, r).unwrap()))
                    .collect()
            })
            .collect();
        assert_eq!(got, strings(&want["groupby"]), "round {round}: groupby");

        // merge on the categorical (the right side categorical too).
        let r = tessera::frame::DataFrame::from_record_batch(right.clone(), 2, None)
            .unwrap()
            .with_column("s", col("s").categorical())
            .unwrap();
        let m = df
            .merge(&r, &["s"], JoinType::Inner)
            .unwrap()
            .compute()
            .unwrap();
        let mut got: Vec<Vec<String>> = (0..m.num_rows())
            .map(|row| {
                ["s", "v", "w"]
                    .iter()
                    .map(|c| cell(m.value(c, row).unwrap()))
                    .collect()
            })
            .collect();
        got.sort();
        assert_eq!(got, strings(&want["merge"]), "round {round}: merge");

        // sort by the categorical, then v (nulls last).
        let sorted = df
            .sort_values(&["s", "v"], &[true, true])
            .unwrap()
            .compute()
            .unwrap();
        let got: Vec<Vec<String>> = (0..sorted.num_rows())
            .map(|row| {
                ["s", "v"]
                    .iter()
                    .map(|c| cell(sorted.value(c, row).unwrap()))
                    .collect()
            })
            .collect();
        assert_eq!(got, strings(&want["sorted"]), "round {round}: sort");

        // a filter comparing it with a string.
        let f = df.filter(col("s").eq(lit("b"))).unwrap().compute().unwrap();
        let got: Vec<i64> = crate::frames::int_cells(&f, "v")
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(
            got,
            crate::frames::json_ints(&want["filtered"]),
            "round {round}: filter"
        );
    }
}

#[test]
fn only_strings_become_categoricals() {
    let b = batch(vec![(
        "x",
        Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef,
    )]);
    let df = tessera::frame::DataFrame::from_record_batch(b, 1, None).unwrap();
    let e = df
        .with_column("c", col("x").categorical())
        .unwrap_err()
        .to_string();
    assert!(e.contains("Dictionary(Int32, Utf8)"), "{e}");
}
