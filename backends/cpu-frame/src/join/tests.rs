//! Both joins against each other and against every key path: integer, packed, string
//! and encoded keys give the same pairs and matches.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Int64Array;
use arrow_array::{ArrayRef, RecordBatch};
use tessera_core::frame::{JoinAlgorithm, JoinSpec, JoinType};

use super::build::BuildTable;
use super::join;
use super::pairs::MISSING;
use super::probe::{has_match, hash_pairs};

/// The (left, right) pairs of `left ⋈ right` on one integer key, and which table
/// the build chose.
fn pairs(
    left: Vec<Option<i64>>,
    right: Vec<Option<i64>>,
    how: JoinType,
) -> (Vec<(u32, u32)>, &'static str) {
    let (ln, rn) = (left.len(), right.len());
    let lk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(left))];
    let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(right))];
    let table = BuildTable::build(&rk, rn, false).unwrap();
    let kind = match table {
        BuildTable::Dense { .. } => "dense",
        BuildTable::DenseSet { .. } => "set",
        BuildTable::Int { .. } => "hash",
        BuildTable::Packed { .. } => "packed",
        BuildTable::ShortStrings { .. } => "short strings",
        BuildTable::Strings { .. } => "strings",
        BuildTable::Rows { .. } => "rows",
    };
    let p = hash_pairs(&lk, &table, ln, rn, how).unwrap();
    (p.left.into_iter().zip(p.right).collect(), kind)
}

#[test]
fn semi_and_anti_keep_left_rows_once_whatever_the_algorithm() {
    let left = RecordBatch::try_from_iter([(
        "k",
        Arc::new(Int64Array::from(vec![
            Some(5),
            Some(9),
            None,
            Some(-2),
            Some(5),
            Some(i64::MIN),
        ])) as ArrayRef,
    )])
    .unwrap();
    // Right keys repeat (5 three times): a semi join still keeps each left row once.
    let right = RecordBatch::try_from_iter([(
        "r",
        Arc::new(Int64Array::from(vec![
            Some(5),
            Some(5),
            None,
            Some(-2),
            Some(5),
        ])) as ArrayRef,
    )])
    .unwrap();
    for algorithm in [JoinAlgorithm::Hash, JoinAlgorithm::SortedMerge] {
        for (how, want) in [
            (JoinType::Semi, vec![Some(5), Some(-2), Some(5)]),
            (JoinType::Anti, vec![Some(9), None, Some(i64::MIN)]),
        ] {
            let spec = JoinSpec {
                left_on: vec!["k".into()],
                right_on: vec!["r".into()],
                how,
                suffixes: ("_x".into(), "_y".into()),
                algorithm,
            };
            let schema = spec.output_schema(&left.schema(), &right.schema()).unwrap();
            let out = join(&left, &right, None, &spec, schema).unwrap();
            assert_eq!(out.num_columns(), 1, "left columns only");
            let got: Vec<Option<i64>> = out.column(0).as_primitive::<Int64Type>().iter().collect();
            assert_eq!(got, want, "{how:?} {algorithm:?}");
        }
    }
}

#[test]
fn a_semi_joins_key_set_answers_as_the_hash_table_does() {
    let left: ArrayRef = Arc::new(Int64Array::from(vec![
        Some(5),
        Some(9),
        None,
        Some(-2),
        Some(64),
        Some(i64::MIN),
        Some(i64::MAX),
        Some(63),
    ]));
    let dense = vec![Some(5), Some(63), None, Some(-2), Some(5), Some(64)];
    let mut sparse = dense.clone();
    sparse.push(Some(1 << 40));
    let want = vec![true, false, false, true, true, false, false, true];
    for (right, kind) in [(dense, "set"), (sparse, "hash")] {
        let rn = right.len();
        let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(right))];
        let table = BuildTable::build(&rk, rn, true).unwrap();
        let got = match table {
            BuildTable::DenseSet { .. } => "set",
            BuildTable::Int { .. } => "hash",
            _ => "other",
        };
        assert_eq!(got, kind);
        let hits = has_match(std::slice::from_ref(&left), &table, left.len()).unwrap();
        assert_eq!(hits, want, "{kind}");
        // Only semi and anti joins take the key set; pairs refuse it.
        if kind == "set" {
            assert!(
                hash_pairs(std::slice::from_ref(&left), &table, 8, rn, JoinType::Inner).is_err()
            );
        }
    }
}

#[test]
fn dense_and_hashed_tables_give_the_same_pairs() {
    const M: u32 = MISSING;
    let left = vec![Some(5), Some(9), None, Some(-2), Some(3), Some(i64::MIN)];
    let dense = vec![Some(5), Some(3), Some(5), None, Some(-2)];
    // The same keys with one far away: a hash table.
    let mut sparse = dense.clone();
    sparse.push(Some(1 << 40));
    let (d, kind) = pairs(left.clone(), dense.clone(), JoinType::Outer);
    assert_eq!(kind, "dense");
    // Matches in left order, duplicates in right order, then unmatched right rows.
    assert_eq!(
        d,
        [
            (0, 0),
            (0, 2),
            (1, M),
            (2, M),
            (3, 4),
            (4, 1),
            (5, M),
            (M, 3)
        ]
    );
    let (h, kind) = pairs(left.clone(), sparse, JoinType::Outer);
    assert_eq!(kind, "hash");
    assert_eq!(h[..7], d[..7]);
    assert_eq!(h[7..], [(M, 3), (M, 5)]);
    // A key 200,000 away: too wide for a dense table, narrow enough for presence bits,
    // which must let every key in the table through and only those.
    let mut mid = dense.clone();
    mid.push(Some(200_000));
    let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(mid.clone()))];
    let table = BuildTable::build(&rk, mid.len(), false).unwrap();
    assert!(
        matches!(
            &table,
            BuildTable::Int {
                present: Some(_),
                ..
            }
        ),
        "{table:?}"
    );
    let (m, kind) = pairs(left.clone(), mid, JoinType::Outer);
    assert_eq!(kind, "hash");
    assert_eq!(m[..7], d[..7]);
    assert_eq!(m[7..], [(M, 3), (M, 5)]);
    let probe = vec![
        Some(200_000),
        Some(199_999),
        Some(5),
        Some(-3),
        Some(i64::MAX),
        None,
    ];
    let lk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(probe))];
    assert_eq!(
        has_match(&lk, &table, 6).unwrap(),
        [true, false, true, false, false, false]
    );
}

#[test]
fn presence_bits_past_the_cached_span_are_kept_per_row_and_exact() {
    // 200,000 keys over a span of ten million (past `PRESENT_SPAN`, within 64 per row).
    let keys: Vec<i64> = (0..200_000).map(|i| i * 50 + 7).collect();
    let rk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(keys.clone()))];
    let table = BuildTable::build(&rk, keys.len(), false).unwrap();
    let BuildTable::Int {
        present: Some((lo, bits)),
        ..
    } = &table
    else {
        panic!("{table:?}");
    };
    assert_eq!(*lo, 7);
    assert_eq!(bits.len(), (9_999_957 - 7) / 64 + 1);
    let probe: Vec<i64> = (-100..10_000_100).step_by(13).collect();
    let lk: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(probe.clone()))];
    let want: Vec<bool> = probe
        .iter()
        .map(|&k| (7..=9_999_957).contains(&k) && (k - 7) % 50 == 0)
        .collect();
    assert_eq!(has_match(&lk, &table, probe.len()).unwrap(), want);
    // A hundred keys over the same span: the bits would take 12 KB per row.
    let few: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
        (0..100).map(|i| i * 100_000),
    ))];
    let table = BuildTable::build(&few, 100, false).unwrap();
    assert!(
        matches!(&table, BuildTable::Int { present: None, .. }),
        "{table:?}"
    );
}

#[test]
fn packed_keys_give_the_pairs_and_matches_of_encoded_ones() {
    const M: u32 = MISSING;
    // Two keys; a string copy of the second forces the encoded (`arrow-row`) table.
    let key2 = |v: &[Option<i64>]| -> Vec<ArrayRef> {
        vec![
            Arc::new(Int64Array::from(
                v.iter().map(|x| x.map(|x| x / 10)).collect::<Vec<_>>(),
            )),
            Arc::new(Int64Array::from(
                v.iter().map(|x| x.map(|x| x % 10)).collect::<Vec<_>>(),
            )),
        ]
    };
    let as_text = |k: &[ArrayRef]| -> Vec<ArrayRef> {
        vec![
            k[0].clone(),
            arrow_cast::cast(&k[1], &arrow_schema::DataType::Utf8).unwrap(),
        ]
    };
    let left = [
        Some(53),
        Some(97),
        None,
        Some(-21),
        Some(53),
        Some(400),
        Some(-999),
        Some(31),
    ];
    let right = [Some(53), Some(31), Some(53), None, Some(-21), Some(12)];
    let (lk, rk) = (key2(&left), key2(&right));
    let packed = BuildTable::build(&rk, right.len(), false).unwrap();
    assert!(matches!(packed, BuildTable::Packed { .. }), "{packed:?}");
    let rows = BuildTable::build(&as_text(&rk), right.len(), false).unwrap();
    assert!(matches!(rows, BuildTable::Rows { .. }), "{rows:?}");
    for how in [
        JoinType::Inner,
        JoinType::Left,
        JoinType::Right,
        JoinType::Outer,
    ] {
        let p = hash_pairs(&lk, &packed, left.len(), right.len(), how).unwrap();
        let r = hash_pairs(&as_text(&lk), &rows, left.len(), right.len(), how).unwrap();
        assert_eq!((&p.left, &p.right), (&r.left, &r.right), "{how:?}");
    }
    // By hand for the outer join: 53 twice on each side, -21 and 31 once.
    let p = hash_pairs(&lk, &packed, left.len(), right.len(), JoinType::Outer).unwrap();
    let got: Vec<(u32, u32)> = p.left.into_iter().zip(p.right).collect();
    assert_eq!(
        got,
        [
            (0, 0),
            (0, 2),
            (1, M),
            (2, M),
            (3, 4),
            (4, 0),
            (4, 2),
            (5, M),
            (6, M),
            (7, 1),
            (M, 3),
            (M, 5)
        ]
    );
    let set = BuildTable::build(&rk, right.len(), true).unwrap();
    assert_eq!(
        has_match(&lk, &set, left.len()).unwrap(),
        has_match(&as_text(&lk), &rows, left.len()).unwrap()
    );
    assert_eq!(
        has_match(&lk, &set, left.len()).unwrap(),
        [true, false, false, true, true, false, false, true]
    );
}

/// One string key takes the string table in any layout on either side (a dictionary
/// probe included), and gives the pairs and matches of the same keys as integers.
#[test]
fn string_keys_give_the_pairs_and_matches_of_integer_ones() {
    use arrow_schema::DataType;
    let left = [
        Some(53),
        Some(97),
        None,
        Some(-21),
        Some(53),
        Some(400),
        Some(31),
    ];
    let right = [Some(53), Some(31), Some(53), None, Some(-21), Some(12)];
    let ints = |v: &[Option<i64>]| -> ArrayRef { Arc::new(Int64Array::from(v.to_vec())) };
    let (lk, rk) = (vec![ints(&left)], vec![ints(&right)]);
    let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    // Keys of at most 15 bytes take the packed table, longer ones the hashed bytes.
    for (prefix, short) in [("key no. ", true), ("the key number ", false)] {
        let text = |v: &[Option<i64>], t: &DataType| -> ArrayRef {
            let strings = v
                .iter()
                .map(|x| x.map(|x| format!("{prefix}{x}")))
                .collect::<arrow_array::StringArray>();
            arrow_cast::cast(&strings, t).unwrap()
        };
        for (lt, rt) in [
            (DataType::Utf8, DataType::Utf8),
            (DataType::Utf8View, DataType::Utf8),
            (DataType::LargeUtf8, DataType::Utf8View),
            (dict.clone(), DataType::Utf8View),
        ] {
            let (ls, rs) = (vec![text(&left, &lt)], vec![text(&right, &rt)]);
            for keys_only in [false, true] {
                let strings = BuildTable::build(&rs, right.len(), keys_only).unwrap();
                if short {
                    assert!(
                        matches!(strings, BuildTable::ShortStrings { .. }),
                        "{strings:?}"
                    );
                } else {
                    assert!(matches!(strings, BuildTable::Strings { .. }), "{strings:?}");
                }
                let table = BuildTable::build(&rk, right.len(), keys_only).unwrap();
                assert_eq!(
                    has_match(&ls, &strings, left.len()).unwrap(),
                    has_match(&lk, &table, left.len()).unwrap(),
                    "{lt} against {rt}"
                );
                if keys_only {
                    continue;
                }
                for how in [
                    JoinType::Inner,
                    JoinType::Left,
                    JoinType::Right,
                    JoinType::Outer,
                ] {
                    let p = hash_pairs(&ls, &strings, left.len(), right.len(), how).unwrap();
                    let q = hash_pairs(&lk, &table, left.len(), right.len(), how).unwrap();
                    assert_eq!(
                        (&p.left, &p.right),
                        (&q.left, &q.right),
                        "{how:?}: {lt}, {rt}"
                    );
                }
            }
        }
        let inner =
            BuildTable::build(&[text(&right, &DataType::Utf8)], right.len(), false).unwrap();
        let got = hash_pairs(
            &[text(&left, &DataType::Utf8)],
            &inner,
            7,
            6,
            JoinType::Inner,
        )
        .unwrap();
        let got: Vec<(u32, u32)> = got.left.into_iter().zip(got.right).collect();
        assert_eq!(got, [(0, 0), (0, 2), (3, 4), (4, 0), (4, 2), (6, 1)]);
        assert!(
            hash_pairs(&lk, &inner, 7, 6, JoinType::Inner).is_err(),
            "an integer probe of strings"
        );
    }
    // A probe string longer than any in a packed table misses; its first 15 bytes
    // equal a key of the table.
    let table: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["fifteen bytes!!"]));
    let table = BuildTable::build(&[table], 1, false).unwrap();
    assert!(matches!(table, BuildTable::ShortStrings { .. }));
    let probe: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![
        "fifteen bytes!!!",
        "fifteen bytes!!",
        "fifteen bytes!",
    ]));
    assert_eq!(
        has_match(&[probe], &table, 3).unwrap(),
        [false, true, false]
    );
}
