//! # tessera
//!
//! Chunked n-d arrays whose compute runs on pluggable backends. This facade re-exports
//! [`tessera_core`] and links the default backends (`cpu`, `sparse`, and `cuda`, which is
//! unavailable with its reason where there is no CUDA driver or device), so that
//! `TESSERA_ARRAY_BACKEND` / `array.backend` can pick any of them at run time.
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

// Name every default backend crate so the linker keeps its `inventory::submit!`.
pub use tessera_cpu;
#[cfg(feature = "cuda")]
pub use tessera_cuda;
pub use tessera_sparse;

/// Every registered backend (array backends today), with kind and availability,
/// including configured plugins (an error when one of them fails to load).
pub fn backends() -> Result<Vec<tessera_core::registry::BackendInfo>> {
    tessera_core::registry::backends()
}
