//! # tessera
//!
//! Chunked n-d arrays and partitioned dataframes whose compute runs on pluggable backends.
//! This facade re-exports the layers — the protocol ([`tessera_core`]), the engines' shared
//! run time ([`pool`], [`cluster`], [`spill`], [`cancel`] from `tessera_runtime`), lazy arrays
//! ([`tessera_array`]), storage formats ([`io`]), dataframes ([`frame`], feature `frame`), the plugin loader
//! ([`plugin`], feature `plugins`) — and links the default backends (`cpu`, `sparse`, and
//! `cuda`, which is unavailable with its reason where there is no CUDA driver or device),
//! so that `TESSERA_ARRAY_BACKEND` / `array.backend` can pick any of them at run time.
//!
//! Features (all on by default): `frame`, `parquet`, `plugins`, `cuda`, `zarr`. Off by
//! default: `object-store` (cloud URLs), `hdf5` and `netcdf` (the system's libhdf5 and
//! libnetcdf) and `mpi` (`scheduler = "mpi"`, the `mpi` module); the
//! distributed executor itself is always built, and [`cluster::local`] runs it with ranks
//! as threads.
//!
//! ```
//! use tessera::{Array, DType, RandomState};
//! # fn main() -> tessera::Result<()> {
//! let x = RandomState::new(0).normal(10.0, 1.0, &[400, 400], 100, None)?;
//! let y = (&x + 1.0)?.slice(&[tessera::Index::step(2), tessera::Index::step(2)])?.sum(None, false)?;
//! let v = y.compute_f64()?;
//! assert!((v / (11.0 * 200.0 * 200.0) - 1.0).abs() < 1e-2);
//! # Ok(()) }
//! ```

pub use tessera_core::*;
pub use tessera_runtime::{allocator, cancel, cluster, pool, spill};

/// The Rust snippets of `README.md`, compiled and run as doctests (`cargo test --doc`);
/// the few that need a large input or optional system libraries are compiled only
/// (`no_run`). Hidden lines (`# ...`) write the small files a snippet reads.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeSnippets;

/// The Rust snippets of `WRITE_A_BACKEND.md`, compiled as doctests (the CPU backend stands
/// in for the reader's own).
#[cfg(doctest)]
#[doc = include_str!("../WRITE_A_BACKEND.md")]
pub struct WriteABackendSnippets;

pub use tessera_array::{array, exec, linalg, Array, Index, RandomState};
/// Lazy partitioned dataframes: the user API, and the dataframe backend protocol.
#[cfg(feature = "frame")]
pub use tessera_frame as frame;
/// Arrays in storage: `.npy` files and Zarr arrays (feature `zarr`) read and written block
/// by block, HDF5 datasets and NetCDF variables read (features `hdf5`, `netcdf`), atomic
/// file commits.
pub use tessera_io as io;
/// Watching computations run: progress bars and the progress callback.
pub use tessera_observe as observe;
/// Backends loaded from shared libraries at run time.
#[cfg(feature = "plugins")]
pub use tessera_plugin_host as plugin;

/// The MPI transport of `scheduler = "mpi"` (feature `mpi`): launch checks, and the
/// transport the scheduler opens on the first distributed plan.
#[cfg(feature = "mpi")]
pub use tessera_mpi as mpi;

// Name every default backend crate so the linker keeps its `inventory::submit!`.
pub use tessera_cpu;
#[cfg(feature = "frame")]
pub use tessera_cpu_frame;
#[cfg(feature = "cuda")]
pub use tessera_cuda;
#[cfg(feature = "cuda")]
pub use tessera_cuda_frame;
pub use tessera_sparse;

/// Every registered backend (array backends today), with kind and availability,
/// including configured plugins (an error when one of them fails to load).
pub fn backends() -> Result<Vec<tessera_core::registry::BackendInfo>> {
    tessera_core::registry::backends()
}
