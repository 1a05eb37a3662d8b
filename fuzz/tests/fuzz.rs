//! A short fuzz pass of every target, as CI runs it: a few thousand mutated inputs each,
//! no panic allowed. The long runs (a million inputs a target) are the `tessera-fuzz`
//! binary's, off CI; BENCHMARKS.md keeps their figures.

use tessera_fuzz::run::run_with;
use tessera_fuzz::{run, Target};

/// Inputs per target here (`TESSERA_FUZZ_INPUTS` overrides).
fn inputs() -> u64 {
    std::env::var("TESSERA_FUZZ_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// One test for all, in turn: the runner's panic hook is the process's.
#[test]
fn every_target_survives_a_short_run_and_the_runner_sees_a_planted_panic() {
    // The runner can fail: a target that panics on inputs holding a byte 0xff, inside a
    // thread that catches it (as tessera's task boundary does), is counted.
    let corpus = vec![b"abc".to_vec()];
    let planted = run_with("planted", &corpus, &[], 16, 3, 400, &|input, _| {
        if input.contains(&0xff) {
            let _ = std::thread::spawn(|| panic!("planted")).join();
        }
        true
    })
    .unwrap();
    assert!(planted.panics > 0, "{}", planted.json());
    assert!(planted.crashes[0].0.contains(&0xff));
    assert!(
        planted.crashes[0].1.starts_with("planted"),
        "{:?}",
        planted.crashes[0].1
    );

    for t in Target::ALL {
        let report = run(t, 1, inputs()).unwrap();
        println!("{}", report.json());
        assert_eq!(report.inputs, inputs());
        assert_eq!(
            report.panics,
            0,
            "{}: {:?}",
            report.json(),
            report
                .crashes
                .iter()
                .map(|(i, m)| (String::from_utf8_lossy(i).into_owned(), m.clone()))
                .collect::<Vec<_>>()
        );
    }
}
