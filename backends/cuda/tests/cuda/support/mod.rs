//! Test support: the host shim that runs kernel texts without a GPU, and the backend that
//! records the conformance suite's programs.

pub mod host_shim;
pub mod record;
