//! Materialised chunks, in memory or spilled to disk.
//!
//! `persist()` of an array larger than what `memory-limit` leaves for results keeps the
//! chunks that fit on the backend and writes the rest to the spill directory
//! ([`tessera_runtime::spill`]); a later plan reading a spilled block runs an `unspill` task
//! that reads it back and hands it to the backend again. A spilled chunk is the backend's
//! host copy (`to_host`), so a device backend's chunks spill device → host → disk through the
//! same path. Its bytes on disk are released when the last array holding the chunk is dropped.

use std::path::Path;
use std::sync::Arc;

use tessera_runtime::spill::SpillFile;

use crate::backend::{BackendRef, Chunk};
use crate::codec::{read_elements, write_elements};
use crate::dtype::DType;
use crate::error::{Error, Result};

/// A materialised block: a chunk on its backend, spilled, or (under a distributed
/// scheduler) on one rank of the job.
#[derive(Clone)]
pub(crate) enum Held {
    /// On the backend.
    Resident(Chunk),
    /// On disk.
    Spilled(Arc<SpilledChunk>),
    /// Kept by rank `rank` of a distributed run (`persist()` under `scheduler = "mpi"`):
    /// the chunk on that rank, `None` on the others. Plans run the block's task there.
    Placed {
        /// The rank that holds it.
        rank: usize,
        /// The chunk, on the holder.
        chunk: Option<Chunk>,
        /// The block's shape.
        shape: Vec<usize>,
    },
}

impl From<Chunk> for Held {
    fn from(c: Chunk) -> Held {
        Held::Resident(c)
    }
}

impl Held {
    /// The block's shape.
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Held::Resident(c) => c.shape(),
            Held::Spilled(s) => &s.shape,
            Held::Placed { shape, .. } => shape,
        }
    }

    /// The chunk, read back from disk if it was spilled.
    pub(crate) fn load(&self) -> Result<Chunk> {
        match self {
            Held::Resident(c) | Held::Placed { chunk: Some(c), .. } => Ok(c.clone()),
            Held::Spilled(s) => s.load(),
            Held::Placed {
                rank, chunk: None, ..
            } => Err(Error::Distributed {
                rank: *rank,
                detail: format!(
                    "this block was persisted on rank {rank}; only a plan run on every rank of the job can read it"
                ),
            }),
        }
    }
}

/// A chunk written to a spill file: its host bytes in C order.
pub(crate) struct SpilledChunk {
    file: SpillFile,
    dtype: DType,
    shape: Vec<usize>,
    backend: BackendRef,
}

impl SpilledChunk {
    /// Writes `chunk` (owned by `backend`) to a new spill file under `base`.
    pub(crate) fn write(base: &Path, backend: &BackendRef, chunk: &Chunk) -> Result<SpilledChunk> {
        let owned;
        let host = match backend.host_view(chunk) {
            Some(h) => h,
            None => {
                owned = backend.to_host(chunk)?;
                &owned
            }
        };
        let file = SpillFile::write(base, host.nbytes() as u64, |w| {
            write_elements(host, w).map_err(|e| Error::io(base, e))
        })?;
        Ok(SpilledChunk {
            file,
            dtype: chunk.dtype(),
            shape: chunk.shape().to_vec(),
            backend: backend.clone(),
        })
    }

    /// Reads the chunk back onto its backend.
    pub(crate) fn load(&self) -> Result<Chunk> {
        let host = self.file.read(|r| {
            read_elements(self.dtype, &self.shape, r).map_err(|e| Error::io(self.file.path(), e))
        })?;
        self.backend.from_host(&host)
    }

    /// Bytes on disk.
    pub(crate) fn disk_bytes(&self) -> u64 {
        self.file.disk_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::DType;
    use tessera_cpu as _;

    #[test]
    fn every_dtype_round_trips_through_a_spill_file() {
        let base = std::env::temp_dir().join(format!("tessera-stored-test-{}", std::process::id()));
        let backend = crate::registry::array_backend("cpu").unwrap();
        for dtype in DType::ALL {
            let host = crate::host::HostArray::from_scalars(
                &[2, 3],
                dtype,
                &(0..6)
                    .map(|i| tessera_core::Scalar::F64(i as f64 * 1.5 - 2.0).cast(dtype))
                    .collect::<Vec<_>>(),
            )
            .unwrap();
            let chunk = backend.from_host(&host).unwrap();
            let spilled = SpilledChunk::write(&base, &backend, &chunk).unwrap();
            assert!(spilled.disk_bytes() > 0);
            let back = backend.to_host(&spilled.load().unwrap()).unwrap();
            assert_eq!(back, host, "{dtype}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
