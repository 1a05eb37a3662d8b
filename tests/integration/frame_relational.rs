//! Merge options (suffixes, indicator, null keys matching), `groupby(dropna=False)` and
//! `drop_duplicates` against pandas, on random partitionings.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};
use tessera::frame::{
    col, lit, AggFunc, Computed, DataFrame, JoinStrategy, JoinType, Keep, MergeOptions, Value,
};

use crate::frames::{batch, random_partitions, Rng};

/// A computed frame's rows as canonical strings (numbers with six decimals, "null").
fn rows(c: &Computed) -> Vec<Vec<String>> {
    let names: Vec<String> = c.schema.fields().iter().map(|f| f.name().clone()).collect();
    (0..c.num_rows())
        .map(|r| {
            names
                .iter()
                .map(|n| match c.value(n, r).unwrap() {
                    Value::Null => "null".to_string(),
                    Value::Str(s) => s,
                    v => match v.as_f64() {
                        Some(x) if x.is_nan() => "null".to_string(),
                        Some(x) => format!("{x:.6}"),
                        None => format!("{v:?}"),
                    },
                })
                .collect()
        })
        .collect()
}

fn json_rows(v: &serde_json::Value) -> Vec<Vec<String>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

/// `merge_with` (every join type, suffixes, indicator, null keys matching as pandas
/// matches them), `groupby(..).dropna(false)` and `drop_duplicates` (keep first, last,
/// none) against pandas through `tests/scripts/frame_relational_pandas.py`. Runs when
/// `python3` (or `$PYTHON`) can import pandas; otherwise it says it was skipped.
#[test]
fn relational_options_match_pandas() {
    let Some(python) = crate::common::python_with("relational_options_match_pandas", "pandas")
    else {
        return;
    };
    let mut rng = Rng(77);
    let (nl, nr) = (300, 40);
    let key = |rng: &mut Rng, j: usize| (j % 9 != 5).then(|| rng.below(25) as i64);
    let lk: Vec<Option<i64>> = (0..nl).map(|j| key(&mut rng, j)).collect();
    let la: Vec<String> = (0..nl).map(|_| format!("a{}", rng.below(3))).collect();
    let lv: Vec<Option<f64>> = (0..nl)
        .map(|j| (j % 11 != 3).then(|| rng.below(100) as f64 / 4.0))
        .collect();
    let rk: Vec<Option<i64>> = (0..nr).map(|j| key(&mut rng, j + 1)).collect();
    let rb: Vec<String> = (0..nr).map(|j| format!("b{j}")).collect();
    let rv: Vec<f64> = (0..nr).map(|j| j as f64 * 1.5).collect();
    let show = |x: Option<String>| x.unwrap_or_default();
    let mut left_csv = String::from("r,k,a,v\n");
    for j in 0..nl {
        left_csv.push_str(&format!(
            "{j},{},{},{}\n",
            show(lk[j].map(|x| x.to_string())),
            la[j],
            show(lv[j].map(|x| format!("{x:?}")))
        ));
    }
    let mut right_csv = String::from("k,b,v\n");
    for j in 0..nr {
        right_csv.push_str(&format!(
            "{},{},{:?}\n",
            show(rk[j].map(|x| x.to_string())),
            rb[j],
            rv[j]
        ));
    }
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/frame_relational_pandas.py"
    );
    let want = crate::common::python_json(
        &python,
        script,
        "pandas-relational",
        &[("left.csv", left_csv), ("right.csv", right_csv)],
    );

    let left_batch = batch(vec![
        (
            "r",
            Arc::new(Int64Array::from_iter_values(0..nl as i64)) as ArrayRef,
        ),
        ("k", Arc::new(Int64Array::from(lk))),
        ("a", Arc::new(StringArray::from(la))),
        ("v", Arc::new(Float64Array::from(lv))),
    ]);
    let right_batch = batch(vec![
        ("k", Arc::new(Int64Array::from(rk)) as ArrayRef),
        ("b", Arc::new(StringArray::from(rb))),
        ("v", Arc::new(Float64Array::from(rv))),
    ]);
    for round in 0..2 {
        let left = random_partitions(&left_batch, &mut rng);
        let right = random_partitions(&right_batch, &mut rng);
        for how in [
            JoinType::Inner,
            JoinType::Left,
            JoinType::Right,
            JoinType::Outer,
        ] {
            let options = MergeOptions::new(how)
                .suffixes("_l", "_r")
                .indicator("_merge")
                .nulls_equal(true);
            let merged = left.merge_with(&right, &["k"], &["k"], options).unwrap();
            assert_eq!(
                merged.columns(),
                ["r", "k", "a", "v_l", "b", "v_r", "_merge"],
                "{}",
                how.name()
            );
            let mut got = rows(&merged.compute().unwrap());
            let mut expected = json_rows(&want[format!("merge.{}", how.name())]);
            got.sort();
            expected.sort();
            assert_eq!(
                got.len(),
                expected.len(),
                "round {round}: {} join rows",
                how.name()
            );
            assert_eq!(got, expected, "round {round}: {} join", how.name());
        }
        let g = left
            .groupby(&["k"])
            .unwrap()
            .dropna(false)
            .agg_named(&[
                ("v", AggFunc::Sum, "s"),
                ("v", AggFunc::Count, "n"),
                ("v", AggFunc::Mean, "m"),
            ])
            .unwrap();
        assert_eq!(
            rows(&g.compute().unwrap()),
            json_rows(&want["groupby"]),
            "round {round}"
        );
        for (keep, name) in [
            (Keep::First, "first"),
            (Keep::Last, "last"),
            (Keep::None, "false"),
        ] {
            let kept = left
                .drop_duplicates(&["k", "a"], keep)
                .unwrap()
                .compute()
                .unwrap();
            let got: Vec<i64> = crate::frames::int_cells(&kept, "r")
                .into_iter()
                .flatten()
                .collect();
            let expected = crate::frames::json_ints(&want[format!("dedup.{name}")]);
            assert_eq!(got, expected, "round {round}: drop_duplicates keep={name}");
        }
    }
}

/// Without `nulls_equal`, null keys match nothing (SQL's rule); `unique` keeps first
/// occurrences of whole rows.
#[test]
fn null_keys_match_only_when_asked_and_unique_keeps_first_rows() {
    let l = batch(vec![(
        "k",
        Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
    )]);
    let r = batch(vec![
        (
            "k",
            Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
        ),
        ("x", Arc::new(Int64Array::from(vec![10, 20]))),
    ]);
    let left = DataFrame::from_record_batch(l, 1, None).unwrap();
    let right = DataFrame::from_record_batch(r, 2, None).unwrap();
    let inner = |nulls| {
        left.merge_with(
            &right,
            &["k"],
            &["k"],
            MergeOptions::new(JoinType::Inner).nulls_equal(nulls),
        )
        .unwrap()
        .len()
        .unwrap()
    };
    assert_eq!((inner(false), inner(true)), (1, 2));
    let d = batch(vec![
        (
            "a",
            Arc::new(Int64Array::from(vec![1, 1, 2, 1])) as ArrayRef,
        ),
        (
            "b",
            Arc::new(StringArray::from(vec![
                Some("x"),
                Some("x"),
                None,
                Some("y"),
            ])),
        ),
    ]);
    let df = DataFrame::from_record_batch(d, 3, None).unwrap();
    let u = df.unique().unwrap().compute().unwrap();
    assert_eq!(u.num_rows(), 3);
    assert_eq!(u.value("b", 2).unwrap(), Value::Str("y".into()));
    let e = df
        .drop_duplicates(&["zz"], Keep::First)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no column 'zz'"), "{e}");
}

/// A join whose left side is the small one: the run hashes it once and streams the large
/// right side through it (the join turned around, its columns put back in the written
/// order). Inner and right joins, with a shared key, clashing names and differently named
/// keys, on random partitionings: the same rows as a hash shuffle of both sides, the
/// columns in the written order, and as many rows as counted by hand.
#[test]
fn a_small_left_side_streams_the_large_right_through_it() {
    let mut rng = Rng(2024);
    for round in 0..6 {
        let nl = 12;
        let nr = 2000;
        let lk: Vec<i64> = (0..nl).map(|_| rng.below(10) as i64).collect();
        let rk: Vec<Option<i64>> = (0..nr)
            .map(|j| (j % 97 != 3).then(|| rng.below(15) as i64))
            .collect();
        let small = batch(vec![
            ("k", Arc::new(Int64Array::from(lk.clone())) as ArrayRef),
            (
                "v",
                Arc::new(Int64Array::from((0..nl as i64).collect::<Vec<_>>())),
            ),
            (
                "name",
                Arc::new(StringArray::from(
                    (0..nl).map(|i| format!("n{i}")).collect::<Vec<_>>(),
                )),
            ),
        ]);
        let large = batch(vec![
            ("k", Arc::new(Int64Array::from(rk.clone())) as ArrayRef),
            (
                "v",
                Arc::new(Float64Array::from(
                    (0..nr).map(|_| rng.float()).collect::<Vec<_>>(),
                )),
            ),
            (
                "w",
                Arc::new(Int64Array::from((0..nr as i64).collect::<Vec<_>>())),
            ),
        ]);
        let left = random_partitions(&small, &mut rng);
        let right = random_partitions(&large, &mut rng);
        let matches: usize = rk
            .iter()
            .map(|k| k.map_or(0, |k| lk.iter().filter(|&&l| l == k).count()))
            .sum();
        let unmatched = rk
            .iter()
            .filter(|k| k.is_none_or(|k| !lk.contains(&k)))
            .count();
        for (how, expected) in [
            (JoinType::Inner, matches),
            (JoinType::Right, matches + unmatched),
        ] {
            let run = |on: (&str, &str), strategy| {
                let (l, r) = if on.0 == "k" {
                    (left.clone(), right.clone())
                } else {
                    (
                        left.rename(&[("k", on.0)]).unwrap(),
                        right.rename(&[("k", on.1)]).unwrap(),
                    )
                };
                l.merge_with(
                    &r,
                    &[on.0],
                    &[on.1],
                    MergeOptions::new(how).strategy(strategy),
                )
                .unwrap()
                .compute()
                .unwrap()
            };
            for (on, names) in [
                (("k", "k"), vec!["k", "v_x", "name", "v_y", "w"]),
                (("lk", "rk"), vec!["lk", "v_x", "name", "rk", "v_y", "w"]),
            ] {
                let streamed = run(on, JoinStrategy::Auto);
                let shuffled = run(on, JoinStrategy::Shuffle);
                let got: Vec<&str> = streamed
                    .schema
                    .fields()
                    .iter()
                    .map(|f| f.name().as_str())
                    .collect();
                assert_eq!(got, names, "round {round} {how:?} on {on:?}");
                assert_eq!(
                    streamed.num_rows(),
                    expected,
                    "round {round} {how:?} on {on:?}"
                );
                let (mut a, mut b) = (rows(&streamed), rows(&shuffled));
                a.sort();
                b.sort();
                assert_eq!(a, b, "round {round} {how:?} on {on:?}");
            }
        }
    }
}

/// A chain of inner joins written fact table first, with small filtered tables joined
/// last (TPC-H Q7's shape): the planner moves the small tables below the joins that hold
/// their keys. The answer is the same as with every join forced to a shuffle (which keeps
/// the written order), with the columns in the written order, on random partitionings.
#[test]
fn small_tables_joined_first_give_the_written_joins_answer() {
    let mut rng = Rng(31);
    for round in 0..4 {
        let n = 3000;
        let fact = batch(vec![
            (
                "f_store",
                Arc::new(Int64Array::from(
                    (0..n).map(|_| rng.below(40) as i64).collect::<Vec<_>>(),
                )) as ArrayRef,
            ),
            (
                "f_item",
                Arc::new(Int64Array::from(
                    (0..n).map(|_| rng.below(200) as i64).collect::<Vec<_>>(),
                )),
            ),
            (
                "f_amount",
                Arc::new(Float64Array::from(
                    (0..n).map(|_| rng.float()).collect::<Vec<_>>(),
                )),
            ),
        ]);
        let stores = batch(vec![
            (
                "s_key",
                Arc::new(Int64Array::from((0..40).collect::<Vec<i64>>())) as ArrayRef,
            ),
            (
                "s_region",
                Arc::new(Int64Array::from(
                    (0..40).map(|i| i % 5).collect::<Vec<i64>>(),
                )),
            ),
        ]);
        let items = batch(vec![
            (
                "i_key",
                Arc::new(Int64Array::from((0..200).collect::<Vec<i64>>())) as ArrayRef,
            ),
            (
                "i_kind",
                Arc::new(StringArray::from(
                    (0..200).map(|i| format!("k{}", i % 7)).collect::<Vec<_>>(),
                )),
            ),
        ]);
        let regions = batch(vec![
            (
                "r_key",
                Arc::new(Int64Array::from((0..5).collect::<Vec<i64>>())) as ArrayRef,
            ),
            (
                "r_name",
                Arc::new(StringArray::from(vec![
                    "north", "south", "east", "west", "mid",
                ])),
            ),
        ]);
        let fact = random_partitions(&fact, &mut rng);
        let stores = random_partitions(&stores, &mut rng);
        let items = random_partitions(&items, &mut rng);
        let regions = random_partitions(&regions, &mut rng);
        let run = |strategy| {
            let j = |l: &DataFrame, r: &DataFrame, lk: &str, rk: &str| {
                l.merge_with(
                    r,
                    &[lk],
                    &[rk],
                    MergeOptions::new(JoinType::Inner).strategy(strategy),
                )
                .unwrap()
            };
            let chain = j(&fact, &items, "f_item", "i_key");
            let chain = j(&chain, &stores, "f_store", "s_key");
            let chain = j(&chain, &regions, "s_region", "r_key");
            chain
                .filter(
                    col("r_name")
                        .eq(lit("east"))
                        .or(col("r_name").eq(lit("mid"))),
                )
                .unwrap()
        };
        // As written, the regions join is the last (the top of the plan); moved, it sits
        // below the stores join.
        let plan = run(JoinStrategy::Auto).explain().unwrap();
        let depth = |on: &str| {
            let line = plan.lines().find(|l| l.contains(on)).expect(on);
            line.len() - line.trim_start().len()
        };
        assert!(
            depth("[s_region] = [r_key]") > depth("[f_store] = [s_key]"),
            "{plan}"
        );
        let moved = run(JoinStrategy::Auto).compute().unwrap();
        let written = run(JoinStrategy::Shuffle).compute().unwrap();
        let names = |c: &Computed| -> Vec<String> {
            c.schema.fields().iter().map(|f| f.name().clone()).collect()
        };
        assert_eq!(
            names(&moved),
            [
                "f_store", "f_item", "f_amount", "i_key", "i_kind", "s_key", "s_region", "r_key",
                "r_name"
            ]
        );
        assert_eq!(names(&moved), names(&written));
        assert!(
            moved.num_rows() > 0,
            "round {round}: the filter keeps two regions"
        );
        let (mut a, mut b) = (rows(&moved), rows(&written));
        a.sort();
        b.sort();
        assert_eq!(a, b, "round {round}");
    }
}

/// A filter's predicate-only column (TPC-H Q13's `o_comment`) is dropped right after the
/// filter, not carried into the join above it; the answer is the one counted by hand.
#[test]
fn columns_only_a_filter_reads_are_dropped_after_it() {
    let mut rng = Rng(47);
    for round in 0..4 {
        let n = 2000;
        let cust: Vec<i64> = (0..n).map(|_| rng.below(50) as i64).collect();
        let notes: Vec<&str> = (0..n)
            .map(|_| {
                [
                    "special requests",
                    "plain",
                    "a special box of requests",
                    "none",
                ][rng.below(4) as usize]
            })
            .collect();
        let orders = batch(vec![
            (
                "o_key",
                Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>())) as ArrayRef,
            ),
            ("o_cust", Arc::new(Int64Array::from(cust.clone()))),
            ("o_note", Arc::new(StringArray::from(notes.clone()))),
        ]);
        let customers = batch(vec![(
            "c_key",
            Arc::new(Int64Array::from((0..60).collect::<Vec<i64>>())) as ArrayRef,
        )]);
        let kept = random_partitions(&orders, &mut rng)
            .filter(!col("o_note").like("%special%requests%"))
            .unwrap();
        let q = random_partitions(&customers, &mut rng)
            .merge_on(
                &kept,
                &["c_key"],
                &["o_cust"],
                JoinType::Left,
                JoinStrategy::Auto,
            )
            .unwrap()
            .groupby(&["c_key"])
            .unwrap()
            .agg_exprs(&[(col("o_key"), AggFunc::Count, "orders")])
            .unwrap()
            .sort_values(&["c_key"], &[true])
            .unwrap();
        let plan = q.explain().unwrap();
        let filter = plan
            .lines()
            .find(|l| l.contains("filter") && l.contains("o_note"))
            .unwrap_or_else(|| panic!("round {round}: no filter line in\n{plan}"));
        let after = filter
            .split_once("project")
            .unwrap_or_else(|| panic!("round {round}: nothing projected after\n{plan}"))
            .1;
        assert!(
            !after.contains("o_note"),
            "round {round}: o_note kept in\n{plan}"
        );
        let got = q.compute().unwrap();
        assert_eq!(got.num_rows(), 60);
        for c in 0..60i64 {
            let want = (0..n)
                .filter(|&i| {
                    cust[i] == c && !(notes[i].contains("special") && notes[i].contains("requests"))
                })
                .count() as f64;
            assert_eq!(
                got.value("c_key", c as usize).unwrap().as_f64(),
                Some(c as f64)
            );
            assert_eq!(
                got.value("orders", c as usize).unwrap().as_f64(),
                Some(want),
                "round {round}, customer {c}"
            );
        }
    }
}
