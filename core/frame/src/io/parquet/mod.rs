//! `read_parquet` and `to_parquet`, through the `parquet` crate's Arrow reader and writer.
//!
//! Row groups are the partitions. A scan reads only the projected columns (the optimizer
//! pushes the projection down) and skips row groups whose min/max statistics prove that
//! a pushed-down predicate (`col op literal`) holds for none of their rows. Files are
//! written with Snappy compression (pyarrow's default) and one row group per partition,
//! atomically.
//!
//! One file per step: `open` (files, footers, schema), `prune` (row groups skipped by
//! statistics), `bytes` (checked byte ranges, a row group's column chunks fetched once),
//! `read` (one row group decoded), `scan` (the source as a scan sees it, `FileSource`),
//! `write` (`to_parquet`).

mod bytes;
mod open;
mod prune;
mod read;
mod scan;
pub(crate) mod write;

use std::path::Path;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use parquet::file::metadata::ParquetMetaData;

use crate::error::Error;
use tessera_io::file::StoredFile;

use crate::io::hive::HivePartitions;

fn perr(file: &StoredFile, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::parquet("read_parquet", Path::new(file.display()), e)
}

/// A Parquet scan: files and their row groups.
#[derive(Debug)]
pub struct ParquetSource {
    /// Each file (with its identity when planned) and the footer read then.
    files: Vec<(StoredFile, Arc<ParquetMetaData>)>,
    /// (file, row group) per partition.
    groups: Vec<(usize, usize)>,
    /// The frame's schema: the files' Arrow schema (hive partition columns after).
    schema: SchemaRef,
    /// The scale of each column that is a decimal in the files (by name).
    decimal_scales: Vec<(String, i8)>,
    /// Columns in the files (the first ones of `schema`); hive partition columns follow.
    file_columns: usize,
    /// Partition columns from `key=value` directories (empty for plain files).
    hive: HivePartitions,
    display: String,
}

#[cfg(test)]
mod tests {
    use super::bytes::RowGroupBytes;
    use super::*;
    use crate::backend::StoredForms;
    use crate::plan::FileSource;
    use arrow_array::RecordBatch;
    use arrow_array::{Int64Array, StringArray};
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::ChunkReader;
    use std::fs::File;

    /// Every stored form taken.
    const ALL_FORMS: StoredForms = StoredForms {
        dictionary_keys: true,
        narrow_decimals: true,
        view_keys: true,
    };

    /// A three-column file of 300 rows in row groups of 100.
    fn three_groups(path: &Path) {
        let ids: Vec<i64> = (0..300).collect();
        let names: Vec<String> = (0..300).map(|i| format!("name-{i}")).collect();
        let batch = RecordBatch::try_from_iter([
            (
                "id",
                Arc::new(Int64Array::from(ids.clone())) as arrow_array::ArrayRef,
            ),
            (
                "name",
                Arc::new(StringArray::from(names)) as arrow_array::ArrayRef,
            ),
            (
                "twice",
                Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| 2 * i))) as _,
            ),
        ])
        .unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_size(100)
            .build();
        let mut w =
            ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }

    /// `read_coded` gives a dictionary for a string column whose chunk is all
    /// dictionary pages; for one written as plain pages, views where the backend takes
    /// them and the schema's type where it does not; the schema's type for columns not
    /// asked for; and the same strings every way.
    #[test]
    fn coded_reads_give_dictionaries_only_for_dictionary_encoded_strings() {
        use arrow_array::cast::AsArray;
        use arrow_schema::DataType;
        let dir = std::env::temp_dir().join(format!("tessera-coded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.parquet");
        let few: StringArray = (0..400)
            .map(|i| ["x", "yy", "zzz"][i % 3])
            .map(Some)
            .collect();
        let many: StringArray = (0..400).map(|i| Some(format!("s{i}"))).collect();
        let batch = RecordBatch::try_from_iter([
            ("few", Arc::new(few) as arrow_array::ArrayRef),
            ("many", Arc::new(many) as arrow_array::ArrayRef),
            ("few2", batch_column_copy()),
        ])
        .unwrap();
        let props = WriterProperties::builder()
            .set_column_dictionary_enabled("many".into(), false)
            .build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), Some(props))
            .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let source = ParquetSource::open(path.to_str().unwrap()).unwrap();
        let plain = source.read(0, None).unwrap();
        let no_views = StoredForms {
            view_keys: false,
            ..ALL_FORMS
        };
        let coded = source.read_coded(0, None, &[0, 1], no_views).unwrap();
        assert!(matches!(
            coded.column(0).data_type(),
            DataType::Dictionary(..)
        ));
        assert_eq!(coded.column(1).data_type(), plain.column(1).data_type());
        // Taking views, the plain-page strings come as views of the same strings, in the
        // batch's schema too; the dictionary-encoded ones stay dictionaries.
        let viewed = source.read_coded(0, None, &[0, 1], ALL_FORMS).unwrap();
        assert_eq!(viewed.column(1).data_type(), &DataType::Utf8View);
        assert_eq!(viewed.schema().field(1).data_type(), &DataType::Utf8View);
        assert!(matches!(
            viewed.column(0).data_type(),
            DataType::Dictionary(..)
        ));
        let back = arrow_cast::cast(viewed.column(1), &DataType::Utf8).unwrap();
        assert_eq!(&back, plain.column(1));
        // A backend that takes views and no dictionaries gets views of both.
        let views_only = StoredForms {
            view_keys: true,
            ..StoredForms::default()
        };
        let viewed = source
            .read_coded(0, Some(&[0, 2]), &[0, 2], views_only)
            .unwrap();
        assert_eq!(viewed.column(0).data_type(), &DataType::Utf8View);
        assert_eq!(viewed.column(1).data_type(), &DataType::Utf8View);
        let back = arrow_cast::cast(viewed.column(0), &DataType::Utf8).unwrap();
        assert_eq!(&back, plain.column(0));
        assert_eq!(coded.column(2).data_type(), plain.column(2).data_type());
        assert_eq!(
            coded.schema().field(0).data_type(),
            coded.column(0).data_type()
        );
        let back = arrow_cast::cast(coded.column(0), plain.column(0).data_type()).unwrap();
        assert_eq!(&back, plain.column(0));
        assert_eq!(coded.column(1), plain.column(1));
        // With a projection, the coded column is found among the columns read.
        let coded = source.read_coded(0, Some(&[1, 2]), &[2], no_views).unwrap();
        assert!(matches!(
            coded.column(1).data_type(),
            DataType::Dictionary(..)
        ));
        assert_eq!(coded.column(1).as_any_dictionary().keys().len(), 400);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `read_coded` gives a decimal of at most 18 digits stored in `INT64` as `Decimal64`
    /// with the same unscaled values and nulls; one stored in `INT32` (9 digits), one of
    /// more digits, and one not asked for keep the schema's Decimal128.
    #[test]
    fn coded_reads_give_int64_decimals_as_decimal64() {
        use arrow_array::cast::AsArray;
        use arrow_array::types::{Decimal128Type, Decimal64Type};
        use arrow_array::{Array, Decimal128Array};
        use arrow_schema::DataType;
        let dir = std::env::temp_dir().join(format!("tessera-coded-dec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.parquet");
        let dec = |p: u8, f: fn(i128) -> i128| -> arrow_array::ArrayRef {
            let a: Decimal128Array = (0..300i128).map(|i| (i % 7 != 3).then(|| f(i))).collect();
            Arc::new(a.with_precision_and_scale(p, 2).unwrap())
        };
        let batch = RecordBatch::try_from_iter([
            ("price", dec(15, |i| i * 1_000_003 - 90_000_000)),
            ("rate", dec(4, |i| i % 11)),
            ("wide", dec(30, |i| i * 10i128.pow(20))),
            ("other", dec(18, |i| -i)),
        ])
        .unwrap();
        let mut w =
            ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let source = ParquetSource::open(path.to_str().unwrap()).unwrap();
        let plain = source.read(0, None).unwrap();
        let coded = source.read_coded(0, None, &[0, 1, 2], ALL_FORMS).unwrap();
        assert_eq!(coded.column(0).data_type(), &DataType::Decimal64(15, 2));
        assert_eq!(
            coded.schema().field(0).data_type(),
            &DataType::Decimal64(15, 2)
        );
        let (narrow, wide) = (
            coded.column(0).as_primitive::<Decimal64Type>(),
            plain.column(0).as_primitive::<Decimal128Type>(),
        );
        assert_eq!(narrow.nulls(), wide.nulls());
        assert!(narrow
            .iter()
            .zip(wide.iter())
            .all(|(a, b)| a.map(i128::from) == b));
        for i in 1..4 {
            assert_eq!(coded.column(i), plain.column(i), "column {i}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A read-ahead hint for a partition, projected or not, in range or past the last,
    /// changes nothing that a read returns.
    #[test]
    fn prefetching_a_row_group_leaves_its_reads_as_they_were() {
        use crate::plan::FileSource;
        let dir = std::env::temp_dir().join(format!("tessera-prefetch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.parquet");
        let batch = RecordBatch::try_from_iter([
            ("a", batch_column_copy()),
            (
                "b",
                Arc::new((0..400).map(Some).collect::<arrow_array::Int64Array>()) as _,
            ),
        ])
        .unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_size(100)
            .build();
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), batch.schema(), Some(props))
            .unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let source = ParquetSource::open(path.to_str().unwrap()).unwrap();
        let before: Vec<RecordBatch> = (0..4)
            .map(|p| source.read(p, Some(&[1])).unwrap())
            .collect();
        for p in 0..5 {
            source.prefetch(p, None);
            source.prefetch(p, Some(&[1]));
        }
        for (p, b) in before.iter().enumerate() {
            assert_eq!(&source.read(p, Some(&[1])).unwrap(), b);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn batch_column_copy() -> arrow_array::ArrayRef {
        Arc::new(
            (0..400)
                .map(|i| Some(["p", "q"][i % 2]))
                .collect::<StringArray>(),
        )
    }

    /// A row group's read fetches exactly its projected column chunks, serves their bytes
    /// as the file holds them, and decodes from them.
    #[test]
    fn a_row_group_read_fetches_each_projected_column_chunk_once() {
        let dir = std::env::temp_dir().join(format!("tessera-rg-bytes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.parquet");
        three_groups(&path);
        let source = ParquetSource::open(path.to_str().unwrap()).unwrap();
        let (file, md) = &source.files[0];
        assert_eq!(md.num_row_groups(), 3);
        let bytes = RowGroupBytes::fetch(file, md, 1, &[0, 2]).unwrap();
        assert_eq!(bytes.chunks.len(), 2, "columns 0 and 2 only");
        let on_disk = std::fs::read(&path).unwrap();
        let rg = md.row_group(1);
        for leaf in [0, 2] {
            let (start, len) = rg.column(leaf).byte_range();
            let got = bytes.get_bytes(start, len as usize).unwrap();
            assert_eq!(&got[..], &on_disk[start as usize..(start + len) as usize]);
        }
        let (name_start, _) = rg.column(1).byte_range();
        assert!(bytes.from(name_start).is_none(), "column 1 was not fetched");
        // Decoded through the fetched bytes: row group 1 holds rows 100..200.
        let batch = source
            .read_row_group(1, Some(&[2]), None, &[], StoredForms::default())
            .unwrap();
        let twice = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(twice.len(), 100);
        assert_eq!(twice.value(0), 200);
        assert_eq!(twice.value(99), 398);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
