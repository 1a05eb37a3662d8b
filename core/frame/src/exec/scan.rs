//! Scans: a file source read range by range, the program's leading filter handed to the
//! reader, and the columns the optimizer chose to read in their stored forms
//! (dictionary-coded keys, 64-bit decimals; `optimize/stored_forms.rs`) handed over as
//! stored, with the key states cast back to the plan's types.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::DataType;

use super::stage::note_read;
use crate::backend::{DataFrameBackend, FrameProgram, FrameStep, Partition};
use crate::error::{Error, Result};
use crate::exec::partitions::Pipeline;
use crate::expr::Expr;
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

/// The backend a reader's pushed predicate runs on: the predicate reads host batches the
/// reader has just decoded (a row group's column, a dictionary's values), so it runs on the
/// `cpu` reference backend where that is linked — its partitions are those batches, nothing
/// is copied — instead of a round trip through the plan's backend (to a device and back
/// for each predicate). The reader only drops rows early; the plan's backend still runs
/// the filter on what is left, so the two agree as the conformance suite holds them to.
fn host_evaluator(backend: &Arc<dyn DataFrameBackend>) -> Arc<dyn DataFrameBackend> {
    if backend.name() == "cpu" {
        return backend.clone();
    }
    crate::registry::dataframe_backend("cpu").unwrap_or_else(|_| backend.clone())
}

/// The pipeline of a scan node: a task per selected partition reads it (through
/// [`crate::plan::FileSource::read_filtered`] when `filter` follows the scan, through
/// [`crate::plan::FileSource::read_coded`] when `coded` names columns to read in the
/// stored forms `backend` takes) and hands it to `backend`.
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
    let forms = backend.capabilities().stored_forms;
    // Only a scan with a pushed predicate evaluates anything on the host.
    let host = filter.as_ref().map(|_| host_evaluator(&backend));
    // While a task decodes partition i, the system reads ahead partition i + 1, which
    // the same worker most often takes next (the pool splits a stage's range into runs
    // that each worker takes in order): on a cold disk a task's reads otherwise wait,
    // one column chunk after another, with its core idle.
    Pipeline {
        n: ids.len(),
        task: Arc::new(move |i| {
            if let Some(&next) = ids.get(i + 1) {
                source.prefetch(next, projection.as_deref());
            }
            let batch = match &filter {
                None if !coded.is_empty() => {
                    source.read_coded(ids[i], projection.as_deref(), &coded, forms)?
                }
                None => source.read(ids[i], projection.as_deref())?,
                Some(predicate) => {
                    let host = host.as_ref().unwrap_or(&backend);
                    let evaluate = |batch: &RecordBatch, e: &Expr| {
                        let part = host.import_batch(batch.clone())?;
                        let program = FrameProgram {
                            steps: vec![FrameStep::Project(vec![("value".into(), e.clone())])],
                        };
                        let out = host.export_batch(&host.evaluate(&part, &program)?)?;
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

/// `state` with each key column that came as a dictionary or as string views cast back
/// to its type in `planned` (a few rows: one per group), on the host. Not by the backend:
/// a device backend has no kernel for a dictionary cast and would run it as a recorded
/// host fallback, which `dataframe.fallback = "error"` refuses at run time for a plan
/// that `explain()` showed without one.
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
        // A key that came as a dictionary or as views, and the plan's type for it.
        let want = match (c.data_type(), planned.field_with_name(f.name())) {
            (DataType::Dictionary(..) | DataType::Utf8View, Ok(p))
                if keys.contains(f.name()) && p.data_type() != c.data_type() =>
            {
                Some(p.data_type())
            }
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
