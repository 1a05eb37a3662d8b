//! # tessera-cpu
//!
//! The reference backend: chunks are C-contiguous `ndarray` arrays in host memory, and
//! fused programs run natively ([`exec`]) in one pass over tiles of the output, with no
//! per-element dynamic dispatch and no intermediate arrays. Every other backend is checked
//! against this one by the conformance suite, and this one is checked against
//! hand-computed values and identities in its own tests.
//!
//! Registered as `cpu` through `inventory`; name the crate (`use tessera_cpu as _;`) in
//! a binary that does not otherwise use it, or the linker drops the registration.

mod backend;
mod exec;
mod kernels;
mod linalg;

pub use backend::{CpuBackend, CpuChunk};

tessera_core::inventory::submit! {
    tessera_core::registry::ArrayBackendFactory::new("cpu", || Ok(std::sync::Arc::new(CpuBackend::new())))
}
