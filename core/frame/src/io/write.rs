//! The frame writers' plumbing, shared by every file format (`to_csv`, `to_parquet`):
//! where the partitions come from, which files they go to, and how the files commit.
//!
//! A format only says how batches become one file ([`FileFormat`]). This module decides
//! the rest:
//!
//! - **One process** (`threads`, `sync`): the plan streams a partition at a time
//!   ([`DataFrame::batch_stream`]) into one file, written atomically, or into one file per
//!   partition (a `*` in the file name) committed as a whole ([`super::dataset`]).
//! - **Over the ranks of a job** (`scheduler = "mpi"`): each rank computes its own
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
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tessera_io::atomic::{write_atomic, write_synced};
use tessera_io::file::is_object_url;
use tessera_runtime::cluster::{numbered, Cluster};

use super::dataset::{write_dataset, Staging};
use crate::api::dataframe::{BatchStream, DataFrame};
use crate::error::{Error, Result};

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

/// Writes `df` to `path` in `format`: one file, or one per partition when the file name
/// holds a `*` (see the [module docs](self)). Returns the files written.
///
/// # Errors
/// The plan's errors, the format's, the filesystem's or the object store's; under
/// `scheduler = "mpi"`, any rank's failure (naming it).
pub(crate) fn write_frame(
    df: &DataFrame,
    path: &str,
    format: &dyn FileFormat,
) -> Result<Vec<PathBuf>> {
    if let Some(cluster) = tessera_runtime::cluster::current()?.filter(|c| c.size() > 1) {
        return write_over_ranks(df, path, format, &cluster);
    }
    write_stream(path, &df.batch_stream()?, format)
}

/// Writes the partitions of `out` to `path` from this process.
fn write_stream(path: &str, out: &BatchStream, format: &dyn FileFormat) -> Result<Vec<PathBuf>> {
    if is_object_url(path) {
        return super::write_object(format.op(), path, |local| write_stream(local, out, format));
    }
    if !path.contains('*') {
        let target = PathBuf::from(path);
        write_atomic(&target, |w| {
            let mut batches = (0..out.n).map(|i| (out.batch)(i));
            format.write_file(w, &target, &out.schema, &mut batches)
        })?;
        return Ok(vec![target]);
    }
    write_dataset(path, out.n, |file, i| {
        write_part(file, path, i, &out.schema, (out.batch)(i), format)
    })
}

/// Writes part `i` of the dataset `pattern` (the batch `batch`) to the staging file `file`.
fn write_part(
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

/// [`write_frame`] under a cluster of several ranks.
fn write_over_ranks(
    df: &DataFrame,
    path: &str,
    format: &dyn FileFormat,
    cluster: &Arc<Cluster>,
) -> Result<Vec<PathBuf>> {
    let ex = cluster.begin()?;
    let backend = df.backend_ref();
    let (n, mine) = crate::exec::ranks::owned_partitions(&*df.planned()?, backend, &ex)?;
    let schema = df.schema();

    if !path.contains('*') || is_object_url(path) {
        // One writer: rank 0, from every partition.
        let gathered = crate::exec::ranks::gather_to(0, n, &mine, backend, &ex)?;
        drop(mine);
        let written = ex.on_root(0, || {
            let parts = gathered
                .ok_or_else(|| Error::Internal("rank 0 was given no partitions to write".into()))?;
            let out = BatchStream::of_partitions(backend.clone(), schema.clone(), parts);
            let files = write_stream(path, &out, format)?;
            Ok(encode_paths(&files))
        })?;
        return decode_paths(&written);
    }

    // Every rank writes its own parts into one staging directory; rank 0 commits.
    let created = ex.on_root(0, || {
        let staging = Staging::create(path, n)?;
        Ok(staging
            .staging_dir()
            .to_string_lossy()
            .into_owned()
            .into_bytes())
    })?;
    let dir = PathBuf::from(String::from_utf8_lossy(&created).into_owned());
    let who = format!("rank {}", ex.rank());
    // Every rank must see the staging directory before any part is written: on a
    // node-local path the job fails here, not after each node has written its share.
    let (staging, seen) = match Staging::join(path, n, dir, &who) {
        Ok(staging) => (Some(staging), Ok(())),
        Err(e) => (None, Err(e)),
    };
    if let Err(e) = ex.agree(seen) {
        if let Some(s) = staging.filter(|_| ex.rank() == 0) {
            s.abandon();
        }
        return Err(e);
    }
    let staging = staging.ok_or_else(|| {
        Error::Internal("the ranks agreed on a write this rank could not stage".into())
    })?;
    let wrote = tessera_runtime::pool::parallel_map(mine.len(), |k| {
        let (i, part) = &mine[k];
        let batch = backend.export_batch(part);
        write_part(&staging.part_path(*i), path, *i, &schema, batch, format)
    });
    drop(mine);
    if let Err(e) = ex.agree(wrote.map(drop)) {
        if ex.rank() == 0 {
            staging.abandon();
        }
        return Err(e);
    }
    let finals = staging.finals().to_vec();
    ex.on_root(0, || staging.commit().map(|_| Vec::new()))?;
    Ok(finals)
}

/// Paths as one message.
fn encode_paths(paths: &[PathBuf]) -> Vec<u8> {
    let items: Vec<(usize, Vec<u8>)> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (i, p.to_string_lossy().into_owned().into_bytes()))
        .collect();
    numbered::pack(&items)
}

/// The paths of an [`encode_paths`] message.
fn decode_paths(message: &[u8]) -> Result<Vec<PathBuf>> {
    Ok(numbered::unpack(message)?
        .into_iter()
        .map(|(_, p)| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .collect())
}
