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
use std::sync::Arc;

use arrow_schema::SchemaRef;
use tessera_runtime::cluster::Cluster;

use crate::backend::{Partition, PartitionData};
use crate::error::{Error, Result};

/// A partition of a persisted frame that rank `rank` holds.
#[derive(Debug)]
pub(crate) struct OnRank {
    /// The rank holding it.
    pub rank: usize,
    rows: usize,
    bytes: usize,
    schema: SchemaRef,
    backend: String,
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

/// `persist()` over the ranks of `cluster`: runs `node`, keeps this rank's partitions,
/// and learns the others' sizes. The partitions in order: this rank's, and stand-ins.
///
/// # Errors
/// As the plan's run over the ranks.
pub(crate) fn persist(
    node: &crate::plan::Node,
    backend: &Arc<dyn crate::backend::DataFrameBackend>,
    schema: &SchemaRef,
    cluster: &Cluster,
) -> Result<Vec<Partition>> {
    let ex = cluster.begin()?;
    let (n, mine) = crate::exec::ranks::owned_partitions(node, backend, &ex)?;
    // Each rank's partitions as (number, rows, bytes), 24 bytes each.
    let mut sizes = Vec::with_capacity(mine.len() * 24);
    for (i, p) in &mine {
        for v in [*i, p.num_rows(), p.nbytes()] {
            sizes.extend_from_slice(&(v as u64).to_le_bytes());
        }
    }
    let mut parts: Vec<Option<Partition>> = (0..n).map(|_| None).collect();
    for (rank, share) in ex.all_gather(sizes)?.into_iter().enumerate() {
        for entry in share.chunks_exact(24) {
            let word = |k: usize| {
                let b: [u8; 8] = entry[k * 8..k * 8 + 8].try_into().unwrap_or([0; 8]);
                u64::from_le_bytes(b) as usize
            };
            let slot = parts.get_mut(word(0)).ok_or_else(|| {
                Error::Internal(format!("rank {rank} holds partition {} of {n}", word(0)))
            })?;
            if rank != ex.rank() {
                *slot = Some(Arc::new(OnRank {
                    rank,
                    rows: word(1),
                    bytes: word(2),
                    schema: schema.clone(),
                    backend: backend.name().to_string(),
                }));
            }
        }
    }
    for (i, p) in mine {
        parts[i] = Some(p);
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| p.ok_or_else(|| Error::Internal(format!("no rank holds partition {i}"))))
        .collect()
}
