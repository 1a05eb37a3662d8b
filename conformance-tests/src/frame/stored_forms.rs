//! Cases for the stored forms a backend may take in place of the plan's types: a
//! groupby over a Parquet scan hands `aggregate_partial_of` string keys as
//! `Dictionary(Int32, Utf8)` when the backend declares `stored_forms.dictionary_keys`, as
//! `Utf8View` when it declares `stored_forms.view_keys`, and decimals of at most 18 digits as `Decimal64` when it declares `stored_forms.narrow_decimals`
//! (`FrameCapabilities::stored_forms`). Each case runs the same
//! program and aggregations on the reference with the plan's types and on the backend with
//! the stored forms; the results must agree exactly. A backend that does not declare a
//! form is reported as not supporting its cases (core never hands it that form).

use std::sync::Arc;

use arrow_array::{ArrayRef, Decimal128Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use tessera_core::frame::expr::{col, lit};
use tessera_core::frame::{AggFunc, AggSpec, FrameProgram, FrameStep, Partition};
use tessera_core::{Error, Result};

use super::case::{FrameFamily, FrameSide, Need, Output, StoredForm};
use super::data::{column, split, ColType, Draw};
use super::oracle::{self, value::Table};
use super::protocol::{parts, row_ids, rows};
use crate::case::Group;
use crate::gen::Gen;

/// The stored-form families: one per form, over the key types it applies to.
pub fn families() -> Vec<FrameFamily> {
    vec![
        FrameFamily {
            op: "frame.aggregate_of.dictionary_keys".into(),
            group: Group::Protocol,
            types: vec![ColType::Utf8],
            need: Need::StoredForm(StoredForm::DictionaryKeys),
            run: |s, g, t, v| aggregate_stored(s, g, t, v, StoredForm::DictionaryKeys),
        },
        FrameFamily {
            op: "frame.aggregate_of.view_keys".into(),
            group: Group::Protocol,
            types: vec![ColType::Utf8],
            need: Need::StoredForm(StoredForm::ViewKeys),
            run: |s, g, t, v| aggregate_stored(s, g, t, v, StoredForm::ViewKeys),
        },
        FrameFamily {
            op: "frame.aggregate_of.decimal64".into(),
            group: Group::Protocol,
            types: vec![ColType::Int64, ColType::Utf8],
            need: Need::StoredForm(StoredForm::Decimal64),
            run: |s, g, t, v| aggregate_stored(s, g, t, v, StoredForm::Decimal64),
        },
    ]
}

/// A Decimal128(15, 2) column of `n` values up to ±10^13 (a price), about a tenth null.
fn prices(g: &mut Gen, n: usize) -> ArrayRef {
    let values: Decimal128Array = (0..n)
        .map(|_| {
            (!g.chance(0.1)).then(|| {
                let magnitude = (g.next_u64() % 10_000_000_000_000) as i128;
                if g.chance(0.5) {
                    -magnitude
                } else {
                    magnitude
                }
            })
        })
        .collect();
    Arc::new(values.with_precision_and_scale(15, 2).expect("15 digits"))
}

/// A Decimal128(4, 2) column of `n` rates in `[0, 0.10]`, without nulls.
fn rates(g: &mut Gen, n: usize) -> ArrayRef {
    let values: Decimal128Array = (0..n).map(|_| Some(g.below(11) as i128)).collect();
    Arc::new(values.with_precision_and_scale(4, 2).expect("4 digits"))
}

/// `b` with its columns in the stored form: the key `k` as a dictionary of its strings or
/// as string views, or the decimals `p` and `r` as Decimal64.
fn stored(b: &RecordBatch, form: StoredForm) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        let to = match (form, f.name().as_str(), f.data_type()) {
            (StoredForm::DictionaryKeys, "k", DataType::Utf8) => Some(DataType::Dictionary(
                Box::new(DataType::Int32),
                Box::new(DataType::Utf8),
            )),
            (StoredForm::ViewKeys, "k", DataType::Utf8) => Some(DataType::Utf8View),
            (StoredForm::Decimal64, "p" | "r", DataType::Decimal128(p, s)) => {
                Some(DataType::Decimal64(*p, *s))
            }
            _ => None,
        };
        match to {
            Some(t) => {
                columns.push(arrow_cast::cast(c, &t).map_err(|e| Error::arrow("stored form", e))?);
                fields.push(Field::new(f.name(), t, f.is_nullable()));
            }
            None => {
                columns.push(c.clone());
                fields.push(f.as_ref().clone());
            }
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::arrow("stored form", e))
}

/// A state's key column `k` cast back from a dictionary or views to Utf8, as core does
/// with the partial states of such keys before it combines them.
fn keys_back(b: RecordBatch) -> Result<RecordBatch> {
    let Ok(i) = b.schema().index_of("k") else {
        return Ok(b);
    };
    if !matches!(
        b.column(i).data_type(),
        DataType::Dictionary(..) | DataType::Utf8View
    ) {
        return Ok(b);
    }
    // A cast takes any key type and rejects keys outside the dictionary.
    let utf8 = arrow_cast::cast(b.column(i), &DataType::Utf8)
        .map_err(|e| Error::arrow("stored form", e))?;
    let mut columns = b.columns().to_vec();
    columns[i] = utf8;
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[i] = Field::new("k", DataType::Utf8, true);
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::arrow("stored form", e))
}

/// Keys `k` of `t`, prices `p` (Decimal128(15, 2)), rates `r` (Decimal128(4, 2)) and row
/// numbers `i`, in the variant's partitions; the program keeps the rows from a quarter on,
/// passes `p` through and computes `p * (1 - r)`, `(p * (1 - r)) * (1 + r)` and `p - r`;
/// the aggregations sum and average `p` and the computed columns and count `p`. On the
/// backend's side the columns come in `form`.
fn aggregate_stored(
    s: &FrameSide,
    g: &mut Gen,
    t: ColType,
    variant: usize,
    form: StoredForm,
) -> Result<Vec<Output>> {
    let n = rows(g, variant);
    let b = super::data::batch(vec![
        ("k", column(g, t, n, Draw::keys(n))),
        ("p", prices(g, n)),
        ("r", rates(g, n)),
        ("i", row_ids(n)),
    ]);
    let count = parts(g, variant);
    let pieces = split(g, &b, count);
    s.note(format!(
        "k: {} keys, p: decimal(15, 2), r: decimal(4, 2); {} partitions of {:?} rows; the backend's side gets {form:?}",
        t.name(),
        pieces.len(),
        pieces.iter().map(|p| p.num_rows()).collect::<Vec<_>>()
    ));
    if !s.reference && !form.declared(s.backend.as_ref()) {
        return Err(Error::FrameUnsupported {
            backend: s.backend.name().to_string(),
            op: format!("aggregate_partial_of with {form:?} columns"),
        });
    }
    let discounted = col("p") * (lit(1) - col("r"));
    let program = FrameProgram {
        steps: vec![
            FrameStep::Filter(col("i").gt_eq(lit((n / 4) as i64))),
            FrameStep::Project(vec![
                ("k".into(), col("k")),
                ("p".into(), col("p")),
                ("d".into(), discounted.clone()),
                ("c".into(), discounted * (lit(1) + col("r"))),
                ("m".into(), col("p") - col("r")),
            ]),
        ],
    };
    let aggs = vec![
        AggSpec::new("p", AggFunc::Sum, "sum_p"),
        AggSpec::new("p", AggFunc::Mean, "mean_p"),
        AggSpec::new("p", AggFunc::Count, "count_p"),
        AggSpec::new("d", AggFunc::Sum, "sum_d"),
        AggSpec::new("c", AggFunc::Sum, "sum_c"),
        AggSpec::new("m", AggFunc::Mean, "mean_m"),
    ];
    let keys = vec!["k".to_string()];
    // The plan's types throughout: what every stored form must give back.
    s.expect(|| {
        let tables = pieces
            .iter()
            .map(oracle::table)
            .collect::<std::result::Result<Vec<_>, String>>()?;
        let rows = oracle::program(&Table::concat(&tables), &program.steps)?;
        let specs: Vec<(&str, AggFunc, &str)> = aggs
            .iter()
            .map(|a| (a.column.as_str(), a.func, a.output.as_str()))
            .collect();
        oracle::batches(&[oracle::aggregate::aggregate_all(&rows, &keys, &specs)?])
    });
    let partials = pieces
        .into_iter()
        .map(|p| {
            let p = if s.reference { p } else { stored(&p, form)? };
            let state = s
                .backend
                .aggregate_partial_of(&s.import(p)?, &program, &keys, &aggs)?;
            s.import(keys_back(s.export(&state)?)?)
        })
        .collect::<Result<Vec<Partition>>>()?;
    let state = s.backend.aggregate_combine(&partials, &keys, &aggs)?;
    let out = s.backend.aggregate_finalize(&state, &keys, &aggs)?;
    Ok(vec![Output::exact(s.export(&out)?).with_sums()])
}
