//! The dataframe suite: the CPU reference passes every case; the broken frame backend
//! fails exactly the cases its planted faults change, and nothing else.

use tessera_conformance::frame::selftest::{broken_frame_backend, expected_failures};
use tessera_conformance::frame::{frame_cases, FRAME_REFERENCE};
use tessera_conformance::{check_frame_backend, Options, Outcome};

#[test]
fn the_cpu_frame_backend_passes_every_frame_case() {
    let cpu = tessera_core::registry::dataframe_backend(FRAME_REFERENCE).unwrap();
    let report = check_frame_backend(&cpu, &Options::default());
    assert!(report.is_ok(), "{}", report.failure_text());
    assert_eq!(report.cases.len(), frame_cases(None).len());
    assert_eq!(
        report.count(&Outcome::Pass),
        report.cases.len(),
        "{}",
        report.summary()
    );
}

#[test]
fn the_broken_frame_backend_fails_exactly_where_planted() {
    let broken = broken_frame_backend().unwrap();
    let report = check_frame_backend(&broken, &Options::default());
    assert!(report.setup_error.is_none(), "{:?}", report.setup_error);
    let mut failed: Vec<String> = report
        .cases
        .iter()
        .filter(|c| !matches!(c.outcome, Outcome::Pass))
        .map(|c| c.id.clone())
        .collect();
    let mut want = expected_failures(&frame_cases(None));
    failed.sort();
    want.sort();
    let missed: Vec<&String> = want.iter().filter(|w| !failed.contains(w)).collect();
    let extra: Vec<&String> = failed.iter().filter(|f| !want.contains(f)).collect();
    assert!(
        missed.is_empty() && extra.is_empty(),
        "planted faults missed: {missed:?}\nunexpected failures: {extra:?}\n{}",
        report.failure_text()
    );
    // Each plant shows as what it is.
    let case = |id: &str| report.cases.iter().find(|c| c.id == id).unwrap();
    let lie = case("frame.aggregate.nunique/int64/0");
    assert_eq!(lie.outcome, Outcome::Fail);
    assert!(lie.message.contains("declared missing"), "{}", lie.message);
    let lost = case("frame.aggregate.count/int64/2");
    assert_eq!(lost.outcome, Outcome::Fail);
    assert!(lost.message.contains("rows, want"), "{}", lost.message);
    assert_eq!(case("frame.join.inner/int64/2").outcome, Outcome::Pass);
    assert_eq!(case("frame.join.left/int64/2").outcome, Outcome::Fail);
}

fn cpu_frames() -> tessera_core::frame::FrameBackendRef {
    tessera_core::registry::dataframe_backend(FRAME_REFERENCE).unwrap()
}

// The macro a third-party frame backend uses: one #[test] per op and column type.
tessera_conformance::frame_backend_tests!(cpu_frames());
