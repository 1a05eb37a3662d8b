//! The CUDA backend on a machine without a GPU: registered and unavailable with a reason a
//! user can act on, a probe that never panics (with no driver, and with an old driver
//! library and no device), and kernels proven without a device — every program the
//! conformance suite hands a backend compiles with NVRTC, and the same kernel text
//! compiled on the host gives the CPU backend's bits.
//!
//! Tests whose prerequisite is missing print `skipped: <test>: <reason>`.

mod support;

use std::sync::OnceLock;

use tessera_conformance::skip::skip;
use tessera_core::backend::Availability;
use tessera_core::Error;

use support::record::{Recorder, Run};

use tessera_cuda as _;

mod frame;
mod kernels;
mod programs;
mod random;
mod ranks;
mod tiers;

#[test]
fn selecting_cuda_gives_the_probe_reason() {
    let e = match tessera_core::registry::array_backend("cuda") {
        Err(e) => e,
        Ok(_) => panic!("this build has no device kernels; the backend must not be available"),
    };
    match &e {
        Error::Unavailable { name, reason } => {
            assert_eq!(name, "cuda");
            assert_eq!(
                Availability::Unavailable(reason.clone()),
                tessera_cuda::availability()
            );
        }
        other => panic!("expected Unavailable, got {other}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("no CUDA driver found")
            || text.contains("no CUDA device is visible")
            || text.contains("could not be initialised")
            || text.contains("no device kernels"),
        "{text}"
    );
}

/// `TESSERA_DATAFRAME_BACKEND=cuda` on a machine without a usable GPU: the typed error with
/// the probe's reason, as for arrays, never a panic.
#[test]
fn selecting_the_cuda_dataframe_backend_gives_the_probe_reason() {
    let e = match tessera_core::registry::dataframe_backend("cuda") {
        Err(e) => e,
        Ok(_) => panic!("without a GPU the cuda dataframe backend must not be available"),
    };
    match &e {
        Error::Unavailable { name, reason } => {
            assert_eq!(name, "cuda");
            let Availability::Unavailable(probe) = tessera_cuda::availability() else {
                panic!("the probe found a device, yet the backend is unavailable");
            };
            assert_eq!(*reason, tessera_cuda::frame::unavailable_reason(&probe));
            assert!(!reason.contains("TESSERA_ARRAY_BACKEND"), "{reason}");
        }
        other => panic!("expected Unavailable, got {other}"),
    }
    let _guard = tessera_core::config::set(&[("dataframe.backend", "cuda")]).expect("config");
    let e = tessera_core::registry::resolve_dataframe_backend(None)
        .err()
        .expect("the configured cuda dataframe backend must be refused here");
    assert!(e.to_string().contains("cuda"), "{e}");
}

#[test]
fn device_tests_skip_without_a_device() {
    match tessera_cuda::probe() {
        Err(reason) => skip(
            "device_tests_skip_without_a_device",
            &format!("no CUDA device: {reason}"),
        ),
        Ok(d) => {
            assert!(d.count > 0 && d.driver_version > 0);
            let e = tessera_core::registry::array_backend("cuda")
                .err()
                .map(|e| e.to_string());
            assert!(e.is_some_and(|t| t.contains("no device kernels")));
        }
    }
}

/// The env var naming a folder with an old driver's `libcuda.so.1` (`.ci/run` unpacks
/// Debian's `libcuda1` 535, a CUDA 12.2 driver, there without installing it).
const OLD_DRIVER_VAR: &str = "TESSERA_TEST_OLD_LIBCUDA_DIR";
/// Set in the child process that probes with the old driver on its library path.
const CHILD_VAR: &str = "TESSERA_TEST_PROBE_CHILD";

/// With an old driver library on the path and no device, the probe loads the library,
/// reads its version, and reports the missing device — no panic while resolving symbols
/// the old driver lacks (cudarc 0.17 panicked here).
#[test]
fn probe_with_an_old_driver_and_no_device_gives_the_reason() {
    let Some(dir) = std::env::var_os(OLD_DRIVER_VAR) else {
        skip(
            "probe_with_an_old_driver_and_no_device_gives_the_reason",
            &format!(
                "{OLD_DRIVER_VAR} is not set (`.ci/run` unpacks Debian's libcuda1 535 and sets it)"
            ),
        );
        return;
    };
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args([
            "probe_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LD_LIBRARY_PATH", &dir)
        .env(CHILD_VAR, "1")
        .output()
        .expect("run the probe child");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    let line = text
        .lines()
        .find_map(|l| l.split_once("probe: ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no probe line in:\n{text}"));
    assert!(
        line.contains("CUDA 12.") && line.contains("no CUDA device is visible")
            || line.contains("could not be initialised"),
        "{line}"
    );
}

/// The child of the test above: probes, prints the result, and checks that selecting the
/// backend gives the same reason.
#[test]
#[ignore = "run by probe_with_an_old_driver_and_no_device_gives_the_reason in a child process"]
fn probe_child() {
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    let r = tessera_cuda::probe();
    match &r {
        Ok(d) => println!("probe: found {} device(s)", d.count),
        Err(reason) => println!("probe: {reason}"),
    }
    if let Err(reason) = r {
        match tessera_core::registry::array_backend("cuda") {
            Err(e) => assert!(e.to_string().contains(&reason), "{e}"),
            Ok(_) => panic!("the probe failed ({reason}) but the backend is available"),
        }
    }
}

/// The programs of the conformance suite, recorded once per test binary: the suite runs
/// against the recording backend (which must pass it: the primitive-to-program mapping is
/// checked against the reference there), keeping a few runs of each program structure.
fn suite_runs() -> &'static [Run] {
    &suite_recording().0
}

/// One program of every structure the suite hands a backend, large ones included.
fn suite_structures() -> &'static [tessera_core::program::Program] {
    &suite_recording().1
}

fn suite_recording() -> &'static (Vec<Run>, Vec<tessera_core::program::Program>) {
    static RUNS: OnceLock<(Vec<Run>, Vec<tessera_core::program::Program>)> = OnceLock::new();
    RUNS.get_or_init(|| {
        let rec = std::sync::Arc::new(Recorder::new("cuda-programs", 3));
        let backend: tessera_core::BackendRef = rec.clone();
        let report = tessera_conformance::check_array_backend(
            &backend,
            &tessera_conformance::Options::default(),
        );
        assert!(report.is_ok(), "{}", report.failure_text());
        assert!(report.cases.len() > 3000, "{} cases", report.cases.len());
        (rec.runs(), rec.structures())
    })
}
