//! Finding the CUDA driver and its devices without ever panicking.
//!
//! cudarc is built with `dynamic-loading`: nothing of CUDA is linked, and each driver
//! symbol is resolved the first time it is called. Calling any driver function when no
//! `libcuda` can be loaded panics inside cudarc, so the probe first asks
//! [`cudarc::driver::sys::is_culib_present`] (which only tries to open the library), and
//! then calls only the three entry points every driver since CUDA 2 exports (`cuInit`,
//! `cuDriverGetVersion`, `cuDeviceGetCount`). An old driver (535 / CUDA 12.2 against this
//! build's CUDA 13 bindings) therefore loads and answers, where cudarc 0.17 panicked while
//! resolving symbols the old driver lacks. The calls run under `catch_unwind` as well, so
//! a driver library that misbehaves in some other way still becomes a reason, not a crash.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Devices {
    /// Visible CUDA devices.
    pub count: usize,
    /// The CUDA version the driver supports, as `major * 1000 + minor * 10` (12020 is
    /// CUDA 12.2): kernels compiled by a newer NVRTC cannot be loaded by an older driver.
    pub driver_version: i32,
}

/// `12020` as `12.2`.
pub fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// Whether the CUDA driver library can be loaded.
#[allow(unsafe_code)]
fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the driver library and reports
    // whether it succeeded; it calls no driver function and has no preconditions. It is the
    // one cudarc call that is safe to make when no driver is installed.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// The driver's CUDA version (`cuDriverGetVersion`, which needs no `cuInit`).
#[allow(unsafe_code)]
fn driver_version() -> Result<i32, String> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the library is present (checked by the caller); `cuDriverGetVersion` writes
    // one int through a valid pointer to a local and has no other preconditions.
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        Ok(v)
    } else {
        Err(format!("cuDriverGetVersion failed: {r:?}"))
    }
}

/// Looks for the CUDA driver and devices; `Err` says what is missing in words a user can
/// act on. Never panics.
///
/// # Errors
/// A sentence naming what is missing: the driver library, a device, or the driver's own
/// error from `cuInit`.
pub fn probe() -> Result<Devices, String> {
    if !driver_present() {
        return Err(
            "no CUDA driver found (libcuda.so could not be loaded); install the NVIDIA driver, \
             or choose another backend (e.g. TESSERA_ARRAY_BACKEND=cpu)"
                .to_string(),
        );
    }
    match catch_unwind(AssertUnwindSafe(probe_loaded)) {
        Ok(r) => r,
        Err(p) => Err(format!(
            "the CUDA driver library loaded but failed while it was probed: {}",
            tessera_core::error::panic_message(p.as_ref())
        )),
    }
}

/// The probe once the library is known to load.
fn probe_loaded() -> Result<Devices, String> {
    let version = driver_version()?;
    let v = version_text(version);
    if let Err(e) = cudarc::driver::result::init() {
        return Err(
            if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE {
                format!(
                    "the CUDA driver (CUDA {v}) is installed but no CUDA device is visible \
                     (check CUDA_VISIBLE_DEVICES and `nvidia-smi`)"
                )
            } else {
                format!("the CUDA driver (CUDA {v}) is installed but could not be initialised: {e}")
            },
        );
    }
    match cudarc::driver::result::device::get_count() {
        Ok(0) => Err(format!(
            "the CUDA driver (CUDA {v}) is installed but no CUDA device is visible (check \
             CUDA_VISIBLE_DEVICES and `nvidia-smi`)"
        )),
        Ok(n) => Ok(Devices {
            count: usize::try_from(n).unwrap_or(0),
            driver_version: version,
        }),
        Err(e) => Err(format!(
            "the CUDA driver (CUDA {v}) is installed but cannot count devices: {e}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_major_minor() {
        assert_eq!(version_text(12020), "12.2");
        assert_eq!(version_text(13000), "13.0");
        assert_eq!(version_text(11080), "11.8");
    }
}
