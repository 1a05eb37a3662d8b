//! Choosing the dataframe backend: `dataframe.backend` through a scoped override (the same
//! layer `TESSERA_DATAFRAME_BACKEND` and `tessera.toml` feed), an explicit name, and the
//! errors for unknown names. Its own test binary: overrides are process-wide.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array};
use tessera::frame::DataFrame;

use tessera_cpu_frame as _;

fn batch() -> arrow_array::RecordBatch {
    tessera::frame::batch_from_columns(vec![(
        "a",
        Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef,
    )])
    .unwrap()
}

#[test]
fn backend_from_config_and_errors() {
    let _serial = crate::serial();
    let df = DataFrame::from_record_batch(batch(), 1, None).unwrap();
    assert_eq!(df.backend(), "cpu", "the embedded default");
    {
        let _g = tessera::config::set(&[("dataframe.backend", "gpu-frames")]).unwrap();
        let e = DataFrame::from_record_batch(batch(), 1, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown dataframe backend 'gpu-frames'") && e.contains("registered: cpu"),
            "{e}"
        );
    }
    let e = DataFrame::from_record_batch(batch(), 1, Some("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown dataframe backend 'nope'"), "{e}");
    let e = df.to_backend("nope").unwrap_err().to_string();
    assert!(e.contains("registered: cpu"), "{e}");
    let listed = tessera::backends().unwrap();
    assert!(listed
        .iter()
        .any(|b| b.name == "cpu" && b.kind == tessera::registry::BackendKind::DataFrame));
}
