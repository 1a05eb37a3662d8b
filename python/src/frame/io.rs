//! Frames from files and memory: `read_csv`, `read_parquet`, `from_arrow` (anything
//! exporting the Arrow PyCapsule interface), and `concat_frames`.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tessera::frame::{CsvOptions, DataFrame};

use super::{concat, wrap, PyDataFrame};
use crate::arrow_ffi::import_stream;
use crate::expr::data_type_of;

/// Reads CSV files lazily (`path`: a file, a glob, or an object URL): `sep`, `header`
/// (`None` for none, with `names`), `dtype` (`{column: type}` overrides),
/// `parse_dates`, `na_values`, `blocksize` (bytes per partition).
#[pyfunction]
#[pyo3(signature = (path, sep=",", header=Some("infer"), names=None, dtype=None, parse_dates=None, na_values=None, blocksize=None))]
#[allow(clippy::too_many_arguments)]
pub fn read_csv(
    path: &str,
    sep: &str,
    header: Option<&str>,
    names: Option<Vec<String>>,
    dtype: Option<&Bound<'_, PyDict>>,
    parse_dates: Option<Vec<String>>,
    na_values: Option<Vec<String>>,
    blocksize: Option<u64>,
) -> PyResult<PyDataFrame> {
    let mut o = CsvOptions::default();
    let delim = sep.as_bytes();
    if delim.len() != 1 {
        return Err(PyValueError::new_err(format!(
            "sep={sep:?}: give one single-byte character"
        )));
    }
    o.delimiter = delim[0];
    o.has_header = header.is_some() && names.is_none();
    o.names = names;
    if let Some(d) = dtype {
        for (k, v) in d.iter() {
            let t: String = v.extract()?;
            o.dtypes.push((k.extract()?, data_type_of(&t)?));
        }
    }
    if let Some(p) = parse_dates {
        o.parse_dates = p;
    }
    if let Some(n) = na_values {
        // As pandas' `na_values`: added to the default missing markers ("", "NA", "NaN",
        // ...), not in place of them.
        for v in n {
            if !o.null_values.contains(&v) {
                o.null_values.push(v);
            }
        }
    }
    if let Some(b) = blocksize {
        o.partition_bytes = b.max(1);
    }
    wrap(tessera::frame::read_csv(path, o))
}

/// The rows of `frames` one after another (their partitions in order), matching
/// columns by name, as `pandas.concat`/`dd.concat`.
///
/// # Errors
/// No frames, frames on different backends, or columns that differ.
#[pyfunction]
pub fn concat_frames(frames: Vec<Bound<'_, PyDataFrame>>) -> PyResult<PyDataFrame> {
    let inner: Vec<DataFrame> = frames.iter().map(|f| f.get().inner.clone()).collect();
    wrap(DataFrame::concat(&inner))
}

/// Reads Parquet lazily: a file, a glob, a hive-partitioned directory (keys become
/// columns, and a filter on them skips files), or an object URL.
#[pyfunction]
pub fn read_parquet(path: &str) -> PyResult<PyDataFrame> {
    wrap(tessera::frame::read_parquet(path))
}

/// A frame from anything exporting `__arrow_c_stream__` (pyarrow, Polars, DuckDB): one
/// partition per batch, or `npartitions` of about equal rows; the buffers are shared.
#[pyfunction]
#[pyo3(signature = (data, npartitions=None, backend=None))]
pub fn from_arrow(
    data: &Bound<'_, PyAny>,
    npartitions: Option<usize>,
    backend: Option<&str>,
) -> PyResult<PyDataFrame> {
    let (schema, batches) = import_stream(data)?;
    frame_from_batches(schema, batches, npartitions, backend)
}

pub(super) fn frame_from_batches(
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    npartitions: Option<usize>,
    backend: Option<&str>,
) -> PyResult<PyDataFrame> {
    let batches: Vec<RecordBatch> = batches.into_iter().filter(|b| b.num_rows() > 0).collect();
    match (npartitions, batches.len()) {
        (_, 0) => wrap(DataFrame::from_record_batches(
            vec![RecordBatch::new_empty(schema)],
            backend,
        )),
        (None, _) => wrap(DataFrame::from_record_batches(batches, backend)),
        (Some(n), 1) => wrap(DataFrame::from_record_batch(
            batches.into_iter().next().expect("one batch"),
            n.max(1),
            backend,
        )),
        (Some(n), _) => {
            let one = concat(&schema, &batches)?;
            wrap(DataFrame::from_record_batch(one, n.max(1), backend))
        }
    }
}
