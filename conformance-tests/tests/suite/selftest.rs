//! The suite must catch breakage: a backend with planted faults fails exactly where the
//! faults are, and the rerun line of a failure reproduces it through the runner binary.

use std::process::Command;

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};

use tessera_conformance::selftest::{self, Fault};
use tessera_conformance::{check_array_backend, Options, Outcome};

/// The broken backend's record of fired faults is process-wide: its runs take turns.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn the_broken_backend_fails_exactly_where_it_was_broken() {
    let _turn = serial();
    let run = selftest::run(&Options::default()).expect("the suite starts");
    if let Err(e) = selftest::verify(&run) {
        panic!("planted faults were not reported as planted:\n{e}");
    }
    let failed = |f: Fault| -> BTreeSet<&str> {
        run.iter()
            .filter(|c| c.case.outcome == Outcome::Fail && c.fired.contains(&f))
            .map(|c| c.case.id.as_str())
            .collect()
    };
    // Each kind of path is caught where it should be: the kernel and the capability in
    // their protocol cases, the fused chain in whole programs, the dropped partial only
    // through the user API (protocol cases never send a combine step), the missing error
    // in reductions without identity over an empty axis.
    for id in ["cos/float64/0", "cos/float64/1", "cos/float64/2"] {
        assert!(failed(Fault::LyingCapability).contains(id), "{id}");
    }
    for id in ["subtract/float64/1", "subtract/float64/2"] {
        assert!(failed(Fault::WrongKernel).contains(id), "{id}");
    }
    assert!(failed(Fault::FusedChain)
        .iter()
        .any(|id| id.starts_with("execute/float64/")));
    assert!(failed(Fault::FusedChain)
        .iter()
        .any(|id| id.starts_with("api.")));
    let dropped = failed(Fault::DroppedPartial);
    assert!(
        dropped.iter().all(|id| id.starts_with("api.")),
        "{dropped:?}"
    );
    assert!(
        dropped.iter().any(|id| id.starts_with("api.mean/")),
        "{dropped:?}"
    );
    let missing = failed(Fault::MissingError);
    let no_identity = ["min/", "max/", "argmin/", "argmax/"];
    assert!(
        missing
            .iter()
            .all(|id| no_identity.iter().any(|p| id.starts_with(p))),
        "{missing:?}"
    );
    assert!(!missing.is_empty());
    let unsupported = run
        .iter()
        .filter(|c| c.case.outcome == Outcome::Unsupported)
        .count();
    assert!(unsupported >= 6, "{unsupported}");
    let text: String = run
        .iter()
        .filter(|c| c.case.outcome == Outcome::Fail)
        .map(|c| c.case.describe())
        .collect();
    assert!(text.contains("first mismatch at index"), "{text}");
    assert!(
        text.contains("declare cos on float64 unsupported"),
        "{text}"
    );
    assert!(
        text.contains("the case expects an error of kind Invalid; the backend returned a result"),
        "{text}"
    );
}

#[test]
fn the_whole_report_of_the_broken_backend_is_not_ok() {
    let _turn = serial();
    let report = check_array_backend(&selftest::broken(), &Options::default());
    assert!(report.setup_error.is_none(), "{:?}", report.setup_error);
    assert!(!report.is_ok());
    assert_eq!(
        report.count(&Outcome::Suite),
        0,
        "{}",
        report.failure_text()
    );
    assert_eq!(
        report.count(&Outcome::Error),
        0,
        "{}",
        report.failure_text()
    );
}

#[test]
fn a_failure_names_a_rerun_command_that_reproduces_it() {
    let _turn = serial();
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
    assert!(
        stdout.contains("1 cases: 0 pass, 0 fallback, 1 fail"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&failure.message),
        "{stdout}\nexpected: {}",
        failure.message
    );
}

#[test]
fn a_wrong_reference_checked_against_itself_is_caught_by_the_oracle() {
    // `--backend cpu` compares the reference with itself; a wrong kernel there agrees
    // with itself and only the oracle can see it.
    let wrong = selftest::wrong_reference();
    let report =
        tessera_conformance::check_array_backend_against(&wrong, &wrong, &Options::default());
    assert!(report.setup_error.is_none(), "{:?}", report.setup_error);
    let suite: BTreeSet<&str> = report
        .cases
        .iter()
        .filter(|c| c.outcome == Outcome::Suite)
        .map(|c| c.id.as_str())
        .collect();
    assert!(
        suite.iter().all(|id| id.starts_with("floor_divide/int")
            || id.starts_with("api.max/")
            || id.starts_with("api.nanmax/")),
        "{}",
        report.failure_text()
    );
    // The API path: `max` through a fused program, on every dtype it runs on (and so
    // `nanmax`, which reduces with it after filling the NaNs).
    let api_max = suite.iter().filter(|id| id.starts_with("api.max/")).count();
    assert!(
        api_max >= 11,
        "api.max caught in only {api_max} cases: {suite:?}"
    );
    for d in ["int8", "int16", "int32", "int64"] {
        assert!(
            suite
                .iter()
                .any(|id| id.starts_with(&format!("floor_divide/{d}/"))),
            "floor_divide on {d} was not caught: {suite:?}"
        );
    }
    // `argmax` (and `nanargmax`, which is `argmax` after filling the NaNs) of several
    // chunks combines the chunks' maxima in a fused program, so the wrong `max` fires
    // only on the chunked side there (the one-chunk reference is right): the backend
    // fails those cases, as it should.
    let other: Vec<String> = report
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Pass && c.outcome != Outcome::Suite)
        .filter(|c| {
            !(c.outcome == Outcome::Fail
                && (c.id.starts_with("api.argmax/") || c.id.starts_with("api.nanargmax/")))
        })
        .map(|c| format!("{} {:?}: {}", c.id, c.outcome, c.message))
        .collect();
    assert!(other.is_empty(), "{other:#?}");
    let text = report.failure_text();
    assert!(
        text.contains("the reference disagrees with the oracle"),
        "{text}"
    );
}
