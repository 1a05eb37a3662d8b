//! A third-party dataframe backend registered statically and proved with the dataframe
//! conformance suite: `arrow-frames` from `plugins/example-frames` (the same crate also
//! builds it as a plugin library).
//!
//! ```text
//! cargo run --example custom_frame_backend    # registers `arrow-frames`, prints the matrix
//! cargo test --example custom_frame_backend   # one #[test] per op and column type (the macro)
//! ```

use std::sync::Arc;

use tessera::frame::FrameBackendRef;
use tessera_plugin_example_frames::backend;

fn arrow_frames() -> FrameBackendRef {
    Arc::new(backend())
}

// One #[test] per op and column type of the dataframe suite, run by `cargo test --example
// custom_frame_backend` (and by `cargo test --workspace`: this example has `test = true`).
tessera_conformance::frame_backend_tests!(arrow_frames());

#[cfg_attr(test, allow(dead_code))]
fn main() -> std::process::ExitCode {
    // Registered at run time: application code now selects it like any other backend
    // (`dataframe.backend = "arrow-frames"`, or `to_backend`).
    tessera::registry::register_dataframe_backend(arrow_frames()).expect("the name is free");
    let report = tessera_conformance::check_frame_backend(&arrow_frames(), &Default::default());
    print!("{}", report.matrix());
    println!("{}", report.summary());
    if report.is_ok() {
        std::process::ExitCode::SUCCESS
    } else {
        println!("{}", report.failure_text());
        std::process::ExitCode::FAILURE
    }
}
