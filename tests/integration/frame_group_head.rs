//! Per-group row selection against pandas: `cumcount` (each row's number within its
//! group) and `head(n)` (the first n rows of each group, in the frame's order), over random
//! partitionings, with null keys (in no group, as pandas' default); and the `n` largest and
//! smallest values per group (`groupby(k)["v"].nlargest(n)`).

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array};

use crate::frames::{batch, random_partitions, Rng};

#[test]
fn group_head_matches_pandas() {
    let Some(python) = crate::common::python_with("group_head_matches_pandas", "pandas") else {
        return;
    };
    let mut rng = Rng(61);
    let n = 700;
    let r: Vec<i64> = (0..n as i64).collect();
    let k: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 29 != 6).then(|| rng.below(40) as i64))
        .collect();
    let v: Vec<i64> = (0..n).map(|i| (i * 13 % 101) as i64).collect();
    let mut text = String::from("r,k,v\n");
    for i in 0..n {
        let key = k[i].map_or(String::new(), |x| x.to_string());
        text.push_str(&format!("{},{key},{}\n", r[i], v[i]));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_group_head_pandas.py"
    );
    let want =
        crate::common::python_json(&python, script, "pandas-group-head", &[("in.csv", text)]);
    let b = batch(vec![
        ("r", Arc::new(Int64Array::from(r)) as ArrayRef),
        ("k", Arc::new(Int64Array::from(k))),
        ("v", Arc::new(Int64Array::from(v))),
    ]);
    let ints = |df: &tessera::frame::DataFrame, c: &str| -> Vec<Option<i64>> {
        crate::frames::int_cells(&df.compute().unwrap(), c)
    };
    for round in 0..3 {
        let df = random_partitions(&b, &mut rng);
        let g = df.groupby(&["k"]).unwrap();
        let counts = ints(&g.cumcount("n").unwrap(), "n");
        let want_counts: Vec<Option<i64>> = want["cumcount"]
            .as_array()
            .unwrap()
            .iter()
            .map(serde_json::Value::as_i64)
            .collect();
        assert_eq!(counts, want_counts, "round {round}: cumcount");
        for (n, rows) in want["head"].as_object().unwrap() {
            let head = g.head(n.parse().unwrap()).unwrap();
            assert_eq!(
                head.columns(),
                vec!["r", "k", "v"],
                "no helper column is left"
            );
            let got: Vec<i64> = ints(&head, "r").into_iter().flatten().collect();
            assert_eq!(
                got,
                crate::frames::json_ints(rows),
                "round {round}: head({n})"
            );
        }
    }
}
