//! Zarr v2 and v3 arrays (through the `zarrs` crate): read as lazy arrays on their stored
//! chunking, written chunk by chunk from the tasks that compute them.
//!
//! - [`from_zarr`] opens an array's metadata and makes one read task per stored chunk
//!   (or per requested block, regrouped from stored chunks each read once). Codecs: blosc,
//!   zstd, gzip, crc32c, transpose, sharding, and fill values for chunks never written.
//! - [`to_zarr`] writes v2 or v3 with the [`Compression`] and sharding asked for. Each
//!   chunk is written whole by one task, so writers never race on a chunk; the metadata
//!   is written last, so a store whose write failed or was interrupted has no array to
//!   open.
//! - [`persist_compressed`] keeps an array's blocks compressed in memory.
//!
//! Stores are local directories (`/data/x.zarr`, `file:///data/x.zarr`) and memory
//! ([`ZarrStore`]).

mod direct;
mod dtype;
mod read;
mod store;
#[cfg(feature = "object-store")]
mod versions;
mod write;

pub use read::from_zarr;
pub use store::ZarrStore;
pub use write::{
    persist_compressed, to_zarr, BloscCompressor, Compression, ZarrFormat, ZarrWriteOptions,
};

#[cfg(test)]
mod tests;
