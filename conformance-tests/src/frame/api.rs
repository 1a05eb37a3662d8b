//! API cases: the user-level [`DataFrame`] on the backend over random partitionings (empty
//! partitions included), against the reference's single partition: what core's
//! distributed algorithms make of the backend's primitives.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use tessera_core::frame::expr::col;
use tessera_core::frame::{AggFunc, FrameStep, JoinAlgorithm, JoinSpec, JoinType, SortKey};
use tessera_core::Result;
use tessera_frame::DataFrame;

use super::case::{FrameFamily, FrameSide, Need, Output};
use super::data::{batch, column, fresh_key, split, ColType, Draw};
use super::oracle::{self, value::Table};
use super::protocol::{join_input, parts, row_ids, rows};
use crate::case::Group;
use crate::gen::Gen;

/// The API families.
pub fn families() -> Vec<FrameFamily> {
    let all = ColType::ALL.to_vec();
    // Keys: every type with values to spare for a fresh key (not bool) and exact equality
    // (not float64).
    let keys: Vec<ColType> = ColType::ALL
        .into_iter()
        .filter(|t| !matches!(t, ColType::Float64 | ColType::Bool))
        .collect();
    let f = |op: &str, types: &[ColType], run: super::case::FrameRun| FrameFamily {
        op: op.to_string(),
        group: Group::Api,
        types: types.to_vec(),
        need: Need::Required,
        run,
    };
    vec![
        f("frame.api.groupby", &keys, groupby),
        f("frame.api.merge", &keys, merge),
        f("frame.api.semi_anti_join", &keys, semi_anti_join),
        f("frame.api.sort_values", &all, sort_values),
        f("frame.api.filter", &all, filter),
        f("frame.api.nlargest", &all, nlargest),
        f("frame.api.value_counts", &keys, value_counts),
    ]
}

/// `b` as a frame on the side's backend: one partition on the reference, the variant's
/// random split elsewhere.
fn frame(s: &FrameSide, g: &mut Gen, b: RecordBatch, count: usize) -> Result<DataFrame> {
    let pieces = split(g, &b, count);
    let batches = if s.reference { vec![b] } else { pieces };
    DataFrame::from_record_batches(batches, Some(s.backend.name()))
}

fn computed(df: &DataFrame) -> Result<RecordBatch> {
    df.compute()?.concat()
}

fn groupby(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let mut b = batch(vec![
        ("k", column(g, t, n, Draw::keys(n))),
        ("v", column(g, ColType::Float64, n, Draw::values(n))),
        ("i", row_ids(n)),
    ]);
    let count = parts(g, variant);
    if variant >= 2 {
        // A last row whose key no other row has, so every partition's state counts.
        let fresh = fresh_key(t).expect("groupby keys have fresh values");
        let extra = batch(vec![
            ("k", fresh),
            ("v", Arc::new(Float64Array::from(vec![1.0])) as ArrayRef),
            ("i", Arc::new(Int64Array::from(vec![n as i64]))),
        ]);
        b = arrow_select::concat::concat_batches(&b.schema(), &[b, extra]).expect("same schema");
    }
    s.note(format!(
        "k: {} keys, {} rows in {count} partitions",
        t.name(),
        b.num_rows()
    ));
    let aggs = [
        ("v", AggFunc::Sum),
        ("v", AggFunc::Mean),
        ("v", AggFunc::Count),
        ("i", AggFunc::Min),
        ("i", AggFunc::Max),
    ];
    s.expect(|| {
        // Keys, then one column per aggregation, named `column_func` (each column here is
        // aggregated more than once).
        let names: Vec<String> = aggs
            .iter()
            .map(|(c, f)| format!("{c}_{}", f.name()))
            .collect();
        let specs: Vec<(&str, AggFunc, &str)> = aggs
            .iter()
            .zip(&names)
            .map(|(&(c, f), n)| (c, f, n.as_str()))
            .collect();
        let out =
            oracle::aggregate::aggregate_all(&oracle::table(&b)?, &["k".to_string()], &specs)?;
        oracle::batches(&[out])
    });
    let df = frame(s, g, b, count)?;
    let out = df.groupby(&["k"])?.agg(&aggs)?;
    Ok(vec![Output::unordered(computed(&out)?).with_sums()])
}

fn merge(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let (l, r) = join_input(g, t, variant);
    let how = [JoinType::Inner, JoinType::Left, JoinType::Outer][variant % 3];
    let count = parts(g, variant);
    s.note(format!(
        "k: {} keys; {} x {} rows in {count} partitions each; {} merge",
        t.name(),
        l.num_rows(),
        r.num_rows(),
        how.name()
    ));
    s.expect(|| {
        let out = oracle::join::join(&oracle::table(&l)?, &oracle::table(&r)?, &spec_of(how))?;
        oracle::batches(&[out])
    });
    let (ldf, rdf) = (frame(s, g, l, count)?, frame(s, g, r, count)?);
    let out = ldf.merge(&rdf, &["k"], how)?;
    Ok(vec![Output::unordered(computed(&out)?)])
}

/// `semi_join` and `anti_join`: native on a backend with
/// [`filter_joins`](tessera_core::frame::FrameCapabilities::filter_joins), composed from
/// distinct keys and an inner or left join on one without.
fn semi_anti_join(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let (l, r) = join_input(g, t, variant);
    let count = parts(g, variant);
    s.note(format!(
        "k: {} keys; {} x {} rows in {count} partitions each; semi and anti joins",
        t.name(),
        l.num_rows(),
        r.num_rows(),
    ));
    s.expect(|| {
        let (lt, rt) = (oracle::table(&l)?, oracle::table(&r)?);
        oracle::batches(&[
            oracle::join::join(&lt, &rt, &spec_of(JoinType::Semi))?,
            oracle::join::join(&lt, &rt, &spec_of(JoinType::Anti))?,
        ])
    });
    let (ldf, rdf) = (frame(s, g, l, count)?, frame(s, g, r, count)?);
    Ok(vec![
        Output::unordered(computed(&ldf.semi_join(&rdf, &["k"], &["k"])?)?),
        Output::unordered(computed(&ldf.anti_join(&rdf, &["k"], &["k"])?)?),
    ])
}

fn sort_values(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = batch(vec![
        ("v", column(g, t, n, Draw::keys(n))),
        ("i", row_ids(n)),
    ]);
    let ascending = variant.is_multiple_of(2);
    let count = parts(g, variant);
    s.note(format!(
        "v: {} x {n} rows in {count} partitions, ascending {ascending}",
        t.name()
    ));
    s.expect(|| {
        let by = [key("v", !ascending), key("i", false)];
        oracle::batches(&[oracle::sort::sort(&oracle::table(&b)?, &by)?])
    });
    let df = frame(s, g, b, count)?;
    // Ties broken by the row number: the order is fully determined.
    let out = df.sort_values(&["v", "i"], &[ascending, true])?;
    Ok(vec![Output::exact(computed(&out)?)])
}

fn filter(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = batch(vec![
        ("v", column(g, t, n, Draw::values(n))),
        ("i", row_ids(n)),
    ]);
    let k = g.below(n.max(1)) as i64;
    let count = parts(g, variant);
    s.note(format!(
        "v: {} x {n} rows in {count} partitions; i >= {k}",
        t.name()
    ));
    s.expect(|| {
        let steps = [
            FrameStep::Filter(col("v").is_not_null() & col("i").gt_eq(k)),
            FrameStep::Project(vec![("j".into(), col("i") * 2), ("v".into(), col("v"))]),
        ];
        oracle::batches(&[oracle::program(&oracle::table(&b)?, &steps)?])
    });
    let df = frame(s, g, b, count)?;
    let out = df
        .filter(col("v").is_not_null() & col("i").gt_eq(k))?
        .with_column("j", col("i") * 2)?
        .select(&["j", "v"])?;
    Ok(vec![Output::exact(computed(&out)?)])
}

fn nlargest(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = batch(vec![
        ("v", column(g, t, n, Draw::keys(n))),
        ("i", row_ids(n)),
    ]);
    let k = 1 + g.below(n.max(1));
    let count = parts(g, variant);
    s.note(format!(
        "v: {} x {n} rows in {count} partitions; top {k}",
        t.name()
    ));
    s.expect(|| {
        let input = oracle::table(&b)?;
        let head = |by: &[SortKey]| -> std::result::Result<Table, String> {
            let order = oracle::sort::sorted_rows(&input, by)?;
            Ok(input.take(&order[..k.min(order.len())]))
        };
        oracle::batches(&[
            head(&[key("v", true)])?,
            head(&[key("v", false), key("i", false)])?,
        ])
    });
    let df = frame(s, g, b, count)?;
    // Ties keep row order: the answer is fully determined.
    Ok(vec![
        Output::exact(computed(&df.nlargest(k, &["v"])?)?),
        Output::exact(computed(&df.nsmallest(k, &["v", "i"])?)?),
    ])
}

fn value_counts(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let mut b = batch(vec![("v", column(g, t, n, Draw::keys(n)))]);
    let count = parts(g, variant);
    if variant >= 2 {
        // A value only the last row has, so every partition's counts matter.
        let fresh = fresh_key(t).expect("value_counts types have fresh values");
        b = arrow_select::concat::concat_batches(
            &b.schema(),
            &[b.clone(), batch(vec![("v", fresh)])],
        )
        .expect("same schema");
    }
    s.note(format!(
        "v: {} x {} rows in {count} partitions",
        t.name(),
        b.num_rows()
    ));
    s.expect(|| {
        // Counts per value, then most frequent first, ties by value.
        let input = oracle::table(&b)?;
        let counts =
            oracle::aggregate::aggregate(&input, &["v".to_string()], "v", AggFunc::Count, "count")?;
        let by = [key("count", true), key("v", false)];
        oracle::batches(&[oracle::sort::sort(&counts, &by)?])
    });
    let df = frame(s, g, b, count)?;
    Ok(vec![Output::exact(computed(&df.value_counts("v")?)?)])
}

/// A sort key for the oracle.
fn key(column: &str, descending: bool) -> SortKey {
    SortKey {
        column: column.into(),
        descending,
    }
}

/// The join `merge(.., on=["k"], how)` stands for, for the oracle.
fn spec_of(how: JoinType) -> JoinSpec {
    JoinSpec {
        left_on: vec!["k".into()],
        right_on: vec!["k".into()],
        how,
        suffixes: ("_x".into(), "_y".into()),
        algorithm: JoinAlgorithm::Hash,
    }
}
