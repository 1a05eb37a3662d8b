//! `arrow-frames`: a dataframe backend on Arrow kernels, shipped from one crate both ways:
//!
//! - statically: [`backend`] gives it as a `DataFrameBackend` an application registers
//!   (`examples/custom_frame_backend.rs`, which proves it with one macro call of the
//!   conformance suite);
//! - as a plugin library: this crate's `cdylib` exports it through
//!   [`tessera_plugin::export_frame_plugin!`]; an application loads it with
//!   `TESSERA_PLUGINS=path/to/libtessera_plugin_example_frames.so` and selects it with
//!   `dataframe.backend = "arrow-frames"`.
//!
//! Its kernels are those of the CPU reference (`tessera-cpu-frame`) under its own name, so
//! what it proves as a plugin is the boundary: partitions crossing as Arrow C Data,
//! programs and specs in the frame wire form, the host's checks of everything that comes
//! back — every conformance case passes through the library exactly as linked.

use tessera_cpu_frame::CpuFrameBackend;

/// The backend's registry name.
pub const NAME: &str = "arrow-frames";

/// The backend.
pub fn backend() -> CpuFrameBackend {
    CpuFrameBackend::named(NAME)
}

tessera_plugin::export_frame_plugin!(backend());
