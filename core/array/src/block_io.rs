//! The two traits a storage format implements to plug into the engine ([`BlockSource`],
//! [`BlockSink`]) and what a store reports ([`StoreSummary`]).
//!
//! They sit below both the user API (`Array::from_source`, `Array::store` in
//! `crate::array`) and the graph and executor that run the reads and writes, so that
//! neither side reaches into the other for them.

use std::ops::Range;

use crate::chunks::Chunks;
use crate::error::Result;
use crate::host::HostArray;

/// A stored array that tessera can read region by region (a file, a Zarr array, a
/// dataset variable). Implemented by storage formats; see the docs of this module.
pub trait BlockSource: Send + Sync {
    /// What the array is, for plans and errors: the format and where it lives
    /// (`"npy /data/x.npy"`, `"zarr s3://bucket/store.zarr/temperature"`).
    fn describe(&self) -> String;

    /// Reads the region with `region[axis]` the index range along each axis (in the stored
    /// array's coordinates; never empty, always inside the shape) as a host array of the
    /// source's dtype and the region's shape, in standard (C) layout.
    ///
    /// # Errors
    /// Whatever the storage reports (missing data, a corrupt chunk, a file that changed
    /// since the array was opened), naming [`describe`](BlockSource::describe).
    fn read(&self, region: &[Range<usize>]) -> Result<HostArray>;

    /// A remark `explain()` prints under the source's line, such as a requested chunking
    /// that cuts the stored chunks (each stored chunk then read more than once). `None` by
    /// default.
    fn plan_note(&self) -> Option<String> {
        None
    }
}

/// A destination tessera writes block by block. Implemented by storage formats; see the
/// docs of this module.
pub trait BlockSink: Send + Sync {
    /// What the destination is, for plans and errors.
    fn describe(&self) -> String;

    /// Writes `data` (C layout) as the region `region` of the destination; returns the
    /// bytes it wrote (after compression, if any). Called concurrently from several
    /// workers, for disjoint regions.
    ///
    /// # Errors
    /// Whatever the storage reports, naming [`describe`](BlockSink::describe).
    fn write(&self, region: &[Range<usize>], data: &HostArray) -> Result<u64>;

    /// Whether every rank of a distributed job (`scheduler = "mpi"`) writes into this very
    /// destination — a file on a filesystem the ranks share, an object store — so that
    /// each block can be written by the rank that computes it; the format then commits
    /// once, from rank 0, after every rank has written (`to_npy` and `to_zarr` do).
    /// `false` by default: [`Array::store`](crate::Array::store) refuses such a sink over several ranks,
    /// because each rank would fill a destination of its own (memory, say) with only its
    /// own blocks.
    fn shared_by_ranks(&self) -> bool {
        false
    }
}

/// What [`Array::store`](crate::Array::store) wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreSummary {
    /// Blocks written.
    pub blocks: usize,
    /// Bytes written (as the sink counts them: compressed, when it compresses).
    pub bytes: u64,
}

/// The region of block `block` of `chunks`.
pub(crate) fn block_region(chunks: &Chunks, block: &[usize]) -> Vec<Range<usize>> {
    block
        .iter()
        .enumerate()
        .map(|(ax, &b)| {
            let start = chunks.offsets(ax)[b];
            start..start + chunks.axis(ax)[b]
        })
        .collect()
}
