//! # tessera-io: arrays and files in storage
//!
//! The storage layer under tessera's arrays and frames:
//!
//! - [`npy`]: NumPy's `.npy` files as lazy arrays, read and written block by block;
//! - `hdf5` and `netcdf` (features of the same names, on the system's libhdf5 and
//!   libnetcdf): HDF5 datasets and NetCDF variables as lazy arrays on their stored chunks;
//! - `zarr` (feature `zarr`, on by default): Zarr v2 and v3 arrays, read on their stored
//!   chunking and written chunk by chunk with the metadata last;
//! - `object` (feature `object-store`): S3, GCS, Azure and HTTP(S) URLs, configured from
//!   the environment and `storage.*`, with retries;
//! - [`mod@file`] and [`glob`]: files that readers read by byte range, local or objects, with
//!   their identity checked on every read, and the patterns that list them;
//! - [`atomic`]: files that appear whole or not at all (a temporary file renamed over the
//!   target once synced), used by every writer;
//! - [`identity`]: a file's identity recorded when a plan is made and checked before each
//!   read, so a file that changes under a running plan is an error, never a mix of two
//!   versions;
//! - `ranks`: the protocol by which every rank of a `scheduler = "mpi"` job writes its
//!   blocks into one destination that rank 0 commits.
//!
//! Formats plug into the array engine through [`tessera_array::BlockSource`] and
//! [`tessera_array::BlockSink`]: the engine schedules one read or write per block, and a
//! format only moves bytes.

pub mod atomic;
pub mod file;
pub mod glob;
#[cfg(feature = "hdf5")]
pub mod hdf5;
pub mod identity;
#[cfg(any(feature = "zarr", feature = "hdf5", feature = "netcdf"))]
mod layout;
pub mod leftovers;
mod listing;
#[cfg(feature = "netcdf")]
pub mod netcdf;
pub mod npy;
#[cfg(feature = "object-store")]
pub mod object;
mod ranks;
#[cfg(feature = "zarr")]
pub mod zarr;

// The protocol's error module under the name the moved modules use.
use tessera_core::error;
