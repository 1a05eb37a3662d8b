//! # tessera-cuda
//!
//! The CUDA backend: it builds and registers on every machine, with or without CUDA.
//! `cudarc` is compiled with `dynamic-loading`, so neither the toolkit nor the driver is
//! needed to build; at run time [`probe`] looks for the driver library *before* any other
//! cudarc call (the others panic when it is missing), then asks the driver for its version
//! and its devices, and never panics.
//!
//! What is here:
//! - [`probe`]: driver, driver version and device count, or the reason there are none;
//! - [`codegen`]: one CUDA C kernel per fused program output — elementwise ops, casts,
//!   strided and transposed reads, counter-based random numbers (Philox and the ziggurat,
//!   transcribed from tessera-core's one definition) and two-pass reductions — written so
//!   that the same text compiles with NVRTC and, with a shim header, as host C++;
//! - [`nvrtc`]: NVRTC found at run time, kernels compiled to PTX and cached by hash.
//!
//! The backend registers as `cuda` and is **unavailable** with the probe's reason — no
//! driver, no device — so `TESSERA_ARRAY_BACKEND=cuda` fails with that reason instead of a
//! crash. Device chunks, the launcher and cuBLAS matmul are not in this build yet (they need
//! a GPU machine to be proven against the conformance suite); on a machine with a GPU the
//! backend says exactly that, rather than pretending.

pub mod codegen;
pub mod nvrtc;
pub mod probe;

pub use probe::{probe, Devices};

use tessera_core::backend::Availability;

/// The backend's availability here: the probe's reason, or — with devices present — that
/// this build does not run kernels on devices yet.
pub fn availability() -> Availability {
    match probe() {
        Err(reason) => Availability::Unavailable(reason),
        Ok(d) => Availability::Unavailable(format!(
            "found {} CUDA device(s) (driver CUDA {}), but this build of tessera-cuda has no \
             device kernels yet (the kernel generator is built and checked; device chunks, \
             launches and cuBLAS matmul are still to come); use the cpu backend",
            d.count,
            probe::version_text(d.driver_version)
        )),
    }
}

fn make() -> Result<tessera_core::BackendRef, String> {
    match availability() {
        Availability::Unavailable(reason) => Err(reason),
        Availability::Available => Err("unreachable: no device kernels in this build".to_string()),
    }
}

tessera_core::inventory::submit! {
    tessera_core::registry::ArrayBackendFactory::new("cuda", make)
}
