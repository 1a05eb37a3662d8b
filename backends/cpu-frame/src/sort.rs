//! Sorting and range partitioning through the `arrow-row` format: the sort keys of a row
//! become bytes whose order is the sort order (descending and nulls-last folded in), so
//! one stable byte-wise sort handles any number of keys of any orderable types.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::SortOptions;
use tessera_core::frame::SortKey;
use tessera_core::{Error, Result};

/// The sort keys' columns of `batch`, encoded in sort order.
fn sort_rows(batch: &RecordBatch, by: &[SortKey], conv: &RowConverter) -> Result<Rows> {
    let cols: Vec<ArrayRef> = by
        .iter()
        .map(|k| {
            batch
                .column_by_name(&k.column)
                .cloned()
                .ok_or_else(|| Error::invalid("sort", format!("no column '{}'", k.column)))
        })
        .collect::<Result<_>>()?;
    conv.convert_columns(&cols)
        .map_err(|e| Error::arrow("sort", e))
}

fn converter(batch: &RecordBatch, by: &[SortKey]) -> Result<RowConverter> {
    let schema = batch.schema();
    let fields = by
        .iter()
        .map(|k| {
            let f = schema
                .field_with_name(&k.column)
                .map_err(|_| Error::invalid("sort", format!("no column '{}'", k.column)))?;
            Ok(SortField::new_with_options(
                f.data_type().clone(),
                SortOptions {
                    descending: k.descending,
                    nulls_first: false,
                },
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    RowConverter::new(fields).map_err(|e| Error::arrow("sort", e))
}

/// A stable sort of `batch` by `by` (nulls last).
pub(crate) fn sort_batch(batch: &RecordBatch, by: &[SortKey]) -> Result<RecordBatch> {
    let conv = converter(batch, by)?;
    let rows = sort_rows(batch, by, &conv)?;
    let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
    idx.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
    arrow_select::take::take_record_batch(batch, &UInt32Array::from(idx))
        .map_err(|e| Error::arrow("sort", e))
}

/// Output index per row: the number of bounds strictly below the row's key, so a key equal
/// to bound `i` lands in range `i`.
pub(crate) fn range_ids(
    batch: &RecordBatch,
    by: &[SortKey],
    bounds: &RecordBatch,
) -> Result<Vec<u32>> {
    let conv = converter(batch, by)?;
    let rows = sort_rows(batch, by, &conv)?;
    // The bounds' columns are named like the keys and must have the same types.
    let b = sort_rows(bounds, by, &conv)?;
    let bound_rows: Vec<_> = (0..bounds.num_rows()).map(|i| b.row(i)).collect();
    Ok((0..batch.num_rows())
        .map(|i| {
            let r = rows.row(i);
            bound_rows.partition_point(|x| *x < r) as u32
        })
        .collect())
}
