//! Partitions kept between the stages of a plan that runs over `memory-limit`: in memory
//! while they fit the plan's spill budget, else Arrow IPC streams in spill files
//! ([`tessera_runtime::spill`]).
//!
//! The blocking algorithms ([`crate::exec`]) hold everything they keep between
//! stages — groupby states, shuffle buckets, join sides, results of blocking nodes — as
//! [`Stashed`] partitions. Without a budget a stash is the partition itself. With one,
//! a partition that would take the kept bytes over the budget is written out instead
//! (kind `spill` in a profile) and read back by the task that needs it (`unspill`); its
//! bytes on disk are released when the stash is dropped, so at the end of the stage that
//! consumed it, when the plan fails, or while a panic unwinds.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use tessera_runtime::spill::SpillFile;

use super::stage::TaskOutput;
use crate::backend::{DataFrameBackend, Partition};
use crate::error::{Error, Result};

/// A running plan's spill budget.
#[derive(Debug)]
pub(crate) struct SpillBudget {
    /// Where spill files go (`spill-dir`).
    pub base: PathBuf,
    /// Bytes of stashed partitions kept in memory at most.
    pub keep: u64,
    /// Bytes one task of a bucketed stage (a bucket's groupby states, a bucket's join
    /// sides) should read: bucket counts are chosen so that every worker's task fits.
    pub task_bytes: u64,
    kept: AtomicU64,
}

impl SpillBudget {
    /// A budget keeping `keep` bytes, with tasks of `task_bytes`.
    pub(crate) fn new(base: PathBuf, keep: u64, task_bytes: u64) -> SpillBudget {
        SpillBudget {
            base,
            keep,
            task_bytes: task_bytes.max(1),
            kept: AtomicU64::new(0),
        }
    }

    /// Buckets so that `bytes` split into them make tasks of at most
    /// [`SpillBudget::task_bytes`], and at least `at_least`.
    pub(crate) fn buckets(&self, bytes: u64, at_least: usize) -> usize {
        let need = bytes.div_ceil(self.task_bytes);
        at_least
            .max(usize::try_from(need).unwrap_or(usize::MAX))
            .max(1)
    }
}

/// The plan's spill budget, if it runs over `memory-limit`.
pub(crate) type Spill = Option<Arc<SpillBudget>>;

/// Bytes charged to a budget while a stash keeps its partition in memory.
#[derive(Debug)]
pub(crate) struct Charge {
    budget: Arc<SpillBudget>,
    bytes: u64,
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.budget.kept.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// A partition kept between stages: in memory, or spilled.
pub(crate) enum Stashed {
    /// In memory (charged to the budget, if there is one).
    Resident {
        part: Partition,
        _charge: Option<Charge>,
    },
    /// In a spill file.
    Spilled {
        file: SpillFile,
        rows: usize,
        bytes: usize,
    },
}

/// Writes `batch` (about `bytes` in memory) to a spill file under `base` as an Arrow IPC
/// stream; `op` names the step in errors.
fn write_batch(
    base: &std::path::Path,
    batch: &RecordBatch,
    bytes: u64,
    op: &str,
) -> Result<SpillFile> {
    SpillFile::write(base, bytes, |w| {
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(w, &batch.schema())
            .map_err(|e| Error::arrow(op, e))?;
        writer.write(batch).map_err(|e| Error::arrow(op, e))?;
        writer.finish().map_err(|e| Error::arrow(op, e))
    })
}

/// Reads back the batch [`write_batch`] wrote, only the columns at `projection` (all when
/// `None`).
fn read_batch(file: &SpillFile, projection: Option<&[usize]>, op: &str) -> Result<RecordBatch> {
    file.read(|r| {
        let mut reader =
            arrow_ipc::reader::StreamReader::try_new(r, projection.map(<[usize]>::to_vec))
                .map_err(|e| Error::arrow(op, e))?;
        let batch = reader.next().transpose().map_err(|e| Error::arrow(op, e))?;
        batch.ok_or_else(|| {
            Error::io(
                file.path(),
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "spill file holds no partition",
                ),
            )
        })
    })
}

/// Keeps `part`: in memory while the budget allows, else in a spill file.
pub(crate) fn stash(
    spill: &Spill,
    backend: &Arc<dyn DataFrameBackend>,
    part: Partition,
) -> Result<Stashed> {
    let Some(budget) = spill else {
        return Ok(Stashed::Resident {
            part,
            _charge: None,
        });
    };
    let bytes = part.nbytes() as u64;
    let fits = budget
        .kept
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |k| {
            (k + bytes <= budget.keep).then_some(k + bytes)
        })
        .is_ok();
    if fits {
        return Ok(Stashed::Resident {
            part,
            _charge: Some(Charge {
                budget: budget.clone(),
                bytes,
            }),
        });
    }
    let start = Instant::now();
    let rows = part.num_rows();
    let batch = backend.export_batch(&part)?;
    drop(part);
    let file = write_batch(&budget.base, &batch, bytes, "spill")?;
    tessera_observe::profile::side_span(
        "spill",
        tessera_observe::TaskTiming {
            kind: "spill",
            start,
            bytes_in: bytes,
            bytes_out: file.disk_bytes(),
            held_bytes: None,
        },
    );
    Ok(Stashed::Spilled {
        file,
        rows,
        bytes: bytes as usize,
    })
}

impl Stashed {
    /// The partition, read back if it was spilled.
    pub(crate) fn load(&self, backend: &Arc<dyn DataFrameBackend>) -> Result<Partition> {
        super::stage::note_read(self.nbytes() as u64);
        let file = match self {
            Stashed::Resident { part, .. } => return Ok(part.clone()),
            Stashed::Spilled { file, .. } => file,
        };
        let start = Instant::now();
        let batch = read_batch(file, None, "unspill")?;
        let part = backend.import_batch(batch)?;
        tessera_observe::profile::side_span(
            "unspill",
            tessera_observe::TaskTiming {
                kind: "unspill",
                start,
                bytes_in: file.disk_bytes(),
                bytes_out: part.nbytes() as u64,
                held_bytes: None,
            },
        );
        Ok(part)
    }

    /// Rows of the partition.
    pub(crate) fn num_rows(&self) -> usize {
        match self {
            Stashed::Resident { part, .. } => part.num_rows(),
            Stashed::Spilled { rows, .. } => *rows,
        }
    }

    /// Bytes of the partition in memory.
    pub(crate) fn nbytes(&self) -> usize {
        match self {
            Stashed::Resident { part, .. } => part.nbytes(),
            Stashed::Spilled { bytes, .. } => *bytes,
        }
    }
}

/// A frame persisted to the spill directory because it does not fit `memory-limit`: one
/// Arrow IPC stream per partition, read back like a file (projection included), so later
/// plans stream it a partition per worker. The files go when the last frame reading them
/// is dropped.
#[derive(Debug)]
pub(crate) struct PersistedSource {
    schema: arrow_schema::SchemaRef,
    parts: Vec<(SpillFile, u64)>,
}

impl PersistedSource {
    /// Writes every batch `batch(i)`, `i < n`, to the spill directory `base`, on the worker
    /// pool.
    pub(crate) fn write(
        base: &std::path::Path,
        schema: arrow_schema::SchemaRef,
        n: usize,
        batch: &(dyn Fn(usize) -> Result<arrow_array::RecordBatch> + Send + Sync),
    ) -> Result<PersistedSource> {
        let parts = tessera_runtime::pool::parallel_map(n, |i| {
            let b = batch(i)?;
            let bytes = b.get_array_memory_size() as u64;
            let file = write_batch(base, &b, bytes, "persist")?;
            Ok((file, bytes))
        })?;
        Ok(PersistedSource { schema, parts })
    }
}

impl crate::plan::FileSource for PersistedSource {
    fn format(&self) -> &'static str {
        "spilled"
    }

    fn schema(&self) -> arrow_schema::SchemaRef {
        self.schema.clone()
    }

    fn partitions(&self) -> usize {
        self.parts.len()
    }

    fn read(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
    ) -> Result<arrow_array::RecordBatch> {
        let (file, _) = self.parts.get(partition).ok_or_else(|| {
            Error::Internal(format!(
                "partition {partition} of a persisted frame of {}",
                self.parts.len()
            ))
        })?;
        read_batch(file, projection, "read persisted partition")
    }

    fn describe(&self) -> String {
        let disk: u64 = self.parts.iter().map(|(f, _)| f.disk_bytes()).sum();
        format!(
            "persisted to the spill directory ({} partitions, {} on disk)",
            self.parts.len(),
            tessera_core::chunks::format_bytes(disk)
        )
    }

    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        self.parts.get(partition).map(|(_, b)| *b)
    }
}

impl TaskOutput for Stashed {
    fn bytes(&self) -> u64 {
        self.nbytes() as u64
    }
}
