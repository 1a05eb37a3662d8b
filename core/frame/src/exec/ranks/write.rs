//! Writing a frame over the ranks of a job (`scheduler = "mpi"`): each rank computes its
//! own partitions. A dataset of parts is written where the partitions are: rank 0 creates
//! the staging directory and broadcasts its name, every rank writes its own parts into
//! it, the ranks agree that every part was written (a failure anywhere fails the write
//! everywhere, naming the rank), and rank 0 commits once. One file (no `*`), or an object
//! URL, has one writer: the partitions are gathered to rank 0, which writes it. The
//! formats and the file commits are `crate::io`'s.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tessera_io::file::is_object_url;
use tessera_runtime::cluster::{numbered, Cluster};

use crate::backend::FrameBackendRef;
use crate::error::{Error, Result};
use crate::exec::partitions::Build;
use crate::exec::ranks::{gather_to, owned_partitions};
use crate::io::dataset::Staging;
use crate::io::write::{write_part, write_stream, FileFormat, Parts};
use crate::plan::Node;

/// Writes the planned `node` to `path` in `format` over the ranks of `cluster` (see the
/// [module docs](self)); every rank returns the same paths, or the same failure.
///
/// # Errors
/// The plan's errors, the format's, the filesystem's or the object store's, any rank's
/// failure (naming it), a destination some rank cannot see.
pub(crate) fn write(
    pipeline: Build,
    node: &Node,
    backend: &FrameBackendRef,
    schema: SchemaRef,
    path: &str,
    format: &dyn FileFormat,
    cluster: &Arc<Cluster>,
) -> Result<Vec<PathBuf>> {
    let ex = cluster.begin()?;
    let (n, mine) = owned_partitions(pipeline, node, backend, &ex)?;

    if !path.contains('*') || is_object_url(path) {
        // One writer: rank 0, from every partition.
        let gathered = gather_to(0, n, &mine, backend, &ex)?;
        drop(mine);
        let written = ex.on_root(0, || {
            let parts = gathered
                .ok_or_else(|| Error::Internal("rank 0 was given no partitions to write".into()))?;
            let batch = |i: usize| -> Result<RecordBatch> {
                let part = parts.get(i).ok_or_else(|| {
                    Error::Internal(format!("partition {i} of {} to write", parts.len()))
                })?;
                backend.export_batch(part)
            };
            let out = Parts {
                n: parts.len(),
                schema: &schema,
                batch: &batch,
            };
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
