//! CSV and Parquet: round trips, parallel byte ranges that agree with one range,
//! projection and predicate pushdown visible in `explain`, malformed input with file,
//! line and column, atomic writes, and Parquet interop with pyarrow (when python3 can
//! import it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use tessera::frame::{col, lit, read_csv, read_parquet, AggFunc, CsvOptions, DataFrame, Value};

use tessera_cpu_frame as _;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-io-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn p(d: &Path, f: &str) -> String {
    d.join(f).to_string_lossy().into_owned()
}

fn sample() -> DataFrame {
    let n = 1000;
    let id: Int64Array = (0..n).map(|i| Some(i as i64)).collect();
    let x: Float64Array = (0..n)
        .map(|i| (i % 7 != 0).then(|| i as f64 / 8.0 - 3.3))
        .collect();
    let s: StringArray = (0..n)
        .map(|i| match i % 5 {
            0 => Some("plain".to_string()),
            1 => Some("with, comma".to_string()),
            2 => Some("say \"hi\"".to_string()),
            3 => None,
            _ => Some(format!("v{i}")),
        })
        .collect();
    let b: BooleanArray = (0..n).map(|i| Some(i % 3 == 0)).collect();
    let t: TimestampMicrosecondArray = (0..n)
        .map(|i| Some(1_420_070_400_000_000 + i as i64 * 3_600_000_123))
        .collect();
    DataFrame::from_columns(
        vec![
            ("id", Arc::new(id) as ArrayRef),
            ("x", Arc::new(x)),
            ("s", Arc::new(s)),
            ("b", Arc::new(b)),
            ("t", Arc::new(t)),
        ],
        4,
    )
    .unwrap()
}

#[test]
fn csv_round_trip_single_file_and_per_partition() {
    let d = dir("csv-rt");
    let df = sample();
    let want = df.compute().unwrap().concat().unwrap();
    let files = df.to_csv(&p(&d, "all.csv")).unwrap();
    assert_eq!(files.len(), 1);
    for bytes in [1 << 20, 777, 64] {
        let back = read_csv(
            &p(&d, "all.csv"),
            CsvOptions::default()
                .parse_dates(&["t"])
                .partition_bytes(bytes),
        )
        .unwrap();
        if bytes == 64 {
            assert!(back.npartitions() > 100, "small ranges split the file");
        }
        assert_eq!(
            back.compute().unwrap().concat().unwrap(),
            want,
            "partition_bytes {bytes}"
        );
    }
    let files = df.to_csv(&p(&d, "part-*.csv")).unwrap();
    assert_eq!(files.len(), 4);
    let back = read_csv(
        &p(&d, "part-*.csv"),
        CsvOptions::default().parse_dates(&["t"]),
    )
    .unwrap();
    assert_eq!(back.compute().unwrap().concat().unwrap(), want);
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn parquet_round_trip_and_row_group_partitions() {
    let d = dir("pq-rt");
    let df = sample();
    let want = df.compute().unwrap().concat().unwrap();
    df.to_parquet(&p(&d, "all.parquet")).unwrap();
    let back = read_parquet(&p(&d, "all.parquet")).unwrap();
    assert_eq!(back.npartitions(), 4, "one row group per partition");
    assert_eq!(back.compute().unwrap().concat().unwrap(), want);
    df.to_parquet(&p(&d, "part-*.parquet")).unwrap();
    let back = read_parquet(&p(&d, "part-*.parquet")).unwrap();
    assert_eq!(back.compute().unwrap().concat().unwrap(), want);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A query over a frame, for [`same_answers`].
type Query = fn(&DataFrame) -> DataFrame;

/// Each query gives the same batch (schema included) over `scanned`, a Parquet scan, as
/// over `held`, the same rows in memory (no scan under the query), with at least
/// `min_rows` rows.
fn same_answers(queries: &[Query], scanned: &DataFrame, held: &DataFrame, min_rows: usize) {
    for (i, q) in queries.iter().enumerate() {
        let got = q(scanned).compute().unwrap().concat().unwrap();
        let want = q(held).compute().unwrap().concat().unwrap();
        assert_eq!(got.schema(), want.schema(), "query {i}");
        assert_eq!(got, want, "query {i}");
        assert!(got.num_rows() >= min_rows, "query {i}: {got:?}");
    }
}

/// String group keys a Parquet scan hands over as dictionary keys (the cpu backend groups
/// them by their codes) give the groups, nulls and key types that grouping the same rows
/// held in memory gives: keys alone (a count of a required column taken on the required
/// key), keys after a filter on another column, a key that a filter also reads (read as
/// strings), and a key that is aggregated otherwise.
#[test]
fn string_keys_read_as_dictionaries_group_as_strings() {
    let d = dir("pq-coded-keys");
    let n = 3000;
    let flag: StringArray = (0..n)
        .map(|i| match i * 7 % 11 {
            0 => None,
            1..=4 => Some("A"),
            5..=8 => Some("N"),
            _ => Some("R"),
        })
        .collect();
    let status: StringArray = (0..n)
        .map(|i| Some(if i % 3 == 0 { "O" } else { "F" }))
        .collect();
    let x: Float64Array = (0..n).map(|i| Some(i as f64 * 0.25 - 100.0)).collect();
    // `status` and `x` are required columns: the plan counts `x` on the key `status`.
    let schema = Arc::new(arrow_schema::Schema::new(vec![
        arrow_schema::Field::new("flag", arrow_schema::DataType::Utf8, true),
        arrow_schema::Field::new("status", arrow_schema::DataType::Utf8, false),
        arrow_schema::Field::new("x", arrow_schema::DataType::Float64, false),
    ]));
    let batch = arrow_array::RecordBatch::try_new(
        schema,
        vec![Arc::new(flag) as ArrayRef, Arc::new(status), Arc::new(x)],
    )
    .unwrap();
    let df = DataFrame::from_record_batch(batch, 3, None).unwrap();
    df.to_parquet(&p(&d, "k.parquet")).unwrap();
    let scanned = read_parquet(&p(&d, "k.parquet")).unwrap();
    assert!(!scanned
        .schema()
        .field_with_name("status")
        .unwrap()
        .is_nullable());
    // The same rows in memory: no scan under the groupby, so no dictionaries.
    let held = scanned.persist().unwrap();
    let queries: [Query; 4] = [
        |f| {
            f.groupby(&["flag", "status"])
                .unwrap()
                .agg(&[("x", AggFunc::Sum), ("x", AggFunc::Count)])
                .unwrap()
        },
        |f| {
            f.filter(col("x").gt(lit(50.0)))
                .unwrap()
                .groupby(&["status", "flag"])
                .unwrap()
                .agg(&[("x", AggFunc::Mean)])
                .unwrap()
        },
        |f| {
            f.filter(col("status").eq(lit("O")))
                .unwrap()
                .groupby(&["flag", "status"])
                .unwrap()
                .agg(&[("x", AggFunc::Max)])
                .unwrap()
        },
        |f| {
            f.groupby(&["flag"])
                .unwrap()
                .agg(&[("status", AggFunc::Max), ("x", AggFunc::Min)])
                .unwrap()
        },
    ];
    same_answers(&queries, &scanned, &held, 3);
    std::fs::remove_dir_all(&d).unwrap();
}

/// String keys whose distinct values outgrow the writer's dictionary page (1 MB), so
/// that most of each chunk is stored as plain pages, reach the cpu backend as views into
/// the decoded pages (short ones inline, long ones pointing into the pages) and give the
/// groups and nulls that grouping the same rows held in memory gives.
#[test]
fn string_keys_read_as_views_group_as_strings() {
    let d = dir("pq-view-keys");
    let n = 200_000usize;
    // 90k distinct keys of 8 to 40 bytes, about a twentieth null.
    let key: StringArray = (0..n)
        .map(|i| {
            let g = i * 7919 % 90_000;
            (i % 19 != 7).then(|| format!("key{g:05}{}", "-pad".repeat(g % 9)))
        })
        .collect();
    let x: Float64Array = (0..n).map(|i| Some((i % 1000) as f64 * 0.5)).collect();
    let batch = arrow_array::RecordBatch::try_from_iter([
        ("key", Arc::new(key) as ArrayRef),
        ("x", Arc::new(x) as ArrayRef),
    ])
    .unwrap();
    let df = DataFrame::from_record_batch(batch, 2, None).unwrap();
    df.to_parquet(&p(&d, "v.parquet")).unwrap();
    let scanned = read_parquet(&p(&d, "v.parquet")).unwrap();
    let held = scanned.persist().unwrap();
    let queries: [Query; 2] = [
        |f| {
            f.groupby(&["key"])
                .unwrap()
                .agg(&[("x", AggFunc::Sum), ("x", AggFunc::Count)])
                .unwrap()
        },
        |f| {
            f.filter(col("x").gt(lit(100.0)))
                .unwrap()
                .groupby(&["key"])
                .unwrap()
                .agg(&[("x", AggFunc::Mean)])
                .unwrap()
        },
    ];
    same_answers(&queries, &scanned, &held, 50_000);
    let plan = queries[0](&scanned).explain().unwrap();
    assert!(plan.contains("key as dictionary codes or views"), "{plan}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Decimals of at most 18 digits a Parquet scan hands over in 64 bits (the cpu backend
/// reads them so where only arithmetic and sums see them) give the sums, means and types
/// that the same rows held in memory give: TPC-H Q1's shape (a filter on another column,
/// products, sums and means, a count), a decimal a filter reads, one a `min` reads, and
/// sums without keys; with nulls, and with a decimal stored in INT32 beside them.
#[test]
fn decimals_read_in_64_bits_sum_as_their_decimal128_values() {
    use arrow_array::Decimal128Array;
    let d = dir("pq-narrow-decimals");
    let n = 4000i128;
    let dec = |p: u8, f: &dyn Fn(i128) -> Option<i128>| -> ArrayRef {
        let a: Decimal128Array = (0..n).map(f).collect();
        Arc::new(a.with_precision_and_scale(p, 2).unwrap())
    };
    let flag: StringArray = (0..n)
        .map(|i| Some(["A", "N", "R"][(i * 7 % 3) as usize]))
        .collect();
    let day: Int64Array = (0..n as i64).map(|i| Some(i % 365)).collect();
    let batch = arrow_array::RecordBatch::try_from_iter([
        ("flag", Arc::new(flag) as ArrayRef),
        ("day", Arc::new(day) as ArrayRef),
        (
            "price",
            dec(15, &|i| {
                (i % 13 != 5).then_some(i * 1_234_567 - 2_000_000_000)
            }),
        ),
        ("discount", dec(4, &|i| Some(i % 11))),
        ("tax", dec(12, &|i| Some(i % 9))),
    ])
    .unwrap();
    let df = DataFrame::from_record_batch(batch, 3, None).unwrap();
    df.to_parquet(&p(&d, "dec.parquet")).unwrap();
    let scanned = read_parquet(&p(&d, "dec.parquet")).unwrap();
    // The same rows in memory: no scan under the groupby, so every decimal in 128 bits.
    let held = scanned.persist().unwrap();
    let revenue = || col("price") * (lit(1) - col("discount"));
    let queries: [Query; 4] = [
        |f| {
            let revenue = col("price") * (lit(1) - col("discount"));
            f.filter(col("day").lt_eq(lit(300)))
                .unwrap()
                .groupby(&["flag"])
                .unwrap()
                .agg_exprs(&[
                    (col("price"), AggFunc::Sum, "sum_price"),
                    (revenue.clone(), AggFunc::Sum, "sum_revenue"),
                    (revenue * (lit(1) + col("tax")), AggFunc::Sum, "sum_charge"),
                    (col("price"), AggFunc::Mean, "avg_price"),
                    (col("discount"), AggFunc::Mean, "avg_discount"),
                    (col("price"), AggFunc::Count, "count_price"),
                ])
                .unwrap()
        },
        |f| {
            f.filter(col("price").gt(lit(0)))
                .unwrap()
                .groupby(&["flag"])
                .unwrap()
                .agg(&[("price", AggFunc::Sum), ("tax", AggFunc::Sum)])
                .unwrap()
        },
        |f| {
            f.groupby(&["flag"])
                .unwrap()
                .agg(&[("price", AggFunc::Min), ("price", AggFunc::Sum)])
                .unwrap()
        },
        |f| {
            f.agg(&[("price", AggFunc::Sum), ("tax", AggFunc::Mean)])
                .unwrap()
        },
    ];
    same_answers(&queries, &scanned, &held, 1);
    // The forms are decided when the plan is optimized, and explain() says which: in Q1's
    // shape the key passes through and every decimal reaches only arithmetic and sums.
    let plan = queries[0](&scanned).explain().unwrap();
    assert!(
        plan.contains(
            "stored forms for the groupby (where the file keeps them): flag as dictionary \
             codes or views, price as 64-bit decimals, discount as 64-bit decimals, tax as 64-bit decimals"
        ),
        "{plan}"
    );
    // A decimal a filter reads stays in 128 bits; rows held in memory have no scan.
    let plan = queries[1](&scanned).explain().unwrap();
    assert!(
        plan.contains("tax as 64-bit decimals") && !plan.contains("price as 64-bit"),
        "{plan}"
    );
    assert!(!queries[0](&held)
        .explain()
        .unwrap()
        .contains("stored forms"));
    // A sum checked by hand: the whole price column, at the revenue's scale (4).
    let total: i128 = (0..n)
        .filter(|i| i % 13 != 5)
        .map(|i| i * 1_234_567 - 2_000_000_000)
        .sum();
    let got = scanned
        .agg_exprs(&[(revenue() - revenue() + col("price"), AggFunc::Sum, "s")])
        .unwrap()
        .compute()
        .unwrap()
        .concat()
        .unwrap();
    let s = got
        .column(0)
        .as_any()
        .downcast_ref::<Decimal128Array>()
        .unwrap();
    assert_eq!((s.value(0), s.scale()), (total * 100, 4));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn pushdown_shows_in_explain_and_keeps_results() {
    let d = dir("pushdown");
    let df = sample();
    df.to_parquet(&p(&d, "s.parquet")).unwrap();
    df.to_csv(&p(&d, "s.csv")).unwrap();
    // ids are sorted, so `id >= 900` can only match the last of 4 row groups.
    let q = read_parquet(&p(&d, "s.parquet"))
        .unwrap()
        .filter(col("id").gt_eq(900))
        .unwrap()
        .agg(&[("x", AggFunc::Sum)])
        .unwrap();
    let plan = q.explain().unwrap();
    assert!(plan.contains("1 of 4 partitions"), "{plan}");
    assert!(plan.contains("reads 2 of 5 columns [id, x]"), "{plan}");
    assert!(plan.contains("predicates pushed down: id >= 900"), "{plan}");
    let want = df
        .filter(col("id").gt_eq(900))
        .unwrap()
        .agg(&[("x", AggFunc::Sum)])
        .unwrap()
        .compute()
        .unwrap()
        .value("x", 0)
        .unwrap();
    assert_eq!(q.compute().unwrap().value("x", 0).unwrap(), want);
    let c = read_csv(&p(&d, "s.csv"), CsvOptions::default())
        .unwrap()
        .groupby(&["b"])
        .unwrap()
        .mean("x")
        .unwrap();
    let plan = c.explain().unwrap();
    assert!(plan.contains("reads 2 of 5 columns [x, b]"), "{plan}");
    assert_eq!(
        read_csv(&p(&d, "s.csv"), CsvOptions::default())
            .unwrap()
            .len()
            .unwrap(),
        1000
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn malformed_csv_names_file_line_and_column() {
    let d = dir("bad");
    let f = p(&d, "bad.csv");
    // The error of reading `contents` as `f` with `opts`.
    let error_of = |contents: &str, opts: CsvOptions| {
        std::fs::write(&f, contents).unwrap();
        read_csv(&f, opts)
            .unwrap()
            .compute()
            .unwrap_err()
            .to_string()
    };
    // Inference would make `b` a string column; a declared type makes `oops` an error.
    let e = error_of(
        "a,b,c\n1,2.5,x\n2,3.5,y\n3,oops,z\n",
        CsvOptions::default().dtype("b", arrow_schema::DataType::Float64),
    );
    assert!(
        e.contains("bad.csv:4: column 'b'") && e.contains("cannot parse 'oops' as Float64"),
        "{e}"
    );
    let e = error_of("a,b,c\n1,2,3\n4,5\n", CsvOptions::default());
    assert!(
        e.contains("bad.csv:3:") && e.contains("2 fields, but the header has 3"),
        "{e}"
    );
    let e = error_of("a,b\n1,2,3\n", CsvOptions::default());
    assert!(
        e.contains("bad.csv:2:") && e.contains("3 fields, but the header has 2"),
        "{e}"
    );
    let e = error_of(
        "a,t\n1,2015-13-01\n",
        CsvOptions::default().parse_dates(&["t"]),
    );
    assert!(e.contains("column 't'") && e.contains("timestamp"), "{e}");
    let e = read_csv(&f, CsvOptions::default().parse_dates(&["nope"]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("parse_dates names 'nope'"), "{e}");
    let e = read_csv(&p(&d, "missing-*.csv"), CsvOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no file matches"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn csv_options_quotes_nulls_no_header_and_overrides() {
    let d = dir("opts");
    let f = p(&d, "o.csv");
    std::fs::write(&f, "1;\"a;b\";NA\r\n2;\"say \"\"x\"\"\";3\r\n;c;4.5\r\n").unwrap();
    let opts = CsvOptions::default()
        .has_header(false)
        .delimiter(b';')
        .dtype("column_1", arrow_schema::DataType::Float64);
    let out = read_csv(&f, opts).unwrap().compute().unwrap();
    assert_eq!(
        out.schema.field(0).data_type(),
        &arrow_schema::DataType::Float64
    );
    assert_eq!(out.value("column_1", 2).unwrap(), Value::Null);
    assert_eq!(out.value("column_2", 0).unwrap(), Value::Str("a;b".into()));
    assert_eq!(
        out.value("column_2", 1).unwrap(),
        Value::Str("say \"x\"".into())
    );
    assert_eq!(out.value("column_3", 0).unwrap(), Value::Null);
    assert_eq!(out.value("column_3", 2).unwrap(), Value::Float(4.5));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unquoted_csv_with_crlf_blank_lines_and_no_final_newline() {
    let d = dir("crlf");
    let f = p(&d, "c.csv");
    // Long enough lines that the word-at-a-time scan (8 bytes per step) is exercised.
    std::fs::write(
        &f,
        "key,name,value\r\n1,alpha-long-name,0.5\r\n\r\n22,b,1.25\r\n333,gamma,2\n4,d,-3",
    )
    .unwrap();
    for bytes in [1 << 20, 9, 1] {
        let df = read_csv(&f, CsvOptions::default().partition_bytes(bytes)).unwrap();
        let out = df.compute().unwrap();
        assert_eq!(out.num_rows(), 4, "partition_bytes {bytes}");
        assert_eq!(out.value("value", 1).unwrap(), Value::Float(1.25));
        assert_eq!(out.value("value", 3).unwrap(), Value::Float(-3.0));
        assert_eq!(
            out.value("name", 0).unwrap(),
            Value::Str("alpha-long-name".into())
        );
        assert_eq!(out.value("key", 2).unwrap(), Value::Int(333));
        let only_last = df.select(&["value"]).unwrap().compute().unwrap();
        assert_eq!(only_last.value("value", 0).unwrap(), Value::Float(0.5));
        assert_eq!(df.len().unwrap(), 4);
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn failed_write_leaves_no_file() {
    let d = dir("atomic");
    let missing = p(&d, "no/such/dir/out.csv");
    let e = sample().to_csv(&missing).unwrap_err().to_string();
    assert!(e.contains("no/such/dir"), "{e}");
    assert!(!Path::new(&missing).exists());
    std::fs::remove_dir_all(&d).unwrap();
}

/// Parquet written by tessera is read by pyarrow and the other way round. Runs when
/// `python3` (or `$PYTHON`) can import pyarrow; otherwise it says it was skipped.
#[test]
fn parquet_interop_with_pyarrow() {
    let Some(python) = crate::common::python_with("parquet_interop_with_pyarrow", "pyarrow") else {
        return;
    };
    let d = dir("pyarrow");
    let ours = p(&d, "tessera.parquet");
    let theirs = p(&d, "pyarrow.parquet");
    sample().to_parquet(&ours).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/scripts/parquet_interop.py"
    );
    crate::common::run_python(&python, script, &[&ours, &theirs]);
    // The script wrote id = 0..99, name = "n{id}", value = id * 0.5 in 2 row groups.
    let back = read_parquet(&theirs).unwrap();
    assert_eq!(back.npartitions(), 2);
    let c = back.compute().unwrap();
    assert_eq!(c.num_rows(), 100);
    assert_eq!(c.value("name", 42).unwrap(), Value::Str("n42".into()));
    assert_eq!(
        back.reduce("value", AggFunc::Sum).unwrap(),
        Value::Float(2475.0)
    );
    // pyarrow's write_to_dataset(partition_cols=["year", "city"]): keys from the paths,
    // "New York" unescaped, the null city from __HIVE_DEFAULT_PARTITION__.
    let hive = read_parquet(&format!("{theirs}_hive")).unwrap();
    let names: Vec<String> = hive
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", "value", "year", "city"]);
    assert_eq!(hive.reduce("id", AggFunc::Sum).unwrap(), Value::Int(4950));
    let year_sum: i64 = (0..100).map(|i| 2020 + i % 3).sum();
    assert_eq!(
        hive.reduce("year", AggFunc::Sum).unwrap(),
        Value::Int(year_sum)
    );
    let ny = hive.filter(col("city").eq("New York")).unwrap();
    assert_eq!(ny.reduce("id", AggFunc::Count).unwrap(), Value::Int(25));
    assert_eq!(hive.reduce("city", AggFunc::Count).unwrap(), Value::Int(75));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unreadable_parquet_is_a_parquet_error_naming_the_file() {
    let d = dir("bad-parquet");
    let path = p(&d, "bad.parquet");
    std::fs::write(&path, b"PAR1 this is not a parquet file PAR1").unwrap();
    let e = read_parquet(&path).unwrap_err();
    match &e {
        tessera::Error::Parquet {
            op, path: named, ..
        } => {
            assert_eq!(op, "read_parquet");
            assert_eq!(named, &path);
        }
        other => panic!("expected Error::Parquet, got {other:?}"),
    }
    // The cause is kept, not flattened into a string.
    assert!(std::error::Error::source(&e).is_some(), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn map_partitions_errors_name_map_partitions_and_the_partition() {
    let e = sample()
        .map_partitions(|b| {
            if b.num_rows() > 0 {
                Err(tessera::Error::invalid("mine", "no thanks"))
            } else {
                Ok(b)
            }
        })
        .unwrap()
        .compute()
        .unwrap_err();
    assert!(
        matches!(&e, tessera::Error::UserFunction { op, detail }
            if op == "map_partitions" && detail.contains("partition") && detail.contains("no thanks")),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with("map_partitions: partition "),
        "{e}"
    );
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_column_and_an_empty_file_is_an_error() {
    let d = dir("bom");
    let path = p(&d, "bom.csv");
    std::fs::write(&path, b"\xEF\xBB\xBFid,x\n1,2.5\n2,3.5\n").unwrap();
    let df = read_csv(&path, CsvOptions::default()).unwrap();
    assert_eq!(df.columns(), ["id", "x"]);
    assert_eq!(df.reduce("id", AggFunc::Sum).unwrap(), Value::Int(3));
    // Without a header the mark is not part of the first value either.
    let df = read_csv(&path, CsvOptions::default().has_header(false)).unwrap();
    assert_eq!(
        df.compute().unwrap().value("column_1", 0).unwrap(),
        Value::Str("id".into())
    );
    let empty = p(&d, "empty.csv");
    std::fs::write(&empty, b"").unwrap();
    let e = read_csv(&empty, CsvOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("empty.csv") && e.contains("the file is empty"),
        "{e}"
    );
    std::fs::write(&empty, b"\xEF\xBB\xBF").unwrap();
    assert!(read_csv(&empty, CsvOptions::default()).is_err());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_panicking_user_function_is_an_error_naming_the_partition() {
    let e = sample()
        .map_partitions(|b| {
            if b.num_rows() > 0 {
                panic!("user code bug");
            }
            Ok(b)
        })
        .unwrap()
        .compute()
        .unwrap_err();
    assert!(
        matches!(&e, tessera::Error::UserFunction { op, detail }
            if op == "map_partitions" && detail.contains("panicked on partition") && detail.contains("user code bug")),
        "{e:?}"
    );
}

/// Corrupt data pages anywhere in a Parquet file: every read ends in `Ok` or a typed
/// error — a panic inside the parquet crate is caught at the task boundary.
#[test]
fn corrupt_parquet_pages_never_panic_through_the_caller() {
    let d = dir("corrupt-pq");
    let good = p(&d, "good.parquet");
    sample().to_parquet(&good).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let (mut errors, mut caught) = (0, 0);
    for k in 0..64 {
        let mut b = bytes.clone();
        // Flip bytes in the data region (after the 4-byte magic, before the footer).
        let body = b.len() - 8 - 4;
        for j in 0..4 {
            let at = 4 + (k * 97 + j * 31) % body;
            b[at] ^= 0x5a;
        }
        let path = p(&d, &format!("bad-{k}.parquet"));
        std::fs::write(&path, &b).unwrap();
        let r = std::panic::catch_unwind(|| read_parquet(&path).and_then(|df| df.compute()));
        match r {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                errors += 1;
                let text = e.to_string();
                assert!(text.contains("bad-"), "the error names the file: {text}");
                if text.contains("panicked") {
                    caught += 1;
                }
            }
            Err(_) => panic!("reading bad-{k}.parquet panicked through the caller"),
        }
    }
    assert!(errors > 0, "no corruption was detected at all");
    println!("{errors} of 64 corrupt files refused, {caught} of them by a caught decoder panic");
    let _ = std::fs::remove_dir_all(&d);
}

/// A file replaced (atomically, as writers do) or appended to between building a frame
/// and computing it is refused with FileChanged — never rows of two versions.
#[test]
fn a_file_that_changes_after_planning_is_refused() {
    let d = dir("changed");
    let csv = p(&d, "t.csv");
    let body = |n: usize| {
        let mut s = String::from("a,b\n");
        for i in 0..n {
            s.push_str(&format!("{i},{}\n", i * 2));
        }
        s
    };
    std::fs::write(&csv, body(1000)).unwrap();
    let opts = CsvOptions::default().partition_bytes(1024);
    // Replaced by rename between planning and computing.
    let df = read_csv(&csv, opts.clone()).unwrap();
    let tmp = p(&d, "t.csv.tmp");
    std::fs::write(&tmp, body(1500)).unwrap();
    std::fs::rename(&tmp, &csv).unwrap();
    let e = df.compute().unwrap_err();
    assert!(matches!(e, tessera::Error::FileChanged { .. }), "{e:?}");
    assert!(
        e.to_string().contains("t.csv") && e.to_string().contains("replaced"),
        "{e}"
    );
    // Planned again, it reads the new version whole.
    assert_eq!(read_csv(&csv, opts.clone()).unwrap().len().unwrap(), 1500);
    // Appended to in place.
    let df = read_csv(&csv, opts.clone()).unwrap();
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&csv)
        .unwrap()
        .write_all(b"9999,1\n")
        .unwrap();
    let e = df.compute().unwrap_err();
    assert!(e.to_string().contains("size went from"), "{e}");

    let pq = p(&d, "t.parquet");
    sample().to_parquet(&pq).unwrap();
    let df = read_parquet(&pq).unwrap();
    let other = p(&d, "other.parquet");
    sample()
        .filter(tessera::frame::col("id").gt(500))
        .unwrap()
        .to_parquet(&other)
        .unwrap();
    std::fs::rename(&other, &pq).unwrap();
    let e = df.compute().unwrap_err();
    assert!(matches!(e, tessera::Error::FileChanged { .. }), "{e:?}");
    let _ = std::fs::remove_dir_all(&d);
}

fn rows_frame(n: usize, parts: usize, tag: i64) -> DataFrame {
    let id: Int64Array = (0..n).map(|i| Some(i as i64)).collect();
    let t: Int64Array = (0..n).map(|_| Some(tag)).collect();
    DataFrame::from_columns(vec![("id", Arc::new(id)), ("tag", Arc::new(t))], parts).unwrap()
}

/// Writing 2 parts over an earlier 8-part output leaves exactly the 2 new parts — in a
/// directory of its own and in one shared with other files.
#[test]
fn a_dataset_write_leaves_no_stale_parts_of_an_earlier_write() {
    let d = dir("stale");
    for (sub, keep) in [("own", false), ("shared", true)] {
        let out = d.join(sub);
        std::fs::create_dir_all(&out).unwrap();
        if keep {
            std::fs::write(out.join("notes.txt"), b"not part of the dataset").unwrap();
        }
        let pattern = out.join("part-*.csv").to_string_lossy().into_owned();
        rows_frame(8000, 8, 1).to_csv(&pattern).unwrap();
        assert_eq!(
            read_csv(&pattern, CsvOptions::default())
                .unwrap()
                .len()
                .unwrap(),
            8000
        );
        let written = rows_frame(2000, 2, 2).to_csv(&pattern).unwrap();
        assert_eq!(written.len(), 2);
        let back = read_csv(&pattern, CsvOptions::default()).unwrap();
        assert_eq!(
            back.len().unwrap(),
            2000,
            "{sub}: stale parts were read back"
        );
        assert_eq!(back.reduce("tag", AggFunc::Min).unwrap(), Value::Int(2));
        assert_eq!(out.join("notes.txt").exists(), keep, "{sub}");
        // No staging directory is left beside or inside the target.
        let hidden = |p: &Path| {
            std::fs::read_dir(p)
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().contains("tessera-"))
        };
        assert!(!hidden(&d) && !hidden(&out), "{sub}: staging left behind");
        let pq = out.join("p-*.parquet").to_string_lossy().into_owned();
        if !keep {
            rows_frame(800, 8, 1).to_parquet(&pq).unwrap();
            rows_frame(200, 2, 2).to_parquet(&pq).unwrap();
            assert_eq!(read_parquet(&pq).unwrap().len().unwrap(), 200);
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A commit into a directory shared with other files that fails midway (the third new
/// part cannot be renamed in: a folder holds its name) leaves the old parts as they were,
/// and no new part beside them.
#[cfg(unix)]
#[test]
fn a_failed_commit_into_a_shared_directory_keeps_the_old_parts() {
    let d = dir("failed-merge");
    let out = d.join("shared");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), b"not part of the dataset").unwrap();
    let pattern = out.join("part-*.csv").to_string_lossy().into_owned();
    rows_frame(2000, 2, 1).to_csv(&pattern).unwrap();
    let old: Vec<Vec<u8>> = (0..2)
        .map(|i| std::fs::read(out.join(format!("part-{i}.csv"))).unwrap())
        .collect();
    std::fs::create_dir_all(out.join("part-2.csv").join("inside")).unwrap();
    let err = rows_frame(3000, 3, 2).to_csv(&pattern).unwrap_err();
    assert!(matches!(err, tessera::Error::Io { .. }), "{err}");
    for (i, body) in old.iter().enumerate() {
        assert_eq!(
            &std::fs::read(out.join(format!("part-{i}.csv"))).unwrap(),
            body,
            "part {i} of the old dataset was replaced by a commit that failed"
        );
    }
    let entries: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries.len(),
        4,
        "only the old parts, the notes and the folder: {entries:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Run by `a_writer_killed_mid_write_leaves_a_whole_dataset`: rewrites a dataset until it
/// is killed.
#[test]
#[ignore = "helper process of a_writer_killed_mid_write_leaves_a_whole_dataset"]
fn dataset_writer_child() {
    // A dataset of parts, or one file (no `*`): the same loop.
    let Ok(pattern) = std::env::var("DATASET_WRITER_PATTERN") else {
        return;
    };
    let frame = rows_frame(60_000, 6, 2);
    loop {
        frame.to_csv(&pattern).unwrap();
    }
}

/// This test binary rerun as [`dataset_writer_child`], rewriting `pattern` until killed.
#[cfg(unix)]
fn spawn_writer(pattern: &str) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "frame_io::dataset_writer_child",
            "--ignored",
            "--quiet",
        ])
        .env("DATASET_WRITER_PATTERN", pattern)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// A writer killed (SIGKILL) at random points of a dataset write: the reader finds the
/// whole old dataset or the whole new one, never a mix or a partial file; what killed
/// writers (of the dataset, and of a single file) left, the next write into the directory
/// removes, whatever its target.
#[cfg(unix)]
#[test]
fn a_writer_killed_mid_write_leaves_a_whole_dataset() {
    let d = dir("killed");
    let out = d.join("data");
    let pattern = out.join("part-*.csv").to_string_lossy().into_owned();
    rows_frame(4000, 4, 1).to_csv(&pattern).unwrap();
    let mut seen_new = false;
    for round in 0..6u64 {
        let mut child = spawn_writer(&pattern);
        std::thread::sleep(std::time::Duration::from_millis(150 + 97 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        match read_csv(&pattern, CsvOptions::default()).and_then(|df| df.len()) {
            Ok(4000) => {}
            Ok(60_000) => seen_new = true,
            Ok(n) => panic!("round {round}: a mixed or partial dataset of {n} rows"),
            // Killed between the two renames of the swap: no dataset under the name.
            Err(tessera::Error::Io { .. }) => {}
            Err(e) => panic!("round {round}: {e}"),
        }
    }
    // A single-file writer killed mid-write leaves its temporary file beside the target:
    // killed as soon as a temporary file of its own (its pid is in the name) appears; a
    // fixed delay missed the write on a loaded machine, where the child had not started.
    let one = d.join("one.csv").to_string_lossy().into_owned();
    let temporaries = |of: Option<u32>| {
        std::fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".one.csv.tmp-"))
            .filter(|n| of.is_none_or(|pid| n.contains(&format!("-{pid}-"))))
            .count()
    };
    for _ in 0..2 {
        let mut child = spawn_writer(&one);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while temporaries(Some(child.id())) == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let left = temporaries(None);
    assert!(
        left >= 1,
        "no kill landed inside a write; the test proves nothing"
    );
    // The next write into the directory — of another target — removes whatever the
    // killed writers left (their processes are gone), and the datasets are whole.
    rows_frame(10, 1, 1)
        .to_csv(&d.join("other.csv").to_string_lossy())
        .unwrap();
    rows_frame(4000, 4, 1).to_csv(&pattern).unwrap();
    assert_eq!(
        read_csv(&pattern, CsvOptions::default())
            .unwrap()
            .len()
            .unwrap(),
        4000
    );
    let leftovers: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .chain(std::fs::read_dir(&out).unwrap())
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("tessera-") || n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    println!("new dataset observed after a kill: {seen_new}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Mounts a tmpfs of `size` at `mnt` (created first); `false`, with `test` recorded as
/// skipped and why, where that cannot be done (it needs root).
#[cfg(target_os = "linux")]
fn mount_tmpfs(mnt: &std::path::Path, size: &str, test: &str) -> bool {
    std::fs::create_dir_all(mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(mnt)
        .output();
    let why = match mounted {
        Ok(o) if o.status.success() => return true,
        Ok(o) => format!(
            "cannot mount a tmpfs here (needs root): {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("cannot run mount: {e}"),
    };
    tessera_conformance::skip::skip(test, &why);
    false
}

/// A full disk (a 256 KiB tmpfs): every write fails with an I/O error naming the target,
/// the earlier file or dataset stays whole, and no temporary file is left.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_an_io_error_and_keeps_the_earlier_output() {
    let d = dir("enospc");
    let mnt = d.join("small");
    if !mount_tmpfs(
        &mnt,
        "256k",
        "a_full_disk_is_an_io_error_and_keeps_the_earlier_output",
    ) {
        return;
    }
    let check = || {
        let single = mnt.join("one.csv");
        rows_frame(100, 1, 1)
            .to_csv(single.to_str().unwrap())
            .unwrap();
        let e = rows_frame(200_000, 4, 2)
            .to_csv(single.to_str().unwrap())
            .unwrap_err();
        assert!(
            matches!(e, tessera::Error::Io { ref path, .. } if path.ends_with("one.csv")),
            "{e:?}"
        );
        assert!(e.to_string().contains("No space left"), "{e}");
        assert_eq!(
            read_csv(single.to_str().unwrap(), CsvOptions::default())
                .unwrap()
                .len()
                .unwrap(),
            100
        );
        let pattern = mnt
            .join("ds")
            .join("part-*.csv")
            .to_string_lossy()
            .into_owned();
        rows_frame(400, 4, 1).to_csv(&pattern).unwrap();
        let e = rows_frame(200_000, 4, 2).to_csv(&pattern).unwrap_err();
        assert!(matches!(e, tessera::Error::Io { .. }), "{e:?}");
        assert!(
            e.to_string().contains("part-"),
            "names a part, not a temporary: {e}"
        );
        assert_eq!(
            read_csv(&pattern, CsvOptions::default())
                .unwrap()
                .len()
                .unwrap(),
            400
        );
        let pq = mnt.join("big.parquet");
        let e = rows_frame(400_000, 1, 2)
            .to_parquet(pq.to_str().unwrap())
            .unwrap_err();
        assert!(
            matches!(e, tessera::Error::Io { .. }),
            "a full disk under parquet is I/O: {e:?}"
        );
        let left: Vec<String> = std::fs::read_dir(&mnt)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    };
    let outcome = std::panic::catch_unwind(check);
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    let _ = std::fs::remove_dir_all(&d);
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

/// A dataset written into a directory that is itself a mount point (a volume mounted at
/// the target): staged inside it, since no rename crosses into another filesystem or
/// replaces a mount point, and committed part by part; a second, smaller write leaves no
/// stale part and no staging directory. Needs root, to mount a tmpfs.
#[cfg(target_os = "linux")]
#[test]
fn a_dataset_writes_into_a_mount_point() {
    let d = dir("mountpoint");
    let mnt = d.join("volume");
    if !mount_tmpfs(&mnt, "8m", "a_dataset_writes_into_a_mount_point") {
        return;
    }
    let check = || {
        let pattern = mnt.join("part-*.csv").to_string_lossy().into_owned();
        for (rows, parts) in [(400, 4), (100, 2)] {
            rows_frame(rows, parts, 1).to_csv(&pattern).unwrap();
            let back = read_csv(&pattern, CsvOptions::default()).unwrap();
            assert_eq!(back.len().unwrap(), rows);
        }
        let mut names: Vec<String> = std::fs::read_dir(&mnt)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            vec!["part-0.csv", "part-1.csv"],
            "stale parts or staging left"
        );
    };
    let outcome = std::panic::catch_unwind(check);
    let _ = std::process::Command::new("umount").arg(&mnt).status();
    let _ = std::fs::remove_dir_all(&d);
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
}

/// Decimal columns stay exact decimals: a decimal(15,2) column's statistics are compared
/// scaled, so pushdown keeps the right row groups; sums are Decimal128(38, 2) with every
/// digit; arithmetic types as DuckDB's (`+` one more digit, `*` adds scales), `/` and
/// floats compute in Float64; means are one division of the exact sum.
#[test]
fn parquet_decimals_stay_exact_with_scaled_statistics() {
    use arrow_array::Decimal128Array;
    use arrow_schema::DataType;
    let d = dir("decimal");
    let path = p(&d, "lineitem.parquet");
    // l_quantity = 0.00, 0.50, ..., 49.50 and l_discount = 0.00 .. 0.09, as decimal(15,2),
    // in 4 row groups.
    let q = Decimal128Array::from((0..100i128).map(|i| i * 50).collect::<Vec<_>>())
        .with_precision_and_scale(15, 2)
        .unwrap();
    let disc = Decimal128Array::from((0..100i128).map(|i| i % 10).collect::<Vec<_>>())
        .with_precision_and_scale(15, 2)
        .unwrap();
    DataFrame::from_columns(
        vec![("l_quantity", Arc::new(q)), ("l_discount", Arc::new(disc))],
        4,
    )
    .unwrap()
    .to_parquet(&path)
    .unwrap();
    let df = read_parquet(&path).unwrap();
    assert_eq!(
        df.schema().field(0).data_type(),
        &DataType::Decimal128(15, 2)
    );
    let small = df.filter(col("l_quantity").lt(24)).unwrap();
    assert!(small.explain().unwrap().contains("2 of 4 partitions"));
    assert_eq!(small.len().unwrap(), 48);
    let dec = |unscaled, scale| Value::Decimal { unscaled, scale };
    assert_eq!(
        small.reduce("l_quantity", AggFunc::Sum).unwrap(),
        dec(56400, 2)
    );
    assert_eq!(
        df.reduce("l_quantity", AggFunc::Sum).unwrap(),
        dec(247500, 2)
    );
    assert_eq!(
        df.reduce("l_quantity", AggFunc::Mean).unwrap(),
        Value::Float(24.75)
    );
    let big = df.filter(col("l_quantity").gt_eq(49.5)).unwrap();
    assert_eq!(big.len().unwrap(), 1);
    // Revenue as TPC-H writes it: decimal(15,2) * (1 - decimal(15,2)) has scale 4, and
    // its sum is exact: sum over i of 0.5 i (1 - (i mod 10) / 100).
    let revenue = df
        .with_column("r", col("l_quantity") * (lit(1) - col("l_discount")))
        .unwrap();
    assert_eq!(
        revenue.schema().field_with_name("r").unwrap().data_type(),
        &DataType::Decimal128(31, 4)
    );
    let want: i128 = (0..100i128).map(|i| i * 50 * (100 - i % 10)).sum();
    assert_eq!(revenue.reduce("r", AggFunc::Sum).unwrap(), dec(want, 4));
    assert_eq!(dec(want, 4).to_string(), "2359.5000");
    // `+` of different scales meets at the larger one; `/` is Float64.
    let mixed = df
        .with_column(
            "s",
            col("l_quantity") + col("l_discount").cast(DataType::Decimal128(6, 3)),
        )
        .unwrap()
        .with_column("d", col("l_quantity") / col("l_discount"))
        .unwrap();
    let schema = mixed.schema();
    assert_eq!(
        schema.field_with_name("s").unwrap().data_type(),
        &DataType::Decimal128(17, 3)
    );
    assert_eq!(
        schema.field_with_name("d").unwrap().data_type(),
        &DataType::Float64
    );
    let row = mixed
        .filter(col("l_quantity").eq(lit(12.5)))
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(row.value("s", 0).unwrap(), dec(12550, 3));
    assert_eq!(row.value("d", 0).unwrap(), Value::Float(12.5 / 0.05));
    // A running sum across the row groups stays exact too.
    let running = df
        .window("l_quantity", tessera::frame::WindowFunc::CumSum, "run")
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(running.value("run", 99).unwrap(), dec(247500, 2));
    assert_eq!(running.value("run", 3).unwrap(), dec(300, 2));
    let _ = std::fs::remove_dir_all(&d);
}

/// A hive-partitioned dataset (`year=Y/month=M/part.parquet`): the keys become typed
/// columns, aggregations see them, and a filter on them never touches the other files
/// (one of which is replaced after planning, which would be an error if it were read).
#[test]
fn hive_partitioned_parquet_reads_keys_as_columns_and_prunes_files() {
    let d = dir("hive");
    let n = 100i64;
    for year in [2023, 2024] {
        for month in [1, 2] {
            let sub = d.join(format!("year={year}/month={month}"));
            std::fs::create_dir_all(&sub).unwrap();
            let id: ArrayRef = Arc::new((0..n).map(Some).collect::<Int64Array>());
            let fare: ArrayRef = Arc::new(
                (0..n)
                    .map(|i| Some((year * 10 + month) as f64 + i as f64))
                    .collect::<Float64Array>(),
            );
            let batch =
                arrow_array::RecordBatch::try_from_iter([("id", id), ("fare", fare)]).unwrap();
            DataFrame::from_record_batch(batch, 1, None)
                .unwrap()
                .to_parquet(&p(&sub, "part-0.parquet"))
                .unwrap();
        }
    }
    // A file the readers skip, as Spark's and pyarrow's do.
    std::fs::write(d.join("year=2024/_SUCCESS"), b"").unwrap();
    let df = read_parquet(d.to_str().unwrap()).unwrap();
    let names: Vec<String> = df
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", "fare", "year", "month"]);
    assert_eq!(
        df.schema().field_with_name("year").unwrap().data_type(),
        &arrow_schema::DataType::Int64
    );
    assert_eq!(df.reduce("id", AggFunc::Count).unwrap(), Value::Int(4 * n));
    assert_eq!(
        df.reduce("year", AggFunc::Sum).unwrap(),
        Value::Int(n * 2 * (2023 + 2024))
    );
    // Replace a 2023 file after planning: reading it would be FileChanged.
    let planned = df.filter(col("year").eq(2024i64)).unwrap();
    std::fs::write(d.join("year=2023/month=1/part-0.parquet"), b"changed").unwrap();
    let by_month = planned
        .groupby(&["month"])
        .unwrap()
        .agg(&[("fare", AggFunc::Sum)])
        .unwrap()
        .sort_values(&["month"], &[true])
        .unwrap()
        .compute()
        .unwrap();
    let want = |month: i64| (0..n).map(|i| (20240 + month + i) as f64).sum::<f64>();
    assert_eq!(by_month.value("fare", 0).unwrap(), Value::Float(want(1)));
    assert_eq!(by_month.value("fare", 1).unwrap(), Value::Float(want(2)));
    let err = df.reduce("fare", AggFunc::Sum).unwrap_err();
    assert!(matches!(err, tessera::Error::FileChanged { .. }), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Binary columns (what pyarrow writes for `bytes`): a Parquet round trip, groupby and
/// join keys, min/max, sorting, and hex display.
#[test]
fn binary_columns_group_join_sort_and_round_trip() {
    let d = dir("binary");
    let bytes: Vec<Option<&[u8]>> = vec![
        Some(b"\x00\x01"),
        None,
        Some(b"\xff"),
        Some(b"\x00\x01"),
        Some(b""),
        Some(b"\xff"),
    ];
    let b: ArrayRef = Arc::new(arrow_array::BinaryArray::from(bytes));
    let v: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5, 6]));
    let df = DataFrame::from_record_batch(
        tessera::frame::batch_from_columns(vec![("b", b), ("v", v)]).unwrap(),
        2,
        None,
    )
    .unwrap();
    let path = p(&d, "bin.parquet");
    df.to_parquet(&path).unwrap();
    let back = read_parquet(&path).unwrap();
    assert_eq!(
        back.compute().unwrap().concat().unwrap(),
        df.compute().unwrap().concat().unwrap()
    );
    // Groups: [] , 0001 (two rows), ff (two rows); the null key is dropped.
    let g = back
        .groupby(&["b"])
        .unwrap()
        .agg(&[("v", AggFunc::Sum)])
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(g.num_rows(), 3);
    assert_eq!(g.value("b", 1).unwrap(), Value::Str("0001".into()));
    assert_eq!(g.value("v", 1).unwrap(), Value::Int(5));
    assert_eq!(g.value("v", 2).unwrap(), Value::Int(9));
    let m = back
        .merge(&back, &["b"], tessera::frame::JoinType::Inner)
        .unwrap();
    // 1 + 2 * 2 + 2 * 2 pairs.
    assert_eq!(m.len().unwrap(), 9);
    let mx = back.reduce("b", AggFunc::Max).unwrap();
    assert_eq!(mx, Value::Str("ff".into()));
    let sorted = back
        .sort_values(&["b"], &[false])
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(sorted.value("v", 0).unwrap(), Value::Int(3));
    assert_eq!(sorted.value("b", 5).unwrap(), Value::Null);
    // Min and max take every string type a Parquet file carries, as text.
    let views: ArrayRef = Arc::new(arrow_array::StringViewArray::from(vec![
        Some("pear"),
        None,
        Some("apple"),
    ]));
    let dict: ArrayRef = Arc::new(
        [Some("b"), Some("a"), None]
            .into_iter()
            .collect::<arrow_array::DictionaryArray<arrow_array::types::Int32Type>>(),
    );
    let s = DataFrame::from_record_batch(
        tessera::frame::batch_from_columns(vec![("s", views), ("c", dict)]).unwrap(),
        2,
        None,
    )
    .unwrap();
    assert_eq!(
        s.reduce("s", AggFunc::Min).unwrap(),
        Value::Str("apple".into())
    );
    assert_eq!(s.reduce("c", AggFunc::Max).unwrap(), Value::Str("b".into()));
    let _ = std::fs::remove_dir_all(&d);
}
