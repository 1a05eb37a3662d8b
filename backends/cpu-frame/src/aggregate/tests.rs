//! The aggregation steps against pandas and against each other: whole and merged states,
//! every function over every layout it takes.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow_array::{Int32Array, StringArray};
use arrow_schema::DataType;
use tessera_core::frame::{AggFunc, AggSpec};

use super::combine::combine;
use super::finalize::finalize;
use super::lists::value_lists;
use super::partial::partial;
use super::sums::sum_i128_in_lanes;
use crate::keys::groups::{Groups, NO_GROUP};

/// Skewness and kurtosis against pandas 3.1.1's `groupby(..).skew()` / `.kurt()`
/// (`k` 0: [1, 2, 3, 4, 10]; 1: [2.5, -1, 7.25, 3, 3, 0.5]; 2: a constant; 3: two
/// values), from one partial and from states merged across every split of the rows.
#[test]
fn skew_and_kurt_match_pandas_whole_and_merged() {
    let rows: Vec<(i64, f64)> = [1.0, 2.0, 3.0, 4.0, 10.0]
        .map(|v| (0, v))
        .into_iter()
        .chain([2.5, -1.0, 7.25, 3.0, 3.0, 0.5].map(|v| (1, v)))
        .chain([5.0; 4].map(|v| (2, v)))
        .chain([1.0, 2.0].map(|v| (3, v)))
        .collect();
    let aggs = [
        AggSpec::new("v", AggFunc::Skew, "s"),
        AggSpec::new("v", AggFunc::Kurt, "q"),
    ];
    let keys = ["k".to_string()];
    let batch = |rows: &[(i64, f64)]| {
        let k: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0)));
        let v: ArrayRef = Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.1)));
        RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap()
    };
    let pandas = [
        (Some(1.697056274847714), Some(3.1519999999999984)),
        (Some(0.7028877695631479), Some(1.2980866394216881)),
        (None, None),
        (None, None),
    ];
    for cut in 0..=rows.len() {
        let states: Vec<RecordBatch> = [&rows[..cut], &rows[cut..]]
            .into_iter()
            .filter(|r| !r.is_empty())
            .map(|r| partial(&batch(r), &keys, &aggs).unwrap())
            .collect();
        let state = arrow_select::concat::concat_batches(&states[0].schema(), &states).unwrap();
        let out = finalize(&combine(&state, &keys, &aggs).unwrap(), &keys, &aggs).unwrap();
        let k = out.column(0).as_primitive::<Int64Type>();
        for (col, pick) in [(1, 0), (2, 1)] {
            let got = out.column(col).as_primitive::<Float64Type>();
            for row in 0..out.num_rows() {
                let group = k.value(row) as usize;
                let want = if pick == 0 {
                    pandas[group].0
                } else {
                    pandas[group].1
                };
                let got = got.is_valid(row).then(|| got.value(row));
                match (got, want) {
                    (Some(g), Some(w)) => assert!(
                        (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                        "cut {cut}, group {group}, column {col}: {g} vs pandas {w}"
                    ),
                    (g, w) => assert_eq!(g, w, "cut {cut}, group {group}, column {col}"),
                }
            }
        }
    }
}

/// Sums and means of a Decimal64 column (the 64-bit form a scan may hand over) equal
/// those of its Decimal128 cast, in the same state types: with few groups (summed in
/// lanes) and many, with and without nulls.
#[test]
fn decimal64_sums_equal_their_decimal128_casts() {
    let aggs = [
        AggSpec::new("v", AggFunc::Sum, "s"),
        AggSpec::new("v", AggFunc::Mean, "m"),
        AggSpec::new("v", AggFunc::Count, "c"),
    ];
    for (groups, nulls) in [(3, false), (3, true), (1000, false), (1000, true)] {
        let n = 5000i64;
        let k: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| (i * 7919) % groups),
        ));
        let v: arrow_array::Decimal64Array = (0..n)
            .map(|i| (!nulls || i % 5 != 2).then(|| (i - 2500) * 999_999_999_937))
            .collect();
        let v: ArrayRef = Arc::new(v.with_precision_and_scale(18, 3).unwrap());
        let wide = arrow_cast::cast(&v, &DataType::Decimal128(18, 3)).unwrap();
        let keys = ["k".to_string()];
        let got = partial(
            &RecordBatch::try_from_iter([("k", k.clone()), ("v", v)]).unwrap(),
            &keys,
            &aggs,
        )
        .unwrap();
        let want = partial(
            &RecordBatch::try_from_iter([("k", k), ("v", wide)]).unwrap(),
            &keys,
            &aggs,
        )
        .unwrap();
        assert_eq!(got, want, "{groups} groups, nulls {nulls}");
        assert_eq!(
            got.schema().field(1).data_type(),
            &DataType::Decimal128(38, 3)
        );
    }
}

/// A group holding an infinity has variance and standard deviation NaN (as NumPy and
/// pandas): the clamp of a rounding error below zero must not turn NaN into 0.
#[test]
fn an_infinite_value_gives_a_nan_variance_not_zero() {
    let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 1, 2, 2]));
    let v: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
        f64::NEG_INFINITY,
        11.0,
        -0.25,
        1.0,
        2.0,
    ]));
    let keys = ["k".to_string()];
    let aggs = [
        AggSpec::new("v", AggFunc::Var, "var"),
        AggSpec::new("v", AggFunc::Std, "std"),
    ];
    let batch = RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap();
    let state = partial(&batch, &keys, &aggs).unwrap();
    let out = finalize(&state, &keys, &aggs).unwrap();
    for c in 1..3 {
        let got = out.column(c).as_primitive::<Float64Type>();
        assert!(got.value(0).is_nan(), "column {c}: {:?}", got);
        assert!((got.value(1) - [0.5, 0.5f64.sqrt()][c - 1]).abs() < 1e-15);
    }
}

/// Each group's list as a sorted vector of its values.
fn lists(a: &ArrayRef) -> Vec<Vec<String>> {
    let l = a.as_list::<i32>();
    (0..l.len())
        .map(|i| {
            let list = l.value(i);
            let v =
                arrow_cast::display::ArrayFormatter::try_new(list.as_ref(), &Default::default())
                    .unwrap();
            let mut out: Vec<String> = (0..list.len()).map(|j| v.value(j).to_string()).collect();
            out.sort();
            out
        })
        .collect()
}

#[test]
fn lane_sums_match_a_row_by_row_fold_and_find_overflows() {
    // Lengths around the lane count, rows without a group, negative values.
    for rows in [0usize, 1, 3, 4, 5, 8, 13, 1001] {
        let ids: Vec<u32> = (0..rows)
            .map(|i| {
                if i % 11 == 5 {
                    NO_GROUP
                } else {
                    (i * 7 % 3) as u32
                }
            })
            .collect();
        let values: Vec<i128> = (0..rows)
            .map(|i| (i as i128 - 400) * 1_000_000_000_000_000_007)
            .collect();
        let g = Groups {
            ids: ids.clone(),
            first_rows: vec![0; 3],
        };
        let mut want = vec![0i128; 3];
        for (&id, &x) in ids.iter().zip(&values) {
            if id != NO_GROUP {
                want[id as usize] += x;
            }
        }
        assert_eq!(sum_i128_in_lanes(&values, &g), (want, false), "{rows} rows");
    }
    // Two maxima in one group pass i128, in the same lane or in two.
    for gap in [1usize, 4] {
        let mut values = vec![1i128; 8];
        values[0] = i128::MAX;
        values[gap] = i128::MAX;
        let g = Groups {
            ids: vec![0; 8],
            first_rows: vec![0],
        };
        assert!(sum_i128_in_lanes(&values, &g).1, "gap {gap}");
    }
}

#[test]
fn shared_sums_and_counts_keep_each_columns_own_nulls() {
    // x has no nulls, y has two; the groups are k.
    let batch = RecordBatch::try_from_iter(vec![
        (
            "k",
            Arc::new(Int64Array::from(vec![1, 1, 2, 2, 2])) as ArrayRef,
        ),
        (
            "x",
            Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5])) as ArrayRef,
        ),
        (
            "y",
            Arc::new(Int64Array::from(vec![
                Some(10),
                None,
                None,
                Some(7),
                Some(1),
            ])) as ArrayRef,
        ),
    ])
    .unwrap();
    let specs = [
        AggSpec::new("x", AggFunc::Sum, "sx"),
        AggSpec::new("x", AggFunc::Mean, "mx"),
        AggSpec::new("x", AggFunc::Count, "cx"),
        AggSpec::new("y", AggFunc::Count, "cy"),
        AggSpec::new("y", AggFunc::Mean, "my"),
        AggSpec::new("y", AggFunc::Sum, "sy"),
    ];
    let state = partial(&batch, &["k".to_string()], &specs).unwrap();
    let out = finalize(&state, &["k".to_string()], &specs).unwrap();
    let ints = |name: &str| -> Vec<i64> {
        let c = out.column_by_name(name).unwrap();
        let c = arrow_cast::cast(c, &DataType::Int64).unwrap();
        c.as_primitive::<Int64Type>().values().to_vec()
    };
    let floats = |name: &str| -> Vec<f64> {
        let c = out.column_by_name(name).unwrap();
        let c = arrow_cast::cast(c, &DataType::Float64).unwrap();
        c.as_primitive::<Float64Type>().values().to_vec()
    };
    assert_eq!(ints("sx"), vec![3, 12]);
    assert_eq!(floats("mx"), vec![1.5, 4.0]);
    assert_eq!(ints("cx"), vec![2, 3]);
    assert_eq!(ints("cy"), vec![1, 2]);
    assert_eq!(floats("my"), vec![10.0, 4.0]);
    assert_eq!(ints("sy"), vec![10, 8]);
}

#[test]
fn distinct_value_lists_hold_each_value_once_per_group() {
    // Group 0 is large (sorted path), group 1 small (pairwise path), group 2 all null,
    // and rows of no group are left out.
    let n = 100;
    let ids: Vec<u32> = (0..n)
        .map(|i| match i % 10 {
            0..=6 => 0,
            7 | 8 => 1,
            _ if i < 50 => 2,
            _ => NO_GROUP,
        })
        .collect();
    let values: Vec<Option<i32>> = (0..n)
        .map(|i| match i % 10 {
            7 | 8 => Some(i % 3),
            9 => None,
            _ => Some((i * 7) % 13),
        })
        .collect();
    let g = Groups {
        ids: ids.clone(),
        first_rows: vec![0, 7, 9],
    };
    let ints: ArrayRef = Arc::new(Int32Array::from(values.clone()));
    let text: ArrayRef = Arc::new(StringArray::from_iter(
        values.iter().map(|v| v.map(|x| format!("v{x}"))),
    ));
    let mut want: Vec<std::collections::BTreeSet<i32>> = vec![Default::default(); 3];
    for (id, v) in ids.iter().zip(&values) {
        if let (true, Some(v)) = (*id != NO_GROUP, v) {
            want[*id as usize].insert(*v);
        }
    }
    let as_text = |prefix: &str| -> Vec<Vec<String>> {
        want.iter()
            .map(|s| {
                let mut v: Vec<String> = s.iter().map(|x| format!("{prefix}{x}")).collect();
                v.sort();
                v
            })
            .collect()
    };
    let got = value_lists(&ints, &g, &DataType::Int32, true).unwrap();
    assert_eq!(lists(&got), as_text(""));
    assert!(
        want[0].len() > 1 && want[0].len() < 70,
        "group 0 has repeats"
    );
    let got = value_lists(&text, &g, &DataType::Utf8, true).unwrap();
    assert_eq!(lists(&got), as_text("v"));
    // Without `distinct`, every non-null value is kept.
    let all = value_lists(&ints, &g, &DataType::Int32, false).unwrap();
    let sizes: Vec<usize> = lists(&all).iter().map(Vec::len).collect();
    assert_eq!(sizes, vec![70, 20, 0]);
}
