//! `read_parquet` and `to_parquet`, through the `parquet` crate's Arrow reader and writer.
//!
//! Row groups are the partitions. A scan reads only the projected columns (the optimizer
//! pushes the projection down) and skips row groups whose min/max statistics prove that
//! a pushed-down predicate (`col op literal`) holds for none of their rows. Files are
//! written with Snappy compression (pyarrow's default) and one row group per partition,
//! atomically.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::Statistics;

use crate::api::dataframe::DataFrame;
use crate::error::{Error, Result};
use crate::expr::{BinaryOp, Literal};
use crate::io::write::{write_frame, FileFormat};
use crate::plan::{ColumnPredicate, FileSource, Node, ScanFilter};
use tessera_io::file::StoredFile;
use tessera_io::glob::{expand, expand_tree};

use super::coded_columns::{coded_schema, dictionary_encoded_strings, int64_decimal};
use super::dictionary_filter::DictionaryTests;
use super::hive::HivePartitions;

fn perr(file: &StoredFile, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::parquet("read_parquet", Path::new(file.display()), e)
}

/// A [`StoredFile`] as the parquet crate's byte source: the footer and each column chunk
/// are byte-range reads (separate requests on an object store), each checked against the
/// identity the file had when it was planned.
#[derive(Clone)]
struct Chunks(StoredFile);

impl parquet::file::reader::Length for Chunks {
    fn len(&self) -> u64 {
        self.0.size()
    }
}

impl parquet::file::reader::ChunkReader for Chunks {
    type T = std::io::Cursor<bytes::Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let rest = usize::try_from(self.0.size().saturating_sub(start)).unwrap_or(usize::MAX);
        Ok(std::io::Cursor::new(self.get_bytes(start, rest)?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0
            .read_range(start..start.saturating_add(length as u64))
            .map(bytes::Bytes::from)
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }
}

/// The column chunks that one row group's read needs, each fetched with one range read
/// before decoding, as the parquet crate's byte source for that read.
///
/// The crate's synchronous reader asks for a stream from a column chunk's offset
/// (`get_read`) and reads the chunk's pages from it. Served from the file, that stream
/// had to hold every byte from the offset to the end of the file: a read per column chunk
/// of the whole rest of the file, so a 230 MB TPC-H `lineitem` with 53 row groups moved
/// some 12 GB through the kernel for one scan. Fetched up front, each column chunk is one
/// read (one request on an object store) and the streams are slices of it.
#[derive(Clone)]
struct RowGroupBytes {
    file: Chunks,
    /// `(offset in the file, bytes)` of each fetched column chunk, by offset.
    chunks: Arc<Vec<(u64, bytes::Bytes)>>,
}

impl RowGroupBytes {
    /// Fetches the column chunks of row group `group` whose root columns are `roots`.
    fn fetch(
        file: &StoredFile,
        md: &ParquetMetaData,
        group: usize,
        roots: &[usize],
    ) -> Result<Self> {
        let rg = md.row_group(group);
        let schema = md.file_metadata().schema_descr();
        let mut chunks = Vec::new();
        for leaf in 0..rg.num_columns() {
            if !roots.contains(&schema.get_column_root_idx(leaf)) {
                continue;
            }
            let (start, len) = rg.column(leaf).byte_range();
            let bytes = file.read_range(start..start.saturating_add(len))?;
            chunks.push((start, bytes::Bytes::from(bytes)));
        }
        chunks.sort_by_key(|c| c.0);
        Ok(RowGroupBytes {
            file: Chunks(file.clone()),
            chunks: Arc::new(chunks),
        })
    }

    /// The fetched bytes from `start` to the end of the column chunk holding it.
    fn from(&self, start: u64) -> Option<bytes::Bytes> {
        let i = self
            .chunks
            .partition_point(|c| c.0 <= start)
            .checked_sub(1)?;
        let (at, bytes) = &self.chunks[i];
        let skip = usize::try_from(start - at).ok()?;
        (skip < bytes.len()).then(|| bytes.slice(skip..))
    }
}

impl parquet::file::reader::Length for RowGroupBytes {
    fn len(&self) -> u64 {
        self.file.0.size()
    }
}

impl parquet::file::reader::ChunkReader for RowGroupBytes {
    type T = std::io::Cursor<bytes::Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        match self.from(start) {
            Some(b) => Ok(std::io::Cursor::new(b)),
            None => self.file.get_read(start),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        match self.from(start) {
            Some(b) if b.len() >= length => Ok(b.slice(..length)),
            _ => self.file.get_bytes(start, length),
        }
    }
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

/// The scale of each decimal column, for reading its statistics (stored unscaled).
/// Decimal columns stay decimals: `Decimal128` computes exactly (see
/// `tessera_core::frame::expr::decimal_types`), `Decimal256` in Float64.
fn decimal_scales(schema: &SchemaRef) -> Vec<(String, i8)> {
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

/// `min`/`max` of a column chunk as f64 (numbers) or bytes (strings).
enum Bound {
    Num(f64, f64),
    Bytes(Vec<u8>, Vec<u8>),
}

/// The column chunk's bounds; a decimal column's (`scale` is `Some`) stored unscaled
/// integers are divided by `10^scale`, in whichever physical type holds them.
fn bounds(stats: &Statistics, scale: Option<i8>) -> Option<Bound> {
    if let Some(scale) = scale {
        let unit = 10f64.powi(i32::from(scale));
        let (lo, hi) = match stats {
            Statistics::Int32(s) => (f64::from(*s.min_opt()?), f64::from(*s.max_opt()?)),
            Statistics::Int64(s) => (*s.min_opt()? as f64, *s.max_opt()? as f64),
            Statistics::FixedLenByteArray(s) => (
                be_i128(s.min_opt()?.data())? as f64,
                be_i128(s.max_opt()?.data())? as f64,
            ),
            Statistics::ByteArray(s) => (
                be_i128(s.min_opt()?.data())? as f64,
                be_i128(s.max_opt()?.data())? as f64,
            ),
            _ => return None,
        };
        // Rounding to f64 may move a bound by an ulp: widen it so pruning stays safe.
        let widen = |x: f64, dir: f64| x + dir * (x.abs() * f64::EPSILON + f64::MIN_POSITIVE);
        return Some(Bound::Num(widen(lo / unit, -1.0), widen(hi / unit, 1.0)));
    }
    Some(match stats {
        Statistics::Int32(s) => Bound::Num(f64::from(*s.min_opt()?), f64::from(*s.max_opt()?)),
        Statistics::Int64(s) => Bound::Num(*s.min_opt()? as f64, *s.max_opt()? as f64),
        Statistics::Float(s) => Bound::Num(f64::from(*s.min_opt()?), f64::from(*s.max_opt()?)),
        Statistics::Double(s) => Bound::Num(*s.min_opt()?, *s.max_opt()?),
        Statistics::ByteArray(s) => {
            Bound::Bytes(s.min_opt()?.data().to_vec(), s.max_opt()?.data().to_vec())
        }
        _ => return None,
    })
}

/// A big-endian two's-complement integer of up to 16 bytes (a decimal's unscaled value).
fn be_i128(bytes: &[u8]) -> Option<i128> {
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut buf = [fill; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    Some(i128::from_be_bytes(buf))
}

/// Whether some value in `[lo, hi]` may satisfy `v op lit`.
fn may_match<T: PartialOrd>(lo: &T, hi: &T, op: BinaryOp, lit: &T) -> bool {
    match op {
        BinaryOp::Eq => lo <= lit && lit <= hi,
        BinaryOp::NotEq => !(lo == lit && hi == lit),
        BinaryOp::Lt => lo < lit,
        BinaryOp::LtEq => lo <= lit,
        BinaryOp::Gt => hi > lit,
        BinaryOp::GtEq => hi >= lit,
        _ => true,
    }
}

impl FileSource for ParquetSource {
    fn format(&self) -> &'static str {
        "parquet"
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn partitions(&self) -> usize {
        self.groups.len()
    }

    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        let (f, g) = *self.groups.get(partition)?;
        u64::try_from(self.files[f].1.row_group(g).total_byte_size()).ok()
    }

    fn describe(&self) -> String {
        self.display.clone()
    }

    fn prune(&self, predicates: &[ColumnPredicate]) -> Option<Vec<usize>> {
        let keep = (0..self.groups.len())
            .filter(|&p| {
                let (f, g) = self.groups[p];
                if !self.hive.may_match(f, predicates) {
                    return false;
                }
                let rg = self.files[f].1.row_group(g);
                predicates.iter().all(|pred| {
                    let Some(col) = rg
                        .columns()
                        .iter()
                        .find(|c| c.column_path().string() == pred.column)
                    else {
                        return true;
                    };
                    // Timestamps' statistics are in the column's unit; leave them alone.
                    if matches!(
                        self.schema
                            .field_with_name(&pred.column)
                            .map(|f| f.data_type().clone()),
                        Ok(arrow_schema::DataType::Timestamp(_, _))
                    ) {
                        return true;
                    }
                    let scale = self
                        .decimal_scales
                        .iter()
                        .find(|(n, _)| *n == pred.column)
                        .map(|(_, s)| *s);
                    match (
                        col.statistics().and_then(|st| bounds(st, scale)),
                        &pred.value,
                    ) {
                        (Some(Bound::Num(lo, hi)), Literal::Int(v)) => {
                            may_match(&lo, &hi, pred.op, &(*v as f64))
                        }
                        (Some(Bound::Num(lo, hi)), Literal::Float(v)) => {
                            may_match(&lo, &hi, pred.op, v)
                        }
                        (Some(Bound::Bytes(lo, hi)), Literal::Str(v)) => {
                            may_match(&lo, &hi, pred.op, &v.as_bytes().to_vec())
                        }
                        _ => true,
                    }
                })
            })
            .collect();
        Some(keep)
    }

    fn read(&self, partition: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        self.read_caught(partition, projection, None, &[])
    }

    fn read_filtered(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        filter: &ScanFilter<'_>,
    ) -> Result<RecordBatch> {
        self.read_caught(partition, projection, Some(filter), &[])
    }

    fn read_coded(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        coded: &[usize],
    ) -> Result<RecordBatch> {
        self.read_caught(partition, projection, None, coded)
    }
}

impl ParquetSource {
    /// The footer of file `file` (tests look at its column chunks).
    #[cfg(test)]
    pub(crate) fn file_metadata(&self, file: usize) -> &ParquetMetaData {
        &self.files[file].1
    }

    /// [`ParquetSource::read_row_group`] behind a panic boundary.
    fn read_caught(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        filter: Option<&ScanFilter<'_>>,
        coded: &[usize],
    ) -> Result<RecordBatch> {
        // The parquet crate panics on some corrupt pages (an index out of bounds): the
        // panic stops at this boundary as an error naming the file and row group.
        let (f, g) = self.groups[partition];
        tessera_core::error::catch_panic(
            || self.read_row_group(partition, projection, filter, coded),
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
    /// come in their stored forms where this row group has them ([`FileSource::read_coded`]):
    /// dictionary-encoded strings as dictionaries, `INT64` decimals as `Decimal64`.
    fn read_row_group(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        filter: Option<&ScanFilter<'_>>,
        coded: &[usize],
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
        // Columns asked for in their stored forms, where this row group stores them so.
        let coded: Vec<usize> = match &tests {
            Some(_) => Vec::new(),
            None => coded
                .iter()
                .copied()
                .filter(|c| from_file.binary_search(c).is_ok())
                .filter(|&c| {
                    dictionary_encoded_strings(meta.schema(), md, g, c)
                        || int64_decimal(meta.schema(), md, c)
                })
                .collect(),
        };
        let meta = match &tests {
            Some(t) => ArrowReaderMetadata::try_new(
                md.clone(),
                ArrowReaderOptions::new().with_schema(t.read_schema(meta.schema())),
            )
            .map_err(|e| perr(path, e))?,
            None if !coded.is_empty() => ArrowReaderMetadata::try_new(
                md.clone(),
                ArrowReaderOptions::new().with_schema(coded_schema(meta.schema(), &coded)),
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
        let schema = coded_schema(&self.schema.project(&from_file).map_err(at)?, &{
            // The coded columns' places among the columns read.
            coded
                .iter()
                .filter_map(|c| from_file.binary_search(c).ok())
                .collect::<Vec<_>>()
        });
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
        let out = coded_schema(&self.schema.project(&wanted).map_err(at)?, &{
            wanted
                .iter()
                .enumerate()
                .filter(|(_, w)| coded.contains(w))
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        });
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

/// Reads Parquet files (one path or a `*` pattern in the file name, or a directory of a
/// hive-partitioned dataset: `sales/` with `year=2024/month=1/part-0.parquet` below it,
/// the keys becoming columns and filters on them skipping whole files) as a lazy frame on
/// the configured dataframe backend; row groups are the partitions. Paths may be object
/// URLs with the `object-store` feature.
pub fn read_parquet(pattern: &str) -> Result<DataFrame> {
    let source = ParquetSource::open(pattern)?;
    DataFrame::from_node(
        Node::Scan {
            source: Arc::new(source),
            projection: None,
            selected: None,
            pushed: Vec::new(),
        },
        None,
    )
}

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
struct Parquet;

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

impl DataFrame {
    /// Writes Parquet (Snappy): to `path`, one row group per partition, or one file per
    /// partition when the file name holds a `*`. Each file is written atomically, and a
    /// set of parts commits as a whole. Under `scheduler = "mpi"` each rank writes its own
    /// partitions' parts and rank 0 commits once (one file: rank 0 writes it). Returns the
    /// files written.
    ///
    /// # Errors
    /// The plan's errors; the encoder's and the filesystem's (naming the path); under
    /// `scheduler = "mpi"`, a destination some rank cannot see.
    pub fn to_parquet(&self, path: &str) -> Result<Vec<PathBuf>> {
        write_frame(self, path, &Parquet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use parquet::file::reader::ChunkReader;

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
    /// dictionary pages, the schema's type for one written as plain pages and for columns
    /// not asked for, and the same strings either way.
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
        let coded = source.read_coded(0, None, &[0, 1]).unwrap();
        assert!(matches!(
            coded.column(0).data_type(),
            DataType::Dictionary(..)
        ));
        assert_eq!(coded.column(1).data_type(), plain.column(1).data_type());
        assert_eq!(coded.column(2).data_type(), plain.column(2).data_type());
        assert_eq!(
            coded.schema().field(0).data_type(),
            coded.column(0).data_type()
        );
        let back = arrow_cast::cast(coded.column(0), plain.column(0).data_type()).unwrap();
        assert_eq!(&back, plain.column(0));
        assert_eq!(coded.column(1), plain.column(1));
        // With a projection, the coded column is found among the columns read.
        let coded = source.read_coded(0, Some(&[1, 2]), &[2]).unwrap();
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
        let coded = source.read_coded(0, None, &[0, 1, 2]).unwrap();
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
        let batch = source.read_row_group(1, Some(&[2]), None, &[]).unwrap();
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
