//! Every branch of the external sort under budgets small enough to take it — ranges in
//! memory, ranges spilled, a range cut again, a one-key range passed through as runs —
//! checked against a stable sort of the same rows.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

use super::*;

/// A row: its key and its input position.
type Row = (Option<i64>, i64);

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("row", DataType::Int64, false),
    ]))
}

fn backend() -> Arc<dyn DataFrameBackend> {
    Arc::new(tessera_cpu_frame::CpuFrameBackend::default())
}

/// Rows `(key(i), i)`, the key null every 101st row, in partitions of `per` rows.
fn parts(
    b: &Arc<dyn DataFrameBackend>,
    n: i64,
    per: usize,
    key: impl Fn(i64) -> i64,
) -> (Vec<Partition>, Vec<Row>) {
    let rows: Vec<Row> = (0..n)
        .map(|i| ((i % 101 != 3).then(|| key(i)), i))
        .collect();
    let parts = rows
        .chunks(per)
        .map(|c| {
            let k: ArrayRef = Arc::new(c.iter().map(|r| r.0).collect::<Int64Array>());
            let r: ArrayRef = Arc::new(c.iter().map(|r| Some(r.1)).collect::<Int64Array>());
            b.import_batch(RecordBatch::try_new(schema(), vec![k, r]).unwrap())
                .unwrap()
        })
        .collect();
    (parts, rows)
}

/// The rows stably sorted by the key, descending or not, nulls last.
fn oracle(mut rows: Vec<Row>, descending: bool) -> Vec<Row> {
    rows.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) if descending => y.cmp(&x),
        (Some(x), Some(y)) => x.cmp(&y),
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
    });
    rows
}

fn rows_of(b: &Arc<dyn DataFrameBackend>, parts: &[Stashed]) -> Vec<Row> {
    let mut out = Vec::new();
    for p in parts {
        let batch = b.export_batch(&p.load(b).unwrap()).unwrap();
        let col = |i: usize| {
            batch
                .column(i)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone()
        };
        let (k, r) = (col(0), col(1));
        for i in 0..batch.num_rows() {
            out.push(((!k.is_null(i)).then(|| k.value(i)), r.value(i)));
        }
    }
    out
}

fn by(descending: bool) -> Vec<SortKey> {
    vec![SortKey {
        column: "k".into(),
        descending,
    }]
}

fn budget(name: &str, keep: u64, task_bytes: u64) -> Arc<SpillBudget> {
    let dir = std::env::temp_dir().join(format!("tessera-xsort-{name}-{}", std::process::id()));
    Arc::new(SpillBudget::new(dir, keep, task_bytes))
}

fn run(
    n: i64,
    key: impl Fn(i64) -> i64,
    keep: u64,
    task_bytes: u64,
    descending: bool,
) -> (Vec<Row>, Vec<Row>, SortReport) {
    let b = backend();
    let (input, rows) = parts(&b, n, 7000, key);
    let budget = budget(
        &format!("{n}-{keep}-{task_bytes}-{descending}"),
        keep,
        task_bytes,
    );
    let (out, report) = external_sort(
        &b,
        &budget,
        Pipeline::ready(input),
        &by(descending),
        &schema(),
    )
    .unwrap();
    (rows_of(&b, &out), oracle(rows, descending), report)
}

#[test]
fn ranges_of_a_task_each_sort_to_the_stable_order_in_memory_and_spilled() {
    let key = |i: i64| (i * 7919) % 50_000;
    for keep in [u64::MAX, 0] {
        for descending in [false, true] {
            let (got, want, report) = run(100_000, key, keep, 256 << 10, descending);
            assert!(report.ranges > 4, "{report:?}");
            assert_eq!(report.whole, 0, "{report:?}");
            assert_eq!(got, want, "keep {keep}, descending {descending}");
        }
    }
}

#[test]
fn a_range_over_a_task_is_cut_again() {
    // One partition and its 64-row sample: the first cut has two ranges, each over a task.
    let b = backend();
    let (input, rows) = parts(&b, 200_000, 200_000, |i| (i * 7919) % 200_000);
    let budget = budget("recut", 0, 64 << 10);
    let spill: Spill = Some(budget.clone());
    let pieces: Vec<Stashed> = input
        .into_iter()
        .map(|p| stash(&spill, &b, p).unwrap())
        .collect();
    let counts = Counts::default();
    let out = sort_range(&b, &budget, &pieces, &by(false), &schema(), 0, &counts).unwrap();
    assert!(counts.splits.load(Ordering::Relaxed) > 0);
    assert_eq!(counts.whole.load(Ordering::Relaxed), 0);
    assert!(out.len() > 2, "{}", out.len());
    assert_eq!(rows_of(&b, &out), oracle(rows, false));
}

#[test]
fn a_range_held_by_one_key_is_split_around_it_in_input_order() {
    // Nine rows in ten have key 7: their range cannot be cut.
    let key = |i: i64| if i % 10 != 0 { 7 } else { i % 5000 };
    let (got, want, report) = run(200_000, key, 0, 256 << 10, false);
    assert!(report.key_splits > 0, "{report:?}");
    assert_eq!(report.whole, 0, "{report:?}");
    assert_eq!(got, want);
}

#[test]
fn no_rows_sort_to_no_rows() {
    let b = backend();
    let empty = b.import_batch(RecordBatch::new_empty(schema())).unwrap();
    let budget = budget("empty", 0, 1 << 10);
    let (out, _) = external_sort(
        &b,
        &budget,
        Pipeline::ready(vec![empty.clone(), empty]),
        &by(false),
        &schema(),
    )
    .unwrap();
    assert!(rows_of(&b, &out).is_empty());
    let e = external_sort(
        &b,
        &budget,
        Pipeline::ready(vec![]),
        &[SortKey {
            column: "nope".into(),
            descending: false,
        }],
        &schema(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("no column 'nope'"), "{e}");
}
