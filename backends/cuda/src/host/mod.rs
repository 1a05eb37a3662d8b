//! Devices made of host memory that run the generated kernel texts on the CPU: the same
//! text NVRTC compiles, compiled as C++ with a shim header ([`shim`]) and launched with
//! every block's threads as real threads. The whole backend — arrays and dataframes,
//! placement over several devices, parameter packing, partial buffers, the host
//! fallbacks — then runs on machines without a GPU, proving the numerics of each kernel
//! (bit for bit against the CPU backend) and the backend's code around it; not launch
//! configuration, races between streams, or speed (it is far slower than the CPU
//! backend).
//!
//! It needs a C++20 compiler at run time (`c++`, or `CXX`). With `tessera-cuda-frame`'s
//! `host-devices` feature, two host devices register as the dataframe backend
//! `cuda-host`, so an application runs its plans on the CUDA dataframe backend's device
//! path unchanged (`TESSERA_DATAFRAME_BACKEND=cuda-host`), as the TPC-H check does.

mod device;
pub mod shim;

pub use device::HostDevice;
