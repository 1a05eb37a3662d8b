//! The sparse backend through the conformance macro: one `#[test]` per op and dtype, so
//! `cargo test --workspace` proves `sparse` against the CPU reference on every run.

use tessera_core::BackendRef;
// Named so the linker keeps its `inventory` registration.
use tessera_sparse as _;

fn sparse() -> BackendRef {
    tessera_core::registry::array_backend("sparse").expect("the sparse backend is linked")
}

tessera_conformance::array_backend_tests!(sparse());
