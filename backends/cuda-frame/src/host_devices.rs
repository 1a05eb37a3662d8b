//! The CUDA dataframe backend over devices made of host memory (`tessera_cuda::host`),
//! which run the generated kernel texts as C++: the device path of a plan checked on a
//! machine without a GPU. With the `host-devices` feature two of them register as the
//! dataframe backend `cuda-host`.

use tessera_cuda::host::HostDevice;

/// The name the `host-devices` feature registers the dataframe backend under.
pub const FRAME_NAME: &str = "cuda-host";

/// The CUDA dataframe backend over two host devices sharing one kernel library, named
/// `name`.
///
/// # Errors
/// The reason when there is no C++ compiler to build the kernels with.
pub fn frame_backend(
    name: &str,
) -> std::result::Result<crate::CudaFrameBackend<HostDevice>, String> {
    tessera_cuda::host::shim::compiler()?;
    let kernels = std::sync::Arc::new(tessera_cuda::host::shim::build(&[])?);
    crate::CudaFrameBackend::with_devices(
        name,
        vec![HostDevice::new(kernels.clone()), HostDevice::new(kernels)],
    )
    .map_err(|e| e.to_string())
}

#[cfg(feature = "host-devices")]
fn make_frame() -> std::result::Result<tessera_core::frame::FrameBackendRef, String> {
    frame_backend(FRAME_NAME)
        .map(|b| std::sync::Arc::new(b) as tessera_core::frame::FrameBackendRef)
}

#[cfg(feature = "host-devices")]
tessera_core::inventory::submit! {
    tessera_core::registry::DataFrameBackendFactory::new(FRAME_NAME, make_frame)
}
