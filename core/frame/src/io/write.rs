//! The frame writers' plumbing, shared by every file format (`to_csv`, `to_parquet`):
//! where the partitions come from, which files they go to, and how the files commit.
//!
//! A format only says how batches become one file ([`FileFormat`]). This module decides
//! the rest:
//!
//! - **One process** (`threads`, `sync`): the plan streams a partition at a time
//!   ([`Parts`]) into one file, written atomically, or into one file per partition (a `*`
//!   in the file name) committed as a whole ([`super::dataset`]).
//! - **Over the ranks of a job** (`scheduler = "mpi"`, run by `crate::exec::ranks`'s
//!   writer with this module's parts): each rank computes its own
//!   partitions. A dataset of parts is written where the partitions are: rank 0 creates
//!   the staging directory and broadcasts its name, every rank writes its own parts into
//!   it, the ranks agree that every part was written (a failure anywhere fails the write
//!   everywhere, naming the rank), and rank 0 commits once. One file (no `*`) has one
//!   writer: the partitions are gathered to rank 0, which writes it. Either way every rank
//!   returns the same paths, or the same failure.
//! - **Object URLs** are written locally and uploaded ([`super::write_object`]); over ranks,
//!   by rank 0 from the gathered partitions.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tessera_io::atomic::{write_atomic, write_synced};
use tessera_io::file::is_object_url;

use super::dataset::write_dataset;
use crate::error::Result;

/// A file format the frame writers write.
pub(crate) trait FileFormat: Sync {
    /// The operation, for messages (`"to_csv"`).
    fn op(&self) -> &'static str;

    /// Writes `batches` (all of `schema`) as one whole file into `w`; errors name `named`,
    /// the path the user asked for.
    ///
    /// # Errors
    /// A batch's error, the encoder's, the file's.
    fn write_file(
        &self,
        w: &mut BufWriter<File>,
        named: &Path,
        schema: &SchemaRef,
        batches: &mut dyn Iterator<Item = Result<RecordBatch>>,
    ) -> Result<()>;
}

/// The batches a writer writes: `n` of them, all of `schema`, produced in order by
/// `batch` (a plan's streamed output, or partitions already computed).
pub(crate) struct Parts<'a> {
    /// How many.
    pub n: usize,
    /// Their schema.
    pub schema: &'a SchemaRef,
    /// Produces batch `i`.
    pub batch: &'a (dyn Fn(usize) -> Result<RecordBatch> + Send + Sync),
}

/// Writes the partitions of `out` to `path` from this process.
pub(crate) fn write_stream(
    path: &str,
    out: &Parts<'_>,
    format: &dyn FileFormat,
) -> Result<Vec<PathBuf>> {
    if is_object_url(path) {
        return super::write_object(format.op(), path, |local| write_stream(local, out, format));
    }
    if !path.contains('*') {
        let target = PathBuf::from(path);
        write_atomic(&target, |w| {
            let mut batches = (0..out.n).map(|i| (out.batch)(i));
            format.write_file(w, &target, out.schema, &mut batches)
        })?;
        return Ok(vec![target]);
    }
    write_dataset(path, out.n, |file, i| {
        write_part(file, path, i, out.schema, (out.batch)(i), format)
    })
}

/// Writes part `i` of the dataset `pattern` (the batch `batch`) to the staging file `file`.
pub(crate) fn write_part(
    file: &Path,
    pattern: &str,
    i: usize,
    schema: &SchemaRef,
    batch: Result<RecordBatch>,
    format: &dyn FileFormat,
) -> Result<()> {
    let named = PathBuf::from(pattern.replace('*', &i.to_string()));
    let batch = batch?;
    write_synced(file, &named, |w| {
        format.write_file(w, &named, schema, &mut std::iter::once(Ok(batch)))
    })
}
