//! A frame persisted under `memory-limit`: its partitions kept in memory up to a share
//! of the limit, the rest written to the spill directory, read back like a file.
//!
//! Persisting used to keep a frame in memory whenever the plan's projection said it fit
//! the limit. The projection is a model — TPC-H Q21 at scale 100 under 8 GiB persisted
//! 6 GB of late line items it had projected within the limit — and what a persisted frame
//! holds stays held while later plans run within their own budgets, which do not count
//! it: that query peaked at 10.5 GB. Here each partition is measured as it is computed:
//! kept in memory while the persisted partitions in memory take at most
//! [`PERSIST_MEMORY_SHARE`] of the limit, else written to a spill file (Arrow IPC), so
//! a persisted frame, whatever its size, holds at most that share.

use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::RecordBatch;
use tessera_runtime::spill::SpillFile;

use crate::error::{Error, Result};
use crate::exec::spill::{read_batch, write_batch};

/// The share of `memory-limit` (its 1/n) that persisted frames may keep in memory, all
/// of them together: the other three quarters are for the plans that read them (half
/// the limit for what their stages keep, the rest for their running tasks).
pub(crate) const PERSIST_MEMORY_SHARE: u64 = 4;

/// Bytes of persisted partitions in memory, in all frames of the process: charged when a
/// partition is kept, released when the last frame reading it is dropped.
static IN_MEMORY: AtomicU64 = AtomicU64::new(0);

/// One persisted partition.
#[derive(Debug)]
enum Part {
    /// Kept in memory: its bytes are charged to [`IN_MEMORY`] until it is dropped.
    Memory(RecordBatch),
    /// In a spill file, removed with it.
    File(SpillFile),
}

/// A persisted frame: its partitions in order, each in memory or in a spill file with its
/// bytes in memory, read back like a file (projection included), so later plans stream it
/// a partition per worker.
#[derive(Debug)]
pub(crate) struct PersistedSource {
    schema: arrow_schema::SchemaRef,
    parts: Vec<(Part, u64)>,
}

impl PersistedSource {
    /// Computes every batch `batch(i)`, `i < n`, on the worker pool, keeping it in memory
    /// while the persisted partitions in memory (of every frame) stay within `memory`
    /// bytes, else writing it to a spill file under `base`.
    ///
    /// # Errors
    /// The batches' errors, and the spill files'.
    pub(crate) fn write(
        base: &std::path::Path,
        schema: arrow_schema::SchemaRef,
        n: usize,
        batch: &(dyn Fn(usize) -> Result<RecordBatch> + Send + Sync),
        memory: u64,
    ) -> Result<PersistedSource> {
        let parts = tessera_runtime::pool::parallel_map(n, |i| {
            let b = batch(i)?;
            let bytes = b.get_array_memory_size() as u64;
            let kept = IN_MEMORY
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                    used.checked_add(bytes).filter(|&u| u <= memory)
                })
                .is_ok();
            if kept {
                return Ok((Part::Memory(b), bytes));
            }
            let file = write_batch(base, &b, bytes, "persist")?;
            Ok((Part::File(file), bytes))
        })?;
        Ok(PersistedSource { schema, parts })
    }

    /// Bytes of the partitions kept in memory (what this frame charges).
    fn memory_bytes(&self) -> u64 {
        self.parts
            .iter()
            .filter(|(p, _)| matches!(p, Part::Memory(_)))
            .map(|(_, b)| *b)
            .sum()
    }

    /// Partitions kept in memory and written to spill files.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let memory = self
            .parts
            .iter()
            .filter(|(p, _)| matches!(p, Part::Memory(_)))
            .count();
        (memory, self.parts.len() - memory)
    }
}

impl Drop for PersistedSource {
    fn drop(&mut self) {
        IN_MEMORY.fetch_sub(self.memory_bytes(), Ordering::Relaxed);
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

    fn read(&self, partition: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        let (part, _) = self.parts.get(partition).ok_or_else(|| {
            Error::Internal(format!(
                "partition {partition} of a persisted frame of {}",
                self.parts.len()
            ))
        })?;
        match part {
            Part::Memory(b) => match projection {
                Some(p) => b
                    .project(p)
                    .map_err(|e| Error::arrow("read persisted partition", e)),
                None => Ok(b.clone()),
            },
            Part::File(file) => read_batch(file, projection, "read persisted partition"),
        }
    }

    fn describe(&self) -> String {
        let disk: u64 = self
            .parts
            .iter()
            .map(|(p, _)| match p {
                Part::File(f) => f.disk_bytes(),
                Part::Memory(_) => 0,
            })
            .sum();
        let (memory, files) = self.counts();
        let fb = tessera_core::chunks::format_bytes;
        let in_memory = self.memory_bytes();
        if files == 0 {
            format!(
                "persisted in memory ({memory} partitions, {})",
                fb(in_memory)
            )
        } else {
            format!(
                "persisted to the spill directory ({files} of {} partitions, {} on disk; {memory} in memory, {})",
                self.parts.len(),
                fb(disk),
                fb(in_memory)
            )
        }
    }

    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        self.parts.get(partition).map(|(_, b)| *b)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::plan::FileSource;

    /// Partitions past the memory share go to files; every partition reads back whole, in
    /// order, projected or not; dropping the frame releases its charge.
    #[test]
    fn partitions_past_the_share_are_written_out_and_read_back_in_order() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, false),
            Field::new("b", DataType::Int64, false),
        ]));
        let batch = |i: usize| {
            let a: ArrayRef = Arc::new(Int64Array::from_iter_values(
                (0..1000).map(|r| r + 1000 * i as i64),
            ));
            let b: ArrayRef = Arc::new(Int64Array::from_iter_values((0..1000).map(|r| -r)));
            Ok(RecordBatch::try_new(schema.clone(), vec![a, b]).unwrap())
        };
        let one = batch(0).unwrap().get_array_memory_size() as u64;
        let dir =
            std::env::temp_dir().join(format!("tessera-persisted-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let before = IN_MEMORY.load(Ordering::Relaxed);
        let source =
            PersistedSource::write(&dir, schema.clone(), 10, &batch, before + 3 * one).unwrap();
        let (memory, files) = source.counts();
        assert_eq!((memory, files), (3, 7));
        assert_eq!(IN_MEMORY.load(Ordering::Relaxed), before + 3 * one);
        assert!(
            source.describe().contains("7 of 10 partitions"),
            "{}",
            source.describe()
        );
        for i in 0..10 {
            assert_eq!(source.read(i, None).unwrap(), batch(i).unwrap());
            let b = source.read(i, Some(&[1])).unwrap();
            assert_eq!(b.num_columns(), 1);
            assert_eq!(b.column(0), batch(i).unwrap().column(1));
        }
        assert!(source.read(10, None).is_err());
        drop(source);
        assert_eq!(IN_MEMORY.load(Ordering::Relaxed), before);
        std::fs::remove_dir_all(&dir).ok();
    }
}
