//! Compacting string and binary view columns after a selection.
//!
//! A `take` or `filter` of a view column copies the 16-byte views but shares the data
//! buffers of the input, whole: a join output of a few thousand rows keeps the text of
//! every row of the table it came from, and every bucket of a shuffle keeps all of its
//! partition's. Concatenating such pieces then gathers buffers many times over (TPC-H Q9 at
//! scale factor 10 went past 20 GB that way). A view column whose buffers hold more than
//! twice the bytes its rows use is rewritten with only those bytes, as DataFusion does
//! after its filters.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::ByteViewType;
use arrow_array::{Array, ArrayRef, GenericByteViewArray, RecordBatch};
use arrow_schema::DataType;
use tessera_core::{Error, Result};

/// Slack below which a column is left as it is: small buffers are not worth a copy.
const SLACK: usize = 64 << 10;

/// Data buffers past which a column is compacted whatever it uses of them. Concatenating
/// view columns appends their buffer lists, so the states of a groupby combined from
/// hundreds of partitions carry every partition's buffers; each `take` of such a column
/// then clones (and later drops) the whole list: TPC-H Q16 at scale factor 10 spent 6 s of
/// its 6.4 s sorting 27,840 rows that way, where it takes 0.2 s compacted.
const MANY_BUFFERS: usize = 64;

/// `a` with its view data compacted when it holds more than twice what its rows use.
pub(crate) fn compact(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Utf8View => compact_views(a.as_string_view()),
        DataType::BinaryView => compact_views(a.as_binary_view()),
        _ => None,
    }
    .unwrap_or_else(|| a.clone())
}

/// The compacted copy of `v`, or `None` when it uses most of what it holds in a few
/// buffers.
fn compact_views<T: ByteViewType + ?Sized>(v: &GenericByteViewArray<T>) -> Option<ArrayRef> {
    let held: usize = v.data_buffers().iter().map(|b| b.len()).sum();
    (held > 2 * v.total_buffer_bytes_used() + SLACK || v.data_buffers().len() > MANY_BUFFERS)
        .then(|| Arc::new(v.gc()) as ArrayRef)
}

/// `batch` with every view column compacted where it pays ([`compact`]).
pub(crate) fn compact_batch(batch: RecordBatch) -> Result<RecordBatch> {
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), DataType::Utf8View | DataType::BinaryView))
    {
        return Ok(batch);
    }
    let columns = batch.columns().iter().map(compact).collect();
    RecordBatch::try_new_with_options(
        batch.schema(),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
    .map_err(|e| Error::arrow("compact views", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{StringViewArray, UInt32Array};

    #[test]
    fn a_small_selection_of_long_strings_keeps_only_its_bytes() {
        let long: Vec<String> = (0..10_000)
            .map(|i| format!("a string of more than twelve bytes, number {i}"))
            .collect();
        let a: ArrayRef = Arc::new(StringViewArray::from_iter_values(long.iter()));
        let picked =
            arrow_select::take::take(&a, &UInt32Array::from(vec![3u32, 9_999, 3]), None).unwrap();
        let held = |x: &ArrayRef| -> usize {
            x.as_string_view()
                .data_buffers()
                .iter()
                .map(|b| b.len())
                .sum()
        };
        assert!(held(&picked) > 400_000, "take shares the input's buffers");
        let c = compact(&picked);
        assert!(held(&c) < 1_000, "{} bytes held", held(&c));
        let text: Vec<&str> = c.as_string_view().iter().map(|s| s.unwrap()).collect();
        assert_eq!(
            text,
            [long[3].as_str(), long[9_999].as_str(), long[3].as_str()]
        );
        // A column that uses most of its buffers is left alone (the same buffers).
        let all = compact(&a);
        assert!(Arc::ptr_eq(&all, &a));
    }

    #[test]
    fn a_column_of_many_buffers_is_compacted_into_few() {
        // Concatenated pieces, each with a buffer of its own, every byte used.
        let pieces: Vec<ArrayRef> = (0..200)
            .map(|i| {
                Arc::new(StringViewArray::from_iter_values([format!(
                    "piece number {i} of a concatenation"
                )])) as ArrayRef
            })
            .collect();
        let refs: Vec<&dyn Array> = pieces.iter().map(|p| p.as_ref()).collect();
        let joined = arrow_select::concat::concat(&refs).unwrap();
        assert_eq!(joined.as_string_view().data_buffers().len(), 200);
        let c = compact(&joined);
        assert!(c.as_string_view().data_buffers().len() <= MANY_BUFFERS);
        assert_eq!(
            c.as_string_view().value(137),
            "piece number 137 of a concatenation"
        );
        assert_eq!(c.len(), 200);
    }
}
