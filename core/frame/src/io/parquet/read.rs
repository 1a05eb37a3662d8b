//! Reading one row group: the projected columns, decoded behind a panic boundary, with
//! dictionary tests of the scan's filter applied while decoding and the stored forms
//! (dictionaries, `Decimal64`) handed on where the plan asks for them.

use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::error::{Error, Result};
use crate::plan::ScanFilter;

use super::bytes::RowGroupBytes;
use super::{perr, ParquetSource};
use crate::backend::StoredForms;
use crate::io::coded_columns::{
    coded_schema, dictionary_encoded_strings, dictionary_value_type, int64_decimal,
};
use crate::io::dictionary_filter::DictionaryTests;

impl ParquetSource {
    /// The footer of file `file` (tests look at its column chunks).
    #[cfg(test)]
    pub(crate) fn file_metadata(&self, file: usize) -> &parquet::file::metadata::ParquetMetaData {
        &self.files[file].1
    }

    /// [`ParquetSource::read_row_group`] behind a panic boundary.
    pub(super) fn read_caught(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        filter: Option<&ScanFilter<'_>>,
        coded: &[usize],
        forms: StoredForms,
    ) -> Result<RecordBatch> {
        // The parquet crate panics on some corrupt pages (an index out of bounds): the
        // panic stops at this boundary as an error naming the file and row group.
        let (f, g) = self.groups[partition];
        tessera_core::error::catch_panic(
            || self.read_row_group(partition, projection, filter, coded, forms),
            |m| {
                perr(
                    &self.files[f].0,
                    std::io::Error::other(format!("row group {g}: the decoder panicked: {m}")),
                )
            },
        )
    }
}

impl ParquetSource {
    /// Reads one row group (partition), projected; with the filter over the scan, the
    /// conjuncts it can test on dictionary-encoded string columns drop rows early
    /// ([`DictionaryTests`]). Without such tests, the columns at `coded` (schema indices)
    /// come in the stored forms `forms` allows where this row group has them
    /// ([`FileSource::read_coded`](crate::plan::FileSource::read_coded)): dictionary-encoded
    /// strings as dictionaries, other strings as views, `INT64` decimals as `Decimal64`.
    pub(super) fn read_row_group(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        filter: Option<&ScanFilter<'_>>,
        coded: &[usize],
        forms: StoredForms,
    ) -> Result<RecordBatch> {
        let (f, g) = self.groups[partition];
        let (path, md) = &self.files[f];
        // A replaced file is a FileChanged error before any byte is decoded (the footer
        // read at planning is reused, not fetched again).
        path.check()?;
        let meta = ArrowReaderMetadata::try_new(md.clone(), ArrowReaderOptions::new())
            .map_err(|e| perr(path, e))?;
        // The columns asked for: those stored in the file, then hive partition columns.
        let wanted: Vec<usize> = projection
            .map(<[usize]>::to_vec)
            .unwrap_or_else(|| (0..self.schema.fields().len()).collect());
        let mut from_file: Vec<usize> = wanted
            .iter()
            .copied()
            .filter(|&i| i < self.file_columns)
            .collect();
        from_file.sort_unstable();
        from_file.dedup();
        let tests = filter
            .map(|f| DictionaryTests::plan(f.predicate, meta.schema(), md, g, &from_file))
            .filter(|t| !t.is_empty());
        // Columns asked for in their stored forms, where this row group stores them so:
        // dictionaries and 64-bit decimals (`coded`), and the other strings as views.
        let asked: Vec<usize> = match &tests {
            Some(_) => Vec::new(),
            None => coded
                .iter()
                .copied()
                .filter(|c| from_file.binary_search(c).is_ok())
                .collect(),
        };
        let (mut coded, mut viewed) = (Vec::new(), Vec::new());
        for c in asked {
            let strings = dictionary_value_type(meta.schema().field(c).data_type()).is_some();
            let stored = if strings {
                forms.dictionary_keys && dictionary_encoded_strings(meta.schema(), md, g, c)
            } else {
                forms.narrow_decimals && int64_decimal(meta.schema(), md, c)
            };
            if stored {
                coded.push(c);
            } else if strings && forms.view_keys {
                viewed.push(c);
            }
        }
        let meta = match &tests {
            Some(t) => ArrowReaderMetadata::try_new(
                md.clone(),
                ArrowReaderOptions::new().with_schema(t.read_schema(meta.schema())),
            )
            .map_err(|e| perr(path, e))?,
            None if !coded.is_empty() || !viewed.is_empty() => ArrowReaderMetadata::try_new(
                md.clone(),
                ArrowReaderOptions::new().with_schema(coded_schema(meta.schema(), &coded, &viewed)),
            )
            .map_err(|e| perr(path, e))?,
            None => meta,
        };
        let bytes = RowGroupBytes::fetch(path, md, g, &from_file)?;
        let mut b = ParquetRecordBatchReaderBuilder::new_with_metadata(bytes, meta)
            .with_row_groups(vec![g])
            .with_batch_size(1 << 20);
        let at = |e| Error::arrow_in("read_parquet", path.display(), e);
        if from_file.len() != self.file_columns {
            let mask = ProjectionMask::roots(b.parquet_schema(), from_file.iter().copied());
            b = b.with_projection(mask);
        }
        // The coded and viewed columns' places among the columns read.
        let among = |cols: &[usize], read: &[usize]| -> Vec<usize> {
            read.iter()
                .enumerate()
                .filter(|(_, r)| cols.contains(r))
                .map(|(k, _)| k)
                .collect()
        };
        let schema = coded_schema(
            &self.schema.project(&from_file).map_err(at)?,
            &among(&coded, &from_file),
            &among(&viewed, &from_file),
        );
        let group_rows = usize::try_from(self.files[f].1.row_group(g).num_rows()).unwrap_or(0);
        let reader = b.build().map_err(|e| perr(path, e))?;
        let batches = reader
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| perr(path, e))?;
        let stored = if schema.fields().is_empty() {
            RecordBatch::try_new_with_options(
                schema,
                vec![],
                &arrow_array::RecordBatchOptions::new().with_row_count(Some(group_rows)),
            )
            .map_err(at)?
        } else {
            // Columns arrive in the files' types; a file whose type differs from the
            // first file's (a narrower integer, another string type) is cast.
            let batches = batches
                .into_iter()
                .map(|b| {
                    let (cols, rows) = match (&tests, filter) {
                        (Some(t), Some(f)) => t.apply(&b, &from_file, &schema, f)?,
                        _ => (b.columns().to_vec(), b.num_rows()),
                    };
                    let cols = cols
                        .iter()
                        .zip(schema.fields())
                        .map(|(c, f)| {
                            if c.data_type() == f.data_type() {
                                Ok(c.clone())
                            } else {
                                arrow_cast::cast(c, f.data_type())
                            }
                        })
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(at)?;
                    RecordBatch::try_new_with_options(
                        schema.clone(),
                        cols,
                        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
                    )
                    .map_err(at)
                })
                .collect::<Result<Vec<_>>>()?;
            arrow_select::concat::concat_batches(&schema, &batches).map_err(at)?
        };
        if wanted == from_file {
            return Ok(stored);
        }
        // Hive partition columns are as long as what the filter kept.
        let rows = stored.num_rows();
        let out = coded_schema(
            &self.schema.project(&wanted).map_err(at)?,
            &among(&coded, &wanted),
            &among(&viewed, &wanted),
        );
        let cols = wanted
            .iter()
            .map(|&i| match from_file.binary_search(&i) {
                Ok(k) => stored.column(k).clone(),
                Err(_) => self.hive.column(f, i - self.file_columns, rows),
            })
            .collect();
        RecordBatch::try_new_with_options(
            out,
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(at)
    }
}
