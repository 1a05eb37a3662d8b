//! # tessera-cuda
//!
//! The CUDA backend: it builds and registers on every machine, with or without CUDA.
//! `cudarc` is compiled with `dynamic-loading`, so neither the toolkit nor the driver is
//! needed to build; at run time [`probe()`] looks for the driver library *before* any other
//! cudarc call (the others panic when it is missing), then asks the driver for its version
//! and its devices, and never panics.
//!
//! What is here:
//! - [`mod@probe`]: driver, driver version and device count, or the reason there are none;
//! - [`codegen`]: one CUDA C kernel per fused program output — elementwise ops, casts,
//!   strided and transposed reads, counter-based random numbers (Philox and the ziggurat,
//!   transcribed from tessera-core's one definition) and two-pass reductions — written so
//!   that the same text compiles with NVRTC and, with a shim header, as host C++;
//! - [`nvrtc`]: NVRTC found at run time, kernels compiled to PTX and cached by hash.
//!
//! - [`host`]: devices made of host memory that run the same kernel texts as C++, so the
//!   backends run without a GPU;
//!
//! - [`device`]: the backend itself — chunks in device memory from a pooled allocator,
//!   a stream per worker thread, every program launched as its generated kernels, chunks
//!   spread over all visible GPUs.
//!
//! The dataframe backend over the same devices and kernel generator is its own crate,
//! `tessera-cuda-frame` (Arrow-layout device columns, the frame kernels, host fallbacks
//! through the CPU frame backend), so that the array backend builds without Arrow's
//! kernels.
//!
//! The backend registers as `cuda`. Where there is no driver, no device, or no NVRTC that
//! the driver can load the output of, it is **unavailable** with that reason, so
//! `TESSERA_ARRAY_BACKEND=cuda` fails with it instead of a crash. The kernel texts are
//! proven on every machine (NVRTC compiles them; a host shim runs them bit for bit against
//! the CPU backend); the device layer needs a GPU machine to be proven against the
//! conformance suite.

pub mod codegen;
pub mod device;
pub mod host;
pub mod host_bytes;
pub mod nvrtc;
pub mod probe;

pub use probe::{probe, Devices};

use tessera_core::backend::Availability;

/// The backend's availability here: the probe's reason, or NVRTC's, or that the driver is
/// older than NVRTC's PTX.
pub fn availability() -> Availability {
    match ready() {
        Ok(_) => Availability::Available,
        Err(reason) => Availability::Unavailable(reason),
    }
}

/// The devices, once the driver, a device and a usable NVRTC are all there (what the
/// `cuda` array backend and `tessera-cuda-frame`'s dataframe backend open).
///
/// # Errors
/// Why not, in words: no driver, no device, no NVRTC, or a driver older than NVRTC's PTX.
pub fn ready() -> Result<Devices, String> {
    let d = probe()?;
    let (major, minor) = nvrtc::load()?;
    if d.driver_version / 1000 < major {
        return Err(format!(
            "the CUDA driver supports CUDA {} but NVRTC is {major}.{minor}, whose PTX that \
             driver cannot load; update the driver, or point {} at a CUDA {} NVRTC",
            probe::version_text(d.driver_version),
            nvrtc::NVRTC_DIR_VAR,
            d.driver_version / 1000
        ));
    }
    Ok(d)
}

fn make() -> Result<tessera_core::BackendRef, String> {
    let d = ready()?;
    device::CudaBackend::open(d.count)
        .map(|b| std::sync::Arc::new(b) as tessera_core::BackendRef)
        .map_err(|e| e.to_string())
}

tessera_core::inventory::submit! {
    tessera_core::registry::ArrayBackendFactory::new("cuda", make)
}
