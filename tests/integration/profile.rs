//! Profiles: the Chrome trace follows the trace-event format, and the HTML report renders
//! in a real headless browser (Chromium, when installed: `.ci/run` installs it) with its
//! task stream and memory plot drawn; the screenshot is kept as a test artifact.

use std::path::{Path, PathBuf};
use std::process::Command;

use tessera::{Array, DType};

/// A profile of a small reduction (at least a hundred tasks on every worker count).
fn profiled() -> (tessera::observe::Profile, usize) {
    let x = Array::ones(&[600, 600], DType::F64, 50, None).unwrap();
    let y = (&x * 2.0).unwrap().sum(Some(&[0]), false).unwrap();
    let (out, profile) = y.compute_with_profile().unwrap();
    assert_eq!(out.to_f64_vec(), vec![1200.0; 600]);
    (profile, y.num_tasks().unwrap())
}

/// Where tests keep files a person may want to look at afterwards.
fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_chrome_trace_is_valid_trace_event_json() {
    let (profile, tasks) = profiled();
    assert_eq!(profile.spans.len(), tasks);
    let path = artifacts().join("profile.trace.json");
    profile.write_chrome_trace(&path).unwrap();
    let trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = trace["traceEvents"]
        .as_array()
        .expect("a traceEvents array");
    let mut complete = 0;
    for e in events {
        let ph = e["ph"].as_str().expect("every event has a phase");
        assert!(e["name"].is_string(), "{e}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "{e}");
        match ph {
            "X" => {
                complete += 1;
                assert!(e["ts"].is_u64() && e["dur"].is_u64(), "{e}");
                assert!(e["cat"].is_string(), "{e}");
            }
            "C" => assert!(e["ts"].is_u64() && e["args"]["bytes"].is_u64(), "{e}"),
            "M" => assert!(e["args"]["name"].is_string(), "{e}"),
            other => panic!("unexpected phase {other} in {e}"),
        }
    }
    assert_eq!(complete, tasks);
    // Spans lie inside the recording, and the kinds are the scheduler's words.
    for s in &profile.spans {
        assert!(
            s.start_us <= s.end_us && s.end_us <= profile.wall_us,
            "{s:?}"
        );
        assert!(
            ["generate", "program", "reduce"].contains(&s.kind.as_str()),
            "{s:?}"
        );
    }
    assert!(profile.peak_bytes() > 0);
    assert!(profile.explain.contains("tasks"), "{}", profile.explain);
}

fn chromium() -> Option<String> {
    if let Ok(p) = std::env::var("TESSERA_CHROMIUM") {
        return Some(p);
    }
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(str::to_string)
}

#[test]
fn the_html_report_renders_in_a_headless_browser() {
    let (profile, tasks) = profiled();
    let dir = artifacts();
    let html = dir.join("profile.html");
    profile.write_html(&html).unwrap();
    let Some(browser) = chromium() else {
        tessera_conformance::skip::skip(
            "profile::the_html_report_renders_in_a_headless_browser",
            "no Chromium on PATH (apt-get install chromium, or set TESSERA_CHROMIUM); .ci/run installs it",
        );
        return;
    };
    let url = format!("file://{}", html.display());
    let headless = |extra: &[&str]| {
        let mut c = Command::new(&browser);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(extra)
        .arg(&url);
        let out = c.output().expect("run the browser");
        assert!(
            out.status.success(),
            "{browser} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    // The DOM the browser built: one bar per task in the timeline, the memory line.
    let dom = String::from_utf8(headless(&["--dump-dom"]).stdout).unwrap();
    assert_eq!(dom.matches("<rect class=\"task\"").count(), tasks, "{dom}");
    assert!(dom.contains("id=\"timeline\"") && dom.contains("id=\"memory-line\""));
    assert!(dom.contains("id=\"top-tasks\"") && dom.contains("id=\"explain\""));
    // And a picture of it.
    let png = dir.join("profile.png");
    let _ = std::fs::remove_file(&png);
    headless(&[
        &format!("--screenshot={}", png.display()),
        "--window-size=1200,900",
    ]);
    let bytes = std::fs::read(&png).expect("the browser wrote the screenshot");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 5_000,
        "{} bytes",
        bytes.len()
    );
    println!("screenshot: {}", png.display());
}

#[test]
fn a_dataframe_profile_has_bytes_in_and_out_per_stage() {
    use std::sync::Arc;
    use tessera::frame::arrow_array::{ArrayRef, Float64Array, Int64Array};
    use tessera::frame::{AggFunc, DataFrame};
    let k: ArrayRef = Arc::new(Int64Array::from_iter_values((0..40_000).map(|i| i % 7)));
    let v: ArrayRef = Arc::new(Float64Array::from_iter_values((0..40_000).map(f64::from)));
    let df = DataFrame::from_columns(vec![("k", k), ("v", v)], 8).unwrap();
    let (out, profile) = df
        .groupby(&["k"])
        .unwrap()
        .agg(&[("v", AggFunc::Sum)])
        .unwrap()
        .compute_with_profile()
        .unwrap();
    assert_eq!(out.num_rows(), 7);
    let partial: Vec<_> = profile
        .spans
        .iter()
        .filter(|s| s.stage == "aggregate: partial")
        .collect();
    assert_eq!(
        partial.len(),
        8,
        "one task per partition: {:?}",
        profile.spans
    );
    // Each partial task reads its 5,000 rows of two 8-byte columns.
    for s in &partial {
        assert!(s.bytes_in >= 80_000, "{s:?}");
        assert!(s.bytes_out > 0 && s.bytes_out < s.bytes_in, "{s:?}");
    }
}
