//! Scans: a file source read range by range, the program's leading filter handed to the
//! reader, and the stored forms a scan may pass on (dictionary-coded keys, 64-bit
//! decimals) when the aggregation above it can take them.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::DataType;

use super::stage::note_read;
use super::Pipeline;
use crate::backend::{AggFunc, AggSpec, DataFrameBackend, FrameProgram, FrameStep, Partition};
use crate::error::{Error, Result};
use crate::expr::{col, BinaryOp, Expr};
use crate::plan::{Node, ScanFilter};

/// The conjunction of the filters `program` starts with (`None` when it starts with a
/// projection).
pub(crate) fn leading_filter(program: &FrameProgram) -> Option<Expr> {
    program
        .steps
        .iter()
        .map_while(|s| match s {
            FrameStep::Filter(e) => Some(e.clone()),
            FrameStep::Project(_) => None,
        })
        .reduce(|a, b| a.and(b))
}

/// The pipeline of a scan node: a task per selected partition reads it (through
/// [`crate::plan::FileSource::read_filtered`] when `filter` follows the scan, through
/// [`crate::plan::FileSource::read_coded`] when `coded` names group keys to read as
/// dictionaries) and hands it to `backend`.
pub(crate) fn scan(
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    filter: Option<Expr>,
    coded: Vec<usize>,
) -> Pipeline {
    let Node::Scan {
        source,
        projection,
        selected,
        ..
    } = node
    else {
        unreachable!("scan() is called on scan nodes")
    };
    let ids: Vec<usize> = selected
        .clone()
        .unwrap_or_else(|| (0..source.partitions()).collect());
    let source = source.clone();
    let projection = projection.clone();
    let backend = backend.clone();
    Pipeline {
        n: ids.len(),
        task: Arc::new(move |i| {
            let batch = match &filter {
                None if !coded.is_empty() => {
                    source.read_coded(ids[i], projection.as_deref(), &coded)?
                }
                None => source.read(ids[i], projection.as_deref())?,
                Some(predicate) => {
                    let evaluate = |batch: &RecordBatch, e: &Expr| {
                        let part = backend.import_batch(batch.clone())?;
                        let program = FrameProgram {
                            steps: vec![FrameStep::Project(vec![("value".into(), e.clone())])],
                        };
                        let out = backend.export_batch(&backend.evaluate(&part, &program)?)?;
                        Ok(out.column(0).clone())
                    };
                    let filter = ScanFilter {
                        predicate,
                        evaluate: &evaluate,
                    };
                    source.read_filtered(ids[i], projection.as_deref(), &filter)?
                }
            };
            note_read(batch.get_array_memory_size() as u64);
            backend.import_batch(batch)
        }),
    }
}

/// The columns a scan under a groupby may read in their stored forms
/// ([`crate::plan::FileSource::read_coded`]), as indices into the scan's file schema:
///
/// - string group keys, when the backend groups dictionary keys by their codes, and only
///   keys the program passes through unchanged under their own name and no aggregation
///   but a count or other expression reads (the backend then sees a dictionary only where
///   it groups or counts);
/// - decimals of at most 18 digits, when the backend reads them in 64 bits, and only
///   columns whose values reach nothing but arithmetic and sums ([`summed_only`]):
///   everything the backend computes from them is then in the plan's types.
pub(crate) fn coded_columns(
    backend: &dyn DataFrameBackend,
    below: &Node,
    program: Option<&FrameProgram>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Coded {
    let Node::Scan {
        source, projection, ..
    } = below
    else {
        return Coded::default();
    };
    // Asked once: a backend builds its capabilities on each call.
    let forms = backend.capabilities().stored_forms;
    let schema = source.schema();
    let passed_through = |k: &str| {
        program.is_none_or(|p| {
            p.steps.iter().all(|step| match step {
                FrameStep::Filter(e) => !reads(e, k),
                FrameStep::Project(list) => {
                    list.iter()
                        .filter(|(name, e)| name == k || reads(e, k))
                        .map(|(name, e)| name == k && *e == col(k))
                        .collect::<Vec<_>>()
                        == [true]
                }
            })
        })
    };
    let in_scan = |i: &usize| projection.as_ref().is_none_or(|p| p.contains(i));
    let strings = keys
        .iter()
        .filter(|_| forms.dictionary_keys)
        // A count reads only a column's nulls, which a dictionary keeps (the plan counts
        // rows on a non-nullable key column).
        .filter(|k| {
            aggs.iter()
                .all(|a| a.column != **k || a.func == AggFunc::Count)
                && passed_through(k)
        })
        .filter_map(|k| schema.index_of(k).ok())
        .filter(|i| {
            matches!(
                schema.field(*i).data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            )
        });
    let decimals = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|_| forms.narrow_decimals)
        .filter(|(_, f)| matches!(f.data_type(), DataType::Decimal128(p, _) if *p <= 18))
        .filter(|(_, f)| summed_only(f.name(), program, keys, aggs))
        .map(|(i, _)| i);
    let strings: Vec<usize> = strings.filter(in_scan).collect();
    Coded {
        keys: !strings.is_empty(),
        columns: strings
            .into_iter()
            .chain(decimals.filter(in_scan))
            .collect(),
    }
}

/// What [`coded_columns`] found.
#[derive(Default)]
pub(crate) struct Coded {
    /// The columns to read in their stored forms (file schema indices).
    pub(crate) columns: Vec<usize>,
    /// Whether some are group keys: their partial states come back as dictionaries, to
    /// be cast back to the plan's type ([`planned_key_types`]).
    pub(crate) keys: bool,
}

/// Whether the values of column `k` reach only arithmetic and sums: through the program
/// (under `k` or under names a projection gives them unchanged), no filter reads them and
/// every other expression reads them only as operands of `+`, `-` or `*`
/// ([`read_as_operand`]); no group key is one of those names, and no aggregation but
/// `sum`, `mean` and `count` reads one.
fn summed_only(k: &str, program: Option<&FrameProgram>, keys: &[String], aggs: &[AggSpec]) -> bool {
    // The names holding `k`'s values after each step.
    let mut names = vec![k.to_string()];
    for step in program.map_or(&[][..], |p| &p.steps[..]) {
        match step {
            FrameStep::Filter(e) => {
                if names.iter().any(|n| reads(e, n)) {
                    return false;
                }
            }
            FrameStep::Project(list) => {
                let mut next = Vec::new();
                for (name, e) in list {
                    match e {
                        Expr::Column(c) if names.contains(c) => next.push(name.clone()),
                        _ if names.iter().all(|n| read_as_operand(e, n)) => {}
                        _ => return false,
                    }
                }
                names = next;
            }
        }
    }
    let summed = [AggFunc::Sum, AggFunc::Mean, AggFunc::Count];
    names.iter().all(|n| !keys.contains(n))
        && aggs
            .iter()
            .all(|a| !names.contains(&a.column) || summed.contains(&a.func))
}

/// Whether every read of column `k` in `e` is an operand of `+`, `-` or `*` (whose
/// result is a new column: a backend computes it in the plan's type whatever the width
/// of the decimal it reads).
fn read_as_operand(e: &Expr, k: &str) -> bool {
    match e {
        Expr::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul,
            left,
            right,
        } => [left, right]
            .into_iter()
            .all(|side| matches!(&**side, Expr::Column(c) if c == k) || read_as_operand(side, k)),
        _ => !reads(e, k),
    }
}

/// Whether `e` reads column `k`.
pub(crate) fn reads(e: &Expr, k: &str) -> bool {
    let mut read = std::collections::BTreeSet::new();
    e.columns_into(&mut read);
    read.contains(k)
}

/// `state` with each key column that came as a dictionary cast back to its type in
/// `planned` (a few rows: one per group).
pub(crate) fn planned_key_types(
    backend: &Arc<dyn DataFrameBackend>,
    state: Partition,
    keys: &[String],
    planned: &arrow_schema::SchemaRef,
) -> Result<Partition> {
    let batch = backend.export_batch(&state)?;
    let schema = batch.schema();
    let mut changed = false;
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        // A key that came as a dictionary, and the plan's type for it.
        let want = match (c.data_type(), planned.field_with_name(f.name())) {
            (DataType::Dictionary(..), Ok(p)) if keys.contains(f.name()) => Some(p.data_type()),
            _ => None,
        };
        match want {
            Some(t) => {
                changed = true;
                columns.push(arrow_cast::cast(c, t).map_err(|e| Error::arrow("groupby", e))?);
                fields.push(Arc::new(f.as_ref().clone().with_data_type(t.clone())));
            }
            None => {
                columns.push(c.clone());
                fields.push(f.clone());
            }
        }
    }
    if !changed {
        return Ok(state);
    }
    let batch = RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), columns)
        .map_err(|e| Error::arrow("groupby", e))?;
    backend.import_batch(batch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::lit;

    fn project(list: &[(&str, Expr)]) -> FrameStep {
        FrameStep::Project(
            list.iter()
                .map(|(n, e)| (n.to_string(), e.clone()))
                .collect(),
        )
    }

    fn sum(column: &str) -> AggSpec {
        AggSpec::new(column, AggFunc::Sum, "out")
    }

    /// A decimal whose values reach only arithmetic and sums, under its name or under
    /// names projections give it, may come in 64 bits; a filter, a comparison, a key or a
    /// `min` reading those values rules it out.
    #[test]
    fn decimals_are_narrowed_only_where_their_values_reach_arithmetic_and_sums() {
        let keys = ["k".to_string()];
        let program = |steps: Vec<FrameStep>| FrameProgram { steps };
        let q1 = program(vec![
            FrameStep::Filter(col("date").lt_eq(lit("1998-09-02"))),
            project(&[
                ("k", col("k")),
                ("p", col("p")),
                ("d", col("p") * (lit(1) - col("r"))),
            ]),
            project(&[("a0", col("p")), ("a1", col("d") * (lit(1) + col("r")))]),
        ]);
        let ok = |k: &str, p: &FrameProgram, aggs: &[AggSpec]| summed_only(k, Some(p), &keys, aggs);
        assert!(ok("p", &q1, &[sum("a0"), sum("a1")]));
        assert!(ok("r", &q1, &[sum("a0"), sum("a1")]));
        // The alias `a0` holds p's values: a mean or count may read it, a min may not.
        assert!(ok("p", &q1, &[AggSpec::new("a0", AggFunc::Mean, "m")]));
        assert!(ok("p", &q1, &[AggSpec::new("a0", AggFunc::Count, "c")]));
        assert!(!ok("p", &q1, &[AggSpec::new("a0", AggFunc::Min, "m")]));
        // `a1` is computed: any aggregation reads a Decimal128.
        assert!(ok("r", &q1, &[AggSpec::new("a1", AggFunc::Max, "m")]));
        // Read by a filter, a comparison, a function, or as a key.
        let filtered = program(vec![FrameStep::Filter(col("p").gt(lit(3)))]);
        assert!(!ok("p", &filtered, &[sum("p")]));
        let compared = program(vec![project(&[("b", col("p").gt(lit(3)))])]);
        assert!(!ok("p", &compared, &[]));
        let inside = program(vec![project(&[("b", col("p").abs() * lit(2))])]);
        assert!(!ok("p", &inside, &[]));
        // Arithmetic is followed through arithmetic only: under a function the rule stays
        // on the safe side.
        let nested = program(vec![project(&[("b", (col("p") * lit(2)).abs())])]);
        assert!(!ok("p", &nested, &[]));
        let deep = program(vec![project(&[(
            "b",
            (col("p") * lit(2) + lit(1)) * col("r"),
        )])]);
        assert!(ok("p", &deep, &[]));
        let keyed = program(vec![project(&[("k", col("p"))])]);
        assert!(!ok("p", &keyed, &[]));
        // A name given a computed value no longer holds the column's values.
        let replaced = program(vec![project(&[("p", col("p") * lit(2))])]);
        assert!(ok("p", &replaced, &[AggSpec::new("p", AggFunc::Min, "m")]));
        // Without a program, the aggregations read the column itself.
        assert!(summed_only("p", None, &keys, &[sum("p")]));
        assert!(!summed_only(
            "p",
            None,
            &keys,
            &[AggSpec::new("p", AggFunc::First, "f")]
        ));
        assert!(!summed_only("k", None, &keys, &[]));
    }
}
