//! Record batches and schemas as Arrow C Data Interface struct arrays, for dataframe
//! partitions crossing the plugin boundary.
//!
//! A batch is one struct array with a child per column (the C Data Interface's usual
//! encoding of a record batch); its row count is the struct's length, so a batch with no
//! columns keeps its rows. Import takes ownership, refuses a released struct, runs
//! arrow's full validation and requires a struct type; a panic inside arrow while reading
//! a malformed array is an error, never a crash of the receiver.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow_array::{Array as _, RecordBatch, StructArray};
use arrow_schema::{DataType, Schema, SchemaRef};
use tessera_plugin_abi::{FFI_ArrowArray, FFI_ArrowSchema};

use tessera_core::error::{Error, Result};

fn malformed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::invalid(
        what,
        format!("malformed Arrow batch across the plugin boundary: {e}"),
    )
}

/// Exports `batch` as a struct array and its schema; the receiver frees both.
///
/// # Errors
/// [`Error::Arrow`] when a column type has no C Data Interface form.
pub fn export_batch(batch: &RecordBatch) -> Result<(FFI_ArrowArray, FFI_ArrowSchema)> {
    // An empty slice of a string or list column keeps its offset into the values, but
    // the importer sizes the values buffer from the (absent) last offset and then refuses
    // the array: send fresh empty columns instead.
    let batch = if batch.num_rows() == 0 && batch.num_columns() > 0 {
        RecordBatch::new_empty(batch.schema())
    } else {
        batch.clone()
    };
    let data = StructArray::from(batch).into_data();
    let schema =
        FFI_ArrowSchema::try_from(data.data_type()).map_err(|e| Error::arrow("export batch", e))?;
    Ok((FFI_ArrowArray::new(&data), schema))
}

/// Imports a struct array as a batch, taking ownership of it.
///
/// # Errors
/// [`Error::Invalid`] naming `what` when the struct is released, not a struct array, or
/// fails arrow's validation.
pub fn import_batch(
    array: FFI_ArrowArray,
    schema: &FFI_ArrowSchema,
    what: &str,
) -> Result<RecordBatch> {
    if array.is_released() {
        return Err(malformed(what, "the array was already released"));
    }
    // SAFETY: not released; the exporter vouches for its buffers' sizes (the one thing
    // the C Data Interface cannot state), and full validation runs before any use.
    let data =
        unsafe { arrow_array::ffi::from_ffi(array, schema) }.map_err(|e| malformed(what, e))?;
    data.validate_full().map_err(|e| malformed(what, e))?;
    if !matches!(data.data_type(), DataType::Struct(_)) {
        return Err(malformed(
            what,
            format!(
                "a batch crosses as a struct array, got {}",
                data.data_type()
            ),
        ));
    }
    catch_unwind(AssertUnwindSafe(|| {
        let s = StructArray::from(data);
        if s.null_count() > 0 {
            return Err(malformed(what, "a batch's struct array has null rows"));
        }
        Ok(RecordBatch::from(s))
    }))
    .map_err(|p| malformed(what, tessera_core::error::panic_message(p.as_ref())))?
}

/// Exports a schema as a struct-typed Arrow schema.
///
/// # Errors
/// [`Error::Arrow`] when a field type has no C Data Interface form.
pub fn export_schema(schema: &Schema) -> Result<FFI_ArrowSchema> {
    FFI_ArrowSchema::try_from(schema).map_err(|e| Error::arrow("export schema", e))
}

/// Imports a struct-typed Arrow schema.
///
/// # Errors
/// [`Error::Invalid`] naming `what` when it is not a struct schema.
pub fn import_schema(schema: &FFI_ArrowSchema, what: &str) -> Result<SchemaRef> {
    Schema::try_from(schema)
        .map(Arc::new)
        .map_err(|e| malformed(what, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int64Array, StringArray};

    #[test]
    fn batches_and_schemas_round_trip_including_a_batch_without_columns() {
        let b = RecordBatch::try_from_iter(vec![
            (
                "k",
                Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
            ),
            ("s", Arc::new(StringArray::from(vec!["a", "ß"])) as ArrayRef),
        ])
        .unwrap();
        let (a, s) = export_batch(&b).unwrap();
        assert_eq!(import_batch(a, &s, "test").unwrap(), b);
        let rows_only = b.project(&[]).unwrap();
        let (a, s) = export_batch(&rows_only).unwrap();
        assert_eq!(import_batch(a, &s, "test").unwrap().num_rows(), 2);
        let fs = export_schema(&b.schema()).unwrap();
        assert_eq!(import_schema(&fs, "test").unwrap(), b.schema());
    }

    #[test]
    fn an_empty_slice_of_a_string_column_crosses() {
        let b = RecordBatch::try_from_iter(vec![(
            "s",
            Arc::new(StringArray::from(vec!["abc", "de", "f"])) as ArrayRef,
        )])
        .unwrap();
        let empty = b.slice(2, 0);
        let (a, s) = export_batch(&empty).unwrap();
        let back = import_batch(a, &s, "test").unwrap();
        assert_eq!(back.num_rows(), 0);
        assert_eq!(back.schema(), b.schema());
    }

    #[test]
    fn a_plain_array_is_not_a_batch() {
        let data = Int64Array::from(vec![1, 2]).into_data();
        let s = FFI_ArrowSchema::try_from(data.data_type()).unwrap();
        let e = import_batch(FFI_ArrowArray::new(&data), &s, "import_batch")
            .unwrap_err()
            .to_string();
        assert!(e.contains("struct array"), "{e}");
    }
}
