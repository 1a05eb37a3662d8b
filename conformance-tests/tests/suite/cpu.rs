//! The reference backend through the macro a third-party crate uses: one `#[test]` per
//! op and dtype. On `cpu` this checks that results do not depend on the chunking (the
//! reference side computes every array as one chunk).

use tessera_core::BackendRef;

fn cpu() -> BackendRef {
    tessera_core::registry::array_backend("cpu").expect("the cpu backend is linked")
}

tessera_conformance::array_backend_tests!(cpu());
