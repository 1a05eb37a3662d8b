//! End to end: the example plugin library (`plugins/example`, backend `loops`) is built,
//! loaded by the runner through `TESSERA_PLUGINS` and through `--plugin`, and its
//! conformance report must match its declared capabilities: every case passes or is
//! refused as declared unsupported, and nothing fails or errors.

use std::path::Path;
use std::process::Command;

use tessera_conformance::cdylib;
use tessera_core::program::{BinaryOp, UnaryOp};

fn runner() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera-conformance"));
    c.env_remove("TESSERA_PLUGINS")
        .env_remove("TESSERA_ARRAY_BACKEND");
    c
}

fn report(json: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(json).expect("the runner wrote its report");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn example_plugin_loaded_from_env_passes_what_it_declares() {
    let lib = cdylib::build("tessera-plugin-example").unwrap();
    let dir = std::env::temp_dir().join(format!("tessera-plugin-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("loops.json");
    let out = runner()
        .env("TESSERA_PLUGINS", &lib)
        .args(["--backend", "loops", "--quiet", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "runner failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&json);
    assert_eq!(r["backend"], "loops");
    let s = &r["summary"];
    assert_eq!(s["fail"], 0, "{stdout}");
    assert_eq!(s["error"], 0, "{stdout}");
    let pass = s["pass"].as_u64().unwrap();
    let unsupported = s["unsupported"].as_u64().unwrap();
    assert!(pass > 1000 && unsupported > 100, "{s}");
    // `loops` implements its kernels for bool/int64/float32/float64 only, and no plugin
    // implements the block QR/SVD kernels (the ABI has no entry for them): the protocol
    // cases it refuses are exactly elementwise ops on other dtypes and qr/svd (user-level
    // cases may reach those through promotion, so they are not restricted here).
    let kernels = ["bool", "int64", "float32", "float64"];
    let mut refused = 0;
    for c in r["cases"].as_array().unwrap() {
        if c["group"] == "protocol" && c["outcome"] == "unsupported" {
            let dtype = c["dtype"].as_str().unwrap();
            let op = c["op"].as_str().unwrap();
            // `execute` runs fused programs, which reach the same elementwise kernels.
            let elementwise = op == "where"
                || op == "execute"
                || UnaryOp::ALL.iter().any(|u| u.name() == op)
                || BinaryOp::ALL.iter().any(|b| b.name() == op);
            let block_linalg = op == "qr" || op == "svd";
            assert!(
                block_linalg || (!kernels.contains(&dtype) && elementwise),
                "{c}"
            );
            refused += 1;
        }
    }
    assert!(refused > 0);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn runner_accepts_plugin_flag_and_defaults_to_its_backend() {
    let lib = cdylib::build("tessera-plugin-example").unwrap();
    let out = runner()
        .arg("--plugin")
        .arg(&lib)
        .args(["--filter", "add,where,api.sum", "--quiet"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("loops"), "{stdout}");
    assert!(stdout.contains("0 fail"), "{stdout}");
}

#[test]
fn runner_reports_a_missing_plugin_as_a_usage_error() {
    let out = runner()
        .args(["--plugin", "/nonexistent/libnothing.so"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/nonexistent/libnothing.so: no such file"),
        "{stderr}"
    );
}

#[test]
fn example_frame_plugin_passes_the_dataframe_suite_through_the_library() {
    let lib = cdylib::build("tessera-plugin-example-frames").unwrap();
    let dir = std::env::temp_dir().join(format!("tessera-frame-plugin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("frames.json");
    // One plugin and no backend named: the plugin's dataframe backend is checked.
    let out = runner()
        .arg("--plugin")
        .arg(&lib)
        .args(["--quiet", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "runner failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&json);
    assert_eq!(r["backend"], "arrow-frames");
    // Window functions have no wire form yet, so a plugin's are declared unsupported. The
    // stored forms cross the wire with the other capabilities: this plugin (the CPU
    // backend under another name) declares both, and their cases pass through the library.
    let cases = tessera_conformance::frame::frame_cases(None);
    let undeclared = cases
        .iter()
        .filter(|c| matches!(c.family.need, tessera_conformance::frame::Need::Windows))
        .count();
    assert!(undeclared > 0);
    let stored = cases
        .iter()
        .filter(|c| {
            matches!(
                c.family.need,
                tessera_conformance::frame::Need::StoredForm(_)
            )
        })
        .count();
    assert!(stored > 0, "the suite has stored-form cases");
    assert_eq!(
        r["summary"]["pass"].as_u64().unwrap() as usize,
        cases.len() - undeclared,
        "{stdout}"
    );
    assert_eq!(
        r["summary"]["unsupported"].as_u64().unwrap() as usize,
        undeclared,
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_frame_plugin_loads_into_the_dataframe_registry_and_runs_a_query() {
    use arrow_array::{ArrayRef, Float64Array, Int64Array};
    use std::sync::Arc;
    use tessera_frame::{col, AggFunc, DataFrame};
    let lib = cdylib::build("tessera-plugin-example-frames").unwrap();
    let backend = tessera_plugin_host::load_frame_plugin(&lib).unwrap();
    assert_eq!(backend.name(), "arrow-frames");
    let err = tessera_plugin_host::load_plugin(&lib)
        .unwrap_err()
        .to_string();
    assert!(err.contains("dataframe backend plugin"), "{err}");
    let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 1, 2, 3]));
    let v: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, 4.0, 5.0]));
    let df = DataFrame::from_columns(vec![("k", k), ("v", v)], 2)
        .unwrap()
        .to_backend("arrow-frames")
        .unwrap();
    let out = df
        .filter(col("v").gt(1.5))
        .unwrap()
        .groupby(&["k"])
        .unwrap()
        .agg(&[("v", AggFunc::Sum)])
        .unwrap()
        .compute()
        .unwrap()
        .concat()
        .unwrap();
    assert_eq!(out.num_rows(), 3);
    let sums = out
        .column(1)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert_eq!(sums.values().iter().sum::<f64>(), 14.0);
}
