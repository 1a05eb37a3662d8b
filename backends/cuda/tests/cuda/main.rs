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

/// `cuda` selected by name: where the probe finds a usable device, the backend itself;
/// elsewhere the typed `Unavailable` error with the probe's reason, never a panic. (Run on
/// a lent GPU by `bench/gpu/run.sh`'s `probe` step, and everywhere else by CI.)
#[test]
fn selecting_cuda_gives_the_backend_or_the_probe_reason() {
    let selected = tessera_core::registry::array_backend("cuda");
    match tessera_cuda::availability() {
        Availability::Available => {
            let b = selected.unwrap_or_else(|e| panic!("a device is usable, yet: {e}"));
            assert_eq!(b.name(), "cuda");
        }
        Availability::Unavailable(probe) => {
            let e = match selected {
                Err(e) => e,
                Ok(_) => panic!("the probe says {probe:?}, yet the backend is available"),
            };
            match &e {
                Error::Unavailable { name, reason } => {
                    assert_eq!(name, "cuda");
                    assert_eq!(reason, &probe);
                }
                other => panic!("expected Unavailable, got {other}"),
            }
            let text = e.to_string();
            assert!(
                text.contains("no CUDA driver found")
                    || text.contains("no CUDA device is visible")
                    || text.contains("could not be initialised"),
                "{text}"
            );
        }
    }
}

/// `TESSERA_DATAFRAME_BACKEND=cuda`: with a usable device, the dataframe backend (by name
/// and through the configuration); without one, the typed error with the probe's reason
/// (naming the dataframe variable, not the array one), as for arrays, never a panic.
#[test]
fn selecting_the_cuda_dataframe_backend_gives_it_or_the_probe_reason() {
    let selected = tessera_core::registry::dataframe_backend("cuda");
    let _guard = tessera_core::config::set(&[("dataframe.backend", "cuda")]).expect("config");
    let configured = tessera_core::registry::resolve_dataframe_backend(None);
    match tessera_cuda::availability() {
        Availability::Available => {
            let b = selected.unwrap_or_else(|e| panic!("a device is usable, yet: {e}"));
            assert_eq!(b.name(), "cuda");
            let c = configured.unwrap_or_else(|e| panic!("configured, yet: {e}"));
            assert_eq!(c.name(), "cuda");
        }
        Availability::Unavailable(probe) => {
            match selected {
                Err(Error::Unavailable { name, reason }) => {
                    assert_eq!(name, "cuda");
                    assert_eq!(reason, tessera_cuda_frame::unavailable_reason(&probe));
                    assert!(!reason.contains("TESSERA_ARRAY_BACKEND"), "{reason}");
                }
                Err(other) => panic!("expected Unavailable, got {other}"),
                Ok(_) => panic!("the probe says {probe:?}, yet the backend is available"),
            }
            let e = configured
                .err()
                .expect("the configured cuda dataframe backend must be refused here");
            assert!(e.to_string().contains("cuda"), "{e}");
        }
    }
}

/// The probe and the backend agree: a device found means a selectable backend, and the
/// device tests of this binary skip, saying why, where there is none.
#[test]
fn the_probe_and_the_backend_agree() {
    match tessera_cuda::probe() {
        Err(reason) => {
            skip(
                "the_probe_and_the_backend_agree [with a device]",
                &format!("no CUDA device: {reason}"),
            );
            assert!(tessera_core::registry::array_backend("cuda").is_err());
        }
        Ok(d) => {
            assert!(d.count > 0 && d.driver_version > 0);
            // A device the driver lists may still be unusable (NVRTC missing); then the
            // reason says so.
            match tessera_core::registry::array_backend("cuda") {
                Ok(b) => assert_eq!(b.name(), "cuda"),
                Err(e) => assert!(
                    matches!(tessera_cuda::availability(), Availability::Unavailable(ref r) if e.to_string().contains(r.as_str())),
                    "{e}"
                ),
            }
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
                "{OLD_DRIVER_VAR} is not set (.ci/run installs it: Debian's libcuda1 535, unpacked into its cache)"
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
