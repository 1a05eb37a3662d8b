//! # tessera-core: the protocol
//!
//! What a backend author depends on, and nothing more: dtypes and promotion ([`dtype`]),
//! shapes and chunk grids ([`chunks`]), host interchange ([`host`]), counter-based random
//! numbers ([`random`]), fused elementwise programs ([`program`]), the object-safe array
//! backend trait ([`backend`]) and the dataframe backend trait with its expression IR
//! ([`frame`]), the backend registry ([`registry`]), layered configuration ([`config`], re-exported from
//! `tessera-config`),
//! and the one error type ([`error`]). What only the engines share at run time (worker pools, the seam
//! between ranks, spill files) is `tessera-runtime`'s; the conversions across the plugin
//! C ABI are `tessera-plugin-ffi`'s.
//!
//! The engines sit above this crate: `tessera-array` (lazy arrays, lowering, schedulers,
//! linear algebra), `tessera-frame` (lazy dataframes, CSV/Parquet), `tessera-plugin-host`
//! (the loader for backend plugins). This crate depends on no backend and on none of them:
//! no arrow compute kernels, no parquet, no libloading. Backends (`tessera-cpu`, ...) depend
//! on it and register themselves; the `tessera` facade links the default ones.

#![forbid(unsafe_code)]

pub mod backend;
pub mod chunks;
/// Layered configuration (`tessera-config`, beneath this crate; its errors convert into
/// [`Error`] with `?`).
pub use tessera_config as config;
pub mod dtype;
pub mod error;
pub mod fallback;
pub mod frame;
pub mod host;
pub mod program;
pub mod random;
pub mod registry;
pub use tessera_kernels::{simd, simd_kernel, target};

pub use backend::{
    sketch_with_primitives, ArrayBackend, Availability, AxisSlice, BackendRef, Capabilities, Chunk,
    ChunkData,
};
pub use chunks::{AxisChunks, ChunkSpec, Chunks, Shape};
pub use dtype::{DType, Element, Scalar};
pub use error::{Error, Result};
pub use host::{HostArray, HostElement};
pub use inventory;
pub use program::ArrayOp;
