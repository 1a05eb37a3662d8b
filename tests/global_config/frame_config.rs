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

/// `dataframe.fallback = "error"` refuses a plan before it runs, naming every step the
/// backend would run on the host; under `allow` the same plan runs, with the CPU answer.
/// The backend: `cuda` over host devices (the kernels compiled as C++).
#[test]
fn the_fallback_setting_refuses_host_steps_before_the_plan_runs() {
    let _serial = crate::serial();
    use tessera::frame::{col, lit, AggFunc};
    if let Err(reason) = tessera::tessera_cuda::host::shim::compiler() {
        tessera_conformance::skip::skip(
            "the_fallback_setting_refuses_host_steps_before_the_plan_runs",
            &reason.to_string(),
        );
        return;
    }
    let name = "cuda-host-fallback-setting";
    let backend = tessera::tessera_cuda_frame::host_devices::frame_backend(name).unwrap();
    let _ = tessera::registry::register_dataframe_backend(Arc::new(backend));
    let keys = Arc::new(arrow_array::StringArray::from(
        (0..100).map(|i| format!("k{}", i % 7)).collect::<Vec<_>>(),
    )) as ArrayRef;
    let vals = Arc::new(Int64Array::from((0..100).collect::<Vec<i64>>())) as ArrayRef;
    let data = tessera::frame::batch_from_columns(vec![("k", keys), ("v", vals)]).unwrap();
    // A median has no device kernel, nor has a sort by strings.
    let query = |backend: &str| {
        DataFrame::from_record_batch(data.clone(), 3, Some(backend))
            .unwrap()
            .groupby(&["k"])
            .unwrap()
            .agg(&[("v", AggFunc::Median)])
            .unwrap()
            .sort_values(&["k"], &[true])
            .unwrap()
    };
    {
        let _g = tessera::config::set(&[("dataframe.fallback", "error")]).unwrap();
        let e = query(name).compute().unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, tessera::Error::FrameUnsupported { .. }),
            "{text}"
        );
        assert!(
            text.contains("groupby [k]")
                && text.contains("median")
                && text.contains("sort")
                && text.contains("dataframe.fallback"),
            "{text}"
        );
        // A plan the device runs whole is not refused, and runs.
        let filtered = DataFrame::from_record_batch(data.clone(), 3, Some(name))
            .unwrap()
            .filter(col("v").gt(lit(5)))
            .unwrap();
        assert!(!filtered.explain().unwrap().contains("fallbacks:"));
        assert_eq!(filtered.compute().unwrap().num_rows(), 94);
    }
    let got = query(name).compute().unwrap().concat().unwrap();
    let want = query("cpu").compute().unwrap().concat().unwrap();
    assert_eq!(got, want);
}

/// The backend names Dask users set (`dask.config`'s `array.backend = "cupy"`,
/// `dataframe.backend = "cudf"`, the defaults `numpy` and `pandas`) select tessera's
/// backends of the same kind; a name of the other kind is still unknown.
#[test]
fn dasks_backend_names_select_the_same_backends() {
    let _serial = crate::serial();
    {
        let _g = tessera::config::set(&[("dataframe.backend", "pandas")]).unwrap();
        assert_eq!(
            DataFrame::from_record_batch(batch(), 1, None)
                .unwrap()
                .backend(),
            "cpu"
        );
    }
    {
        let _g = tessera::config::set(&[("array.backend", "numpy")]).unwrap();
        let a = tessera::Array::ones(&[4], tessera::DType::F64, 2, None).unwrap();
        assert_eq!(a.backend().name(), "cpu");
    }
    for (dask, kind) in [("cupy", "array"), ("cudf", "dataframe")] {
        let (ours, theirs) = if kind == "array" {
            (
                tessera::registry::array_backend("cuda").map(|b| b.name().to_string()),
                tessera::registry::array_backend(dask).map(|b| b.name().to_string()),
            )
        } else {
            (
                tessera::registry::dataframe_backend("cuda").map(|b| b.name().to_string()),
                tessera::registry::dataframe_backend(dask).map(|b| b.name().to_string()),
            )
        };
        // The same backend, or the same reason it is unavailable here.
        match (ours, theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
            (a, b) => panic!("{dask}: {a:?} vs {b:?}"),
        }
    }
    let e = DataFrame::from_record_batch(batch(), 1, Some("numpy"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown dataframe backend 'numpy'"), "{e}");
}
