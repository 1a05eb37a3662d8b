//! Builds a workspace plugin crate and finds its shared library, for tests that load
//! plugins (`cargo test` does not produce a `cdylib` for a package it only tests).
//!
//! It runs `cargo build --workspace --exclude tessera-conformance --lib
//! --message-format=json` with the cargo that runs the tests (`$CARGO`) and reads the
//! artifact path from cargo's own report, so it works for any target directory and
//! platform library suffix. Building the workspace's libraries rather than `-p PACKAGE`
//! resolves features exactly as `cargo test --workspace` does (only the conformance crate's
//! `test-support` feature differs, hence the exclusion), so after a `cargo test
//! --workspace` build everything is fresh; `-p PACKAGE` alone resolved a few shared crates
//! (libc, once_cell) with other features and recompiled the dependency tree under the
//! plugin, about 40 s of a cold CI run.

use std::path::PathBuf;
use std::process::Command;

/// Builds `package` (a `cdylib` in the current workspace) and returns its library path.
pub fn build(package: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(&cargo)
        .args([
            "build",
            "--quiet",
            "--message-format=json",
            "--workspace",
            "--exclude",
            "tessera-conformance",
            "--lib",
        ])
        .output()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "cargo build of the workspace's libraries (for {package}) failed:\n{}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let suffix = std::env::consts::DLL_SUFFIX;
    let crate_name = package.replace('-', "_");
    for line in stdout.lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" || msg["target"]["name"] != crate_name.as_str() {
            continue;
        }
        let files = msg["filenames"].as_array().into_iter().flatten();
        if let Some(path) = files
            .filter_map(|f| f.as_str())
            .find(|f| f.ends_with(suffix))
        {
            return Ok(PathBuf::from(path));
        }
    }
    Err(format!(
        "cargo built {package} but reported no {suffix} artifact (is it a cdylib?)"
    ))
}
