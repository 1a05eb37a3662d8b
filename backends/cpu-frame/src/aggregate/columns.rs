//! The input columns an aggregation reads: by name, cast to the type its state keeps.

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use tessera_core::{Error, Result};

pub(super) fn column(batch: &RecordBatch, name: &str, op: &'static str) -> Result<ArrayRef> {
    batch
        .column_by_name(name)
        .cloned()
        .ok_or_else(|| Error::invalid(op, format!("no column '{name}' in the partition")))
}

pub(super) fn cast(a: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    if a.data_type() == t {
        Ok(a.clone())
    } else {
        arrow_cast::cast(a, t).map_err(|e| Error::arrow("aggregate", e))
    }
}
