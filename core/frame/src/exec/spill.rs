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
use crate::exec::tuning::{COLUMN_BOOKKEEPING_BYTES, PIECE_BOOKKEEPING_BYTES};

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

    /// Bytes the budget can still keep in memory.
    pub(crate) fn room(&self) -> u64 {
        self.keep.saturating_sub(self.kept.load(Ordering::Relaxed))
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
pub(crate) fn write_batch(
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
pub(crate) fn read_batch(
    file: &SpillFile,
    projection: Option<&[usize]>,
    op: &str,
) -> Result<RecordBatch> {
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

/// What a kept partition costs in memory: its buffers, and the bookkeeping of the batch
/// and of each column (the array and buffer headers, the stash itself). Charging the
/// buffers alone let a shuffle cut into millions of small pieces grow past its budget —
/// 35 million pieces of TPC-H SF 100's Q4 once took 17 GB of bookkeeping beside 3 GB of
/// keys — where with this charge many tiny pieces spill like a few large ones.
pub(crate) fn charged_bytes(part: &Partition) -> u64 {
    (part.nbytes() as u64).saturating_add(piece_bookkeeping(part.schema().fields().len()))
}

/// The bookkeeping [`charged_bytes`] counts for a partition of `columns` columns.
pub(crate) fn piece_bookkeeping(columns: usize) -> u64 {
    PIECE_BOOKKEEPING_BYTES
        .saturating_add((columns as u64).saturating_mul(COLUMN_BOOKKEEPING_BYTES))
}

/// Charges `bytes` that a stage holds outside a stash (a grace join's hash tables) to
/// `budget`, if they fit; the charge lasts as long as the returned value.
pub(crate) fn try_charge(budget: &Arc<SpillBudget>, bytes: u64) -> Option<Charge> {
    budget
        .kept
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |k| {
            (k.saturating_add(bytes) <= budget.keep).then_some(k + bytes)
        })
        .ok()
        .map(|_| Charge {
            budget: budget.clone(),
            bytes,
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
    match try_charge(budget, charged_bytes(&part)) {
        Some(charge) => Ok(Stashed::Resident {
            part,
            _charge: Some(charge),
        }),
        None => spill_now(budget, backend, part),
    }
}

/// Keeps `part` in a spill file whatever room the budget has: the pieces of a grace
/// join's buckets chosen to be on disk ([`crate::exec::grace_join`]). A partition without
/// rows stays in memory, charged its bookkeeping: a file would cost more than it holds.
pub(crate) fn stash_on_disk(
    budget: &Arc<SpillBudget>,
    backend: &Arc<dyn DataFrameBackend>,
    part: Partition,
) -> Result<Stashed> {
    if part.num_rows() == 0 {
        let bytes = charged_bytes(&part);
        budget.kept.fetch_add(bytes, Ordering::Relaxed);
        return Ok(Stashed::Resident {
            part,
            _charge: Some(Charge {
                budget: budget.clone(),
                bytes,
            }),
        });
    }
    spill_now(budget, backend, part)
}

/// Writes `part` to a spill file under `budget`'s directory.
fn spill_now(
    budget: &Arc<SpillBudget>,
    backend: &Arc<dyn DataFrameBackend>,
    part: Partition,
) -> Result<Stashed> {
    let bytes = part.nbytes() as u64;
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

    /// Whether the partition is in memory.
    pub(crate) fn is_resident(&self) -> bool {
        matches!(self, Stashed::Resident { .. })
    }

    /// Bytes this stash holds of its budget: a resident partition's
    /// [`charged_bytes`], nothing for a spilled one or without a budget.
    pub(crate) fn charged(&self) -> u64 {
        match self {
            Stashed::Resident {
                _charge: Some(c), ..
            } => c.bytes,
            _ => 0,
        }
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

impl TaskOutput for Stashed {
    fn bytes(&self) -> u64 {
        self.nbytes() as u64
    }
}
