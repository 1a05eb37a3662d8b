//! The one door into the executor: every way a planned frame runs — computed into
//! partitions, streamed to a writer, persisted, written to files — enters here, and here
//! alone is the choice made between one process and the ranks of a job
//! (`scheduler = "mpi"`), and the spill budget sized ([`check_memory`]).
//!
//! The user API (`crate::api`) calls only this file of the executor; what `explain()`
//! says about memory and traffic is asked here too, so that the words and the run come
//! from the same decisions.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::backend::{FrameBackendRef, Partition};
use crate::error::Result;
use crate::exec::budget::{check_memory, BatchStream, Output};
use crate::exec::persisted::{PersistedSource, PERSIST_MEMORY_SHARE};
use crate::exec::pipeline::pipeline;
use crate::exec::ranks;
use crate::exec::spill_plan;
use crate::io::write::{write_stream, FileFormat};
use crate::plan::Node;

/// Every partition of the planned `node`, on `backend`. Under `scheduler = "mpi"` the plan
/// runs over the ranks of the job and every rank gets every partition.
///
/// # Errors
/// [`Error::MemoryLimit`] before anything runs when the plan cannot run within
/// `memory-limit`; whatever a partition's work fails with; across ranks, another rank's
/// failure.
pub(crate) fn partitions(node: &Arc<Node>, backend: &FrameBackendRef) -> Result<Vec<Partition>> {
    if let Some(cluster) = tessera_runtime::cluster::current()? {
        let ex = cluster.begin()?;
        return ranks::partitions(pipeline, node, backend, &ex);
    }
    let spill = check_memory(node, Output::InMemory, backend)?;
    pipeline(node, backend, &spill)?.materialize()
}

/// The planned `node`'s output as a lazy sequence for writers that take one partition at
/// a time: the blocking nodes run now, within the spill budget, and the stream produces
/// partition `i` as an Arrow batch of `schema`. The output never has to fit in memory at
/// once.
///
/// # Errors
/// As [`partitions`], for the blocking nodes that run now.
pub(crate) fn stream(
    node: &Arc<Node>,
    backend: &FrameBackendRef,
    schema: SchemaRef,
) -> Result<BatchStream> {
    let spill = check_memory(node, Output::Streamed, backend)?;
    let pipe = pipeline(node, backend, &spill)?;
    let backend = backend.clone();
    let task = pipe.task.clone();
    Ok(BatchStream {
        n: pipe.n,
        schema,
        batch: Arc::new(move |i| backend.export_batch(&task(i)?)),
        _spill: spill,
    })
}

/// Computes the planned `node` and returns the node later plans start from: its
/// partitions on the backend, or — within `memory-limit` — a scan of it persisted a
/// partition at a time, in memory up to a quarter of the limit and in the spill directory
/// past it. Under `scheduler = "mpi"` each rank keeps the partitions it computed.
///
/// # Errors
/// As [`partitions`]; [`Error::MemoryLimit`] only when the frame does not fit and spilling
/// is off (`spill-dir = none`) or even its stages cannot run within the limit.
pub(crate) fn persist(
    node: &Arc<Node>,
    backend: &FrameBackendRef,
    schema: SchemaRef,
) -> Result<Node> {
    if let Some(cluster) = tessera_runtime::cluster::current()? {
        let parts = ranks::persist::persist(pipeline, node, backend, &schema, &cluster)?;
        return Ok(Node::Partitions { parts, schema });
    }
    // Within a memory limit a persisted frame is measured as it is computed: its
    // partitions are kept in memory up to a share of the limit and written to the spill
    // directory past it (`exec/persisted.rs`), so what it holds is bounded whatever the
    // projection said. Without one, or with spilling off, it is kept in memory, as long
    // as the projection fits.
    let limit = crate::config::memory_limit()?;
    let base = crate::config::spill_dir()?;
    let (Some(limit), Some(base)) = (limit, base) else {
        let spill = check_memory(node, Output::InMemory, backend)?;
        return Ok(Node::Partitions {
            parts: pipeline(node, backend, &spill)?.materialize()?,
            schema,
        });
    };
    let out = stream(node, backend, schema)?;
    let source = PersistedSource::write(
        &base,
        out.schema.clone(),
        out.n,
        out.batch.as_ref(),
        limit / PERSIST_MEMORY_SHARE,
    )?;
    Ok(Node::Scan {
        source: Arc::new(source),
        projection: None,
        selected: None,
        pushed: Vec::new(),
        stored: Vec::new(),
    })
}

/// Writes the planned `node`'s output to `path` in `format`: one file, or one per
/// partition when the file name holds a `*` (see `crate::io::write`). In one process the
/// plan streams into the files; over the ranks of a job each rank writes its own
/// partitions (`ranks::write`). Returns the files written.
///
/// # Errors
/// The plan's errors, the format's, the filesystem's or the object store's; under
/// `scheduler = "mpi"`, any rank's failure (naming it).
pub(crate) fn write(
    node: &Arc<Node>,
    backend: &FrameBackendRef,
    schema: SchemaRef,
    path: &str,
    format: &dyn FileFormat,
) -> Result<Vec<PathBuf>> {
    if let Some(cluster) = tessera_runtime::cluster::current()?.filter(|c| c.size() > 1) {
        return ranks::write::write(pipeline, node, backend, schema, path, format, &cluster);
    }
    let out = stream(node, backend, schema)?;
    write_stream(path, &out.parts(), format)
}

/// What `explain()` says of the planned `node`'s memory: how it runs within
/// `memory-limit` (unbudgeted: nothing; spilling: where and in what pieces; refused:
/// why), or within a device backend's own memory.
///
/// # Errors
/// The configuration's (an unreadable `memory-limit` or `threads`).
pub(crate) fn memory_note(node: &Arc<Node>, backend: &FrameBackendRef) -> Result<String> {
    let fb = tessera_core::chunks::format_bytes;
    Ok(match check_memory(node, Output::InMemory, backend) {
        Ok(None) => String::new(),
        Ok(Some(b)) if b.keep == u64::MAX => {
            let m = node.memory(tessera_runtime::pool::worker_threads()? as u64);
            let peak = m.held.saturating_add(m.output);
            let limit = b.task_bytes.saturating_mul(4);
            format!(
                "device memory: backend '{}' holds at most {} per device (device.memory-limit); the plan is projected to hold about {} at its peak ({}); shuffles, broadcast sides and groupby combines are sized to about {} per task, and what does not fit on a device spills to host memory, then to spill-dir, and is read back by the kernel that needs it\n",
                backend.name(),
                fb(limit),
                fb(peak),
                if peak > limit {
                    format!("about {} over one device's limit spills", fb(peak - limit))
                } else {
                    "within one device's limit".to_string()
                },
                fb(b.task_bytes)
            )
        }
        Ok(Some(b)) => {
            let workers = tessera_runtime::pool::worker_threads()? as u64;
            let mut s = format!(
                "memory-limit: groupby states, shuffle buckets, join sides and blocking results beyond {} (measured as they run) are spilled to {} (Arrow IPC, LZ4) and read back by the task that needs them; shuffles make buckets of about {} per task\n",
                fb(b.keep),
                b.base.display(),
                fb(b.task_bytes)
            );
            for line in spill_plan::operator_notes(node, &b, workers) {
                s.push_str(&format!("  {line}\n"));
            }
            s
        }
        Err(e) => format!("over memory-limit, refused before running: {e}\n"),
    })
}

/// What `explain()` says of the traffic between ranks under `scheduler = "mpi"`: the
/// projected steps and each rank's bytes sent and received; nothing in one process.
///
/// # Errors
/// A cluster that cannot open.
pub(crate) fn traffic_note(node: &Node, backend: &FrameBackendRef) -> Result<String> {
    let Some(cluster) = tessera_runtime::cluster::current()? else {
        return Ok(String::new());
    };
    let p = ranks::traffic::project(node, backend, cluster.size());
    let fmt = tessera_core::chunks::format_bytes;
    let mut s = format!(
        "distributed over {}: partition i on rank i mod {}; projected traffic per rank (sizes from the memory model: filters keep every row, groupby states are as large as their input):\n",
        cluster.describe(),
        cluster.size()
    );
    for step in &p.steps {
        s.push_str(&format!("  {step}\n"));
    }
    for (r, (sent, received)) in p.per_rank.iter().enumerate() {
        s.push_str(&format!(
            "  rank {r}: sends {}, receives {}\n",
            fmt(*sent),
            fmt(*received)
        ));
    }
    Ok(s)
}

/// Under `scheduler = "mpi"`, the bytes each rank is projected to send and receive to
/// compute `node` on every rank, `(sent, received)` per rank; `None` in one process.
///
/// # Errors
/// A cluster that cannot open.
pub(crate) fn projected_traffic(
    node: &Node,
    backend: &FrameBackendRef,
) -> Result<Option<Vec<(u64, u64)>>> {
    Ok(tessera_runtime::cluster::current()?
        .map(|cluster| ranks::traffic::project(node, backend, cluster.size()).per_rank))
}
