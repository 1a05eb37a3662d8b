//! # tessera-cpu
//!
//! The reference backend: chunks are C-contiguous `ndarray` arrays in host memory, and
//! fused programs run natively (`fused`) in one pass over tiles of the output, with no
//! per-element dynamic dispatch and no intermediate arrays. Every other backend is checked
//! against this one by the conformance suite, and this one is checked against
//! hand-computed values and identities in its own tests.
//!
//! The dataframe half of the reference lives in `tessera-cpu-frame`, so that array code
//! does not compile arrow's kernels.
//!
//! Registered as the `cpu` array backend through `inventory`; name the crate
//! (`use tessera_cpu as _;`) in a binary that does not otherwise use it, or the linker
//! drops the registration.

mod array_backend;
mod fused;
mod linalg;
mod stream;

pub use array_backend::{CpuBackend, CpuChunk};

tessera_core::inventory::submit! {
    tessera_core::registry::ArrayBackendFactory::new("cpu", || Ok(std::sync::Arc::new(CpuBackend::new())))
}
