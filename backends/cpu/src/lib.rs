//! # tessera-cpu
//!
//! The reference backend: chunks are C-contiguous `ndarray` arrays in host memory, and
//! fused programs run natively ([`fused`]) in one pass over tiles of the output, with no
//! per-element dynamic dispatch and no intermediate arrays. Every other backend is checked
//! against this one by the conformance suite, and this one is checked against
//! hand-computed values and identities in its own tests.
//!
//! Dataframes: [`frame`] runs partitioned frames on Arrow `RecordBatch`es.
//!
//! Registered as `cpu` (array and dataframe) through `inventory`; name the crate (`use tessera_cpu as _;`) in
//! a binary that does not otherwise use it, or the linker drops the registration.

mod array_backend;
pub mod frame;
mod fused;
mod linalg;
mod stream;

pub use array_backend::{CpuBackend, CpuChunk};
pub use frame::{CpuFrameBackend, CpuPartition};

tessera_core::inventory::submit! {
    tessera_core::registry::ArrayBackendFactory::new("cpu", || Ok(std::sync::Arc::new(CpuBackend::new())))
}

tessera_core::inventory::submit! {
    tessera_core::registry::DataFrameBackendFactory::new("cpu", || Ok(std::sync::Arc::new(CpuFrameBackend)))
}
