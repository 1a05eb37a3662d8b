//! # tessera-cuda
//!
//! The CUDA backend's foundation: it builds and registers on every machine, with or without
//! CUDA. `cudarc` is compiled with `dynamic-loading`, so neither the toolkit nor the driver is
//! needed to build; at run time [`probe`] looks for the driver library *before* any other
//! cudarc call (the others panic when it is missing) and then counts devices.
//!
//! The backend registers as `cuda` and is **unavailable** with the probe's reason — no
//! driver, no device — so `TESSERA_ARRAY_BACKEND=cuda` fails with that reason instead of a
//! crash. Device chunks, the NVRTC program compiler and cuBLAS matmul are not in this build
//! yet (they need a GPU machine to be proven against the conformance suite); on a machine
//! with a GPU the backend says exactly that, rather than pretending.

use tessera_core::backend::Availability;

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devices {
    /// Visible CUDA devices.
    pub count: usize,
}

/// Whether the CUDA driver library can be loaded.
#[allow(unsafe_code)]
fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the driver library and reports
    // whether it succeeded; it calls no driver function and has no preconditions. It is the
    // one cudarc call that is safe to make when no driver is installed.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Looks for the CUDA driver and devices; `Err` says what is missing in words a user can
/// act on.
pub fn probe() -> Result<Devices, String> {
    if !driver_present() {
        return Err(
            "no CUDA driver found (libcuda.so could not be loaded); install the NVIDIA driver, \
             or choose another backend (e.g. TESSERA_ARRAY_BACKEND=cpu)"
                .to_string(),
        );
    }
    match cudarc::driver::CudaContext::device_count() {
        Ok(0) => Err(
            "the CUDA driver is installed but no CUDA device is visible (check \
             CUDA_VISIBLE_DEVICES and `nvidia-smi`)"
                .to_string(),
        ),
        Ok(n) => Ok(Devices {
            count: usize::try_from(n).unwrap_or(0),
        }),
        Err(e) => Err(format!(
            "the CUDA driver is installed but could not be initialised: {e}"
        )),
    }
}

/// The backend's availability here: the probe's reason, or — with devices present — that
/// this build has no device kernels yet.
pub fn availability() -> Availability {
    match probe() {
        Err(reason) => Availability::Unavailable(reason),
        Ok(d) => Availability::Unavailable(format!(
            "found {} CUDA device(s), but this build of tessera-cuda has no device kernels yet \
             (device chunks, NVRTC programs and cuBLAS matmul are still to come); use the cpu backend",
            d.count
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
