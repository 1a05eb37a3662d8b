//! One query of the dataframe workload classes that TPC-H does not stress, run by
//! tessera on the Parquet tables `bench/frame_classes.py` writes, printing one JSON line:
//! best seconds of `--repeat` runs, the process's peak RSS, and a digest of the answer
//! (rows, and per column its non-null count and the sum of its values, or of its string
//! lengths) that the script compares with DuckDB's.
//!
//! The classes: groupbys on six integer keys with as many groups as rows (`gb6_1m`,
//! `gb6_10m`), on 100k distinct strings in memory and straight from the Parquet scan where
//! they arrive dictionary-encoded (`gbstr`, `gbstr_scan`) beside the same groups on an
//! integer key (`gbint`), joins of 10M rows with 10, 10k and 10M rows on integer and string
//! keys, inner, left and outer (`join_*`), the two largest values and the correlation
//! per group (`top2`, `corr`), and db-benchmark's shapes on tables read from CSV: a
//! groupby on three string and three integer keys with nearly a group per row, the
//! strings as CSV gives them and cast to categoricals (`gb6mix_csv`, `gb6cat_csv`), a sum
//! and mean by a string key of 100k values (`gbstr_csv`), and an inner join of two 10M-row
//! tables on an integer key carrying string columns (`join_csv_10m`).
//!
//! ```text
//! cargo run --release --example frame_classes -- --data DIR --query gb6_10m [--repeat N]
//! ```
//! `--keys N` groups the `gb6_*` queries by their first N keys, and `--group-strategy` /
//! `--join-strategy` force the plan's choices, to measure them against each other.
//! The tables are read into memory (`persist`) before the clock starts, except for the
//! `_scan` query, whose timed run reads the file; `bench/frame_classes.py` runs every
//! query of every engine in a process of its own and prints the side-by-side table.

mod common;

use std::time::Instant;

use tessera::frame::arrow_array::cast::AsArray;
use tessera::frame::arrow_array::types::{
    Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type,
};
use tessera::frame::arrow_array::{Array, ArrayRef, RecordBatch};
use tessera::frame::arrow_schema::DataType;
use tessera::frame::{
    categorical_type, col, read_csv, read_parquet, AggFunc, CsvOptions, DataFrame, GroupStrategy,
    JoinStrategy, JoinType,
};

/// A column's digest: its non-null values and their sum (string columns: of their lengths).
fn column_digest(a: &ArrayRef) -> (usize, f64) {
    let n = a.len() - a.null_count();
    let sum = match a.data_type() {
        DataType::Int64 => a
            .as_primitive::<Int64Type>()
            .iter()
            .flatten()
            .map(|v| v as f64)
            .sum(),
        DataType::Int32 => a
            .as_primitive::<Int32Type>()
            .iter()
            .flatten()
            .map(f64::from)
            .sum(),
        DataType::UInt32 => a
            .as_primitive::<UInt32Type>()
            .iter()
            .flatten()
            .map(f64::from)
            .sum(),
        DataType::UInt64 => a
            .as_primitive::<UInt64Type>()
            .iter()
            .flatten()
            .map(|v| v as f64)
            .sum(),
        DataType::Float64 => a.as_primitive::<Float64Type>().iter().flatten().sum(),
        DataType::Utf8 => a
            .as_string::<i32>()
            .iter()
            .flatten()
            .map(|s| s.len() as f64)
            .sum(),
        DataType::LargeUtf8 => a
            .as_string::<i64>()
            .iter()
            .flatten()
            .map(|s| s.len() as f64)
            .sum(),
        DataType::Utf8View => a
            .as_string_view()
            .iter()
            .flatten()
            .map(|s| s.len() as f64)
            .sum(),
        DataType::Dictionary(_, _) => {
            let d = a.as_any_dictionary();
            let values = column_lengths(d.values());
            let keys = d.normalized_keys();
            (0..a.len())
                .filter(|&i| a.is_valid(i))
                .map(|i| values[keys[i]])
                .sum()
        }
        other => usage(&format!("no digest for a column of type {other}")),
    };
    (n, sum)
}

/// Per value of a dictionary's values: its string length, or the value itself.
fn column_lengths(values: &ArrayRef) -> Vec<f64> {
    (0..values.len())
        .map(|i| column_digest(&values.slice(i, 1)).1)
        .collect()
}

/// The digest of a computed answer: its rows and its columns' digests, sorted (the
/// engines name their output columns differently; the multiset is what must agree).
fn digest(schema_columns: usize, batches: &[RecordBatch]) -> (usize, Vec<(usize, f64)>) {
    let rows = batches.iter().map(|b| b.num_rows()).sum();
    let mut cols: Vec<(usize, f64)> = (0..schema_columns)
        .map(|c| {
            batches
                .iter()
                .map(|b| column_digest(b.column(c)))
                .fold((0, 0.0), |(n, s), (m, t)| (n + m, s + t))
        })
        .collect();
    cols.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    (rows, cols)
}

fn load(data: &str, table: &str, columns: &[&str]) -> tessera::Result<DataFrame> {
    read_parquet(&format!("{data}/{table}.parquet"))?
        .select(columns)?
        .persist()
}

/// A CSV table of `bench/frame_classes.py`, its `columns` read into memory, with the
/// `categorical` ones cast to categoricals.
fn load_csv(
    data: &str,
    table: &str,
    columns: &[&str],
    categorical: &[&str],
) -> tessera::Result<DataFrame> {
    let mut df =
        read_csv(&format!("{data}/{table}.csv"), CsvOptions::default())?.select(columns)?;
    for &c in categorical {
        df = df.with_column(c, col(c).cast(categorical_type()))?;
    }
    df.persist()
}

fn join(
    data: &str,
    key: &str,
    right: &str,
    how: JoinType,
    strategy: JoinStrategy,
) -> tessera::Result<Box<dyn FnMut() -> tessera::Result<DataFrame>>> {
    let fact = load(data, "fact", &[key, "x"])?;
    let dim = load(data, right, &[key, "y"])?;
    let key = key.to_string();
    Ok(Box::new(move || {
        fact.merge_on(&dim, &[&key], &[&key], how, strategy)
    }))
}

/// The choices a run may force, to measure them against each other.
struct Options {
    /// How many of the six keys the `gb6_*` queries group by.
    keys: usize,
    /// The groupby's combine (`--group-strategy tree|shuffle`; chosen by the plan if absent).
    group_strategy: Option<GroupStrategy>,
    /// The joins' strategy (`--join-strategy broadcast|shuffle`; `auto` if absent).
    join_strategy: JoinStrategy,
}

fn usage(what: &str) -> ! {
    eprintln!(
        "frame_classes: {what}\nusage: frame_classes --data DIR --query Q [--repeat N] [--keys 1..6] \
         [--group-strategy tree|shuffle] [--join-strategy broadcast|shuffle]"
    );
    std::process::exit(2)
}

fn main() -> tessera::Result<()> {
    let mut data = String::new();
    let mut query = String::new();
    let mut repeat = 3usize;
    let mut opts = Options {
        keys: 6,
        group_strategy: None,
        join_strategy: JoinStrategy::Auto,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let val = args
            .next()
            .unwrap_or_else(|| usage(&format!("{a} needs a value")));
        match (a.as_str(), val.as_str()) {
            ("--data", _) => data = val,
            ("--query", _) => query = val,
            ("--repeat", n) => {
                repeat = n
                    .parse()
                    .unwrap_or_else(|_| usage("--repeat takes a count"))
            }
            ("--keys", n) => match n.parse() {
                Ok(k @ 1..=6) => opts.keys = k,
                _ => usage("--keys takes 1 to 6"),
            },
            ("--group-strategy", "tree") => opts.group_strategy = Some(GroupStrategy::Tree),
            ("--group-strategy", "shuffle") => opts.group_strategy = Some(GroupStrategy::Shuffle),
            ("--join-strategy", "broadcast") => opts.join_strategy = JoinStrategy::Broadcast,
            ("--join-strategy", "shuffle") => opts.join_strategy = JoinStrategy::Shuffle,
            (other, _) => usage(&format!("unknown argument or value: {other} {val}")),
        }
    }
    if data.is_empty() {
        usage("--data DIR is required");
    }
    let keys6 = ["k1", "k2", "k3", "k4", "k5", "k6"];
    let mut plan: Box<dyn FnMut() -> tessera::Result<DataFrame>> = match query.as_str() {
        "gb6_1m" | "gb6_10m" => {
            let table = if query == "gb6_1m" {
                "keys6_1m"
            } else {
                "keys6_10m"
            };
            let mut cols = keys6.to_vec();
            cols.push("v");
            let t = load(&data, table, &cols)?;
            Box::new(move || {
                let g = t.groupby(&keys6[..opts.keys])?;
                let g = match opts.group_strategy {
                    Some(s) => g.strategy(s),
                    None => g,
                };
                g.agg(&[("v", AggFunc::Sum), ("v", AggFunc::Count)])
            })
        }
        "gbstr" | "gbint" => {
            let key = if query == "gbstr" { "s" } else { "k" };
            let t = load(&data, "strkeys", &[key, "v"])?;
            Box::new(move || {
                t.groupby(&[key])?
                    .agg(&[("v", AggFunc::Sum), ("v", AggFunc::Mean)])
            })
        }
        "gbstr_scan" => {
            let path = format!("{data}/strkeys.parquet");
            Box::new(move || {
                read_parquet(&path)?
                    .groupby(&["s"])?
                    .agg(&[("v", AggFunc::Sum), ("v", AggFunc::Mean)])
            })
        }
        "join_int_10" => join(&data, "k10", "dim10", JoinType::Inner, opts.join_strategy)?,
        "join_int_10k" => join(&data, "k10k", "dim10k", JoinType::Inner, opts.join_strategy)?,
        "join_int_10m" => join(&data, "k10m", "dim10m", JoinType::Inner, opts.join_strategy)?,
        "join_int_10k_left" => join(&data, "k10k", "dim10k", JoinType::Left, opts.join_strategy)?,
        "join_int_10m_left" => join(&data, "k10m", "dim10m", JoinType::Left, opts.join_strategy)?,
        "join_int_10m_outer" => join(&data, "k10m", "dim10m", JoinType::Outer, opts.join_strategy)?,
        "join_str_10k" => join(&data, "s10k", "dim10k", JoinType::Inner, opts.join_strategy)?,
        "join_str_10m" => join(&data, "s10m", "dim10m", JoinType::Inner, opts.join_strategy)?,
        "top2" => {
            let t = load(&data, "strkeys", &["k", "v"])?;
            Box::new(move || t.groupby(&["k"])?.nlargest(2, "v"))
        }
        "corr" => {
            let t = load(&data, "strkeys", &["k", "v", "w"])?;
            Box::new(move || t.groupby(&["k"])?.corr("v", "w"))
        }
        "gb6mix_csv" | "gb6cat_csv" => {
            let keys = ["id1", "id2", "id3", "id4", "id5", "id6"];
            let mut cols = keys.to_vec();
            cols.extend(["v1", "v3"]);
            let cats: &[&str] = if query == "gb6cat_csv" {
                &keys[..3]
            } else {
                &[]
            };
            let t = load_csv(&data, "dbgb", &cols, cats)?;
            Box::new(move || {
                t.groupby(&keys)?
                    .agg(&[("v3", AggFunc::Sum), ("v1", AggFunc::Count)])
            })
        }
        "gbstr_csv" => {
            let t = load_csv(&data, "dbgb", &["id3", "v1", "v3"], &[])?;
            Box::new(move || {
                t.groupby(&["id3"])?
                    .agg(&[("v1", AggFunc::Sum), ("v3", AggFunc::Mean)])
            })
        }
        "join_csv_10m" => {
            let x = load_csv(
                &data,
                "dbgb",
                &["id1", "id2", "id3", "id4", "id5", "id6", "idj", "v1", "v3"],
                &[],
            )?;
            let y = load_csv(&data, "dbjoin", &["idj", "sj", "v2"], &[])?;
            let strategy = opts.join_strategy;
            Box::new(move || x.merge_on(&y, &["idj"], &["idj"], JoinType::Inner, strategy))
        }
        other => usage(&format!("unknown query {other:?}")),
    };
    let mut best = f64::INFINITY;
    let mut answer = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let out = plan()?.compute()?;
        best = best.min(t.elapsed().as_secs_f64());
        answer = Some(out);
    }
    let out = answer.expect("ran at least once");
    let (rows, cols) = digest(out.schema.fields().len(), &out.batches);
    let cols: Vec<String> = cols.iter().map(|(n, s)| format!("[{n},{s:e}]")).collect();
    println!(
        "{{\"engine\":\"tessera\",\"query\":\"{query}\",\"seconds\":{best:.4},\"rows\":{rows},\"digest\":[{}],\"peak_rss_mb\":{:.0}}}",
        cols.join(","),
        common::peak_rss_mb()
    );
    Ok(())
}
