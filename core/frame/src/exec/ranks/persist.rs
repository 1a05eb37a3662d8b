//! `persist()` over the ranks of a job: each rank keeps the partitions it computed and
//! learns the sizes of the others', which it holds as [`OnRank`] stand-ins (see
//! `on_rank`).

use std::sync::Arc;

use arrow_schema::SchemaRef;
use tessera_runtime::cluster::Cluster;

use crate::backend::{DataFrameBackend, Partition};
use crate::error::{Error, Result};
use crate::exec::partitions::Build;
use crate::exec::ranks::on_rank::OnRank;
use crate::exec::ranks::owned_partitions;
use crate::plan::Node;

/// `persist()` over the ranks of `cluster`: runs `node`, keeps this rank's partitions,
/// and learns the others' sizes. The partitions in order: this rank's, and stand-ins.
///
/// # Errors
/// As the plan's run over the ranks.
pub(crate) fn persist(
    pipeline: Build,
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    schema: &SchemaRef,
    cluster: &Cluster,
) -> Result<Vec<Partition>> {
    let ex = cluster.begin()?;
    let (n, mine) = owned_partitions(pipeline, node, backend, &ex)?;
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
