//! Issue 8's no-GPU contract, end to end: the unchanged `backend_switch` example run with
//! `TESSERA_ARRAY_BACKEND=cuda` fails cleanly, naming the missing driver or device. On a
//! machine with a GPU this test says it was skipped (the device tests live in
//! `backends/cuda/tests`).

use std::process::Command;

#[test]
fn backend_switch_on_cuda_names_what_is_missing() {
    if tessera_cuda::probe().is_ok() {
        tessera_conformance::skip::skip(
            "backend_switch_on_cuda_names_what_is_missing",
            "a CUDA device is present; this test covers machines without one",
        );
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let examples = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>")
        .join("examples");
    let path = examples.join(format!("backend_switch{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "-p",
                "tessera",
                "--example",
                "backend_switch",
            ])
            .status()
            .expect("run cargo");
        assert!(status.success());
    }
    let mut cmd = Command::new(&path);
    for (k, _) in std::env::vars() {
        if k.starts_with("TESSERA_") {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .env("TESSERA_ARRAY_BACKEND", "cuda")
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("tessera-no-config"),
        )
        .output()
        .expect("run backend_switch");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("backend 'cuda' is unavailable")
            && (text.contains("no CUDA driver found")
                || text.contains("no CUDA device is visible")),
        "{text}"
    );
}
