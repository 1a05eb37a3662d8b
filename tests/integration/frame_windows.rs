//! Window functions (`shift`, `diff`, cumulative, fills, rolling) against pandas, over
//! the whole frame and per group, on random partitionings (so carries cross partitions
//! of every size, empty ones included).

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};
use tessera::frame::{DataFrame, RollingAgg, Value, WindowFunc};

use crate::frames::{batch, random_partitions, Rng};

/// The cases, named as in `tests/scripts/frame_windows_pandas.py` after the `all.` or
/// `group.` prefix: (name, column, function).
fn cases() -> Vec<(&'static str, &'static str, WindowFunc)> {
    let roll = |agg, window, min_periods| WindowFunc::Rolling {
        agg,
        window,
        min_periods,
    };
    vec![
        ("v.shift2", "v", WindowFunc::Shift(2)),
        ("v.shift-3", "v", WindowFunc::Shift(-3)),
        ("s.shift1", "s", WindowFunc::Shift(1)),
        ("v.diff1", "v", WindowFunc::Diff(1)),
        ("i.diff-2", "i", WindowFunc::Diff(-2)),
        ("v.cumsum", "v", WindowFunc::CumSum),
        ("i.cumsum", "i", WindowFunc::CumSum),
        ("v.cumprod", "v", WindowFunc::CumProd),
        ("v.cummin", "v", WindowFunc::CumMin),
        ("i.cummax", "i", WindowFunc::CumMax),
        ("s.ffill", "s", WindowFunc::FillForward),
        ("v.bfill", "v", WindowFunc::FillBackward),
        ("v.roll3sum", "v", roll(RollingAgg::Sum, 3, 3)),
        ("v.roll4mean", "v", roll(RollingAgg::Mean, 4, 2)),
        ("i.roll5max", "i", roll(RollingAgg::Max, 5, 1)),
        ("v.roll2min", "v", roll(RollingAgg::Min, 2, 1)),
    ]
}

/// Every window function against pandas through `tests/scripts/frame_windows_pandas.py`,
/// over the whole frame and per group of `k` (with null keys), each on three random
/// partitionings. Runs when `python3` (or `$PYTHON`) can import pandas; otherwise it
/// says it was skipped.
#[test]
fn windows_match_pandas() {
    let Some(python) = crate::common::python_with("windows_match_pandas", "pandas") else {
        return;
    };
    let mut rng = Rng(4);
    let n = 500;
    let k: Vec<Option<i64>> = (0..n)
        .map(|j| (j % 23 != 7).then(|| rng.below(6) as i64))
        .collect();
    // Values near 1 in size, so that running products stay finite.
    let v: Vec<Option<f64>> = (0..n)
        .map(|j| (j % 7 != 2).then(|| (rng.below(9) as f64 - 4.0) / 4.0 + 0.5))
        .collect();
    let i: Vec<i64> = (0..n).map(|_| rng.below(200) as i64 - 100).collect();
    let s: Vec<Option<String>> = (0..n)
        .map(|j| (j % 3 != 1).then(|| format!("w{}", rng.below(50))))
        .collect();
    let mut text = String::from("k,v,i,s\n");
    for j in 0..n {
        let show = |x: Option<String>| x.unwrap_or_default();
        text.push_str(&format!(
            "{},{},{},{}\n",
            show(k[j].map(|x| x.to_string())),
            show(v[j].map(|x| format!("{x:?}"))),
            i[j],
            show(s[j].clone())
        ));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_windows_pandas.py"
    );
    let want = crate::common::python_json(&python, script, "pandas-windows", &[("in.csv", text)]);

    let b = batch(vec![
        ("k", Arc::new(Int64Array::from(k)) as ArrayRef),
        ("v", Arc::new(Float64Array::from(v))),
        ("i", Arc::new(Int64Array::from(i))),
        ("s", Arc::new(StringArray::from(s))),
    ]);
    for round in 0..3 {
        let df = random_partitions(&b, &mut rng);
        let sizes: Vec<usize> = df
            .partitions()
            .unwrap()
            .iter()
            .map(|p| p.num_rows())
            .collect();
        for (over, grouped) in [("all", false), ("group", true)] {
            for (name, column, func) in cases() {
                let frame: DataFrame = if grouped {
                    df.groupby(&["k"]).unwrap().window(column, func, "out")
                } else {
                    df.window(column, func, "out")
                }
                .unwrap();
                let got = frame.compute().unwrap();
                let key = format!("{over}.{name}");
                let want = want[&key].as_array().unwrap();
                assert_eq!(got.num_rows(), want.len(), "{key}");
                for (row, w) in want.iter().enumerate() {
                    let g = got.value("out", row).unwrap();
                    let ok = match (w, &g) {
                        (serde_json::Value::Null, Value::Null) => true,
                        (serde_json::Value::String(t), Value::Str(x)) => t[4..] == *x,
                        (serde_json::Value::Number(w), g) => g.as_f64().is_some_and(|g| {
                            let w = w.as_f64().unwrap();
                            (g - w).abs() <= 1e-9 * (1.0 + w.abs())
                        }),
                        _ => false,
                    };
                    assert!(
                        ok,
                        "round {round} ({sizes:?} rows per partition): {key} row {row}: pandas {w}, tessera {g:?}"
                    );
                }
            }
        }
    }
}

/// A window on a frame whose backend lacks windows, and a function that does not apply,
/// are errors when the plan is built.
#[test]
fn window_errors_name_the_function_and_column() {
    let b = batch(vec![(
        "s",
        Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef,
    )]);
    let df = DataFrame::from_record_batch(b, 1, None).unwrap();
    let e = df
        .window("s", WindowFunc::CumSum, "x")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cumsum needs a numeric or boolean column, got Utf8"),
        "{e}"
    );
    let e = df
        .window("t", WindowFunc::Shift(1), "x")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no column 't'"), "{e}");
    // The window survives projections that keep its output, and `explain` names it.
    let w = df.window("s", WindowFunc::CumMax, "m").unwrap();
    let plan = w.select(&["m"]).unwrap().explain().unwrap();
    assert!(
        plan.contains("window cummax(s) as m over all rows"),
        "{plan}"
    );
}
