//! Test support: the backend that records the conformance suite's programs (the host
//! shim and the host devices are the library's `tessera_cuda::host`).

pub mod record;
