//! `to_parquet`: one file per partition (Snappy, one row group each), committed
//! atomically through the writers' shared plumbing.

use std::fs::File;
use std::path::Path;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

use crate::error::{Error, Result};
use crate::io::write::FileFormat;

/// Writes `batches` as one Parquet file into `w` (one row group per batch); errors name
/// `path`. An I/O failure underneath the parquet writer (a full disk) is an
/// [`Error::Io`], not a Parquet format error.
fn write_batches(
    w: &mut std::io::BufWriter<File>,
    path: &std::path::Path,
    schema: &SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<()> {
    let werr = |e: parquet::errors::ParquetError| match e {
        parquet::errors::ParquetError::External(inner) => {
            match inner.downcast::<std::io::Error>() {
                Ok(io) => Error::io(path, *io),
                Err(other) => Error::parquet(
                    "to_parquet",
                    path,
                    parquet::errors::ParquetError::External(other),
                ),
            }
        }
        e => Error::parquet("to_parquet", path, e),
    };
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_size(1 << 20)
        .build();
    let mut writer = ArrowWriter::try_new(w, schema.clone(), Some(props)).map_err(werr)?;
    for b in batches {
        writer.write(&b?).map_err(werr)?;
        // One row group per partition.
        writer.flush().map_err(werr)?;
    }
    writer.close().map_err(werr)?;
    Ok(())
}

/// Parquet (Snappy, one row group per batch), as [`FileFormat`].
pub(crate) struct Parquet;

impl FileFormat for Parquet {
    fn op(&self) -> &'static str {
        "to_parquet"
    }

    fn write_file(
        &self,
        w: &mut std::io::BufWriter<File>,
        named: &Path,
        schema: &SchemaRef,
        batches: &mut dyn Iterator<Item = Result<RecordBatch>>,
    ) -> Result<()> {
        write_batches(w, named, schema, batches)
    }
}
