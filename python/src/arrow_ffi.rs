//! The Arrow PyCapsule interface, both ways, without pyarrow on the Rust side.
//!
//! Export: a computed frame's batches become an `ArrowArrayStream` in a capsule named
//! `arrow_array_stream` (`__arrow_c_stream__`); pyarrow, Polars and DuckDB take it and
//! read the engine's buffers in place. Import: anything with `__arrow_c_stream__` (a
//! pyarrow table, a Polars frame, a DuckDB relation) is read batch by batch into
//! partitions; the buffers are shared, not copied.
//!
//! This is an FFI boundary: the capsule holds a C struct whose `release` callback the
//! consumer moves out (the C stream interface's ownership rule), which is why this module
//! alone allows `unsafe`.
#![allow(unsafe_code)]

use std::ffi::CStr;

use arrow_array::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::SchemaRef;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

/// The capsule name the interface requires.
const STREAM: &CStr = c"arrow_array_stream";

/// An exported stream in a capsule. The C struct is moved out by the consumer (leaving
/// `release` null); whatever is left is released when the capsule is destroyed, which
/// `FFI_ArrowArrayStream`'s `Drop` does. Transparent, so the capsule's pointer is the
/// struct's address, where the consumer reads it.
#[repr(transparent)]
struct Exported(#[allow(dead_code)] FFI_ArrowArrayStream);

// SAFETY: the stream owns its batches (reference-counted Arrow buffers, themselves Send)
// and a boxed `RecordBatchReader + Send`; its raw pointers are private to that box and
// are touched only through the callbacks, by whichever single thread holds the capsule.
unsafe impl Send for Exported {}

/// `batches` as an `arrow_array_stream` capsule.
pub fn export_stream<'py>(
    py: Python<'py>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let reader: Box<dyn RecordBatchReader + Send> = Box::new(RecordBatchIterator::new(
        batches.into_iter().map(Ok),
        schema,
    ));
    PyCapsule::new_with_value(py, Exported(FFI_ArrowArrayStream::new(reader)), STREAM)
}

/// The schema and batches of `obj`'s `__arrow_c_stream__`.
///
/// # Errors
/// `TypeError` when `obj` has no `__arrow_c_stream__`; an Arrow error while reading.
pub fn import_stream(obj: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    if !obj.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "{} has no __arrow_c_stream__; give a pyarrow Table, a Polars DataFrame, a DuckDB relation or anything else that exports the Arrow PyCapsule interface",
            obj.get_type().name()?
        )));
    }
    let capsule = obj.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(PyErr::from)?;
    let ptr = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: the capsule is named `arrow_array_stream`, so by the interface it points to
    // an `FFI_ArrowArrayStream`; `from_raw` moves the struct out and leaves a released
    // (null `release`) one behind, so the capsule's destructor does nothing further.
    let reader = unsafe { ArrowArrayStreamReader::from_raw(ptr.as_ptr().cast()) }
        .map_err(|e| PyValueError::new_err(format!("reading the Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PyValueError::new_err(format!("reading the Arrow stream: {e}")))?;
    Ok((schema, batches))
}
