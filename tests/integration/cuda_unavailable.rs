//! The no-GPU contract, end to end: the unchanged `backend_switch` example run with
//! `TESSERA_ARRAY_BACKEND=cuda` fails cleanly, naming the missing driver or device — with
//! no driver at all, and with an old driver library (Debian's `libcuda1` 535, a CUDA 12.2
//! driver, unpacked by `.ci/run` and named by `TESSERA_TEST_OLD_LIBCUDA_DIR`) and no device,
//! where cudarc 0.17 used to panic while resolving symbols the old driver lacks. On a
//! machine with a GPU these tests say they were skipped (the device tests live in
//! `backends/cuda/tests`).

use std::ffi::OsStr;
use std::process::Command;

use crate::plugins::example_binary;

/// Runs `backend_switch` on `cuda` with `env` added; returns (success, stdout + stderr).
fn backend_switch_on_cuda(env: &[(&str, &OsStr)]) -> (bool, String) {
    let mut cmd = Command::new(example_binary("backend_switch"));
    for (k, _) in std::env::vars() {
        if k.starts_with("TESSERA_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("TESSERA_ARRAY_BACKEND", "cuda").env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("tessera-no-config"),
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run backend_switch");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn skip_with_a_device(test: &str) -> bool {
    if tessera_cuda::probe().is_ok() {
        tessera_conformance::skip::skip(
            test,
            "a CUDA device is present; this test covers machines without one",
        );
        return true;
    }
    false
}

#[test]
fn backend_switch_on_cuda_names_what_is_missing() {
    if skip_with_a_device("backend_switch_on_cuda_names_what_is_missing") {
        return;
    }
    let (ok, text) = backend_switch_on_cuda(&[]);
    assert!(!ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(
        text.contains("backend 'cuda' is unavailable")
            && (text.contains("no CUDA driver found")
                || text.contains("no CUDA device is visible")),
        "{text}"
    );
}

#[test]
fn backend_switch_on_cuda_with_an_old_driver_and_no_device_names_the_device() {
    let test = "backend_switch_on_cuda_with_an_old_driver_and_no_device_names_the_device";
    if skip_with_a_device(test) {
        return;
    }
    let Some(dir) = std::env::var_os("TESSERA_TEST_OLD_LIBCUDA_DIR") else {
        tessera_conformance::skip::skip(
            test,
            "TESSERA_TEST_OLD_LIBCUDA_DIR is not set (.ci/run installs it: Debian's libcuda1 535, unpacked into its cache)",
        );
        return;
    };
    let (ok, text) = backend_switch_on_cuda(&[("LD_LIBRARY_PATH", dir.as_os_str())]);
    assert!(!ok, "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(
        text.contains("backend 'cuda' is unavailable")
            && text
                .contains("the CUDA driver (CUDA 12.2) is installed but no CUDA device is visible"),
        "{text}"
    );
}
