//! Protocol cases: one partition-level primitive of the dataframe backend trait each.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use tessera_core::frame::expr::{coalesce, col, lit, when, Expr, Literal};
use tessera_core::frame::{
    AggFunc, AggSpec, FrameProgram, FrameStep, JoinAlgorithm, JoinSpec, JoinType, Partition,
    Quantile, RollingAgg, SortKey, WindowFunc, WindowSpec,
};
use tessera_core::frame::{DateUnit, Interval};
use tessera_core::{Error, Result};

use super::case::{FrameFamily, FrameSide, Need, Output};
use super::data::{batch, column, fresh_key, split, ColType, Draw};
use super::oracle::{self, value::Table};
use crate::case::Group;
use crate::gen::Gen;

/// Rows of a variant's input: none, a few, a few dozen, a few hundred.
pub fn rows(g: &mut Gen, variant: usize) -> usize {
    match variant {
        0 => 0,
        1 => 1 + g.below(8),
        2 => 20 + g.below(20),
        _ => 100 + g.below(200),
    }
}

/// Partitions of a variant's input (variants 2 and 3 have several).
pub fn parts(g: &mut Gen, variant: usize) -> usize {
    match variant {
        0 | 1 => 1,
        2 => 2 + g.below(2),
        _ => 3 + g.below(3),
    }
}

/// The row numbers `0..n` as an Int64 column (a payload that tells rows apart).
pub fn row_ids(n: usize) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(0..n as i64))
}

fn family(
    op: &str,
    group: Group,
    types: &[ColType],
    need: Need,
    run: super::case::FrameRun,
) -> FrameFamily {
    FrameFamily {
        op: op.to_string(),
        group,
        types: types.to_vec(),
        need,
        run,
    }
}

/// The protocol families.
pub fn families() -> Vec<FrameFamily> {
    use ColType::*;
    let all = &ColType::ALL;
    let mut f = vec![
        family(
            "frame.roundtrip",
            Group::Protocol,
            all,
            Need::Required,
            roundtrip,
        ),
        family("frame.filter", Group::Protocol, all, Need::Required, filter),
        family(
            "frame.project",
            Group::Protocol,
            all,
            Need::Required,
            project,
        ),
        family(
            "frame.hash_partition",
            Group::Protocol,
            all,
            Need::Required,
            hash_partition,
        ),
        family(
            "frame.range_partition",
            Group::Protocol,
            all,
            Need::Required,
            range_partition,
        ),
    ];
    for (func, run) in aggregation_cases() {
        let types: Vec<ColType> = ColType::ALL
            .into_iter()
            .filter(|t| func.accepts(&t.data_type()))
            .collect();
        f.push(FrameFamily {
            op: format!("frame.aggregate.{}", func.name()),
            group: Group::Protocol,
            types,
            need: Need::Aggregation(func),
            run,
        });
    }
    for (label, func, run) in window_cases() {
        let types: Vec<ColType> = ColType::ALL
            .into_iter()
            .filter(|t| func.output_type(&t.data_type()).is_ok())
            .collect();
        f.push(FrameFamily {
            op: format!("frame.window.{label}"),
            group: Group::Protocol,
            types,
            need: Need::Windows,
            run,
        });
    }
    let keys = [Int64, Int32, Utf8, Bool, Date32, TimestampUs];
    for how in [
        JoinType::Inner,
        JoinType::Left,
        JoinType::Right,
        JoinType::Outer,
    ] {
        f.push(family(
            &format!("frame.join.{}", how.name()),
            Group::Protocol,
            &keys,
            Need::Required,
            JOIN_HASH[how as usize],
        ));
        f.push(family(
            &format!("frame.join_sorted.{}", how.name()),
            Group::Protocol,
            &keys,
            Need::JoinAlgorithm(JoinAlgorithm::SortedMerge),
            JOIN_SORTED[how as usize],
        ));
    }
    f.extend([
        family("frame.sort", Group::Protocol, all, Need::Required, sort),
        family(
            "frame.sort_limit",
            Group::Protocol,
            all,
            Need::Required,
            sort_limit,
        ),
        family("frame.concat", Group::Protocol, all, Need::Required, concat),
        family("frame.slice", Group::Protocol, all, Need::Required, slice),
        family("frame.take", Group::Protocol, all, Need::Required, take),
    ]);
    f
}

/// A column `v` of type `t` (values) and the row numbers `i`.
fn values_batch(g: &mut Gen, t: ColType, n: usize) -> RecordBatch {
    let v = column(g, t, n, Draw::values(n));
    batch(vec![("v", v), ("i", row_ids(n))])
}

fn roundtrip(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = values_batch(g, t, n);
    s.note(format!("v: {} x {n} rows", t.name()));
    s.expect(|| oracle::batches(&[oracle::table(&b)?]));
    let p = s.import(b)?;
    Ok(vec![Output::exact(s.export(&p)?)])
}

/// A literal drawn from the column's domain, where the type has literals.
fn literal_for(g: &mut Gen, t: ColType, b: &RecordBatch) -> Option<Literal> {
    let v = b.column(0);
    let present: Vec<usize> = (0..v.len()).filter(|&r| !v.is_null(r)).collect();
    let r = *present.get(g.below(present.len().max(1)))?;
    Some(match t {
        ColType::Int64 => Literal::Int(v.as_any().downcast_ref::<Int64Array>()?.value(r)),
        ColType::Int32 => Literal::Int(i64::from(
            v.as_any()
                .downcast_ref::<arrow_array::Int32Array>()?
                .value(r),
        )),
        ColType::Float64 => Literal::Float(
            v.as_any()
                .downcast_ref::<arrow_array::Float64Array>()?
                .value(r),
        ),
        ColType::Utf8 => Literal::Str(
            v.as_any()
                .downcast_ref::<arrow_array::StringArray>()?
                .value(r)
                .to_string(),
        ),
        ColType::Bool => Literal::Bool(v.as_any().downcast_ref::<BooleanArray>()?.value(r)),
        ColType::Date32 | ColType::TimestampUs => return None,
    })
}

fn evaluate(s: &FrameSide, b: RecordBatch, steps: Vec<FrameStep>) -> Result<RecordBatch> {
    let p = s.import(b)?;
    let out = s.backend.evaluate(&p, &FrameProgram { steps })?;
    s.export(&out)
}

fn filter(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = values_batch(g, t, n);
    let k = g.below(n.max(1)) as i64;
    let mut preds = vec![
        col("v").is_null(),
        col("v").is_not_null() & col("i").gt(k),
        !(col("i").lt(k) | col("v").is_null()),
    ];
    if let Some(x) = literal_for(g, t, &b) {
        preds.push(col("v").eq(Expr::Literal(x.clone())));
        preds.push(col("v").not_eq(Expr::Literal(x.clone())) & col("i").lt(k + 5));
        if t != ColType::Bool {
            preds.push(col("v").gt(Expr::Literal(x.clone())) | col("i").eq(0));
            preds.push(col("v").lt_eq(Expr::Literal(x)).and(col("i").gt_eq(k)));
        }
    }
    s.note(format!(
        "v: {} x {n} rows; {} predicates",
        t.name(),
        preds.len()
    ));
    s.expect(|| {
        let input = oracle::table(&b)?;
        let outs = preds
            .iter()
            .map(|p| oracle::program(&input, &[FrameStep::Filter(p.clone())]))
            .collect::<std::result::Result<Vec<_>, String>>()?;
        oracle::batches(&outs)
    });
    preds
        .into_iter()
        .map(|p| {
            Ok(Output::exact(evaluate(
                s,
                b.clone(),
                vec![FrameStep::Filter(p)],
            )?))
        })
        .collect()
}

fn project(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    use arrow_schema::DataType;
    let n = rows(g, variant);
    let b = values_batch(g, t, n);
    let v = || col("v");
    let exprs: Vec<(&str, Expr)> = match t {
        ColType::Int64 | ColType::Int32 => vec![
            ("scaled", v() * 3 + col("i")),
            ("neg", -v()),
            ("abs", v().abs()),
            ("rem", v() % 4),
            ("filled", v().fill_null(0)),
            ("as_f64", v().cast(DataType::Float64)),
            ("isin", v().is_in([-20i64, 1, 8])),
            ("pow", v().pow(2)),
            ("clip", v().clip(-5i64, 6i64)),
            ("coalesce", coalesce([v(), col("i") * -1, lit(0)])),
            (
                "when",
                when(v().gt(4))
                    .then(v() * 10)
                    .when(v().is_null())
                    .then(lit(-1))
                    .otherwise(col("i")),
            ),
        ],
        ColType::Float64 => vec![
            ("ratio", v() / 4.0 - col("i")),
            ("floor", v().floor()),
            ("round", v().round()),
            ("sqrt", v().abs().sqrt()),
            ("filled", v().fill_null(1.5)),
            ("as_i64", v().cast(DataType::Int64)),
            ("between", v().between(-1.0, 1.0)),
            ("pow", v().pow(0.5)),
            ("clip", v().clip(-1.0, 1.0)),
            ("coalesce", coalesce([v(), lit(9.5)])),
            ("when", when(v().lt(0.0)).then(lit(0)).otherwise(v())),
        ],
        ColType::Utf8 => vec![
            ("category", v().categorical()),
            ("category_eq", v().categorical().eq("mé")),
            ("has_a", v().contains("a")),
            ("isin", v().is_in(["ka", "lo", ""])),
            ("filled", v().fill_null("?")),
            ("eq", v().eq("mé")),
            ("starts", v().starts_with("ka")),
            ("ends", v().ends_with("lo")),
            ("like", v().like("%a_")),
            ("upper", v().upper()),
            ("lower", v().upper().lower()),
            ("strip", v().strip()),
            ("len", v().str_len()),
            ("replace", v().replace("o", "00")),
            ("sub", v().substring(1, Some(2))),
            ("sub_end", v().substring(-2, None)),
            ("matches", v().matches("^(ka|mé)+$")),
            ("extract", v().extract("(k|l)(a|o)", 2)),
            ("split", v().split("a")),
            ("split_part", v().split_part("a", -1)),
            ("coalesce", coalesce([v(), lit("none")])),
            (
                "when",
                when(v().str_len().gt(3))
                    .then(v().substring(0, Some(3)))
                    .otherwise(v()),
            ),
        ],
        ColType::Bool => vec![
            ("not", !v()),
            ("and", v() & col("i").gt(3)),
            ("or", v() | col("i").lt(2)),
            ("filled", v().fill_null(false)),
        ],
        ColType::Date32 => vec![
            ("year", v().year()),
            ("month", v().month()),
            ("day", v().day()),
            ("weekday", v().weekday()),
            ("quarter", v().quarter()),
            ("day_of_year", v().day_of_year()),
            ("plus_month", v().offset_by(Interval::new(1, -3, 0))),
            ("month_start", v().truncate(DateUnit::Month)),
            ("week_start", v().truncate(DateUnit::Week)),
            (
                "days_since",
                v().elapsed_since(v().truncate(DateUnit::Year), DateUnit::Day),
            ),
        ],
        ColType::TimestampUs => vec![
            ("year", v().year()),
            ("day", v().day()),
            ("hour", v().hour()),
            ("weekday", v().weekday()),
            ("quarter", v().quarter()),
            ("day_of_year", v().day_of_year()),
            ("later", v().offset_by(Interval::new(-2, 1, 90_000_000_000))),
            ("hour_start", v().truncate(DateUnit::Hour)),
            ("quarter_start", v().truncate(DateUnit::Quarter)),
            (
                "minutes_into_day",
                v().elapsed_since(v().truncate(DateUnit::Day), DateUnit::Minute),
            ),
        ],
    };
    s.note(format!(
        "v: {} x {n} rows; {} expressions",
        t.name(),
        exprs.len()
    ));
    let mut list: Vec<(String, Expr)> = vec![("i".into(), col("i"))];
    list.extend(exprs.into_iter().map(|(name, e)| (name.to_string(), e)));
    let projection = vec![FrameStep::Project(list)];
    // A filter and a projection fused in one program, as core sends them.
    let fused_steps = vec![
        FrameStep::Filter(col("i").gt_eq(1)),
        FrameStep::Project(vec![("v".into(), col("v")), ("twice".into(), col("i") * 2)]),
    ];
    s.expect(|| {
        let input = oracle::table(&b)?;
        oracle::batches(&[
            oracle::program(&input, &projection)?,
            oracle::program(&input, &fused_steps)?,
        ])
    });
    let out = evaluate(s, b.clone(), projection)?;
    let fused = evaluate(s, b, fused_steps)?;
    Ok(vec![Output::exact(out), Output::exact(fused)])
}

/// Display forms of column `c`'s values (`null` for nulls): key identity across buckets.
fn keys_of(b: &RecordBatch, c: usize) -> Result<Vec<String>> {
    let opts = FormatOptions::default().with_null("null");
    let f = ArrayFormatter::try_new(b.column(c).as_ref(), &opts)
        .map_err(|e| Error::arrow("frame suite", e))?;
    Ok((0..b.num_rows()).map(|r| f.value(r).to_string()).collect())
}

fn hash_partition(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = batch(vec![
        ("v", column(g, t, n, Draw::keys(n))),
        ("i", row_ids(n)),
    ]);
    let buckets = 1 + g.below(5);
    let halves = split(g, &b, 2);
    s.note(format!(
        "key v: {} x {n} rows in two partitions, {buckets} buckets",
        t.name()
    ));
    // Contract: `buckets` outputs; rows keep their order in each; equal keys land in the
    // same output index for every partition.
    s.expect(|| {
        let zero = || Some(oracle::value::Value::Int(0));
        let checks = Table {
            rows: 1,
            columns: ["outputs_not_n", "keys_in_two_buckets", "rows_out_of_order"]
                .iter()
                .map(|name| oracle::value::Column {
                    name: (*name).into(),
                    ty: oracle::value::Ty::Int64,
                    cells: vec![zero()],
                })
                .collect(),
        };
        oracle::batches(&[oracle::table(&b)?, checks])
    });
    let mut home: BTreeMap<String, usize> = BTreeMap::new();
    let (mut wrong_count, mut split_keys, mut out_of_order) = (0i64, 0i64, 0i64);
    let mut all = Vec::new();
    for half in halves {
        let p = s.import(half)?;
        let outs = s.backend.hash_partition(&p, &["v".to_string()], buckets)?;
        if outs.len() != buckets {
            wrong_count += 1;
        }
        for (j, o) in outs.iter().enumerate() {
            let ob = s.export(o)?;
            let ids = ob
                .column(1)
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or_else(|| Error::Internal("bucket lost its row ids".into()))?;
            out_of_order += ids.values().windows(2).filter(|w| w[0] >= w[1]).count() as i64;
            for k in keys_of(&ob, 0)? {
                if *home.entry(k).or_insert(j) != j {
                    split_keys += 1;
                }
            }
            all.push(ob);
        }
    }
    let schema = b.schema();
    let union = arrow_select::concat::concat_batches(&schema, &all)
        .map_err(|e| Error::arrow("frame suite", e))?;
    let checks = batch(vec![
        (
            "outputs_not_n",
            Arc::new(Int64Array::from(vec![wrong_count])) as ArrayRef,
        ),
        (
            "keys_in_two_buckets",
            Arc::new(Int64Array::from(vec![split_keys])),
        ),
        (
            "rows_out_of_order",
            Arc::new(Int64Array::from(vec![out_of_order])),
        ),
    ]);
    Ok(vec![Output::unordered(union), Output::exact(checks)])
}

fn range_partition(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = values_batch(g, t, n);
    let descending = g.chance(0.5);
    let by = vec![SortKey {
        column: "v".into(),
        descending,
    }];
    // Bounds: a few of the column's own values, in the sort order (the reference sorts).
    let p = s.import(b.clone())?;
    let sorted = s.export(&s.backend.sort(&p, &by)?)?;
    let nonnull: Vec<u32> = (0..sorted.num_rows() as u32)
        .filter(|&r| !sorted.column(0).is_null(r as usize))
        .collect();
    let mut picks: BTreeSet<u32> = BTreeSet::new();
    for _ in 0..(1 + g.below(3)) {
        if !nonnull.is_empty() {
            picks.insert(nonnull[g.below(nonnull.len())]);
        }
    }
    let idx = arrow_array::UInt32Array::from(picks.into_iter().collect::<Vec<_>>());
    let bound_col = arrow_select::take::take(sorted.column(0).as_ref(), &idx, None)
        .map_err(|e| Error::arrow("frame suite", e))?;
    let bounds = batch(vec![("v", bound_col)]);
    s.note(format!(
        "v: {} x {n} rows, {} bounds, {}",
        t.name(),
        bounds.num_rows(),
        if descending {
            "descending"
        } else {
            "ascending"
        }
    ));
    s.expect(|| {
        let parts =
            oracle::sort::range_partition(&oracle::table(&b)?, &by, &oracle::table(&bounds)?)?;
        oracle::batches(&parts)
    });
    let outs = s.backend.range_partition(&p, &by, &bounds)?;
    outs.iter()
        .map(|o| Ok(Output::unordered(s.export(o)?)))
        .collect()
}

/// The aggregation input: keys `k` (Int64, nulls), values `v` of `t`, split into the
/// variant's partitions; in variants 2 and 3 the last partition ends with a key no other
/// partition has.
fn aggregation_input(g: &mut Gen, t: ColType, variant: usize) -> Vec<RecordBatch> {
    let n = rows(g, variant);
    let b = batch(vec![
        ("k", column(g, ColType::Int64, n, Draw::keys(n))),
        ("v", column(g, t, n, Draw::values(n))),
    ]);
    let count = parts(g, variant);
    let mut pieces = split(g, &b, count);
    if variant >= 2 {
        let extra = batch(vec![
            (
                "k",
                fresh_key(ColType::Int64).expect("int64 has fresh keys"),
            ),
            ("v", column(g, t, 1, Draw::values(1).no_nulls())),
        ]);
        let last = pieces.pop().expect("at least one piece");
        pieces.push(
            arrow_select::concat::concat_batches(&b.schema(), &[last, extra]).expect("same schema"),
        );
    }
    pieces
}

/// The aggregation input and its keys (`k`; none in variant 1, which covers the whole
/// frame), noted for the report.
fn keyed_input(
    s: &FrameSide,
    g: &mut Gen,
    t: ColType,
    variant: usize,
) -> (Vec<RecordBatch>, Vec<String>) {
    let pieces = aggregation_input(g, t, variant);
    let keys: Vec<String> = if variant == 1 {
        vec![]
    } else {
        vec!["k".into()]
    };
    s.note(format!(
        "k: int64 keys, v: {} values; {} partitions of {:?} rows; keys {keys:?}",
        t.name(),
        pieces.len(),
        pieces.iter().map(|p| p.num_rows()).collect::<Vec<_>>()
    ));
    (pieces, keys)
}

fn aggregate(
    s: &FrameSide,
    g: &mut Gen,
    t: ColType,
    variant: usize,
    func: AggFunc,
) -> Result<Vec<Output>> {
    // Variant 1 reduces the whole frame (no keys): one row out.
    let (pieces, keys) = keyed_input(s, g, t, variant);
    let specs = vec![AggSpec::new("v", func, "out")];
    let whole = || whole_table(&pieces);
    match func {
        // An estimate: the oracle states the ranks it must lie between.
        AggFunc::ApproxQuantile(q) => s.expect_within(|| {
            let (lo, hi) =
                oracle::aggregate::approx_quantile_bounds(&whole()?, &keys, "v", q.value(), "out")?;
            Ok((oracle::batches(&[lo])?, oracle::batches(&[hi])?))
        }),
        _ => s.expect(|| {
            let out = oracle::aggregate::aggregate(&whole()?, &keys, "v", func, "out")?;
            oracle::batches(&[out])
        }),
    }
    partial_combine_finalize(s, pieces, &keys, &specs)
}

/// A pair function (`cov`, `corr`) of the `v` values with a float64 column `w` drawn
/// beside them (nulls, NaN, extremes and constant groups among the draws).
fn pair_aggregate(
    s: &FrameSide,
    g: &mut Gen,
    t: ColType,
    variant: usize,
    func: AggFunc,
) -> Result<Vec<Output>> {
    let (pieces, keys) = keyed_input(s, g, t, variant);
    let pieces: Vec<RecordBatch> = pieces
        .into_iter()
        .map(|p| {
            let n = p.num_rows();
            let mut cols: Vec<(&str, ArrayRef)> =
                vec![("k", p.column(0).clone()), ("v", p.column(1).clone())];
            cols.push(("w", column(g, ColType::Float64, n, Draw::values(n))));
            batch(cols)
        })
        .collect();
    s.note("w: float64 values paired with v".to_string());
    let specs = vec![AggSpec::pair("v", func, "w", "out")];
    s.expect(|| {
        let out = oracle::aggregate::pair(&whole_table(&pieces)?, &keys, ("v", "w"), func, "out")?;
        oracle::batches(&[out])
    });
    partial_combine_finalize(s, pieces, &keys, &specs)
}

/// `nlargest(k)`/`nsmallest(k)` per group: the backend's list per group, its values
/// then laid out one per row (keys repeated) for the comparison with the oracle's rows.
fn top_aggregate(
    s: &FrameSide,
    g: &mut Gen,
    t: ColType,
    variant: usize,
    func: AggFunc,
) -> Result<Vec<Output>> {
    let (pieces, keys) = keyed_input(s, g, t, variant);
    let specs = vec![AggSpec::new("v", func, "out")];
    s.expect(|| {
        let out = oracle::aggregate::top_values(&whole_table(&pieces)?, &keys, "v", func, "out")?;
        oracle::batches(&[out])
    });
    let out = aggregated(s, pieces, &keys, &specs)?;
    Ok(vec![Output::exact(one_value_per_row(&out, keys.len())?)])
}

/// `batch` with its list column `i` as one row per item, the other columns repeated.
fn one_value_per_row(batch: &RecordBatch, i: usize) -> Result<RecordBatch> {
    use arrow_array::cast::AsArray;
    let list = batch
        .column(i)
        .as_list_opt::<i32>()
        .ok_or_else(|| Error::Internal(format!("column {i} of the result is not a list")))?;
    let offsets = list.offsets();
    let mut rows = Vec::new();
    for r in 0..list.len() {
        rows.extend(std::iter::repeat_n(
            r as u32,
            (offsets[r + 1] - offsets[r]) as usize,
        ));
    }
    let (lo, hi) = (offsets[0] as usize, offsets[list.len()] as usize);
    let idx = arrow_array::UInt32Array::from(rows);
    let arrow = |e| Error::arrow("top values", e);
    let mut columns = Vec::new();
    let mut fields = Vec::new();
    for (c, f) in batch.schema().fields().iter().enumerate() {
        if c == i {
            let values = list.values().slice(lo, hi - lo);
            fields.push(arrow_schema::Field::new(
                f.name(),
                values.data_type().clone(),
                true,
            ));
            columns.push(values);
        } else {
            fields.push((**f).clone());
            columns.push(arrow_select::take::take(batch.column(c), &idx, None).map_err(arrow)?);
        }
    }
    RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), columns).map_err(arrow)
}

/// The pieces as one oracle table.
fn whole_table(pieces: &[RecordBatch]) -> std::result::Result<Table, String> {
    pieces
        .iter()
        .map(oracle::table)
        .collect::<std::result::Result<Vec<_>, String>>()
        .map(|w| Table::concat(&w))
}

/// The backend's partial aggregation of each piece, the combine of the states and the
/// final step, as the case's one output.
fn partial_combine_finalize(
    s: &FrameSide,
    pieces: Vec<RecordBatch>,
    keys: &[String],
    specs: &[AggSpec],
) -> Result<Vec<Output>> {
    Ok(vec![
        Output::exact(aggregated(s, pieces, keys, specs)?).with_sums()
    ])
}

/// The backend's result of aggregating `pieces` (partial, combine, final step), exported.
fn aggregated(
    s: &FrameSide,
    pieces: Vec<RecordBatch>,
    keys: &[String],
    specs: &[AggSpec],
) -> Result<RecordBatch> {
    let partials = pieces
        .into_iter()
        .map(|p| s.backend.aggregate_partial(&s.import(p)?, keys, specs))
        .collect::<Result<Vec<Partition>>>()?;
    let state = s.backend.aggregate_combine(&partials, keys, specs)?;
    s.export(&s.backend.aggregate_finalize(&state, keys, specs)?)
}

/// The level of a quantile case.
fn level(q: f64) -> Quantile {
    Quantile::new(q).expect("a level in [0, 1]")
}

/// Every aggregation the suite runs, with its run function: the functions without a
/// parameter, and the quantiles at levels between two values (so that the exact one
/// interpolates).
fn aggregation_cases() -> Vec<(AggFunc, super::case::FrameRun)> {
    macro_rules! plain {
        ($($f:ident),*) => {
            vec![$((AggFunc::$f, (|s, g, t, v| aggregate(s, g, t, v, AggFunc::$f)) as super::case::FrameRun)),*]
        };
    }
    let mut cases =
        plain!(Sum, Mean, Count, Min, Max, Std, Var, Skew, Kurt, First, Last, NUnique, Median);
    cases.push((AggFunc::Cov, |s, g, t, v| {
        pair_aggregate(s, g, t, v, AggFunc::Cov)
    }));
    cases.push((AggFunc::Corr, |s, g, t, v| {
        pair_aggregate(s, g, t, v, AggFunc::Corr)
    }));
    assert_eq!(cases.len(), AggFunc::ALL.len(), "a function without a case");
    cases.push((AggFunc::Quantile(level(0.3)), |s, g, t, v| {
        aggregate(s, g, t, v, AggFunc::Quantile(level(0.3)))
    }));
    cases.push((AggFunc::ApproxQuantile(level(0.9)), |s, g, t, v| {
        aggregate(s, g, t, v, AggFunc::ApproxQuantile(level(0.9)))
    }));
    cases.push((AggFunc::Largest(3), |s, g, t, v| {
        top_aggregate(s, g, t, v, AggFunc::Largest(3))
    }));
    cases.push((AggFunc::Smallest(2), |s, g, t, v| {
        top_aggregate(s, g, t, v, AggFunc::Smallest(2))
    }));
    cases
}

/// Every window function the suite runs, with the name of its family (a name the case
/// filter can take) and its run function.
fn window_cases() -> Vec<(&'static str, WindowFunc, super::case::FrameRun)> {
    macro_rules! cases {
        ($($label:literal => $f:expr),* $(,)?) => {
            vec![$(($label, $f, (|s, g, t, v| window(s, g, t, v, $f)) as super::case::FrameRun)),*]
        };
    }
    cases![
        "shift_2" => WindowFunc::Shift(2),
        "shift_back_1" => WindowFunc::Shift(-1),
        "diff_1" => WindowFunc::Diff(1),
        "cumsum" => WindowFunc::CumSum,
        "cummin" => WindowFunc::CumMin,
        "ffill" => WindowFunc::FillForward,
        "bfill" => WindowFunc::FillBackward,
        "rolling_mean_3" => WindowFunc::Rolling {
            agg: RollingAgg::Mean,
            window: 3,
            min_periods: 2
        },
        "rolling_max_2" => WindowFunc::Rolling {
            agg: RollingAgg::Max,
            window: 2,
            min_periods: 1
        },
    ]
}

/// A window function over the aggregation input's partitions (per group of `k`, or over
/// all rows in variant 1) as core runs it: the carries from core's own fold
/// (`window_carries`), then each partition with its incoming carry.
fn window(
    s: &FrameSide,
    g: &mut Gen,
    t: ColType,
    variant: usize,
    func: WindowFunc,
) -> Result<Vec<Output>> {
    let (pieces, keys) = keyed_input(s, g, t, variant);
    let spec = WindowSpec {
        keys,
        func,
        column: "v".into(),
        output: "out".into(),
    };
    s.expect(|| {
        let tables = pieces
            .iter()
            .map(oracle::table)
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let whole = Table::concat(&tables);
        let out = oracle::window::window(&whole, &spec.keys, "v", func, "out")?;
        let mut start = 0;
        let outs: Vec<Table> = tables
            .iter()
            .map(|t| {
                let rows: Vec<usize> = (start..start + t.rows).collect();
                start += t.rows;
                let mut part = t.clone();
                part.columns.push(oracle::value::Column {
                    cells: rows.iter().map(|&r| out.cells[r].clone()).collect(),
                    ..out.clone()
                });
                part
            })
            .collect();
        oracle::batches(&outs)
    });
    let parts = pieces
        .into_iter()
        .map(|p| s.import(p))
        .collect::<Result<Vec<Partition>>>()?;
    let carries = tessera_frame::exec::window_carries(&s.backend, &parts, &spec)?;
    parts
        .iter()
        .zip(&carries)
        .map(|(p, c)| {
            Ok(Output::exact(s.export(&s.backend.window(p, &spec, c.as_ref())?)?).with_sums())
        })
        .collect()
}

/// The join input: keys `k` of `t` on both sides with payloads `a` and `b`; in variants 2
/// and 3 both sides hold null keys (which never match). The API's merge cases use it too.
pub fn join_input(g: &mut Gen, t: ColType, variant: usize) -> (RecordBatch, RecordBatch) {
    let (nl, nr) = (rows(g, variant), rows(g, variant));
    let domain = (nl.max(nr) / 2).max(2);
    let draw = Draw {
        domain,
        nulls: 0.0,
        specials: false,
    };
    let mut side = |n: usize, payload: &str| {
        let mut keys = column(g, t, n, draw);
        if variant >= 2 {
            let null = arrow_array::new_null_array(&t.data_type(), 1);
            keys =
                arrow_select::concat::concat(&[keys.as_ref(), null.as_ref()]).expect("same type");
        }
        let m = keys.len();
        batch(vec![("k", keys), (payload, row_ids(m))])
    };
    (side(nl, "a"), side(nr, "b"))
}

fn join(
    s: &FrameSide,
    g: &mut Gen,
    t: ColType,
    variant: usize,
    how: JoinType,
    algorithm: JoinAlgorithm,
) -> Result<Vec<Output>> {
    let (l, r) = join_input(g, t, variant);
    s.note(format!(
        "k: {} keys, {} left rows, {} right rows, {} join, {algorithm:?}",
        t.name(),
        l.num_rows(),
        r.num_rows(),
        how.name()
    ));
    let spec = JoinSpec {
        left_on: vec!["k".into()],
        right_on: vec!["k".into()],
        how,
        suffixes: ("_x".into(), "_y".into()),
        algorithm,
    };
    s.expect(|| {
        let out = oracle::join::join(&oracle::table(&l)?, &oracle::table(&r)?, &spec)?;
        oracle::batches(&[out])
    });
    let (mut lp, mut rp) = (s.import(l)?, s.import(r)?);
    if algorithm == JoinAlgorithm::SortedMerge {
        let by = vec![SortKey {
            column: "k".into(),
            descending: false,
        }];
        lp = s.backend.sort(&lp, &by)?;
        rp = s.backend.sort(&rp, &by)?;
    }
    let out = s.backend.join(&lp, &rp, &spec)?;
    Ok(vec![Output::unordered(s.export(&out)?)])
}

macro_rules! joins {
    ($name:ident, $alg:ident) => {
        /// One run function per join type, indexed by `JoinType as usize`.
        const $name: [super::case::FrameRun; 4] = [
            |s, g, t, v| join(s, g, t, v, JoinType::Inner, JoinAlgorithm::$alg),
            |s, g, t, v| join(s, g, t, v, JoinType::Left, JoinAlgorithm::$alg),
            |s, g, t, v| join(s, g, t, v, JoinType::Right, JoinAlgorithm::$alg),
            |s, g, t, v| join(s, g, t, v, JoinType::Outer, JoinAlgorithm::$alg),
        ];
    };
}
joins!(JOIN_HASH, Hash);
joins!(JOIN_SORTED, SortedMerge);

/// A sort case's input (`v` of type `t`, an `Int64` tie-breaker `k`, row ids `i`) and keys:
/// `v` ascending or descending by variant, then `k` from variant 2 on.
fn sort_input(g: &mut Gen, t: ColType, variant: usize) -> (RecordBatch, Vec<SortKey>) {
    let n = rows(g, variant);
    let b = batch(vec![
        ("v", column(g, t, n, Draw::keys(n))),
        ("k", column(g, ColType::Int64, n, Draw::keys(n))),
        ("i", row_ids(n)),
    ]);
    let mut by = vec![SortKey {
        column: "v".into(),
        descending: variant % 2 == 1,
    }];
    if variant >= 2 {
        by.push(SortKey {
            column: "k".into(),
            descending: g.chance(0.5),
        });
    }
    (b, by)
}

fn sort(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let (b, by) = sort_input(g, t, variant);
    s.note(format!(
        "v: {} x {} rows; by {by:?} (stable: ties keep row order)",
        t.name(),
        b.num_rows()
    ));
    s.expect(|| oracle::batches(&[oracle::sort::sort(&oracle::table(&b)?, &by)?]));
    let p = s.import(b)?;
    Ok(vec![Output::exact(s.export(&s.backend.sort(&p, &by)?)?)])
}

fn sort_limit(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let (b, by) = sort_input(g, t, variant);
    let n = g.below(b.num_rows() + 3);
    s.note(format!(
        "v: {} x {} rows; first {n} by {by:?} (the head of the stable sort)",
        t.name(),
        b.num_rows()
    ));
    s.expect(|| {
        let input = oracle::table(&b)?;
        let order = oracle::sort::sorted_rows(&input, &by)?;
        oracle::batches(&[input.take(&order[..n.min(order.len())])])
    });
    let p = s.import(b)?;
    Ok(vec![Output::exact(
        s.export(&s.backend.sort_limit(&p, &by, n)?)?,
    )])
}

fn concat(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = values_batch(g, t, n);
    let count = 1 + g.below(4);
    let pieces = split(g, &b, count);
    s.note(format!(
        "v: {} in {count} pieces of {:?} rows",
        t.name(),
        pieces.iter().map(|p| p.num_rows()).collect::<Vec<_>>()
    ));
    s.expect(|| {
        let tables = pieces
            .iter()
            .map(oracle::table)
            .collect::<std::result::Result<Vec<_>, String>>()?;
        oracle::batches(&[Table::concat(&tables)])
    });
    let parts = pieces
        .into_iter()
        .map(|p| s.import(p))
        .collect::<Result<Vec<_>>>()?;
    Ok(vec![Output::exact(s.export(&s.backend.concat(&parts)?)?)])
}

fn slice(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = values_batch(g, t, n);
    let offset = g.below(n + 3);
    let len = g.below(n + 3);
    s.note(format!(
        "v: {} x {n} rows; slice({offset}, {len}) (clamped)",
        t.name()
    ));
    s.expect(|| {
        let input = oracle::table(&b)?;
        let rows: Vec<usize> = (offset..offset.saturating_add(len).min(n)).collect();
        oracle::batches(&[input.take(&rows)])
    });
    let p = s.import(b)?;
    Ok(vec![Output::exact(
        s.export(&s.backend.slice(&p, offset, len)?)?,
    )])
}

fn take(s: &FrameSide, g: &mut Gen, t: ColType, variant: usize) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = values_batch(g, t, n);
    let count = if n == 0 { 0 } else { g.below(2 * n + 1) };
    let idx: Vec<u64> = (0..count).map(|_| g.below(n) as u64).collect();
    s.note(format!(
        "v: {} x {n} rows; take {count} indices (with repeats)",
        t.name()
    ));
    s.expect(|| {
        let rows: Vec<usize> = idx.iter().map(|&i| i as usize).collect();
        oracle::batches(&[oracle::table(&b)?.take(&rows)])
    });
    let p = s.import(b)?;
    Ok(vec![Output::exact(s.export(&s.backend.take(&p, &idx)?)?)])
}
