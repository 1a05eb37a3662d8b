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

/// Where the wrong reference's answers differ from the CPU backend's (the right
/// reference), each such case must fail when the wrong one is the reference: as `suite`
/// (the reference disagrees with the oracle) where the case states an expectation, as a
/// plain failure of the backend where it does not; every other case passes.
#[test]
fn a_wrong_frame_reference_is_caught_by_the_oracle() {
    use std::collections::BTreeMap;
    use tessera_conformance::check_frame_backend_against;
    use tessera_conformance::frame::oracle_coverage;
    use tessera_conformance::frame::selftest::wrong_reference;

    let cpu = cpu_frames();
    let wrong = wrong_reference().unwrap();
    let options = Options::default();
    let differ = check_frame_backend_against(&wrong, &cpu, &options);
    assert!(differ.setup_error.is_none(), "{:?}", differ.setup_error);
    let changed: Vec<&str> = differ
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Pass)
        .map(|c| c.id.as_str())
        .collect();
    let stated: BTreeMap<String, bool> = oracle_coverage(&frame_cases(None), options.seed)
        .unwrap()
        .into_iter()
        .collect();
    let report = check_frame_backend_against(&cpu, &wrong, &options);
    assert!(report.setup_error.is_none(), "{:?}", report.setup_error);
    let mut wrong_outcome = Vec::new();
    for c in &report.cases {
        let want = if !changed.contains(&c.id.as_str()) {
            Outcome::Pass
        } else if stated[&c.id] {
            Outcome::Suite
        } else {
            Outcome::Fail
        };
        if c.outcome != want {
            wrong_outcome.push(format!(
                "{}: {:?}, want {want:?}: {}",
                c.id, c.outcome, c.message
            ));
        }
    }
    assert!(wrong_outcome.is_empty(), "{}", wrong_outcome.join("\n"));
    // Each plant changes answers in its family, and the oracle sees it there.
    for family in [
        "frame.project/int64",
        "frame.aggregate.max/",
        "frame.join.inner/",
    ] {
        let seen = report
            .cases
            .iter()
            .filter(|c| c.id.starts_with(family) && c.outcome == Outcome::Suite)
            .count();
        assert!(seen > 0, "no case of {family} caught the planted fault");
    }
}

/// Every frame case states what the oracle expects: a value, or for the t-digest
/// estimate the ranks it must lie between.
#[test]
fn every_frame_case_states_an_oracle_expectation() {
    use tessera_conformance::frame::oracle_coverage;
    let cases = frame_cases(None);
    let coverage = oracle_coverage(&cases, Options::default().seed).unwrap();
    assert!(coverage
        .iter()
        .any(|(id, stated)| id.starts_with("frame.aggregate.approx_quantile") && *stated));
    let missing: Vec<&String> = coverage
        .iter()
        .filter(|(_, stated)| !stated)
        .map(|(id, _)| id)
        .collect();
    assert!(
        missing.is_empty(),
        "frame cases without an oracle: {missing:?}"
    );
}
