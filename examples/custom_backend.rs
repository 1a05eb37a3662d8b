//! A third-party backend registered statically: `loops` from `plugins/example` (the same
//! crate also builds it as a plugin library), registered at run time and proved with the
//! conformance suite.
//!
//! ```text
//! cargo run --example custom_backend           # registers `loops`, prints the matrix
//! cargo test --example custom_backend           # one #[test] per op and dtype (the macro)
//! ```

use std::sync::Arc;

use tessera::{BackendRef, DType};
use tessera_plugin_example::{LoopBackend, NAME};

fn loops() -> BackendRef {
    Arc::new(LoopBackend::new())
}

// One #[test] per op and dtype of the suite, run by `cargo test --example custom_backend`
// (and by `cargo test --workspace`, which builds this example with `test = true`).
tessera_conformance::array_backend_tests!(loops());

#[cfg_attr(test, allow(dead_code))]
fn main() -> std::process::ExitCode {
    // Registered at run time: application code now selects it like any other backend.
    tessera::registry::register_array_backend(loops()).expect("the name 'loops' is free");
    let x = tessera::Array::arange(0.0, 6.0, 1.0, DType::F64, 4, Some(NAME))
        .and_then(|x| &x * 2.0)
        .and_then(|x| x.sum(None, false))
        .and_then(|x| x.compute_f64());
    println!("sum(2 * arange(6)) on '{NAME}': {x:?}");

    let backend = tessera::registry::array_backend(NAME).expect("registered above");
    let report = tessera_conformance::check_array_backend(&backend, &Default::default());
    print!("{}", report.matrix());
    println!("{}", report.summary());
    if report.is_ok() {
        std::process::ExitCode::SUCCESS
    } else {
        println!("{}", report.failure_text());
        std::process::ExitCode::FAILURE
    }
}
