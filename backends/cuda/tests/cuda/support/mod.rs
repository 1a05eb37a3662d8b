//! Test support: the host shim that runs kernel texts without a GPU, a device made of it,
//! and the backend that records the conformance suite's programs.

pub mod host_device;
pub mod host_shim;
pub mod record;
