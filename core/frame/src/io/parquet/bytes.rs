//! The bytes of a Parquet file as the `parquet` crate reads them: every read a checked
//! byte range of the file as it was planned (`Chunks`), and a row group's projected
//! column chunks fetched once, together, before its pages are decoded (`RowGroupBytes`).

use std::sync::Arc;

use parquet::file::metadata::ParquetMetaData;

use crate::error::Result;
use tessera_io::file::StoredFile;

/// A [`StoredFile`] as the parquet crate's byte source: the footer and each column chunk
/// are byte-range reads (separate requests on an object store), each checked against the
/// identity the file had when it was planned.
#[derive(Clone)]
pub(super) struct Chunks(pub(super) StoredFile);

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
pub(super) struct RowGroupBytes {
    file: Chunks,
    /// `(offset in the file, bytes)` of each fetched column chunk, by offset.
    pub(super) chunks: Arc<Vec<(u64, bytes::Bytes)>>,
}

impl RowGroupBytes {
    /// Fetches the column chunks of row group `group` whose root columns are `roots`.
    pub(super) fn fetch(
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
    pub(super) fn from(&self, start: u64) -> Option<bytes::Bytes> {
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
