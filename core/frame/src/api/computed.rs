//! [`Computed`]: what [`DataFrame::compute`](crate::DataFrame::compute) returns, Arrow
//! batches on the host that print as a table.

use std::fmt;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::api::display::{format_batches, value_at, Value};
use crate::error::{Error, Result};

/// The result of [`DataFrame::compute`](crate::DataFrame::compute): Arrow batches (one per partition) that print as
/// a table.
#[derive(Debug, Clone)]
pub struct Computed {
    /// The schema.
    pub schema: SchemaRef,
    /// One batch per output partition, in order.
    pub batches: Vec<RecordBatch>,
}

impl Computed {
    /// Total rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// All rows in one batch.
    pub fn concat(&self) -> Result<RecordBatch> {
        arrow_select::concat::concat_batches(&self.schema, &self.batches)
            .map_err(|e| Error::arrow("concat", e))
    }

    /// The value at `row` of `column` (across batches).
    pub fn value(&self, column: &str, mut row: usize) -> Result<Value> {
        let idx = self
            .schema
            .index_of(column)
            .map_err(|_| Error::invalid("value", format!("no column '{column}'")))?;
        for b in &self.batches {
            if row < b.num_rows() {
                return Ok(value_at(b.column(idx).as_ref(), row));
            }
            row -= b.num_rows();
        }
        Err(Error::invalid(
            "value",
            format!("row {row} is past the end ({} rows)", self.num_rows()),
        ))
    }
}

impl fmt::Display for Computed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_batches(&self.schema, &self.batches, 40))
    }
}
