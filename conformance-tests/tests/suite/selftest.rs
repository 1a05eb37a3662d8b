//! The suite must catch breakage: a backend with planted faults fails exactly where the
//! faults are, and the rerun line of a failure reproduces it through the runner binary.

use std::process::Command;

use tessera_conformance::{check_array_backend, selftest, Options, Outcome};

#[test]
fn the_broken_backend_fails_exactly_where_it_was_broken() {
    let report = check_array_backend(&selftest::broken(), &Options::default());
    assert!(report.setup_error.is_none(), "{:?}", report.setup_error);
    if let Err(e) = selftest::verify(&report) {
        panic!("planted faults were not reported as planted:\n{e}");
    }
    let failed: Vec<&str> = report.problems().map(|c| c.id.as_str()).collect();
    // The lying capability fails whatever the shape; the wrong kernel wherever the
    // result is not empty (variants 1 and 2 never draw empty shapes).
    for id in [
        "cos/float64/0",
        "cos/float64/1",
        "cos/float64/2",
        "subtract/float64/1",
        "subtract/float64/2",
    ] {
        assert!(
            failed.contains(&id),
            "{id} should fail; failures: {failed:?}"
        );
    }
    assert!(report.count(&Outcome::Unsupported) >= 6);
    assert!(!report.is_ok());
    let text = report.failure_text();
    assert!(text.contains("first mismatch at index"), "{text}");
    assert!(
        text.contains("declare cos on float64 unsupported"),
        "{text}"
    );
}

#[test]
fn a_failure_names_a_rerun_command_that_reproduces_it() {
    let options = Options {
        filter: Some("subtract".into()),
        ..Options::default()
    };
    let report = check_array_backend(&selftest::broken(), &options);
    let failure = report
        .problems()
        .find(|c| c.id == "subtract/float64/1")
        .expect("the corrupted kernel is caught");
    let line = &failure.rerun;
    let (prefix, args) = line.split_once(" -- ").expect("a runner command line");
    assert_eq!(prefix, "cargo run -p tessera-conformance");
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(
        args,
        [
            "--backend",
            "selftest-broken",
            "--filter",
            "subtract/float64/1",
            "--seed",
            "1"
        ]
    );
    // Run exactly those arguments through the runner binary.
    let out = Command::new(env!("CARGO_BIN_EXE_tessera-conformance"))
        .args(&args)
        .output()
        .expect("run the runner");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("1 cases: 0 pass, 1 fail"), "{stdout}");
    assert!(
        stdout.contains(&failure.message),
        "{stdout}\nexpected: {}",
        failure.message
    );
}
