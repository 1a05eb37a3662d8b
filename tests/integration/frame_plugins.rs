//! Dataframe backends loaded from plugin libraries: the deliberately faulty one
//! (`plugins/fixtures/faulty-frames`) breaks the protocol in each way the host checks,
//! and every breach is a typed error naming the plugin and the op while the host keeps
//! running; the example one (`plugins/example-frames`) is proved by the conformance suite
//! in `conformance-tests/tests/suite/plugin.rs`.

use std::sync::{Arc, OnceLock};

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use tessera::frame::{col, AggFunc, AggSpec, FrameBackendRef, FrameProgram, FrameStep, SortKey};
use tessera::plugin::load_frame_plugin;
use tessera::Error;
use tessera_conformance::cdylib;

fn faulty() -> &'static FrameBackendRef {
    static B: OnceLock<FrameBackendRef> = OnceLock::new();
    B.get_or_init(|| {
        let lib =
            cdylib::build("tessera-plugin-fixture-faulty-frames").unwrap_or_else(|e| panic!("{e}"));
        load_frame_plugin(lib).expect("the faulty frame plugin loads")
    })
}

fn batch() -> RecordBatch {
    RecordBatch::try_from_iter(vec![
        (
            "k",
            Arc::new(Int64Array::from(vec![3, 1, 2, 1])) as ArrayRef,
        ),
        (
            "v",
            Arc::new(Float64Array::from(vec![0.5, 1.5, 2.5, 3.5])) as ArrayRef,
        ),
    ])
    .unwrap()
}

fn plugin_error(e: Error, op: &str, says: &str) {
    match &e {
        Error::Plugin {
            backend,
            op: o,
            detail,
        } => {
            assert_eq!(backend, "faulty-frames", "{e}");
            assert_eq!(o, op, "{e}");
            assert!(detail.contains(says), "{e}");
        }
        other => panic!("expected a plugin error in {op}, got {other:?}"),
    }
}

#[test]
fn what_a_faulty_frame_plugin_returns_is_checked_and_refused() {
    let b = faulty();
    let p = b.import_batch(batch()).unwrap();
    // Round trip through the library works where the plugin keeps the protocol.
    assert_eq!(b.export_batch(&p).unwrap(), batch());
    // Too many rows from a slice.
    plugin_error(
        b.slice(&p, 1, 2).unwrap_err(),
        "slice",
        "returned 4 rows, the protocol requires 2",
    );
    // Columns other than the program's.
    let lie = FrameProgram {
        steps: vec![FrameStep::Project(vec![("lie".into(), col("v") * 2.0)])],
    };
    plugin_error(
        b.evaluate(&p, &lie).unwrap_err(),
        "evaluate",
        "the protocol requires",
    );
    // One output missing.
    plugin_error(
        b.hash_partition(&p, &["k".to_string()], 3).unwrap_err(),
        "hash_partition",
        "produced 2 partitions; the host expects 3",
    );
    // A panic inside the plugin is caught there and reported.
    let by = [SortKey {
        column: "k".into(),
        descending: false,
    }];
    plugin_error(
        b.sort(&p, &by).unwrap_err(),
        "sort",
        "deliberate panic in sort",
    );
    // A declared gap is refused by the host without calling the plugin.
    let specs = [AggSpec::new("v", AggFunc::NUnique, "n")];
    let e = b
        .aggregate_partial(&p, &["k".to_string()], &specs)
        .unwrap_err();
    assert!(matches!(e, Error::FrameUnsupported { .. }), "{e:?}");
    assert!(e.to_string().contains("aggregate nunique"), "{e}");
    // And the host is fine: the same partition still exports.
    assert_eq!(b.export_batch(&p).unwrap().num_rows(), 4);
}

#[test]
fn a_partition_of_another_backend_is_refused_by_name() {
    let cpu = tessera::registry::dataframe_backend("cpu").unwrap();
    let p = cpu.import_batch(batch()).unwrap();
    let e = faulty().export_batch(&p).unwrap_err();
    assert!(matches!(e, Error::ForeignPartition { .. }), "{e:?}");
    assert!(e.to_string().contains("'cpu'"), "{e}");
}

/// A program whose only backend lookup is a dataframe plugin named in `dataframe.backend`
/// finds it: the frame lookup loads the configured plugins first, as the array lookup
/// does. Run in a child process, so that the configuration is the environment's alone.
#[test]
fn a_frame_plugin_named_in_config_is_found_by_the_frame_lookup_alone() {
    let lib = cdylib::build("tessera-plugin-example-frames").unwrap_or_else(|e| panic!("{e}"));
    let no_config = std::env::temp_dir().join("tessera-no-config");
    let out = crate::common::run_child(
        "frame_plugins::frame_lookup_child",
        &[
            ("XDG_CONFIG_HOME", no_config.as_os_str()),
            ("TESSERA_PLUGINS", lib.as_os_str()),
            ("TESSERA_DATAFRAME_BACKEND", "arrow-frames".as_ref()),
        ],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("frame backend: arrow-frames, sum 8"),
        "{text}"
    );
}

/// The child of the test above (skipped unless it is run as that child).
#[test]
#[ignore = "run by a_frame_plugin_named_in_config_is_found_by_the_frame_lookup_alone"]
fn frame_lookup_child() {
    if !crate::common::is_child() {
        return;
    }
    let df = tessera::frame::DataFrame::from_record_batches(vec![batch()], None).unwrap();
    let total = df
        .agg(&[("v", AggFunc::Sum)])
        .unwrap()
        .compute()
        .unwrap()
        .concat()
        .unwrap();
    let sum = total
        .column(0)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap()
        .value(0);
    println!("frame backend: {}, sum {sum}", df.backend());
}
