//! Dataframes on the CPU backend against references: hand-computed values, and naive
//! implementations (a `BTreeMap` groupby, a nested-loop join, a stable sort) on random
//! frames with random partitionings — the result must not depend on how the rows are
//! split, nor on the strategy (tree/shuffle groupby; broadcast/shuffle/sorted-merge join).

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use tessera::frame::{
    col, lit, when, AggFunc, Computed, DataFrame, GroupStrategy, JoinStrategy, JoinType, Value,
};

use tessera_cpu_frame as _;

pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub(crate) fn float(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Splits a batch at random points into `1..=6` partitions (some may be empty).
pub(crate) fn random_partitions(batch: &RecordBatch, rng: &mut Rng) -> DataFrame {
    let n = batch.num_rows();
    let parts = 1 + rng.below(6) as usize;
    let mut cuts: Vec<usize> = (0..parts - 1)
        .map(|_| rng.below(n as u64 + 1) as usize)
        .collect();
    cuts.sort();
    let mut batches = Vec::new();
    let mut start = 0;
    for c in cuts.into_iter().chain([n]) {
        batches.push(batch.slice(start, c - start));
        start = c;
    }
    DataFrame::from_record_batches(batches, None).unwrap()
}

/// The integer cells of `column` of a computed frame, in order (`None` for nulls).
pub(crate) fn int_cells(c: &tessera::frame::Computed, column: &str) -> Vec<Option<i64>> {
    (0..c.num_rows())
        .map(|r| match c.value(column, r).unwrap() {
            tessera::frame::Value::Int(x) => Some(x),
            tessera::frame::Value::Null => None,
            v => panic!("{column}: {v:?} is not an integer"),
        })
        .collect()
}

/// A JSON array of integers (a Python check script's answer).
pub(crate) fn json_ints(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|x| x.as_i64().expect("an integer"))
        .collect()
}

pub(crate) fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
    tessera::frame::batch_from_columns(cols).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

fn values(c: &Computed, column: &str) -> Vec<Value> {
    (0..c.num_rows())
        .map(|r| c.value(column, r).unwrap())
        .collect()
}

#[test]
fn groupby_hand_computed() {
    let df = DataFrame::from_columns(
        vec![
            (
                "k",
                Arc::new(Int64Array::from(vec![
                    Some(1),
                    Some(2),
                    Some(1),
                    None,
                    Some(2),
                    Some(1),
                ])) as ArrayRef,
            ),
            (
                "x",
                Arc::new(Float64Array::from(vec![
                    Some(1.0),
                    Some(10.0),
                    Some(3.0),
                    Some(100.0),
                    None,
                    Some(5.0),
                ])),
            ),
            (
                "s",
                Arc::new(StringArray::from(vec!["a", "b", "a", "c", "d", "e"])),
            ),
        ],
        3,
    )
    .unwrap();
    let out = df
        .groupby(&["k"])
        .unwrap()
        .agg(&[
            ("x", AggFunc::Sum),
            ("x", AggFunc::Mean),
            ("x", AggFunc::Count),
            ("x", AggFunc::Std),
            ("x", AggFunc::Min),
            ("x", AggFunc::Max),
            ("s", AggFunc::First),
            ("s", AggFunc::Last),
            ("s", AggFunc::NUnique),
        ])
        .unwrap()
        .compute()
        .unwrap();
    // The null key is dropped (pandas' dropna=True); groups come out sorted.
    assert_eq!(values(&out, "k"), [Value::Int(1), Value::Int(2)]);
    assert_eq!(
        values(&out, "x_sum"),
        [Value::Float(9.0), Value::Float(10.0)]
    );
    assert_eq!(
        values(&out, "x_mean"),
        [Value::Float(3.0), Value::Float(10.0)]
    );
    assert_eq!(values(&out, "x_count"), [Value::Int(3), Value::Int(1)]);
    // std of 1, 3, 5 with ddof 1 is 2; a single value has no sample std.
    assert_eq!(values(&out, "x_std"), [Value::Float(2.0), Value::Null]);
    assert_eq!(
        values(&out, "x_min"),
        [Value::Float(1.0), Value::Float(10.0)]
    );
    assert_eq!(
        values(&out, "x_max"),
        [Value::Float(5.0), Value::Float(10.0)]
    );
    assert_eq!(
        values(&out, "s_first"),
        [Value::Str("a".into()), Value::Str("b".into())]
    );
    assert_eq!(
        values(&out, "s_last"),
        [Value::Str("e".into()), Value::Str("d".into())]
    );
    assert_eq!(values(&out, "s_nunique"), [Value::Int(2), Value::Int(2)]);

    // Whole-frame reductions.
    assert_eq!(df.reduce("x", AggFunc::Sum).unwrap(), Value::Float(119.0));
    assert_eq!(df.reduce("k", AggFunc::Count).unwrap(), Value::Int(5));
    assert_eq!(df.reduce("s", AggFunc::NUnique).unwrap(), Value::Int(5));
    assert_eq!(df.reduce("k", AggFunc::Max).unwrap(), Value::Int(2));
    let var = df.reduce("x", AggFunc::Var).unwrap().as_f64().unwrap();
    let xs = [1.0, 10.0, 3.0, 100.0, 5.0];
    let m = xs.iter().sum::<f64>() / 5.0;
    let want = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 4.0;
    assert!(close(var, want), "{var} vs {want}");
    assert_eq!(df.len().unwrap(), 6);
}

#[test]
fn expressions_hand_computed() {
    let ts = arrow_array::TimestampMicrosecondArray::from(vec![
        Some(1_421_348_739_000_000), // 2015-01-15 19:05:39, a Thursday
        None,
        Some(0), // 1970-01-01 00:00:00, a Thursday
    ]);
    let df = DataFrame::from_columns(
        vec![
            (
                "a",
                Arc::new(Int64Array::from(vec![Some(7), None, Some(-3)])) as ArrayRef,
            ),
            ("b", Arc::new(Int64Array::from(vec![2, 4, 5]))),
            (
                "s",
                Arc::new(StringArray::from(vec![
                    Some("CASH"),
                    Some("credit card"),
                    None,
                ])),
            ),
            ("t", Arc::new(ts)),
        ],
        2,
    )
    .unwrap();
    let out = df
        .select_exprs(vec![
            ("div".into(), col("a") / col("b")),
            ("rem".into(), col("a") % col("b")),
            ("neg".into(), -col("a")),
            ("filled".into(), col("a").fill_null(0)),
            ("isnull".into(), col("a").is_null()),
            ("card".into(), col("s").contains("card")),
            ("eq".into(), col("s").eq(lit("CASH"))),
            ("hour".into(), col("t").hour()),
            ("weekday".into(), col("t").weekday()),
            ("year".into(), col("t").year()),
            (
                "f".into(),
                col("b").cast(arrow_schema::DataType::Float64) * 0.5,
            ),
            ("both".into(), col("a").gt(0) & col("b").lt(3)),
        ])
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(
        values(&out, "div"),
        [Value::Float(3.5), Value::Null, Value::Float(-0.6)]
    );
    assert_eq!(
        values(&out, "rem"),
        [Value::Int(1), Value::Null, Value::Int(-3)]
    );
    assert_eq!(
        values(&out, "neg"),
        [Value::Int(-7), Value::Null, Value::Int(3)]
    );
    assert_eq!(
        values(&out, "filled"),
        [Value::Int(7), Value::Int(0), Value::Int(-3)]
    );
    assert_eq!(
        values(&out, "isnull"),
        [Value::Bool(false), Value::Bool(true), Value::Bool(false)]
    );
    assert_eq!(
        values(&out, "card"),
        [Value::Bool(false), Value::Bool(true), Value::Null]
    );
    assert_eq!(
        values(&out, "eq"),
        [Value::Bool(true), Value::Bool(false), Value::Null]
    );
    assert_eq!(
        values(&out, "hour"),
        [Value::Int(19), Value::Null, Value::Int(0)]
    );
    assert_eq!(
        values(&out, "weekday"),
        [Value::Int(3), Value::Null, Value::Int(3)]
    );
    assert_eq!(
        values(&out, "year"),
        [Value::Int(2015), Value::Null, Value::Int(1970)]
    );
    assert_eq!(
        values(&out, "f"),
        [Value::Float(1.0), Value::Float(2.0), Value::Float(2.5)]
    );
    // Kleene logic: null > 0 is null, and null & false is false.
    assert_eq!(
        values(&out, "both"),
        [Value::Bool(true), Value::Bool(false), Value::Bool(false)]
    );

    let filtered = df
        .filter(col("a").gt(0) | col("s").is_null())
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(values(&filtered, "b"), [Value::Int(2), Value::Int(5)]);
}

#[test]
fn plan_errors_name_the_problem() {
    let df = DataFrame::from_columns(
        vec![("a", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef)],
        1,
    )
    .unwrap();
    let e = df.filter(col("nope").gt(1)).unwrap_err().to_string();
    assert!(
        e.contains("no column 'nope'") && e.contains("columns: a"),
        "{e}"
    );
    let e = df.filter(col("a") + 1).unwrap_err().to_string();
    assert!(e.contains("must be Boolean"), "{e}");
    let e = df.groupby(&["zz"]).unwrap_err().to_string();
    assert!(e.contains("no key column 'zz'"), "{e}");
    let e = df
        .agg(&[("a", AggFunc::Mean), ("a", AggFunc::Mean)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("appears twice"), "{e}");
    let s = DataFrame::from_columns(
        vec![("a", Arc::new(StringArray::from(vec!["x"])) as ArrayRef)],
        1,
    )
    .unwrap();
    let e = s.agg(&[("a", AggFunc::Sum)]).unwrap_err().to_string();
    assert!(
        e.contains("sum does not apply to column 'a' of type Utf8"),
        "{e}"
    );
    let e = df
        .merge(&s, &["a"], JoinType::Inner)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("key 'a' is Int64 on the left but 'a' is Utf8"),
        "{e}"
    );
}

/// A random frame: keys with nulls, a float value with nulls, an int value.
fn random_frame(rng: &mut Rng, rows: usize, key_range: u64) -> RecordBatch {
    let k: Int64Array = (0..rows)
        .map(|_| (rng.below(10) != 0).then(|| rng.below(key_range) as i64))
        .collect();
    let s: StringArray = (0..rows)
        .map(|_| Some(["x", "y", "z"][rng.below(3) as usize]))
        .collect();
    let x: Float64Array = (0..rows)
        .map(|_| (rng.below(8) != 0).then(|| (rng.float() * 200.0 - 100.0).round() / 4.0))
        .collect();
    let y: Int64Array = (0..rows).map(|_| Some(rng.below(50) as i64 - 25)).collect();
    batch(vec![
        ("k", Arc::new(k) as ArrayRef),
        ("s", Arc::new(s)),
        ("x", Arc::new(x)),
        ("y", Arc::new(y)),
    ])
}

type Key = (i64, String);

/// The naive groupby: one pass into a `BTreeMap`, then each function by definition.
fn reference_groupby(b: &RecordBatch) -> BTreeMap<Key, (Vec<f64>, Vec<i64>)> {
    let k = b.column(0).as_primitive::<Int64Type>();
    let s = b.column(1).as_string::<i32>();
    let x = b.column(2).as_primitive::<Float64Type>();
    let y = b.column(3).as_primitive::<Int64Type>();
    let mut groups: BTreeMap<Key, (Vec<f64>, Vec<i64>)> = BTreeMap::new();
    for i in 0..b.num_rows() {
        if k.is_null(i) {
            continue;
        }
        let g = groups
            .entry((k.value(i), s.value(i).to_string()))
            .or_default();
        if x.is_valid(i) {
            g.0.push(x.value(i));
        }
        g.1.push(y.value(i));
    }
    groups
}

#[test]
fn groupby_matches_reference_for_any_partitioning_and_strategy() {
    let mut rng = Rng(11);
    for case in 0..24 {
        let rows = rng.below(400) as usize;
        let range = 1 + rng.below(12);
        let b = random_frame(&mut rng, rows, range);
        let want = reference_groupby(&b);
        let strategy = if case % 2 == 0 {
            GroupStrategy::Tree
        } else {
            GroupStrategy::Shuffle
        };
        let df = random_partitions(&b, &mut rng);
        let out = df
            .groupby(&["k", "s"])
            .unwrap()
            .strategy(strategy)
            .agg(&[
                ("x", AggFunc::Sum),
                ("x", AggFunc::Mean),
                ("x", AggFunc::Var),
                ("x", AggFunc::Min),
                ("x", AggFunc::Max),
                ("x", AggFunc::Count),
                ("x", AggFunc::NUnique),
                ("y", AggFunc::Sum),
                ("y", AggFunc::First),
                ("y", AggFunc::Last),
            ])
            .unwrap()
            .compute()
            .unwrap();
        // Shuffle output is sorted within each partition; compare as a map.
        let mut got: BTreeMap<Key, usize> = BTreeMap::new();
        for r in 0..out.num_rows() {
            let key = match (out.value("k", r).unwrap(), out.value("s", r).unwrap()) {
                (Value::Int(k), Value::Str(s)) => (k, s),
                other => panic!("bad key {other:?}"),
            };
            assert!(got.insert(key, r).is_none(), "case {case}: duplicate group");
        }
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            want.keys().collect::<Vec<_>>(),
            "case {case}"
        );
        for (key, (xs, ys)) in &want {
            let r = got[key];
            let v = |c: &str| out.value(c, r).unwrap();
            let sum: f64 = xs.iter().sum();
            assert!(close(v("x_sum").as_f64().unwrap(), sum), "case {case} sum");
            assert_eq!(v("x_count"), Value::Int(xs.len() as i64));
            if xs.is_empty() {
                assert_eq!(v("x_mean"), Value::Null);
                assert_eq!(v("x_min"), Value::Null);
            } else {
                let mean = sum / xs.len() as f64;
                assert!(
                    close(v("x_mean").as_f64().unwrap(), mean),
                    "case {case} mean"
                );
                let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
                let max = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(v("x_min"), Value::Float(min));
                assert_eq!(v("x_max"), Value::Float(max));
                if xs.len() > 1 {
                    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>()
                        / (xs.len() - 1) as f64;
                    assert!(close(v("x_var").as_f64().unwrap(), var), "case {case} var");
                } else {
                    assert_eq!(v("x_var"), Value::Null);
                }
            }
            let mut distinct: Vec<u64> = xs.iter().map(|x| x.to_bits()).collect();
            distinct.sort();
            distinct.dedup();
            assert_eq!(
                v("x_nunique"),
                Value::Int(distinct.len() as i64),
                "case {case} nunique"
            );
            assert_eq!(v("y_sum"), Value::Int(ys.iter().sum()));
            assert_eq!(v("y_first"), Value::Int(ys[0]), "case {case} first");
            assert_eq!(
                v("y_last"),
                Value::Int(*ys.last().unwrap()),
                "case {case} last"
            );
        }
    }
}

/// A groupby with about as many groups as rows switches its partial aggregation off (the
/// rows of every partition are hash partitioned as they are, each bucket aggregated
/// once; the profile's stage of those buckets shows it), and every group's results equal a
/// reference map's and those of the tree combine, which never passes rows through.
#[test]
fn a_groupby_of_as_many_groups_as_rows_passes_its_rows_through() {
    let n = 60_000i64;
    // Two keys; every tenth row repeats the key of the row before, so some groups have
    // two rows and the rest one; x has nulls.
    let key = |i: i64| if i % 10 == 9 { i - 1 } else { i };
    let a: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|i| key(i) / 7)));
    let b: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|i| key(i) % 7)));
    let x: ArrayRef =
        Arc::new(Float64Array::from_iter((0..n).map(|i| {
            (i % 13 != 0).then_some(((i * 37) % 101) as f64 - 50.0)
        })));
    let df = DataFrame::from_columns(vec![("a", a), ("b", b), ("x", x.clone())], 4).unwrap();
    let mut want: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    let xs = x.as_primitive::<Float64Type>();
    for i in 0..n {
        let g = want.entry((key(i) / 7, key(i) % 7)).or_default();
        if xs.is_valid(i as usize) {
            g.push(xs.value(i as usize));
        }
    }
    let aggs = [
        ("x", AggFunc::Sum),
        ("x", AggFunc::Count),
        ("x", AggFunc::Min),
        ("x", AggFunc::Max),
    ];
    let (passed, profile) = df
        .groupby(&["a", "b"])
        .unwrap()
        .agg(&aggs)
        .unwrap()
        .compute_with_profile()
        .unwrap();
    assert!(
        profile
            .spans
            .iter()
            .any(|s| s.stage == "aggregate: buckets"),
        "the rows were not passed through: {:?}",
        profile
            .spans
            .iter()
            .map(|s| &s.stage)
            .collect::<std::collections::BTreeSet<_>>()
    );
    let tree = df
        .groupby(&["a", "b"])
        .unwrap()
        .strategy(GroupStrategy::Tree)
        .agg(&aggs)
        .unwrap()
        .compute()
        .unwrap();
    for out in [&passed, &tree] {
        assert_eq!(out.num_rows(), want.len());
        let mut seen = 0;
        for r in 0..out.num_rows() {
            let (Value::Int(ka), Value::Int(kb)) =
                (out.value("a", r).unwrap(), out.value("b", r).unwrap())
            else {
                panic!("bad key at row {r}");
            };
            let xs = &want[&(ka, kb)];
            let v = |c: &str| out.value(c, r).unwrap();
            assert_eq!(v("x_count"), Value::Int(xs.len() as i64), "({ka}, {kb})");
            if xs.is_empty() {
                assert_eq!(v("x_min"), Value::Null);
            } else {
                assert!(close(v("x_sum").as_f64().unwrap(), xs.iter().sum()));
                let min = xs.iter().cloned().fold(f64::INFINITY, f64::min);
                let max = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(
                    (v("x_min"), v("x_max")),
                    (Value::Float(min), Value::Float(max))
                );
            }
            seen += 1;
        }
        assert_eq!(seen, want.len());
    }
}

/// A groupby whose keys recur from partition to partition folds runs of consecutive
/// partitions into one state each (the profile's `aggregate: fold` stage shows it), and
/// every group's sum, count, mean, first and last equal a reference map's, in row order.
#[test]
fn a_groupby_whose_keys_recur_across_partitions_folds_runs_of_them() {
    let n = 200_000i64;
    let key = |i: i64| (i * 7919) % 3_000;
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(key)));
    let s: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..n).map(|i| ["x", "y"][(key(i) % 2) as usize]),
    ));
    let y: ArrayRef = Arc::new(Int64Array::from_iter_values(
        (0..n).map(|i| (i * 31) % 1_000),
    ));
    let df = DataFrame::from_columns(vec![("k", k), ("s", s), ("y", y)], 40).unwrap();
    let mut want: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for i in 0..n {
        want.entry(key(i)).or_default().push((i * 31) % 1_000);
    }
    let (out, profile) = df
        .groupby(&["k", "s"])
        .unwrap()
        .agg(&[
            ("y", AggFunc::Sum),
            ("y", AggFunc::Count),
            ("y", AggFunc::Mean),
            ("y", AggFunc::First),
            ("y", AggFunc::Last),
        ])
        .unwrap()
        .compute_with_profile()
        .unwrap();
    let stages: std::collections::BTreeSet<_> = profile.spans.iter().map(|s| &s.stage).collect();
    assert!(
        stages.iter().any(|s| *s == "aggregate: fold"),
        "no runs were folded: {stages:?}"
    );
    assert_eq!(out.num_rows(), want.len());
    for r in 0..out.num_rows() {
        let Value::Int(k) = out.value("k", r).unwrap() else {
            panic!("bad key at row {r}");
        };
        assert_eq!(
            out.value("s", r).unwrap(),
            Value::Str(["x", "y"][(k % 2) as usize].into())
        );
        let ys = &want[&k];
        let v = |c: &str| out.value(c, r).unwrap();
        let sum: i64 = ys.iter().sum();
        assert_eq!(v("y_sum"), Value::Int(sum), "{k}");
        assert_eq!(v("y_count"), Value::Int(ys.len() as i64), "{k}");
        assert!(
            close(v("y_mean").as_f64().unwrap(), sum as f64 / ys.len() as f64),
            "{k}"
        );
        assert_eq!(v("y_first"), Value::Int(ys[0]), "{k}");
        assert_eq!(v("y_last"), Value::Int(*ys.last().unwrap()), "{k}");
    }
}

/// Rows of a join result as sortable text tuples.
fn rows_of(c: &Computed) -> Vec<String> {
    let cols: Vec<String> = c.schema.fields().iter().map(|f| f.name().clone()).collect();
    let mut out: Vec<String> = (0..c.num_rows())
        .map(|r| {
            cols.iter()
                .map(|n| c.value(n, r).unwrap().to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect();
    out.sort();
    out
}

/// The nested-loop join: every pair with equal non-null keys, plus unmatched rows.
fn reference_join(l: &RecordBatch, r: &RecordBatch, how: JoinType) -> Vec<String> {
    let lk = l.column(0).as_primitive::<Int64Type>();
    let la = l.column(1).as_primitive::<Int64Type>();
    let rk = r.column(0).as_primitive::<Int64Type>();
    let rb = r.column(1).as_primitive::<Int64Type>();
    let v = |a: &arrow_array::Int64Array, i: usize| {
        if a.is_null(i) {
            "null".to_string()
        } else {
            a.value(i).to_string()
        }
    };
    let mut out = Vec::new();
    let mut right_hit = vec![false; r.num_rows()];
    for i in 0..l.num_rows() {
        let mut hit = false;
        for (j, right_hit) in right_hit.iter_mut().enumerate() {
            if lk.is_valid(i) && rk.is_valid(j) && lk.value(i) == rk.value(j) {
                out.push(format!("{}|{}|{}", v(lk, i), v(la, i), v(rb, j)));
                hit = true;
                *right_hit = true;
            }
        }
        if !hit && matches!(how, JoinType::Left | JoinType::Outer) {
            out.push(format!("{}|{}|null", v(lk, i), v(la, i)));
        }
    }
    if matches!(how, JoinType::Right | JoinType::Outer) {
        for (j, hit) in right_hit.iter().enumerate() {
            if !hit {
                out.push(format!("{}|null|{}", v(rk, j), v(rb, j)));
            }
        }
    }
    out.sort();
    out
}

fn join_side(rng: &mut Rng, rows: usize, value: &str) -> RecordBatch {
    let k: Int64Array = (0..rows)
        .map(|_| (rng.below(12) != 0).then(|| rng.below(15) as i64))
        .collect();
    let a: Int64Array = (0..rows).map(|_| Some(rng.below(1000) as i64)).collect();
    batch(vec![("k", Arc::new(k) as ArrayRef), (value, Arc::new(a))])
}

#[test]
fn joins_match_nested_loops_for_every_strategy() {
    let mut rng = Rng(5);
    let hows = [
        JoinType::Inner,
        JoinType::Left,
        JoinType::Right,
        JoinType::Outer,
    ];
    let strategies = [
        JoinStrategy::Auto,
        JoinStrategy::Broadcast,
        JoinStrategy::Shuffle,
        JoinStrategy::SortedMerge,
    ];
    for case in 0..16 {
        // Case 0 has an empty left side: right and outer joins must keep the right rows.
        let ln = if case == 0 { 0 } else { rng.below(60) as usize };
        let rn = rng.below(40) as usize;
        let l = join_side(&mut rng, ln, "a");
        let r = join_side(&mut rng, rn, "b");
        let (ldf, rdf) = (
            random_partitions(&l, &mut rng),
            random_partitions(&r, &mut rng),
        );
        for how in hows {
            let want = reference_join(&l, &r, how);
            for strategy in strategies {
                let (lx, rx) = if strategy == JoinStrategy::SortedMerge {
                    (
                        ldf.set_index("k").unwrap(),
                        rdf.sort_values(&["k"], &[true]).unwrap(),
                    )
                } else {
                    (ldf.clone(), rdf.clone())
                };
                let got = lx
                    .merge_on(&rx, &["k"], &["k"], how, strategy)
                    .unwrap()
                    .compute()
                    .unwrap();
                assert_eq!(rows_of(&got), want, "case {case} {how:?} {strategy:?}");
            }
        }
    }
}

#[test]
fn join_suffixes_and_distinct_key_names() {
    let l = DataFrame::from_columns(
        vec![
            ("id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            ("v", Arc::new(Int64Array::from(vec![10, 20]))),
        ],
        1,
    )
    .unwrap();
    let r = DataFrame::from_columns(
        vec![
            ("rid", Arc::new(Int64Array::from(vec![2, 3])) as ArrayRef),
            ("v", Arc::new(Int64Array::from(vec![200, 300]))),
        ],
        1,
    )
    .unwrap();
    let out = l
        .merge_on(&r, &["id"], &["rid"], JoinType::Inner, JoinStrategy::Auto)
        .unwrap();
    assert_eq!(out.columns(), ["id", "v_x", "rid", "v_y"]);
    let c = out.compute().unwrap();
    assert_eq!(rows_of(&c), ["2|20|2|200"]);
}

#[test]
fn joins_on_two_keys_of_mixed_types() {
    // Two keys (string + int) go through the arrow-row paths of the hash and merge joins.
    let l = DataFrame::from_columns(
        vec![
            (
                "city",
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    Some("a"),
                    Some("b"),
                    None,
                    Some("b"),
                ])) as ArrayRef,
            ),
            ("year", Arc::new(Int64Array::from(vec![1, 2, 1, 1, 1]))),
            ("v", Arc::new(Int64Array::from(vec![10, 20, 30, 40, 50]))),
        ],
        2,
    )
    .unwrap();
    let r = DataFrame::from_columns(
        vec![
            (
                "city",
                Arc::new(StringArray::from(vec![
                    Some("b"),
                    Some("a"),
                    None,
                    Some("c"),
                ])) as ArrayRef,
            ),
            ("year", Arc::new(Int64Array::from(vec![1, 2, 1, 9]))),
            ("w", Arc::new(Int64Array::from(vec![100, 200, 300, 400]))),
        ],
        2,
    )
    .unwrap();
    for strategy in [
        JoinStrategy::Broadcast,
        JoinStrategy::Shuffle,
        JoinStrategy::SortedMerge,
    ] {
        let (lx, rx) = if strategy == JoinStrategy::SortedMerge {
            (
                l.sort_values(&["city", "year"], &[true]).unwrap(),
                r.sort_values(&["city", "year"], &[true]).unwrap(),
            )
        } else {
            (l.clone(), r.clone())
        };
        let inner = lx
            .merge_on(
                &rx,
                &["city", "year"],
                &["city", "year"],
                JoinType::Inner,
                strategy,
            )
            .unwrap()
            .compute()
            .unwrap();
        assert_eq!(
            rows_of(&inner),
            ["a|2|20|200", "b|1|30|100", "b|1|50|100"],
            "{strategy:?}"
        );
        let outer = lx
            .merge_on(
                &rx,
                &["city", "year"],
                &["city", "year"],
                JoinType::Outer,
                strategy,
            )
            .unwrap()
            .compute()
            .unwrap();
        // Null keys never match: both null-city rows come out unmatched.
        assert_eq!(
            rows_of(&outer),
            [
                "a|1|10|null",
                "a|2|20|200",
                "b|1|30|100",
                "b|1|50|100",
                "c|9|null|400",
                "null|1|40|null",
                "null|1|null|300",
            ],
            "{strategy:?}"
        );
    }
}

#[test]
fn timestamp_columns_compare_with_date_strings() {
    let t = arrow_array::TimestampMicrosecondArray::from(vec![
        1_420_070_400_000_000, // 2015-01-01
        1_420_848_000_000_000, // 2015-01-10
        1_421_348_739_000_000, // 2015-01-15 19:05:39
    ]);
    let df = DataFrame::from_columns(vec![("t", Arc::new(t) as ArrayRef)], 1).unwrap();
    let n = df
        .filter(col("t").gt_eq(lit("2015-01-10")))
        .unwrap()
        .len()
        .unwrap();
    assert_eq!(n, 2);
}

#[test]
fn sort_values_is_a_stable_global_sort() {
    let mut rng = Rng(9);
    for case in 0..12 {
        let rows = rng.below(300) as usize;
        let b = random_frame(&mut rng, rows, 7);
        let df = random_partitions(&b, &mut rng);
        let out = df
            .sort_values(&["k", "y"], &[true, false])
            .unwrap()
            .compute()
            .unwrap();
        // Reference: a stable sort of row indices (nulls last; y descending).
        let k = b.column(0).as_primitive::<Int64Type>();
        let y = b.column(3).as_primitive::<Int64Type>();
        let mut idx: Vec<usize> = (0..b.num_rows()).collect();
        idx.sort_by(|&i, &j| {
            let ki = k.is_valid(i).then(|| k.value(i));
            let kj = k.is_valid(j).then(|| k.value(j));
            let by_k = match (ki, kj) {
                (Some(a), Some(b)) => a.cmp(&b),
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, None) => std::cmp::Ordering::Equal,
            };
            by_k.then(y.value(j).cmp(&y.value(i)))
        });
        let want_k: Vec<Value> = idx
            .iter()
            .map(|&i| {
                if k.is_null(i) {
                    Value::Null
                } else {
                    Value::Int(k.value(i))
                }
            })
            .collect();
        let want_y: Vec<Value> = idx.iter().map(|&i| Value::Int(y.value(i))).collect();
        assert_eq!(values(&out, "k"), want_k, "case {case}");
        assert_eq!(values(&out, "y"), want_y, "case {case}");
        let divisions = df.set_index("k").unwrap().divisions().unwrap();
        if b.num_rows() > 0 {
            let d = divisions.expect("sorted frames know their divisions");
            assert!(d.len() >= 2);
        }
    }
}

#[test]
fn frame_operations_keep_rows_and_order() {
    let mut rng = Rng(3);
    let b = random_frame(&mut rng, 257, 5);
    let df = random_partitions(&b, &mut rng);
    let whole = df.compute().unwrap().concat().unwrap();
    assert_eq!(whole, b);
    let re = df.repartition(4).unwrap();
    assert_eq!(re.npartitions(), 4);
    assert_eq!(re.compute().unwrap().concat().unwrap(), b);
    let head = df.head(10).unwrap();
    assert_eq!(head.concat().unwrap(), b.slice(0, 10));
    let renamed = df.rename(&[("x", "value")]).unwrap().drop(&["s"]).unwrap();
    assert_eq!(renamed.columns(), ["k", "value", "y"]);
    let e = df.rename(&[("nope", "x")]).unwrap_err().to_string();
    assert!(e.contains("no column 'nope'"), "{e}");
    let doubled = df
        .map_partitions(|b| {
            let y = b.column_by_name("y").unwrap();
            let y2 =
                arrow_arith::numeric::add(y, y).map_err(|e| tessera::Error::arrow("add", e))?;
            tessera::frame::batch_from_columns(vec![("y2", y2)])
        })
        .unwrap()
        .compute()
        .unwrap();
    let ys = b.column(3).as_primitive::<Int64Type>();
    assert_eq!(
        values(&doubled, "y2"),
        ys.values()
            .iter()
            .map(|v| Value::Int(2 * v))
            .collect::<Vec<_>>()
    );
    let moved = df.to_backend("cpu").unwrap();
    assert_eq!(moved.compute().unwrap().concat().unwrap(), b);
    let d = df.describe().unwrap();
    assert_eq!(d.value("statistic", 0).unwrap(), Value::Str("count".into()));
    assert_eq!(d.value("y", 0).unwrap(), Value::Float(257.0));
    let ysum: i64 = ys.values().iter().sum();
    assert!(close(
        d.value("y", 1).unwrap().as_f64().unwrap(),
        ysum as f64 / 257.0
    ));
}

#[test]
fn from_arrays_uses_the_array_chunks() {
    let a = tessera::Array::arange(0.0, 10.0, 1.0, tessera::DType::F64, 4, None).unwrap();
    let df = DataFrame::from_arrays(vec![("a", &a)]).unwrap();
    assert_eq!(df.npartitions(), 3);
    assert_eq!(df.reduce("a", AggFunc::Sum).unwrap(), Value::Float(45.0));
}

/// Column `y = e` of `df`, computed into one array.
pub(crate) fn computed(df: &DataFrame, e: tessera::frame::Expr) -> ArrayRef {
    let out = df
        .with_column("y", e)
        .unwrap()
        .compute()
        .unwrap()
        .concat()
        .unwrap();
    out.column_by_name("y").unwrap().clone()
}

/// The values of a column of Arrow type `T` (checked), nulls as `None`.
fn primitive_values<T: arrow_array::ArrowPrimitiveType>(a: &ArrayRef) -> Vec<Option<T::Native>> {
    assert_eq!(a.data_type(), &T::DATA_TYPE);
    let y = a.as_primitive::<T>();
    (0..y.len())
        .map(|k| y.is_valid(k).then(|| y.value(k)))
        .collect()
}

/// Math functions and `between` against hand-computed NumPy/pandas values, on floats with
/// halves, zero, negatives and nulls, and on integers at their extremes.
#[test]
fn math_functions_and_between_follow_numpy() {
    let f: ArrayRef = Arc::new(Float64Array::from(vec![
        Some(2.5),
        Some(-1.5),
        Some(0.0),
        Some(4.0),
        Some(-1.0),
        None,
    ]));
    let i: ArrayRef = Arc::new(Int64Array::from(vec![
        Some(i64::MIN),
        Some(-3),
        Some(7),
        None,
        Some(0),
        Some(12),
    ]));
    let s: ArrayRef = Arc::new(StringArray::from(vec!["a"; 6]));
    let df =
        DataFrame::from_record_batch(batch(vec![("f", f), ("i", i), ("s", s)]), 2, None).unwrap();
    let floats = |e| primitive_values::<Float64Type>(&computed(&df, e));
    let ints = |e| primitive_values::<Int64Type>(&computed(&df, e));
    let same = |got: Vec<Option<f64>>, want: Vec<Option<f64>>| {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            match (g, w) {
                (Some(g), Some(w)) if w.is_nan() => assert!(g.is_nan(), "{got:?} vs {want:?}"),
                (Some(g), Some(w)) => assert!(g == w || close(*g, *w), "{got:?} vs {want:?}"),
                (None, None) => {}
                _ => panic!("{got:?} vs {want:?}"),
            }
        }
    };
    let nan = f64::NAN;
    same(
        floats(col("f").abs()),
        vec![Some(2.5), Some(1.5), Some(0.0), Some(4.0), Some(1.0), None],
    );
    same(
        floats(col("f").sqrt()),
        vec![
            Some(1.581_138_830_084_189_8),
            Some(nan),
            Some(0.0),
            Some(2.0),
            Some(nan),
            None,
        ],
    );
    same(
        floats(col("f").ln()),
        vec![
            Some(0.916_290_731_874_155),
            Some(nan),
            Some(f64::NEG_INFINITY),
            Some(1.386_294_361_119_890_6),
            Some(nan),
            None,
        ],
    );
    same(
        floats(col("f").exp()),
        vec![
            Some(12.182_493_960_703_473),
            Some(0.223_130_160_148_429_83),
            Some(1.0),
            Some(54.598_150_033_144_236),
            Some(0.367_879_441_171_442_33),
            None,
        ],
    );
    same(
        floats(col("f").floor()),
        vec![
            Some(2.0),
            Some(-2.0),
            Some(0.0),
            Some(4.0),
            Some(-1.0),
            None,
        ],
    );
    same(
        floats(col("f").ceil()),
        vec![
            Some(3.0),
            Some(-1.0),
            Some(0.0),
            Some(4.0),
            Some(-1.0),
            None,
        ],
    );
    // Halves to even, as np.round and Series.round().
    same(
        floats(col("f").round()),
        vec![
            Some(2.0),
            Some(-2.0),
            Some(0.0),
            Some(4.0),
            Some(-1.0),
            None,
        ],
    );
    // Integers: abs wraps at the minimum (NumPy), floor/round keep them; sqrt is float64.
    assert_eq!(
        ints(col("i").abs()),
        vec![Some(i64::MIN), Some(3), Some(7), None, Some(0), Some(12)]
    );
    assert_eq!(
        ints(col("i").round()),
        vec![Some(i64::MIN), Some(-3), Some(7), None, Some(0), Some(12)]
    );
    same(
        floats(col("i").sqrt()),
        vec![
            Some(nan),
            Some(nan),
            Some(7f64.sqrt()),
            None,
            Some(0.0),
            Some(12f64.sqrt()),
        ],
    );
    // between: both ends included; null stays null.
    let y = computed(&df, col("i").between(lit(-3i64), lit(7i64)));
    let y = y.as_boolean();
    let got: Vec<Option<bool>> = (0..y.len())
        .map(|k| y.is_valid(k).then(|| y.value(k)))
        .collect();
    assert_eq!(
        got,
        vec![
            Some(false),
            Some(true),
            Some(true),
            None,
            Some(true),
            Some(false)
        ]
    );
    // A string column is refused with the function's name and the type.
    let e = df
        .with_column("y", col("s").sqrt())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sqrt") && e.contains("needs an integer or float column, got Utf8"),
        "{e}"
    );
    assert_eq!(col("f").round().to_string(), "f.round()");
}

/// `is_in` as pandas' `isin`: NaN matches NaN, `-0.0` matches `0.0`, a null matches only a
/// null in the list (pandas on object columns: `Series(['a', None]).isin(['a', None])`),
/// a value that does not fit the column's type matches nothing, and the result is never
/// null. The same answers with one value and with many (the hash path has no size cut).
#[test]
fn is_in_follows_pandas() {
    let f: ArrayRef = Arc::new(Float64Array::from(vec![
        Some(1.0),
        Some(f64::NAN),
        Some(-0.0),
        Some(2.5),
        None,
    ]));
    let u: ArrayRef = Arc::new(arrow_array::UInt16Array::from(vec![
        Some(1),
        Some(2),
        Some(300),
        None,
        Some(7),
    ]));
    let s: ArrayRef = Arc::new(StringArray::from(vec![
        Some("a"),
        None,
        Some("b"),
        Some("a"),
        Some("c"),
    ]));
    let df =
        DataFrame::from_record_batch(batch(vec![("f", f), ("u", u), ("s", s)]), 2, None).unwrap();
    let flags = |e: tessera::frame::Expr| -> Vec<bool> {
        let y = computed(&df, e);
        let y = y.as_boolean();
        assert_eq!(y.null_count(), 0, "is_in is never null");
        (0..y.len()).map(|k| y.value(k)).collect()
    };
    use tessera::frame::Literal;
    assert_eq!(
        flags(col("f").is_in([Literal::Float(0.0), Literal::Float(f64::NAN)])),
        vec![false, true, true, false, false]
    );
    assert_eq!(
        flags(col("f").is_in([Literal::Null])),
        vec![false, false, false, false, true]
    );
    // 300 fits uint16; an int and a float in one list compare as float64.
    assert_eq!(
        flags(col("u").is_in([Literal::Int(300), Literal::Float(2.0)])),
        vec![false, true, true, false, false]
    );
    assert_eq!(
        flags(col("u").is_in([Literal::Int(70_000)])),
        vec![false; 5],
        "a value beyond uint16 matches nothing"
    );
    assert_eq!(
        flags(col("s").is_in(["a"])),
        vec![true, false, false, true, false]
    );
    assert_eq!(
        flags(col("s").is_in([Literal::from("a"), Literal::Null])),
        vec![true, true, false, true, false]
    );
    // Many values: the same lookups.
    let many: Vec<i64> = (1000..3000).chain([7]).collect();
    assert_eq!(
        flags(col("u").is_in(many)),
        vec![false, false, false, false, true]
    );
    // Types that cannot be compared are refused, naming the value.
    let e = df
        .with_column("y", col("s").is_in([1i64]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("is_in") && e.contains("value 1"), "{e}");
    assert_eq!(
        col("s").is_in(["a", "b"]).to_string(),
        "s.is_in([\"a\", \"b\"])"
    );
}

/// The math functions, `pow`, `clip`, `when`, `between`, `is_in` and the string functions
/// against pandas on random values (halves, negatives, zeros, NaN, padded and non-ASCII
/// strings, missing values), through `tests/scripts/frame_functions_pandas.py`. Runs when
/// `python3` (or `$PYTHON`) can import pandas; otherwise it says it was skipped.
#[test]
fn math_and_isin_match_pandas() {
    let Some(python) = crate::common::python_with("math_and_isin_match_pandas", "pandas") else {
        return;
    };
    let mut rng = Rng(41);
    let n = 400;
    let fs: Vec<f64> = (0..n)
        .map(|k| match k % 9 {
            0 => f64::NAN,
            1 => 0.0,
            2 => (rng.below(21) as f64 - 10.0) + 0.5,
            _ => (rng.float() - 0.4) * 50.0,
        })
        .collect();
    let is: Vec<i64> = (0..n).map(|_| rng.below(41) as i64 - 20).collect();
    // Strings with repeated syllables (a prefix, a suffix, `a` to replace), padding to
    // strip, non-ASCII letters, and missing values (never empty strings: CSV cannot tell).
    const SYLLABLES: [&str; 6] = ["ka", "lo", "Ä", "mé", "o", "Zu"];
    let ss: Vec<Option<String>> = (0..n)
        .map(|k| {
            (k % 7 != 3).then(|| {
                let mut w: String = (0..1 + rng.below(4))
                    .map(|_| SYLLABLES[rng.below(SYLLABLES.len() as u64) as usize])
                    .collect();
                if k % 5 == 0 {
                    w = format!("  {w} ");
                }
                w
            })
        })
        .collect();
    let mut text = String::from("f,i,s\n");
    for ((f, i), s) in fs.iter().zip(&is).zip(&ss) {
        let f = if f.is_nan() {
            String::new()
        } else {
            format!("{f:?}")
        };
        text.push_str(&format!("{f},{i},{}\n", s.as_deref().unwrap_or("")));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_functions_pandas.py"
    );
    let want = crate::common::python_json(&python, script, "pandas-fns", &[("in.csv", text)]);

    let f: ArrayRef = Arc::new(Float64Array::from(fs.clone()));
    let i: ArrayRef = Arc::new(Int64Array::from(is.clone()));
    let s: ArrayRef = Arc::new(StringArray::from(ss.clone()));
    let df =
        DataFrame::from_record_batch(batch(vec![("f", f), ("i", i), ("s", s)]), 3, None).unwrap();
    use tessera::frame::Literal;
    let cases: Vec<(&str, tessera::frame::Expr)> = vec![
        ("f.abs", col("f").abs()),
        ("f.sqrt", col("f").sqrt()),
        ("f.exp", col("f").exp()),
        ("f.ln", col("f").ln()),
        ("f.floor", col("f").floor()),
        ("f.ceil", col("f").ceil()),
        ("f.round", col("f").round()),
        ("i.abs", col("i").abs()),
        ("i.sqrt", col("i").sqrt()),
        ("i.between", col("i").between(lit(-3i64), lit(7i64))),
        ("i.isin", col("i").is_in([0i64, 7, 12, 1000])),
        (
            "f.isin",
            col("f").is_in([
                Literal::Float(0.0),
                Literal::Float(2.5),
                Literal::Float(f64::NAN),
            ]),
        ),
        ("f.pow", col("f").pow(2.0)),
        ("i.pow", col("i").pow(0.5)),
        ("f.clip", col("f").clip(-5.0, 5.0)),
        ("i.clip", col("i").clip(-3i64, 7i64)),
        (
            "i.when",
            when(col("i").gt(10i64))
                .then(100.5)
                .when(col("i").lt(-10i64))
                .then(-100i64)
                .otherwise(col("i")),
        ),
        ("s.starts_with", col("s").starts_with("ka")),
        ("s.ends_with", col("s").ends_with("o")),
        ("s.like", col("s").like("k%o")),
        ("s.lower", col("s").lower()),
        ("s.upper", col("s").upper()),
        ("s.strip", col("s").strip()),
        ("s.len", col("s").str_len()),
        ("s.replace", col("s").replace("a", "ä")),
        ("s.substring", col("s").substring(1, Some(2))),
        ("s.substring_end", col("s").substring(-2, None)),
        (
            "s.isin",
            col("s").is_in(["ka", "loÄ", "mé", "Zu", "a", "b", "c", "d", "e"]),
        ),
        ("s.isin_few", col("s").is_in(["ka", "lo"])),
        ("s.matches", col("s").matches("(ka|lo)+Ä")),
        ("s.matches_anchored", col("s").matches(r"^\s+\w")),
        ("s.extract", col("s").extract(r"(k\w)(\w*)o", 2)),
        ("s.split", col("s").split("a")),
        ("s.split_part", col("s").split_part("a", 1)),
        ("s.split_last", col("s").split_part("a", -1)),
    ];
    for (name, e) in cases {
        let y = &computed(&df, e);
        let want = want[name].as_array().unwrap();
        assert_eq!(want.len(), n, "{name}");
        for (k, w) in want.iter().enumerate() {
            let ok = match w {
                serde_json::Value::Null => y.is_null(k),
                serde_json::Value::String(s) if s.starts_with("str:") => {
                    y.is_valid(k) && y.as_string::<i32>().value(k) == &s[4..]
                }
                serde_json::Value::Bool(b) => y.is_valid(k) && y.as_boolean().value(k) == *b,
                serde_json::Value::Array(pieces) => {
                    y.is_valid(k) && {
                        let got = y.as_list::<i32>().value(k);
                        let got = got.as_string::<i32>();
                        got.len() == pieces.len()
                            && pieces
                                .iter()
                                .enumerate()
                                .all(|(j, p)| p.as_str() == Some(&format!("str:{}", got.value(j))))
                    }
                }
                serde_json::Value::String(s) if s == "nan" => {
                    y.is_valid(k) && value_f64(y, k).is_nan()
                }
                serde_json::Value::String(s) => {
                    let w = if s == "inf" {
                        f64::INFINITY
                    } else {
                        f64::NEG_INFINITY
                    };
                    y.is_valid(k) && value_f64(y, k) == w
                }
                w => {
                    let w = w.as_f64().unwrap();
                    y.is_valid(k) && {
                        let g = value_f64(y, k);
                        g == w || close(g, w)
                    }
                }
            };
            assert!(
                ok,
                "{name} row {k} (f = {:?}, i = {}, s = {:?}): pandas {w}, tessera {:?}",
                fs[k],
                is[k],
                ss[k],
                y.slice(k, 1)
            );
        }
    }
}

/// Row `k` of a float64 or int64 column as `f64`.
fn value_f64(a: &ArrayRef, k: usize) -> f64 {
    match a.data_type() {
        arrow_schema::DataType::Float64 => a.as_primitive::<Float64Type>().value(k),
        arrow_schema::DataType::Int64 => a.as_primitive::<Int64Type>().value(k) as f64,
        other => panic!("unexpected type {other}"),
    }
}

/// `when`, `coalesce`, `clip`, `pow` and the string functions by hand, over three
/// partitions, including nulls, NaN and the typing rules.
#[test]
fn conditional_and_string_functions_by_hand() {
    use tessera::frame::{coalesce, when};
    let a: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(-7), Some(12)]));
    let f: ArrayRef = Arc::new(Float64Array::from(vec![
        Some(0.5),
        Some(f64::NAN),
        None,
        Some(-3.0),
    ]));
    let s: ArrayRef = Arc::new(StringArray::from(vec![
        Some("  Käse "),
        None,
        Some("kilo"),
        Some("ab"),
    ]));
    let df =
        DataFrame::from_record_batch(batch(vec![("a", a), ("f", f), ("s", s)]), 3, None).unwrap();
    let y = computed(
        &df,
        when(col("a").gt(5i64))
            .then(lit("big"))
            .when(col("a").is_null())
            .then(lit("none"))
            .otherwise(lit("small")),
    );
    let got: Vec<&str> = (0..4).map(|k| y.as_string::<i32>().value(k)).collect();
    assert_eq!(got, ["small", "none", "small", "big"]);
    // Every branch value takes the common type: an integer column with a float literal is
    // Float64. NaN orders above every number (as in Polars and DuckDB), so NaN > 0 holds.
    let y = computed(&df, when(col("f").gt(0.0)).then(col("a")).otherwise(2.5));
    assert_eq!(y.data_type(), &arrow_schema::DataType::Float64);
    let y = y.as_primitive::<Float64Type>();
    assert_eq!(
        (y.value(0), y.is_null(1), y.value(2), y.value(3)),
        (1.0, true, 2.5, 2.5)
    );
    // The first non-null, row by row.
    let y = computed(
        &df,
        coalesce([
            col("f"),
            col("a").cast(arrow_schema::DataType::Float64),
            lit(0.0),
        ]),
    );
    let y = y.as_primitive::<Float64Type>();
    assert!(y.value(1).is_nan(), "NaN is a value, not a null");
    assert_eq!((y.value(0), y.value(2), y.value(3)), (0.5, -7.0, -3.0));
    // clip keeps null and NaN; pow is Float64.
    let y = computed(&df, col("f").clip(-1.0, 0.25));
    let y = y.as_primitive::<Float64Type>();
    assert_eq!((y.value(0), y.value(3)), (0.25, -1.0));
    assert!(y.value(1).is_nan() && y.is_null(2));
    let y = computed(&df, col("a").pow(2));
    assert_eq!(y.as_primitive::<Float64Type>().value(3), 144.0);
    // Strings count characters, not bytes.
    let y = computed(&df, col("s").strip().str_len());
    let y = y.as_primitive::<Int64Type>();
    assert_eq!((y.value(0), y.is_null(1), y.value(2)), (4, true, 4));
    let y = computed(&df, col("s").strip().upper().substring(-3, Some(2)));
    assert_eq!(y.as_string::<i32>().value(0), "ÄS");
    let y = computed(&df, col("s").like("k_l%"));
    assert!(y.as_boolean().value(2) && !y.as_boolean().value(3));
    // Wrong types are refused with the expression named.
    for (e, says) in [
        (when(col("a")).then(1i64).otherwise(0i64), "must be Boolean"),
        (col("a").upper(), "needs a string column"),
        (col("s").clip(0i64, 1i64), "no common type"),
        (col("s").pow(2), "needs numbers"),
    ] {
        let err = df.with_column("x", e).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
    }
}

/// Exact medians per group across partitions: odd and even counts, NaN and nulls skipped
/// (as pandas does), a group with no values.
#[test]
fn groupby_median_is_exact_across_partitions() {
    let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 1, 2, 1, 3, 2, 1, 3]));
    let v: ArrayRef = Arc::new(Float64Array::from(vec![
        Some(5.0),
        Some(1.0),
        Some(-2.0),
        Some(f64::NAN),
        Some(9.0),
        None,
        Some(4.0),
        Some(3.0),
        Some(f64::NAN),
    ]));
    for parts in [1, 3, 9] {
        let df = DataFrame::from_record_batch(
            batch(vec![("k", k.clone()), ("v", v.clone())]),
            parts,
            None,
        )
        .unwrap();
        let out = df
            .groupby(&["k"])
            .unwrap()
            .median("v")
            .unwrap()
            .compute()
            .unwrap()
            .concat()
            .unwrap();
        let m = out.column(1).as_primitive::<Float64Type>();
        // k=1: [5, -2, 9, 3] -> (3 + 5) / 2; k=2: [1, 4] (NaN skipped) -> 2.5; k=3: none.
        assert_eq!(m.value(0), 4.0, "{parts} partitions");
        assert_eq!(m.value(1), 2.5, "{parts} partitions");
        assert!(m.is_null(2), "{parts} partitions");
        let whole = df.median().unwrap().compute().unwrap().concat().unwrap();
        let all = whole
            .column_by_name("v")
            .unwrap()
            .as_primitive::<Float64Type>();
        // [5, 1, -2, 9, 4, 3] -> (3 + 4) / 2
        assert_eq!(all.value(0), 3.5);
    }
}

/// Top-k (`nlargest`, `nsmallest`, a head of a sort) equals the full sort's first rows —
/// ties in row order, nulls last — without a full sort, on every partitioning.
#[test]
fn top_k_equals_the_head_of_a_full_sort() {
    let mut rng = Rng(7);
    let n = 300;
    let k: ArrayRef = Arc::new(Int64Array::from_iter(
        (0..n).map(|i| (i % 11 != 5).then(|| rng.below(20) as i64)),
    ));
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
    for parts in [1, 4, 17] {
        let df = DataFrame::from_record_batch(
            batch(vec![("k", k.clone()), ("id", id.clone())]),
            parts,
            None,
        )
        .unwrap();
        for (descending, top) in [
            (true, df.nlargest(25, &["k"]).unwrap()),
            (false, df.nsmallest(25, &["k"]).unwrap()),
        ] {
            let explain = top.explain().unwrap();
            assert!(explain.contains("top 25 by [k"), "{explain}");
            assert!(!explain.contains("sample sort"), "{explain}");
            let got = top.compute().unwrap().concat().unwrap();
            let full = df
                .sort_values(&["k"], &[!descending])
                .unwrap()
                .compute()
                .unwrap()
                .concat()
                .unwrap()
                .slice(0, 25);
            assert_eq!(got, full, "{parts} partitions, descending {descending}");
        }
        // `head` of a sort is rewritten to the same top-k.
        let sorted = df.sort_values(&["k", "id"], &[true, false]).unwrap();
        let head = sorted.head(10).unwrap().concat().unwrap();
        let full = sorted.compute().unwrap().concat().unwrap().slice(0, 10);
        assert_eq!(head, full, "{parts} partitions");
    }
    let e = DataFrame::from_record_batch(batch(vec![("k", k.clone())]), 2, None)
        .unwrap()
        .nlargest(3, &["nope"])
        .unwrap_err();
    assert!(e.to_string().contains("no column 'nope'"), "{e}");
}

/// `value_counts`: most frequent first, ties by value, nulls not counted.
#[test]
fn value_counts_by_hand() {
    let s: ArrayRef = Arc::new(StringArray::from(vec![
        Some("b"),
        Some("a"),
        None,
        Some("b"),
        Some("c"),
        Some("a"),
        Some("b"),
    ]));
    let df = DataFrame::from_record_batch(batch(vec![("s", s)]), 3, None).unwrap();
    let out = df
        .value_counts("s")
        .unwrap()
        .compute()
        .unwrap()
        .concat()
        .unwrap();
    let names: Vec<&str> = (0..out.num_rows())
        .map(|r| out.column(0).as_string::<i32>().value(r))
        .collect();
    let counts = out.column(1).as_primitive::<Int64Type>().values().to_vec();
    assert_eq!(names, ["b", "a", "c"]);
    assert_eq!(counts, [3, 2, 1]);
}

/// Semi and anti joins against a nested-loop reference on random keys with nulls and
/// duplicates on both sides, differently named keys, and a right key named like a left
/// column: integer keys of a small range (a dense table) and of a wide one (a hash map),
/// string keys (encoded rows), under every join strategy; a left side larger than the
/// right, and one smaller (whose keys are hashed and looked up by the right side's rows).
#[test]
fn semi_and_anti_joins_match_a_nested_loop() {
    for (n, m) in [(120, 40), (30, 400)] {
        semi_and_anti_joins_of_sizes(n, m);
    }
    let left = batch(vec![(
        "a",
        Arc::new(Int64Array::from(vec![Some(1), None, Some(2)])) as ArrayRef,
    )]);
    let l = DataFrame::from_record_batch(left, 2, None).unwrap();
    let e = l.semi_join(&l, &["a", "a"], &["a"]).unwrap_err();
    assert!(e.to_string().contains("same positive number"), "{e}");
}

/// [`semi_and_anti_joins_match_a_nested_loop`] with `n` left rows and `m` right ones.
fn semi_and_anti_joins_of_sizes(n: usize, m: usize) {
    use tessera::frame::{JoinStrategy, JoinType};
    let mut rng = Rng(3);
    let lk: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 13 != 0).then(|| rng.below(30) as i64))
        .collect();
    let rk: Vec<Option<i64>> = (0..m)
        .map(|i| (i % 9 != 0).then(|| rng.below(30) as i64))
        .collect();
    let matches = |k: &Option<i64>| k.is_some() && rk.contains(k);
    let want_semi: Vec<i64> = (0..n as i64)
        .filter(|&i| matches(&lk[i as usize]))
        .collect();
    let want_anti: Vec<i64> = (0..n as i64)
        .filter(|&i| !matches(&lk[i as usize]))
        .collect();
    let keyed = |keys: &[Option<i64>], how: usize| -> ArrayRef {
        match how {
            0 => Arc::new(Int64Array::from(keys.to_vec())),
            1 => Arc::new(Int64Array::from(
                keys.iter().map(|k| k.map(|k| k << 40)).collect::<Vec<_>>(),
            )),
            _ => Arc::new(StringArray::from(
                keys.iter()
                    .map(|k| k.map(|k| format!("key {k}")))
                    .collect::<Vec<_>>(),
            )),
        }
    };
    for kind in 0..3 {
        let left = batch(vec![
            ("a", keyed(&lk, kind)),
            (
                "b",
                Arc::new(Int64Array::from_iter_values(0..n as i64)) as ArrayRef,
            ),
        ]);
        let right = batch(vec![
            ("b", keyed(&rk, kind)),
            (
                "z",
                Arc::new(Float64Array::from_iter_values((0..m as i32).map(f64::from))) as ArrayRef,
            ),
        ]);
        for parts in [1, 5] {
            let l = DataFrame::from_record_batch(left.clone(), parts, None).unwrap();
            let r = DataFrame::from_record_batch(right.clone(), parts, None).unwrap();
            let rows = |df: DataFrame| -> Vec<i64> {
                let out = df.compute().unwrap().concat().unwrap();
                assert_eq!(out.schema().fields().len(), 2, "only the left columns");
                assert_eq!(out.schema().field(1).name(), "b");
                let mut ids = out.column(1).as_primitive::<Int64Type>().values().to_vec();
                ids.sort_unstable();
                ids
            };
            let what = format!("{n} x {m} rows, key kind {kind}, {parts} partitions");
            assert_eq!(
                rows(l.semi_join(&r, &["a"], &["b"]).unwrap()),
                want_semi,
                "{what}"
            );
            assert_eq!(
                rows(l.anti_join(&r, &["a"], &["b"]).unwrap()),
                want_anti,
                "{what}"
            );
            // Sorted on the keys, so that `SortedMerge` merges aligned ranges.
            let (ls, rs) = (
                l.sort_values(&["a"], &[true]).unwrap(),
                r.sort_values(&["b"], &[true]).unwrap(),
            );
            for strategy in [
                JoinStrategy::Broadcast,
                JoinStrategy::Shuffle,
                JoinStrategy::SortedMerge,
            ] {
                for (how, want) in [(JoinType::Semi, &want_semi), (JoinType::Anti, &want_anti)] {
                    let got = ls.merge_on(&rs, &["a"], &["b"], how, strategy).unwrap();
                    assert_eq!(&rows(got), want, "{what}, {how:?}, {strategy:?}");
                }
            }
        }
    }
}

/// `quarter` and `day_of_year` of dates and timestamps, by hand: leap days, year ends.
#[test]
fn quarter_and_day_of_year_by_hand() {
    use arrow_array::{Date32Array, TimestampMicrosecondArray};
    // 2024-02-29, 2023-12-31, 2024-12-31, 2021-07-01 as days since the epoch.
    let days = [19782, 19722, 20088, 18809];
    let d: ArrayRef = Arc::new(Date32Array::from(days.to_vec()));
    let t: ArrayRef = Arc::new(TimestampMicrosecondArray::from(
        days.iter()
            .map(|&d| i64::from(d) * 86_400_000_000 + 43_200_000_000)
            .collect::<Vec<_>>(),
    ));
    let df = DataFrame::from_record_batch(batch(vec![("d", d), ("t", t)]), 2, None).unwrap();
    for c in ["d", "t"] {
        let q = computed(&df, col(c).quarter());
        let doy = computed(&df, col(c).day_of_year());
        let q: Vec<i32> = q
            .as_primitive::<arrow_array::types::Int32Type>()
            .values()
            .to_vec();
        let doy: Vec<i32> = doy
            .as_primitive::<arrow_array::types::Int32Type>()
            .values()
            .to_vec();
        assert_eq!(q, [1, 4, 4, 3], "{c}");
        assert_eq!(doy, [60, 365, 366, 182], "{c}");
    }
}

/// Aggregations over expressions and conditional aggregation (TPC-H Q1's
/// `sum(price * (1 - discount))`), grouped and whole-frame, against a loop.
#[test]
fn aggregations_over_expressions_match_a_loop() {
    use tessera::frame::when;
    let mut rng = Rng(11);
    let n = 200;
    let flag: Vec<i64> = (0..n).map(|_| rng.below(3) as i64).collect();
    let price: Vec<f64> = (0..n).map(|_| (rng.below(1000) as f64) / 4.0).collect();
    let disc: Vec<f64> = (0..n).map(|_| rng.below(10) as f64 / 100.0).collect();
    let qty: Vec<i64> = (0..n).map(|_| rng.below(50) as i64).collect();
    let df = DataFrame::from_record_batch(
        batch(vec![
            ("flag", Arc::new(Int64Array::from(flag.clone())) as ArrayRef),
            (
                "price",
                Arc::new(Float64Array::from(price.clone())) as ArrayRef,
            ),
            (
                "disc",
                Arc::new(Float64Array::from(disc.clone())) as ArrayRef,
            ),
            ("qty", Arc::new(Int64Array::from(qty.clone())) as ArrayRef),
        ]),
        4,
        None,
    )
    .unwrap();
    let aggs = [
        (
            col("price") * (lit(1.0) - col("disc")),
            AggFunc::Sum,
            "revenue",
        ),
        (
            when(col("qty").gt(30i64)).then(1i64).otherwise(0i64),
            AggFunc::Sum,
            "big",
        ),
        (col("qty"), AggFunc::Mean, "avg_qty"),
    ];
    let out = df.groupby(&["flag"]).unwrap().agg_exprs(&aggs).unwrap();
    assert_eq!(out.columns(), ["flag", "revenue", "big", "avg_qty"]);
    let out = out.compute().unwrap().concat().unwrap();
    for g in 0..3i64 {
        let rows: Vec<usize> = (0..n).filter(|&r| flag[r] == g).collect();
        let revenue: f64 = rows.iter().map(|&r| price[r] * (1.0 - disc[r])).sum();
        let big = rows.iter().filter(|&&r| qty[r] > 30).count() as i64;
        let avg = rows.iter().map(|&r| qty[r] as f64).sum::<f64>() / rows.len() as f64;
        let r = g as usize;
        assert!(
            close(
                out.column(1).as_primitive::<Float64Type>().value(r),
                revenue
            ),
            "group {g}"
        );
        assert_eq!(
            out.column(2).as_primitive::<Int64Type>().value(r),
            big,
            "group {g}"
        );
        assert!(
            close(out.column(3).as_primitive::<Float64Type>().value(r), avg),
            "group {g}"
        );
    }
    let whole = df
        .agg_exprs(&aggs[..2])
        .unwrap()
        .compute()
        .unwrap()
        .concat()
        .unwrap();
    let big = qty.iter().filter(|&&q| q > 30).count() as i64;
    assert_eq!(whole.column(1).as_primitive::<Int64Type>().value(0), big);
    let e = df
        .groupby(&["flag"])
        .unwrap()
        .agg_exprs(&[(col("nope") * 2, AggFunc::Sum, "x")])
        .unwrap_err();
    assert!(e.to_string().contains("no column 'nope'"), "{e}");
}

/// `tail(n)` is the last `n` rows in order, on every partitioning, past the start and for
/// nothing.
#[test]
fn tail_is_the_last_rows_in_order() {
    let n = 50usize;
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
    for parts in [1, 3, 7] {
        let df =
            DataFrame::from_record_batch(batch(vec![("id", id.clone())]), parts, None).unwrap();
        for k in [0usize, 1, 9, 17, 50, 80] {
            let got = df.tail(k).unwrap().concat().unwrap();
            let ids = got.column(0).as_primitive::<Int64Type>().values().to_vec();
            let want: Vec<i64> = (n.saturating_sub(k) as i64..n as i64).collect();
            assert_eq!(ids, want, "tail({k}) of {parts} partitions");
        }
        let sorted = df
            .sort_values(&["id"], &[false])
            .unwrap()
            .tail(3)
            .unwrap()
            .concat()
            .unwrap();
        assert_eq!(
            sorted
                .column(0)
                .as_primitive::<Int64Type>()
                .values()
                .to_vec(),
            [2, 1, 0]
        );
    }
}

/// Strings as Polars, pyarrow and DuckDB write them (`Utf8View`, `LargeUtf8`, a
/// dictionary) are one logical string type: literals, `isin`, string functions and joins
/// against a plain `Utf8` frame work across them, on every partitioning.
#[test]
fn every_arrow_string_type_filters_and_joins_as_text() {
    use arrow_array::{DictionaryArray, LargeStringArray, StringViewArray};
    let words = ["apple", "pear", "apple", "fig", "pear", "apple", "kiwi"];
    let view = Arc::new(StringViewArray::from(words.to_vec())) as ArrayRef;
    let large = Arc::new(LargeStringArray::from(words.to_vec())) as ArrayRef;
    let dict: DictionaryArray<arrow_array::types::Int32Type> = words.iter().copied().collect();
    let v = Arc::new(Int64Array::from((0..7).collect::<Vec<i64>>())) as ArrayRef;
    let prices = DataFrame::from_columns(
        vec![
            (
                "fruit",
                Arc::new(StringArray::from(vec!["apple", "fig", "plum"])) as ArrayRef,
            ),
            (
                "price",
                Arc::new(Float64Array::from(vec![1.5, 4.0, 2.0])) as ArrayRef,
            ),
        ],
        2,
    )
    .unwrap();
    for parts in [1, 3] {
        let df = DataFrame::from_columns(
            vec![
                ("view", view.clone()),
                ("large", large.clone()),
                ("dict", Arc::new(dict.clone()) as ArrayRef),
                ("v", v.clone()),
            ],
            parts,
        )
        .unwrap();
        for c in ["view", "large", "dict"] {
            let rows = |f: DataFrame| -> Vec<i64> {
                let got = f.compute().unwrap();
                let mut out: Vec<i64> = values(&got, "v")
                    .into_iter()
                    .map(|x| match x {
                        Value::Int(i) => i,
                        other => panic!("{other:?}"),
                    })
                    .collect();
                out.sort();
                out
            };
            assert_eq!(
                rows(df.filter(col(c).eq("apple")).unwrap()),
                vec![0, 2, 5],
                "{c} =="
            );
            assert_eq!(
                rows(df.filter(col(c).gt("kiwi")).unwrap()),
                vec![1, 4],
                "{c} >"
            );
            assert_eq!(
                rows(df.filter(col(c).is_in(["fig", "kiwi"])).unwrap()),
                vec![3, 6],
                "{c} isin"
            );
            assert_eq!(
                rows(df.filter(col(c).starts_with("p")).unwrap()),
                vec![1, 4],
                "{c} starts_with"
            );
            assert_eq!(
                rows(df.filter(col(c).eq(col("view"))).unwrap()),
                (0..7).collect::<Vec<_>>(),
                "{c} == view"
            );
            // A join against a Utf8 frame: 3 apples and a fig have prices.
            let joined = df
                .merge_on(
                    &prices,
                    &[c],
                    &["fruit"],
                    JoinType::Inner,
                    JoinStrategy::Shuffle,
                )
                .unwrap()
                .compute()
                .unwrap();
            let mut paid: Vec<(i64, f64)> = values(&joined, "v")
                .into_iter()
                .zip(values(&joined, "price"))
                .map(|(a, b)| match (a, b) {
                    (Value::Int(a), Value::Float(b)) => (a, b),
                    other => panic!("{other:?}"),
                })
                .collect();
            paid.sort_by(|a, b| a.partial_cmp(b).unwrap());
            assert_eq!(
                paid,
                vec![(0, 1.5), (2, 1.5), (3, 4.0), (5, 1.5)],
                "{c} join"
            );
            let semi = df.semi_join(&prices, &[c], &["fruit"]).unwrap();
            assert_eq!(rows(semi), vec![0, 2, 3, 5], "{c} semi join");
        }
        let upper = df
            .with_column("u", col("large").upper())
            .unwrap()
            .compute()
            .unwrap();
        assert_eq!(upper.value("u", 1).unwrap(), Value::Str("PEAR".into()));
    }
}

/// Timestamps in named time zones (as pandas and pyarrow write them): the parts are those
/// of the local time.
#[test]
fn timestamps_in_named_time_zones_give_local_parts() {
    use arrow_array::TimestampMicrosecondArray;
    // 2024-01-15 23:30 UTC and 2024-07-01 12:00 UTC.
    let micros = vec![1_705_361_400_000_000i64, 1_719_835_200_000_000];
    for (tz, hours, days) in [
        ("UTC", vec![23, 12], vec![15, 1]),
        // Paris is UTC+1 in January (the 16th has begun) and UTC+2 in July.
        ("Europe/Paris", vec![0, 14], vec![16, 1]),
        ("+05:30", vec![5, 17], vec![16, 1]),
    ] {
        let ts = TimestampMicrosecondArray::from(micros.clone()).with_timezone(tz);
        let df = DataFrame::from_columns(vec![("t", Arc::new(ts) as ArrayRef)], 1).unwrap();
        let got = df
            .with_column("h", col("t").hour())
            .unwrap()
            .with_column("d", col("t").day())
            .unwrap()
            .compute()
            .unwrap();
        let ints = |c: &str| -> Vec<i64> {
            values(&got, c)
                .into_iter()
                .map(|v| match v {
                    Value::Int(i) => i,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(ints("h"), hours, "{tz}");
        assert_eq!(ints("d"), days, "{tz}");
    }
}

/// `dropna` and `fillna` as pandas does them (NaN in a float column is missing, like
/// null), hand-computed, on one and three partitions.
#[test]
fn dropna_and_fillna_treat_nan_and_null_as_missing() {
    use tessera::frame::{DropHow, Literal};
    let x = Arc::new(Float64Array::from(vec![
        Some(1.0),
        Some(f64::NAN),
        None,
        Some(4.0),
        None,
        Some(6.0),
    ])) as ArrayRef;
    let k = Arc::new(Int64Array::from(vec![
        Some(10),
        Some(20),
        None,
        None,
        None,
        Some(60),
    ])) as ArrayRef;
    let s = Arc::new(StringArray::from(vec![
        Some("a"),
        None,
        Some("c"),
        Some("d"),
        None,
        Some("f"),
    ])) as ArrayRef;
    for parts in [1, 3] {
        let df = DataFrame::from_columns(
            vec![("x", x.clone()), ("k", k.clone()), ("s", s.clone())],
            parts,
        )
        .unwrap();
        let strings = |f: &DataFrame, c: &str| -> Vec<String> {
            values(&f.compute().unwrap(), c)
                .into_iter()
                .map(|v| v.to_string())
                .collect()
        };
        // Rows 0 and 5 have all three.
        assert_eq!(
            strings(&df.dropna(&[], DropHow::Any).unwrap(), "s"),
            ["a", "f"]
        );
        // Row 4 has none of the three; row 1's x is NaN, so it has k only.
        assert_eq!(
            strings(&df.dropna(&[], DropHow::All).unwrap(), "k").len(),
            5,
            "parts={parts}"
        );
        assert_eq!(
            strings(&df.dropna(&["x"], DropHow::Any).unwrap(), "x"),
            ["1", "4", "6"]
        );
        assert_eq!(
            strings(&df.dropna(&["x", "s"], DropHow::All).unwrap(), "k").len(),
            4,
            "rows 0, 2, 3, 5"
        );
        let filled = df
            .fillna(&[
                ("x", Literal::Float(-1.0)),
                ("k", Literal::Int(0)),
                ("s", Literal::Str("?".into())),
            ])
            .unwrap();
        assert_eq!(strings(&filled, "x"), ["1", "-1", "-1", "4", "-1", "6"]);
        assert_eq!(strings(&filled, "k"), ["10", "20", "0", "0", "0", "60"]);
        assert_eq!(strings(&filled, "s"), ["a", "?", "c", "d", "?", "f"]);
        assert_eq!(filled.schema(), df.schema(), "types kept");
        let e = df.dropna(&["nope"], DropHow::Any).unwrap_err().to_string();
        assert!(
            e.contains("no column 'nope'") && e.contains("x, k, s"),
            "{e}"
        );
        let e = df
            .fillna(&[("k", Literal::Str("zero".into()))])
            .and_then(|f| f.compute().map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("Int64") && e.contains("Utf8"), "{e}");
    }
}

/// `concat` of a CSV frame and frames of other Arrow types: rows in order, types met
/// (Utf8View and Utf8 as Utf8, Int32 and Float64 as Float64), and refusals that name the
/// column.
#[test]
fn concat_meets_string_and_number_types_and_keeps_row_order() {
    use arrow_array::{Int32Array, StringViewArray};
    let dir = std::env::temp_dir().join(format!("tessera-concat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("a.csv");
    std::fs::write(&csv, "name,n\nada,1\nbob,2\ncy,3\n").unwrap();
    let a = tessera::frame::read_csv(csv.to_str().unwrap(), Default::default()).unwrap();
    let b = DataFrame::from_columns(
        vec![
            (
                "n",
                Arc::new(Float64Array::from(vec![4.5, 5.5])) as ArrayRef,
            ),
            (
                "name",
                Arc::new(StringViewArray::from(vec!["dee", "eve"])) as ArrayRef,
            ),
        ],
        2,
    )
    .unwrap();
    let c = DataFrame::from_columns(
        vec![
            ("name", Arc::new(StringArray::from(vec!["fay"])) as ArrayRef),
            ("n", Arc::new(Int32Array::from(vec![6])) as ArrayRef),
        ],
        1,
    )
    .unwrap();
    let all = DataFrame::concat(&[a.clone(), b.clone(), c.clone()]).unwrap();
    assert_eq!(all.columns(), vec!["name", "n"]);
    assert_eq!(all.npartitions(), a.npartitions() + 3);
    let got = all.compute().unwrap();
    let names: Vec<String> = values(&got, "name").iter().map(|v| v.to_string()).collect();
    assert_eq!(names, ["ada", "bob", "cy", "dee", "eve", "fay"]);
    let ns: Vec<String> = values(&got, "n").iter().map(|v| v.to_string()).collect();
    assert_eq!(ns, ["1", "2", "3", "4.5", "5.5", "6"]);
    assert_eq!(
        got.schema.field_with_name("n").unwrap().data_type(),
        &arrow_schema::DataType::Float64
    );
    // Plans over the concat: a filter and a groupby see every input's rows.
    let big = all.filter(col("n").gt(2.5)).unwrap().len().unwrap();
    assert_eq!(big, 4);
    assert!(all.explain().unwrap().contains("concat of 3 frames"));

    let e = DataFrame::concat(&[a.clone(), a.select(&["name"]).unwrap()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("lacks [\"n\"]"), "{e}");
    let bad = a.with_column("n", col("name")).unwrap();
    let e = DataFrame::concat(&[a, bad]).unwrap_err().to_string();
    assert!(
        e.contains("column 'n' is Int64 before frame 1 and Utf8"),
        "{e}"
    );
    assert!(DataFrame::concat(&[]).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Filters over an inner join move below it: a conjunct of one side to that side, and
/// from a disjunction over both sides, what each arm says of one side (TPC-H Q19's
/// shape). The answer is the unoptimized plan's and the hand-computed one, and
/// `explain()` shows the filters under the join.
#[test]
fn filters_over_an_inner_join_are_evaluated_below_it() {
    let n = 2_000i64;
    let left = DataFrame::from_columns(
        vec![
            (
                "k",
                Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
            ),
            (
                "a",
                Arc::new(Int64Array::from_iter_values((0..n).map(|k| k % 7))) as ArrayRef,
            ),
        ],
        3,
    )
    .unwrap();
    let right = DataFrame::from_columns(
        vec![
            (
                "k2",
                Arc::new(Int64Array::from_iter_values((0..n).rev())) as ArrayRef,
            ),
            (
                "b",
                Arc::new(Int64Array::from_iter_values((0..n).rev().map(|k| k % 5))) as ArrayRef,
            ),
        ],
        4,
    )
    .unwrap();
    let arm = |a: i64, b: i64| col("a").eq(lit(a)).and(col("b").eq(lit(b)));
    let query = left
        .merge_on(&right, &["k"], &["k2"], JoinType::Inner, JoinStrategy::Auto)
        .unwrap()
        .filter(col("k").lt(lit(1_500i64)).and(arm(3, 1).or(arm(4, 2))))
        .unwrap()
        .sort_values(&["k"], &[true])
        .unwrap();
    let keys = |c: &Computed| -> Vec<i64> {
        (0..c.num_rows())
            .map(|r| match c.value("k", r).unwrap() {
                Value::Int(k) => k,
                v => panic!("k is {v:?}"),
            })
            .collect()
    };
    let want: Vec<i64> = (0..1_500)
        .filter(|k| (k % 7 == 3 && k % 5 == 1) || (k % 7 == 4 && k % 5 == 2))
        .collect();
    assert!(want.len() > 50);
    assert_eq!(keys(&query.compute().unwrap()), want);
    let plain = {
        let _g = tessera::config::set(&[("optimize", "false")]).unwrap();
        query.compute().unwrap()
    };
    assert_eq!(keys(&plain), want, "the unoptimized plan");
    let plan = query.explain().unwrap();
    let join_at = plan.find("join").expect("a join in the plan");
    let below = &plan[join_at..];
    for pushed in [
        "filter ((k < 1500) & ((a == 3) | (a == 4)))",
        "filter ((b == 1) | (b == 2))",
    ] {
        assert!(
            below.contains(pushed),
            "`{pushed}` should be under the join:\n{plan}"
        );
    }
}

/// A bad regular expression, a missing capture group or an empty separator is a plan-time
/// error naming it; a match on a dictionary (categorical) column works as on text.
#[test]
fn regex_arguments_are_checked_when_the_plan_is_built() {
    let s: ArrayRef = Arc::new(StringArray::from(vec![Some("a-1"), None, Some("b-22")]));
    let df = DataFrame::from_record_batch(batch(vec![("s", s)]), 2, None).unwrap();
    let err = |e: tessera::frame::Expr| df.with_column("y", e).unwrap_err().to_string();
    let e = err(col("s").matches("(unclosed"));
    assert!(e.contains("\"(unclosed\"") && e.contains("invalid"), "{e}");
    let e = err(col("s").extract(r"(\w)-(\d+)", 3));
    assert!(
        e.contains("has 2 capture group(s); group 3 does not exist"),
        "{e}"
    );
    let e = err(col("s").split_part("", 0));
    assert!(e.contains("separator is empty"), "{e}");
    let dict: ArrayRef = Arc::new(
        [Some("a-1"), None, Some("b-22")]
            .into_iter()
            .collect::<arrow_array::DictionaryArray<arrow_array::types::Int32Type>>(),
    );
    let df = DataFrame::from_record_batch(batch(vec![("s", dict)]), 2, None).unwrap();
    let y = computed(&df, col("s").extract(r"-(\d+)$", 1).str_len());
    assert_eq!(primitive_values::<Int64Type>(&y), [Some(1), None, Some(2)]);
    // Membership on a dictionary is decided on its values; a null key matches only a
    // null among the values.
    let y = computed(&df, col("s").is_in(["b-22", "x"]));
    let got: Vec<bool> = (0..3).map(|k| y.as_boolean().value(k)).collect();
    assert_eq!(got, [false, false, true]);
    let y = computed(
        &df,
        col("s").is_in([
            tessera::frame::Literal::Null,
            tessera::frame::Literal::Str("a-1".into()),
        ]),
    );
    let got: Vec<bool> = (0..3).map(|k| y.as_boolean().value(k)).collect();
    assert_eq!(got, [true, true, false]);
}

/// `nunique` of integer and date columns per group over several partitions (the distinct
/// values are told apart by value, without row encoding), with nulls skipped.
#[test]
fn nunique_of_integers_and_dates_per_group() {
    let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 2, 1, 2, 2, 1]));
    let v: ArrayRef = Arc::new(Int64Array::from(vec![
        Some(7),
        Some(7),
        Some(-3),
        None,
        Some(4),
        Some(-3),
        Some(8),
    ]));
    let d: ArrayRef = Arc::new(arrow_array::Date32Array::from(vec![0, 1, 0, 1, 0, 0, 2]));
    let df =
        DataFrame::from_record_batch(batch(vec![("k", k), ("v", v), ("d", d)]), 3, None).unwrap();
    let g = df
        .groupby(&["k"])
        .unwrap()
        .agg(&[("v", AggFunc::NUnique), ("d", AggFunc::NUnique)])
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(g.value("v", 0).unwrap(), Value::Int(2));
    assert_eq!(g.value("v", 1).unwrap(), Value::Int(2));
    assert_eq!(g.value("d", 0).unwrap(), Value::Int(3));
    assert_eq!(g.value("d", 1).unwrap(), Value::Int(1));
}

/// Rows of a computed frame as sorted tuples of its integer columns (order-free
/// comparison of shuffled outputs).
fn sorted_int_rows(c: &Computed, columns: &[&str]) -> Vec<Vec<Option<i64>>> {
    let cells: Vec<Vec<Option<i64>>> = columns.iter().map(|k| int_cells(c, k)).collect();
    let mut rows: Vec<Vec<Option<i64>>> = (0..c.num_rows())
        .map(|r| cells.iter().map(|col| col[r]).collect())
        .collect();
    rows.sort();
    rows
}

/// More partitions than a shuffle cuts one at a time (256): runs of consecutive
/// partitions are joined before they are cut into buckets, and the answers must be those
/// of one partition — `first` and `last` included, which see the rows in partition order.
#[test]
fn shuffles_of_more_partitions_than_their_fan_keep_every_row_in_order() {
    let rows = 6_000usize;
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values(
        (0..rows as i64).map(|i| i * 7 % 977),
    ));
    let y: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
    let b = RecordBatch::try_from_iter([("k", k), ("y", y)]).unwrap();
    let many = DataFrame::from_record_batch(b.clone(), 600, None).unwrap();
    let one = DataFrame::from_record_batch(b, 1, None).unwrap();
    let grouped = |df: &DataFrame, strategy| {
        df.groupby(&["k"])
            .unwrap()
            .strategy(strategy)
            .agg(&[
                ("y", AggFunc::Sum),
                ("y", AggFunc::First),
                ("y", AggFunc::Last),
                ("y", AggFunc::Count),
            ])
            .unwrap()
            .compute()
            .unwrap()
    };
    let columns = ["k", "y_sum", "y_first", "y_last", "y_count"];
    let want = sorted_int_rows(&grouped(&one, GroupStrategy::Tree), &columns);
    assert_eq!(want.len(), 977);
    let got = sorted_int_rows(&grouped(&many, GroupStrategy::Shuffle), &columns);
    assert_eq!(got, want);

    // A join of two such frames, shuffled, against the same join broadcast.
    let dim_k: ArrayRef = Arc::new(Int64Array::from_iter_values((0..977).map(|i| i * 3 % 977)));
    let dim_z: ArrayRef = Arc::new(Int64Array::from_iter_values(0..977));
    let dim = RecordBatch::try_from_iter([("k", dim_k), ("z", dim_z)]).unwrap();
    let dim_many = DataFrame::from_record_batch(dim, 300, None).unwrap();
    let joined = |strategy| {
        many.merge_on(&dim_many, &["k"], &["k"], JoinType::Inner, strategy)
            .unwrap()
            .compute()
            .unwrap()
    };
    let shuffled = sorted_int_rows(&joined(JoinStrategy::Shuffle), &["k", "y", "z"]);
    let broadcast = sorted_int_rows(&joined(JoinStrategy::Broadcast), &["k", "y", "z"]);
    assert_eq!(shuffled.len(), rows);
    assert_eq!(shuffled, broadcast);
}

/// A shuffled join cuts a large build side into buckets of at most
/// `JOIN_BUCKET_ROWS` rows each (its hash tables stay near the caches), however few
/// partitions its inputs have, and answers as the broadcast join does.
#[test]
fn shuffled_joins_cut_a_large_build_side_into_cache_sized_buckets() {
    use tessera::frame::exec::JOIN_BUCKET_ROWS;
    let rows = 3 * JOIN_BUCKET_ROWS + 1000;
    let side = |n: usize, mul: i64, name: &str, parts: usize| {
        let k: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..n as i64).map(|i| i * mul % (2 * n as i64)),
        ));
        let v: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
        let b = RecordBatch::try_from_iter([("k", k), (name, v)]).unwrap();
        DataFrame::from_record_batch(b, parts, None).unwrap()
    };
    // Two partitions a side: the bucket count comes from the build side's rows.
    let (left, right) = (side(rows, 3, "y", 2), side(rows, 5, "z", 2));
    let joined = |strategy| {
        left.merge_on(&right, &["k"], &["k"], JoinType::Inner, strategy)
            .unwrap()
            .compute()
            .unwrap()
    };
    let shuffled = joined(JoinStrategy::Shuffle);
    assert_eq!(shuffled.batches.len(), rows.div_ceil(JOIN_BUCKET_ROWS));
    let got = sorted_int_rows(&shuffled, &["k", "y", "z"]);
    let want = sorted_int_rows(&joined(JoinStrategy::Broadcast), &["k", "y", "z"]);
    assert!(got.len() > rows / 4, "{} rows joined", got.len());
    assert_eq!(got, want);
}
