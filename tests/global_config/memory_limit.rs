//! The memory budget. `memory-limit` is a process-wide setting
//! and would starve the other tests if it were set while they run, hence this binary.

use tessera::{Array, DType};

#[test]
fn memory_limit_refuses_over_budget_plans() {
    let _serial = crate::serial();
    let x = Array::ones(&[2000, 2000], DType::F64, 1000, Some("cpu")).unwrap();
    let _g = tessera::config::set(&[("memory-limit", "1MB")]).unwrap();
    let err = x.compute().unwrap_err();
    assert!(matches!(err, tessera::Error::MemoryLimit { .. }), "{err}");
    assert!(
        err.to_string().contains("memory-limit is 1000000 bytes"),
        "{err}"
    );
}

#[test]
fn a_chunk_grid_over_the_memory_budget_is_refused_at_creation() {
    let _serial = crate::serial();
    let _g = tessera::config::set(&[("memory-limit", "1MB")]).unwrap();
    // 100,000 tasks of about 512 bytes each is 51 MB of plan before any data.
    let err = Array::ones(&[100_000], DType::F64, 1, Some("cpu")).unwrap_err();
    assert!(matches!(err, tessera::Error::MemoryLimit { .. }), "{err}");
    assert!(err.to_string().contains("use larger chunks"), "{err}");
    assert!(Array::ones(&[100_000], DType::F64, 10_000, Some("cpu")).is_ok());
}
