//! Columns of a Parquet row group read in the form they are stored in, where a backend
//! or a reader can use that form without the conversion to the frame's type.
//!
//! - **Strings as dictionaries.** Writers dictionary-encode low-cardinality string columns
//!   (flags, statuses, ship modes, nation names): a column chunk stores each distinct
//!   string once and a small integer per row. Read as Arrow's `Dictionary(Int32, Utf8)`,
//!   a row costs a key instead of a 16-byte view built from the dictionary. Only a chunk
//!   whose every data page is dictionary-encoded, as its page encoding statistics record,
//!   is read so: a writer that fell back to plain pages (mostly distinct strings) would
//!   make the reader build the dictionary itself.
//! - **Other strings as views**, for a backend that takes them (`StoredForms::view_keys`):
//!   a chunk a writer stored as plain pages (its distinct strings outgrew the dictionary
//!   page: pyarrow's limit is 1 MB) is read as `Utf8View`, a view per row into the
//!   decoded pages with strings of at most 12 bytes inline, where `Utf8` copies every
//!   string into one buffer that grows by doubling (a third of a scan's time on 10M short
//!   strings).
//! - **Decimals of at most 18 digits as `Decimal64`.** Parquet stores them in `INT64`; the
//!   frame's type is `Decimal128`, and the reader would widen each value to 128 bits.
//!
//! Two readers ask for these forms: the scan's dictionary tests
//! ([`super::dictionary_filter`]) and a groupby over a backend that groups by codes and
//! sums 64-bit decimals ([`crate::plan::FileSource::read_coded`]).

use std::sync::Arc;

use arrow_schema::{DataType, Schema, SchemaRef};
use parquet::basic::{Encoding, PageType, Type as PhysicalType};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};

/// The value type a string column of type `t` is read into as a dictionary.
pub(crate) fn dictionary_value_type(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Utf8 | DataType::Utf8View => Some(DataType::Utf8),
        DataType::LargeUtf8 => Some(DataType::LargeUtf8),
        _ => None,
    }
}

/// Whether every data page of a column chunk is dictionary-encoded, as the chunk's page
/// encoding statistics record (false when it has none).
pub(crate) fn all_pages_dictionary(col: &ColumnChunkMetaData) -> bool {
    let dictionary =
        |e: Encoding| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY);
    if col.dictionary_page_offset().is_none() {
        return false;
    }
    if let Some(mask) = col.page_encoding_stats_mask() {
        let mut data = mask.encodings().peekable();
        return data.peek().is_some() && data.all(dictionary);
    }
    col.page_encoding_stats().is_some_and(|stats| {
        let mut data = stats
            .iter()
            .filter(|s| matches!(s.page_type, PageType::DATA_PAGE | PageType::DATA_PAGE_V2))
            .peekable();
        data.peek().is_some() && data.all(|s| dictionary(s.encoding))
    })
}

/// Whether root column `root` of row group `group` is one string column (one leaf) whose
/// every data page is dictionary-encoded, `file_schema` being the file's Arrow schema.
pub(crate) fn dictionary_encoded_strings(
    file_schema: &Schema,
    md: &ParquetMetaData,
    group: usize,
    root: usize,
) -> bool {
    let rg = md.row_group(group);
    let descr = md.file_metadata().schema_descr();
    let mut leaves = (0..rg.num_columns()).filter(|&l| descr.get_column_root_idx(l) == root);
    file_schema
        .fields()
        .get(root)
        .is_some_and(|f| dictionary_value_type(f.data_type()).is_some())
        && matches!(
            (leaves.next(), leaves.next()),
            (Some(leaf), None) if all_pages_dictionary(rg.column(leaf))
        )
}

/// Whether root column `root` of a file (`file_schema` its Arrow schema) is a decimal of
/// at most 18 digits stored as one `INT64` leaf, which the reader can give as `Decimal64`.
pub(crate) fn int64_decimal(file_schema: &Schema, md: &ParquetMetaData, root: usize) -> bool {
    let descr = md.file_metadata().schema_descr();
    let mut leaves = (0..descr.num_columns()).filter(|&l| descr.get_column_root_idx(l) == root);
    file_schema
        .fields()
        .get(root)
        .is_some_and(|f| matches!(f.data_type(), DataType::Decimal128(p, _) if *p <= 18))
        && matches!(
            (leaves.next(), leaves.next()),
            (Some(leaf), None) if descr.column(leaf).physical_type() == PhysicalType::INT64
        )
}

/// `schema` with the fields at `at` in their stored forms, as the reader returns them:
/// strings as dictionaries of their strings, decimals of at most 18 digits as `Decimal64`;
/// and the strings at `views` as `Utf8View`.
pub(crate) fn coded_schema(schema: &Schema, at: &[usize], views: &[usize]) -> SchemaRef {
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let coded = match (dictionary_value_type(f.data_type()), f.data_type()) {
                (Some(_), _) if views.contains(&i) => Some(DataType::Utf8View),
                _ if !at.contains(&i) => None,
                (Some(value), _) => Some(DataType::Dictionary(
                    Box::new(DataType::Int32),
                    Box::new(value),
                )),
                (None, DataType::Decimal128(p, s)) if *p <= 18 => Some(DataType::Decimal64(*p, *s)),
                (None, _) => None,
            };
            match coded {
                Some(t) => Arc::new(f.as_ref().clone().with_data_type(t)),
                None => f.clone(),
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}
