//! Every branch of the grace join under budgets small enough to take it — buckets all in
//! memory, some spilled, all spilled, a bucket split again, a skewed bucket joined by
//! sorting — checked against a join by a map of the other side's rows.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::*;
use crate::backend::JoinAlgorithm;

type Row = (Option<i64>, Option<i64>, Option<String>);

/// The left side: key `k` (null every 97th row), value `a`.
fn left_rows(n: i64, key: impl Fn(i64) -> i64) -> Vec<(Option<i64>, i64)> {
    (0..n).map(|i| ((i % 97 != 5).then(|| key(i)), i)).collect()
}

/// The right side: key `k` (null every 89th row), value `b`.
fn right_rows(n: i64, key: impl Fn(i64) -> i64) -> Vec<(Option<i64>, String)> {
    (0..n)
        .map(|i| ((i % 89 != 7).then(|| key(i)), format!("r{i}")))
        .collect()
}

fn left_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("a", DataType::Int64, true),
    ]))
}

fn right_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]))
}

fn backend() -> Arc<dyn DataFrameBackend> {
    Arc::new(tessera_cpu_frame::CpuFrameBackend::default())
}

/// `rows` in partitions of `per` rows.
fn left_parts(
    b: &Arc<dyn DataFrameBackend>,
    rows: &[(Option<i64>, i64)],
    per: usize,
) -> Vec<Partition> {
    rows.chunks(per)
        .map(|c| {
            let k: ArrayRef = Arc::new(c.iter().map(|r| r.0).collect::<Int64Array>());
            let a: ArrayRef = Arc::new(c.iter().map(|r| Some(r.1)).collect::<Int64Array>());
            b.import_batch(RecordBatch::try_new(left_schema(), vec![k, a]).unwrap())
                .unwrap()
        })
        .collect()
}

fn right_parts(
    b: &Arc<dyn DataFrameBackend>,
    rows: &[(Option<i64>, String)],
    per: usize,
) -> Vec<Partition> {
    rows.chunks(per)
        .map(|c| {
            let k: ArrayRef = Arc::new(c.iter().map(|r| r.0).collect::<Int64Array>());
            let s: ArrayRef = Arc::new(
                c.iter()
                    .map(|r| Some(r.1.as_str()))
                    .collect::<StringArray>(),
            );
            b.import_batch(RecordBatch::try_new(right_schema(), vec![k, s]).unwrap())
                .unwrap()
        })
        .collect()
}

/// The join by looking up each row's matches in a map of the other side's rows: (k, a, b) per output row, `None` where the join has no value.
fn oracle(how: JoinType, l: &[(Option<i64>, i64)], r: &[(Option<i64>, String)]) -> Vec<Row> {
    let mut out = Vec::new();
    match how {
        JoinType::Right => {
            let mut by_key: std::collections::HashMap<i64, Vec<i64>> = Default::default();
            for (lk, la) in l {
                if let Some(k) = lk {
                    by_key.entry(*k).or_default().push(*la);
                }
            }
            for (rk, rb) in r {
                let matches = rk.and_then(|k| by_key.get(&k)).cloned().unwrap_or_default();
                for la in &matches {
                    out.push((*rk, Some(*la), Some(rb.clone())));
                }
                if matches.is_empty() {
                    out.push((*rk, None, Some(rb.clone())));
                }
            }
        }
        _ => {
            let mut by_key: std::collections::HashMap<i64, Vec<&String>> = Default::default();
            for (rk, rb) in r {
                if let Some(k) = rk {
                    by_key.entry(*k).or_default().push(rb);
                }
            }
            for (lk, la) in l {
                let matches: Vec<&String> =
                    lk.and_then(|k| by_key.get(&k)).cloned().unwrap_or_default();
                match how {
                    JoinType::Inner | JoinType::Left => {
                        for b in &matches {
                            out.push((*lk, Some(*la), Some((*b).clone())));
                        }
                        if matches.is_empty() && how == JoinType::Left {
                            out.push((*lk, Some(*la), None));
                        }
                    }
                    JoinType::Semi if !matches.is_empty() => out.push((*lk, Some(*la), None)),
                    JoinType::Anti if matches.is_empty() => out.push((*lk, Some(*la), None)),
                    _ => {}
                }
            }
        }
    }
    out.sort();
    out
}

/// The rows of `parts` as (k, a, b), sorted.
fn rows_of(b: &Arc<dyn DataFrameBackend>, parts: &[Partition]) -> Vec<Row> {
    let mut out = Vec::new();
    for p in parts {
        let batch = b.export_batch(p).unwrap();
        let int = |name: &str| {
            batch
                .column_by_name(name)
                .map(|c| c.as_any().downcast_ref::<Int64Array>().unwrap().clone())
        };
        let (k, a) = (int("k").unwrap(), int("a"));
        let s = batch
            .column_by_name("b")
            .map(|c| c.as_any().downcast_ref::<StringArray>().unwrap().clone());
        for i in 0..batch.num_rows() {
            let get = |c: &Int64Array| (!c.is_null(i)).then(|| c.value(i));
            out.push((
                get(&k),
                a.as_ref().and_then(get),
                s.as_ref()
                    .and_then(|s| (!s.is_null(i)).then(|| s.value(i).to_string())),
            ));
        }
    }
    out.sort();
    out
}

fn spec(how: JoinType) -> JoinSpec {
    JoinSpec {
        left_on: vec!["k".into()],
        right_on: vec!["k".into()],
        how,
        suffixes: ("_x".into(), "_y".into()),
        algorithm: JoinAlgorithm::Hash,
    }
}

fn budget(name: &str, keep: u64, task_bytes: u64) -> Arc<SpillBudget> {
    let dir = std::env::temp_dir().join(format!("tessera-grace-{name}-{}", std::process::id()));
    Arc::new(SpillBudget::new(dir, keep, task_bytes))
}

/// The grace join of `l` and `r` (built on the right side, or the left for a right join)
/// within `keep` bytes and tasks of `task_bytes`, its rows and what it did.
fn run(
    how: JoinType,
    l: &[(Option<i64>, i64)],
    r: &[(Option<i64>, String)],
    keep: u64,
    task_bytes: u64,
) -> (Vec<Row>, GraceReport) {
    let b = backend();
    let budget = budget(&format!("{how:?}-{keep}-{task_bytes}"), keep, task_bytes);
    let spill: Spill = Some(budget.clone());
    let (lp, rp) = (left_parts(&b, l, 3000), right_parts(&b, r, 2500));
    let side = if how == JoinType::Right {
        Side::Left
    } else {
        Side::Right
    };
    let o = Oriented::new(side, &spec(how), &left_schema(), &right_schema()).expect("orientable");
    let (build, probe) = match side {
        Side::Right => (rp, lp),
        Side::Left => (lp, rp),
    };
    let build = build
        .into_iter()
        .map(|p| stash(&spill, &b, p))
        .collect::<Result<Vec<_>>>()
        .unwrap();
    let (out, report) = grace_join(&b, &budget, build, Pipeline::ready(probe), o).unwrap();
    let parts = out.materialize().unwrap();
    (rows_of(&b, &parts), report)
}

const HOWS: [JoinType; 5] = [
    JoinType::Inner,
    JoinType::Left,
    JoinType::Semi,
    JoinType::Anti,
    JoinType::Right,
];

#[test]
fn buckets_all_in_memory_stream_the_probe_side() {
    let l = left_rows(30_000, |i| i % 15_000);
    let r = right_rows(20_000, |i| (i * 7) % 25_000);
    for how in HOWS {
        let (rows, report) = run(how, &l, &r, u64::MAX, 4 << 10);
        assert!(report.buckets > 2, "{how:?}: {report:?}");
        assert_eq!(report.resident, report.buckets, "{how:?}: {report:?}");
        assert_eq!(rows, oracle(how, &l, &r), "{how:?}");
    }
}

#[test]
fn buckets_past_the_budget_are_spilled_whole_and_joined_after() {
    let l = left_rows(30_000, |i| i % 15_000);
    let r = right_rows(20_000, |i| (i * 7) % 25_000);
    let b = backend();
    let build_bytes: u64 = right_parts(&b, &r, 2500)
        .iter()
        .map(|p| p.nbytes() as u64)
        .sum();
    for how in HOWS {
        // Room for about half the buckets, then for none.
        let (rows, report) = run(how, &l, &r, build_bytes / 2, 4 << 10);
        assert!(
            report.resident > 0 && report.resident < report.buckets,
            "{how:?}: {report:?}"
        );
        assert_eq!(rows, oracle(how, &l, &r), "{how:?} half in memory");
        let (rows, report) = run(how, &l, &r, 0, 4 << 10);
        assert_eq!(report.resident, 0, "{how:?}: {report:?}");
        assert_eq!(rows, oracle(how, &l, &r), "{how:?} all spilled");
    }
}

#[test]
fn a_skewed_bucket_is_joined_by_sorting_not_split_forever() {
    // Two thirds of the build rows share one key: its bucket cannot shrink. (The build
    // side of a right join is its left side.)
    let skewed = |i| if i % 3 != 0 { 42 } else { i % 7000 };
    for how in HOWS {
        let (l, r) = if how == JoinType::Right {
            (left_rows(30_000, skewed), right_rows(25_000, |i| i % 4000))
        } else {
            (left_rows(25_000, |i| i % 4000), right_rows(30_000, skewed))
        };
        let (rows, report) = run(how, &l, &r, 0, 4 << 10);
        assert!(report.skewed > 0, "{how:?}: {report:?}");
        assert_eq!(rows, oracle(how, &l, &r), "{how:?}");
    }
}

#[test]
fn a_bucket_over_a_task_is_split_again_by_a_modulus_prime_to_the_first() {
    let b = backend();
    let budget = budget("split", 0, 2 << 10);
    let spill: Spill = Some(budget.clone());
    let l = left_rows(40_000, |i| i % 30_000);
    let r = right_rows(30_000, |i| (i * 11) % 30_000);
    for how in [JoinType::Inner, JoinType::Left, JoinType::Anti] {
        let o = Oriented::new(Side::Right, &spec(how), &left_schema(), &right_schema()).unwrap();
        let keep = |parts: Vec<Partition>| -> Vec<Stashed> {
            parts
                .into_iter()
                .map(|p| stash(&spill, &b, p).unwrap())
                .collect()
        };
        // One bucket of everything, as if cut by a modulus of 6 that put it all together.
        let (build, probe) = (
            keep(right_parts(&b, &r, 5000)),
            keep(left_parts(&b, &l, 5000)),
        );
        let counts = Counts::default();
        let parts = join_bucket(&b, &budget, &o, &build, &probe, &[6], 0, &counts).unwrap();
        let parts = load_all(&b, &parts).unwrap();
        assert!(counts.splits.load(Ordering::Relaxed) > 0);
        assert_eq!(counts.skewed.load(Ordering::Relaxed), 0, "{how:?}");
        assert_eq!(rows_of(&b, &parts), oracle(how, &l, &r), "{how:?}");
    }
    assert_eq!(split_factor(100, 10, 1 << 20, &[6]), 11);
    assert_eq!(split_factor(10, 10, 1 << 20, &[2, 3]), 5);
    assert_eq!(split_factor(1 << 40, 1, 1 << 20, &[]), 64);
    // Few rows cap the parts, still prime to the moduli.
    assert_eq!(split_factor(1 << 40, 1, 2000, &[6]), 5);
}

#[test]
fn many_tiny_pieces_are_charged_their_bookkeeping_and_spill() {
    let b = backend();
    let empty = left_parts(&b, &left_rows(1, |i| i), 1).remove(0);
    let bytes = empty.nbytes() as u64;
    let charged = crate::exec::spill::charged_bytes(&empty);
    assert!(charged > bytes, "{charged} <= {bytes}");
    // Room for the buffers of a thousand one-row pieces, not for their bookkeeping.
    let budget = budget("tiny", 1000 * bytes, 1 << 20);
    let spill: Spill = Some(budget.clone());
    let kept: Vec<Stashed> = (0..1000)
        .map(|_| stash(&spill, &b, empty.clone()).unwrap())
        .collect();
    let resident = kept.iter().filter(|s| s.is_resident()).count();
    assert!(
        resident < 1000 * bytes as usize / charged as usize + 1,
        "{resident}"
    );
    assert!(kept.iter().any(|s| !s.is_resident()));
    assert_eq!(
        kept.iter()
            .filter(|s| s.is_resident())
            .map(Stashed::charged)
            .sum::<u64>(),
        1000 * bytes - budget.room()
    );
}
