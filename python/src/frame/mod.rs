//! `tessera.DataFrame`: a lazy partitioned dataframe with pandas' and Dask's method names,
//! and `tessera.ComputedFrame`, what `compute()` returns. One class per file: the frame's
//! methods in `dataframe.rs`, `GroupBy` in `groupby.rs`, `ComputedFrame` in `computed.rs`,
//! the constructors in `io.rs`, the argument conversions they share in `args.rs`.
//!
//! Frames come from files (`read_csv`, `read_parquet`: globs, hive directories, object
//! URLs when built with `object-store`) or from Arrow data in memory (`from_arrow` takes
//! anything exporting the Arrow PyCapsule interface; `from_pandas` goes through pyarrow).
//! A computed result exports `__arrow_c_stream__`, so `pyarrow.table(r)` and
//! `polars.DataFrame(r)` read the engine's buffers without a copy; `to_pandas()`,
//! `to_polars()` and `to_arrow()` are the shortcuts.

mod args;
mod computed;
mod dataframe;
mod groupby;
pub(crate) mod io;

pub use computed::PyComputed;
pub use groupby::PyGroupBy;

use crate::errors::IntoPy;
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use std::sync::Arc;
use tessera::frame::{Computed, DataFrame};

/// A lazy partitioned dataframe (see the module docs).
#[pyclass(name = "DataFrame", module = "tessera", frozen)]
#[derive(Clone)]
pub struct PyDataFrame {
    /// The Rust frame.
    pub inner: DataFrame,
}

impl From<DataFrame> for PyDataFrame {
    fn from(inner: DataFrame) -> Self {
        PyDataFrame { inner }
    }
}

fn wrap(r: tessera::Result<DataFrame>) -> PyResult<PyDataFrame> {
    r.py_err().map(Into::into)
}

/// `batches` as one batch (the engine's `Computed::concat`).
fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> PyResult<RecordBatch> {
    let c = Computed {
        schema: Arc::clone(schema),
        batches: batches.to_vec(),
    };
    c.concat().py_err()
}
