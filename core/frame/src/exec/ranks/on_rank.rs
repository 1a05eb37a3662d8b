//! Frames persisted over the ranks of a job (`persist()` under `scheduler = "mpi"`).
//!
//! A persisted frame keeps each partition on the rank that computed it (partition `i` on
//! rank `i mod P`), as a persisted array keeps its blocks: memory for the frame is spread
//! over the job instead of every rank holding all of it. The partitions this rank does
//! not hold are [`OnRank`] stand-ins carrying their rank, rows and bytes, so that every
//! rank sees the same plan — the same `explain()`, memory projection and join strategy
//! (decided from sizes) — while the distributed executor only ever reads a rank's own
//! partitions ([`crate::exec::ranks`] keeps those of every `Partitions` node). A plan
//! over such a frame in one process (the scheduler changed after `persist`) is refused,
//! saying why.

use std::any::Any;

use arrow_schema::SchemaRef;

use crate::backend::{Partition, PartitionData};
use crate::error::Error;

/// A partition of a persisted frame that rank `rank` holds.
#[derive(Debug)]
pub(crate) struct OnRank {
    /// The rank holding it.
    pub rank: usize,
    /// Its rows.
    pub rows: usize,
    /// Its bytes in memory.
    pub bytes: usize,
    /// Its schema.
    pub schema: SchemaRef,
    /// The backend holding it.
    pub backend: String,
}

impl PartitionData for OnRank {
    fn backend(&self) -> &str {
        &self.backend
    }

    fn num_rows(&self) -> usize {
        self.rows
    }

    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn nbytes(&self) -> usize {
        self.bytes
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The error for a plan that reads `part` in this process while another rank holds it.
pub(crate) fn held_elsewhere(part: &Partition) -> Option<Error> {
    part.as_any().downcast_ref::<OnRank>().map(|o| {
        Error::invalid(
            "compute",
            format!(
                "this frame was persisted over the ranks of a job and rank {} holds one of its partitions: compute it under the same scheduler = \"mpi\" job (or persist it again without mpi)",
                o.rank
            ),
        )
    })
}
