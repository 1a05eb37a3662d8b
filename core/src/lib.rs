//! # tessera-core
//!
//! The protocols and algorithms of tessera, independent of any backend: dtypes and
//! promotion ([`dtype`]), shapes and chunk grids ([`chunks`]), host interchange
//! ([`host`]), counter-based random numbers ([`random`]), fused elementwise programs
//! ([`program`]), the object-safe backend trait ([`backend`]), the backend registry
//! ([`registry`]), partitioned dataframes ([`frame`]), chunked linear algebra ([`linalg`]), backends loaded from shared libraries ([`plugin`]), layered configuration ([`config`]), lazy chunked arrays ([`Array`]) and
//! the schedulers that run them ([`exec`]).
//!
//! Core depends on no backend. Backends (`tessera-cpu`, ...) depend on core and register
//! themselves; the `tessera` facade crate links the default ones.

pub mod array;
pub mod backend;
pub mod chunks;
pub mod config;
pub mod dtype;
pub mod error;
pub mod exec;
pub mod frame;
pub mod host;
pub mod linalg;
pub mod plugin;
pub mod program;
pub mod random;
pub mod registry;

pub use array::{Array, Index, RandomState};
pub use backend::{
    sketch_with_primitives, ArrayBackend, Availability, AxisSlice, BackendRef, Capabilities, Chunk,
    ChunkData,
};
pub use chunks::{AxisChunks, ChunkSpec, Chunks, Shape};
pub use dtype::{DType, Element, Scalar};
pub use error::{Error, Result};
pub use host::{HostArray, HostElement};
pub use inventory;
