//! Opening a scan: the files a pattern names (a dataset directory with its hive
//! partitions, or a glob), each one's footer, and the frame's schema.

use std::path::Path;
use std::sync::Arc;

use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::error::{Error, Result};
use tessera_io::glob::{expand, expand_tree};

use super::bytes::Chunks;
use super::{perr, ParquetSource};
use crate::io::hive::HivePartitions;

/// The scale of each decimal column, for reading its statistics (stored unscaled).
/// Decimal columns stay decimals: `Decimal128` computes exactly (see
/// `tessera_core::frame::expr::decimal_types`), `Decimal256` in Float64.
pub(super) fn decimal_scales(schema: &SchemaRef) -> Vec<(String, i8)> {
    use arrow_schema::DataType;
    schema
        .fields()
        .iter()
        .filter_map(|f| match f.data_type() {
            DataType::Decimal128(_, s) | DataType::Decimal256(_, s) => Some((f.name().clone(), *s)),
            _ => None,
        })
        .collect()
}

impl ParquetSource {
    /// Opens the files and reads their footers. A directory (or an object prefix ending
    /// in `/`) is a dataset: every `*.parquet` file below it, with hive partition columns
    /// from its `key=value` directories.
    pub fn open(pattern: &str) -> Result<ParquetSource> {
        let local_dir = !tessera_io::file::is_object_url(pattern)
            && Path::new(pattern.strip_prefix("file://").unwrap_or(pattern)).is_dir();
        let dataset =
            local_dir || (tessera_io::file::is_object_url(pattern) && pattern.ends_with('/'));
        let found = if dataset {
            expand_tree(pattern, ".parquet")?
        } else {
            expand(pattern)?
        };
        let hive = if dataset {
            let names: Vec<&str> = found.iter().map(|f| f.display()).collect();
            HivePartitions::from_paths(pattern.strip_prefix("file://").unwrap_or(pattern), &names)?
        } else {
            HivePartitions::default()
        };
        let mut files = Vec::new();
        let mut groups = Vec::new();
        let mut schema: Option<SchemaRef> = None;
        for (i, file) in found.into_iter().enumerate() {
            let b = ParquetRecordBatchReaderBuilder::try_new(Chunks(file.clone()))
                .map_err(|e| perr(&file, e))?;
            let s = b.schema().clone();
            match &schema {
                Some(first) if first.fields() != s.fields() => {
                    return Err(Error::invalid(
                        "read_parquet",
                        format!(
                            "{}: schema {:?} differs from the first file's {:?}",
                            file.display(),
                            s,
                            first
                        ),
                    ))
                }
                Some(_) => {}
                None => schema = Some(s),
            }
            let md = b.metadata().clone();
            for g in 0..md.num_row_groups() {
                groups.push((i, g));
            }
            files.push((file, md));
        }
        let schema = schema.ok_or_else(|| Error::invalid("read_parquet", "no files"))?;
        let decimal_scales = decimal_scales(&schema);
        let file_columns = schema.fields().len();
        let schema = if hive.is_empty() {
            schema
        } else {
            let mut fields: Vec<arrow_schema::Field> =
                schema.fields().iter().map(|f| f.as_ref().clone()).collect();
            for f in hive.fields() {
                if schema.field_with_name(f.name()).is_ok() {
                    return Err(Error::invalid(
                        "read_parquet",
                        format!(
                            "{pattern}: '{}' is both a column in the files and a partition directory key",
                            f.name()
                        ),
                    ));
                }
                fields.push(f);
            }
            Arc::new(arrow_schema::Schema::new_with_metadata(
                fields,
                schema.metadata().clone(),
            ))
        };
        let display = if files.len() == 1 {
            files[0].0.display().to_string()
        } else {
            format!("{pattern} ({} files)", files.len())
        };
        Ok(ParquetSource {
            files,
            groups,
            schema,
            decimal_scales,
            file_columns,
            hive,
            display,
        })
    }
}
