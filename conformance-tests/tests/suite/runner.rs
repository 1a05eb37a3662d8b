//! The runner binary: matrix, exit codes, JSON report, usage errors.

use std::process::Command;

fn runner(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera-conformance"))
        .args(args)
        .output()
        .expect("run the runner");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cpu_passes_and_writes_a_json_report() {
    let dir = std::env::temp_dir().join(format!("tessera-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("report.json");
    let (code, stdout, stderr) = runner(&[
        "--backend",
        "cpu",
        "--filter",
        "add,api.var,slice/int8",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.starts_with("op "), "{stdout}");
    assert!(stdout.contains("api.var"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(json["schema"], "tessera-conformance/1");
    assert_eq!(json["backend"], "cpu");
    let cases = json["cases"].as_array().unwrap();
    // `add` takes the ten non-bool dtypes, three variants each.
    let n_add = cases.iter().filter(|c| c["op"] == "add").count();
    assert_eq!(n_add, 10 * 3);
    assert_eq!(
        json["summary"]["cases"].as_u64().unwrap() as usize,
        cases.len()
    );
    assert_eq!(json["summary"]["fail"], 0);
    assert!(cases.iter().all(|c| c["outcome"] == "pass"));
    assert!(cases
        .iter()
        .any(|c| c["id"] == "slice/int8/2" && c["group"] == "protocol"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn usage_errors_exit_2_with_a_reason() {
    let (code, _, stderr) = runner(&["--backend", "nope"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("unknown array backend 'nope'"), "{stderr}");
    assert!(stderr.contains("cpu"), "{stderr}");
    let (code, _, stderr) = runner(&["--backend", "cpu", "--filter", "no_such_op"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no case matches"), "{stderr}");
    let (code, _, stderr) = runner(&["--seed", "x"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--seed needs"), "{stderr}");
}

#[test]
fn list_prints_case_ids() {
    let (code, stdout, _) = runner(&["--list", "--filter", "api.matmul/float32"]);
    assert_eq!(code, Some(0));
    let ids: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        ids,
        [
            "api.matmul/float32/0",
            "api.matmul/float32/1",
            "api.matmul/float32/2"
        ]
    );
}

#[test]
fn an_unavailable_backend_is_reported_with_its_reason() {
    if tessera_cuda::probe().is_ok() {
        tessera_conformance::skip::skip(
            "an_unavailable_backend_is_reported_with_its_reason",
            "a CUDA device is present; this test covers machines without one",
        );
        return;
    }
    let (code, stdout, stderr) = runner(&["--backend", "cuda", "--quiet"]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("backend 'cuda' is unavailable") && !stderr.contains("unknown"),
        "{stderr}"
    );
}

#[test]
fn the_frame_suite_runs_from_the_runner() {
    let dir = std::env::temp_dir().join(format!("tessera-conf-frames-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("frames.json");
    let (code, stdout, stderr) =
        runner(&["--frame-backend", "cpu", "--json", path.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("frame.join.outer"), "{stdout}");
    assert!(
        stdout.contains("timestamp[us]"),
        "the type columns: {stdout}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases = json["cases"].as_array().unwrap();
    assert_eq!(
        cases.len(),
        tessera_conformance::frame::frame_cases(None).len()
    );
    assert!(cases.iter().all(|c| c["outcome"] == "pass"));
    // The planted-fault backend fails, with a rerun line per failure.
    let (code, stdout, _) = runner(&[
        "--frame-backend",
        "selftest-broken-frame",
        "--filter",
        "frame.aggregate.count/utf8/2",
        "--quiet",
    ]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "--frame-backend selftest-broken-frame --filter frame.aggregate.count/utf8/2"
        ),
        "{stdout}"
    );
    let (code, _, stderr) = runner(&["--frame-backend", "no-such-frames"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("no-such-frames"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}
