//! Devices made of host memory that run the generated kernel texts on the CPU: the same
//! text NVRTC compiles, compiled as C++ with a shim header ([`shim`]) and launched with
//! every block's threads as real threads. The whole backend — arrays and dataframes,
//! placement over several devices, parameter packing, partial buffers, the host
//! fallbacks — then runs on machines without a GPU, proving the numerics of each kernel
//! (bit for bit against the CPU backend) and the backend's code around it; not launch
//! configuration, races between streams, or speed (it is far slower than the CPU
//! backend).
//!
//! It needs a C++20 compiler at run time (`c++`, or `CXX`). With the crate's
//! `host-devices` feature, two host devices register as the dataframe backend
//! `cuda-host`, so an application runs its plans on the CUDA dataframe backend's device
//! path unchanged (`TESSERA_DATAFRAME_BACKEND=cuda-host`), as the TPC-H check does.

mod device;
pub mod shim;

pub use device::HostDevice;

/// The name the `host-devices` feature registers the dataframe backend under.
pub const FRAME_NAME: &str = "cuda-host";

/// The CUDA dataframe backend over two host devices sharing one kernel library, named
/// `name`.
///
/// # Errors
/// The reason when there is no C++ compiler to build the kernels with.
pub fn frame_backend(
    name: &str,
) -> std::result::Result<crate::frame::CudaFrameBackend<HostDevice>, String> {
    shim::compiler()?;
    let kernels = std::sync::Arc::new(shim::build(&[])?);
    crate::frame::CudaFrameBackend::with_devices(
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
