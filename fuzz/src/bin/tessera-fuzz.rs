//! `tessera-fuzz [--target NAME|all] [--inputs N] [--seed S] [--crashes DIR]
//! [--last-input FILE]`: runs each
//! target over `N` mutated inputs (default 10,000) and prints one JSON line per target;
//! panicking inputs are written to `DIR` (default `fuzz/crashes`) as `<target>-<k>.bin`,
//! and each target's slowest input as `<target>-slowest.bin`. With `--last-input FILE`
//! each input is written to `FILE` before it runs, so a run ended by an abort, a signal
//! or the out-of-memory killer leaves the input that ended it.
//! Exits 1 when any input panicked.

use std::path::PathBuf;
use std::process::ExitCode;

use tessera_fuzz::run::run_keeping;
use tessera_fuzz::Target;

fn main() -> ExitCode {
    let mut targets = Target::ALL.to_vec();
    let (mut inputs, mut seed) = (10_000u64, 1u64);
    let mut crashes = PathBuf::from("fuzz/crashes");
    let mut last_input: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--target" if value == "all" => {}
            "--target" => match Target::from_name(&value) {
                Some(t) => targets = vec![t],
                None => {
                    let names: Vec<_> = Target::ALL.iter().map(|t| t.name()).collect();
                    eprintln!(
                        "unknown target '{value}'; expected all or one of {}",
                        names.join(", ")
                    );
                    return ExitCode::from(2);
                }
            },
            "--inputs" | "--seed" => match value.parse() {
                Ok(n) if flag == "--inputs" => inputs = n,
                Ok(n) => seed = n,
                Err(_) => {
                    eprintln!("{flag} takes a whole number, not '{value}'");
                    return ExitCode::from(2);
                }
            },
            "--crashes" => crashes = PathBuf::from(value),
            "--last-input" => last_input = Some(PathBuf::from(value)),
            _ => {
                eprintln!("usage: tessera-fuzz [--target NAME|all] [--inputs N] [--seed S] [--crashes DIR] [--last-input FILE]");
                return ExitCode::from(2);
            }
        }
    }
    let mut failed = false;
    for t in targets {
        let report = match run_keeping(t, seed, inputs, last_input.as_deref()) {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "{}: cannot make a scratch folder or write --last-input: {e}",
                    t.name()
                );
                return ExitCode::from(2);
            }
        };
        println!("{}", report.json());
        let _ = std::fs::create_dir_all(&crashes);
        let _ = std::fs::write(
            crashes.join(format!("{}-slowest.bin", t.name())),
            &report.slowest_input,
        );
        if report.panics > 0 {
            failed = true;
            let _ = std::fs::create_dir_all(&crashes);
            for (k, (input, msg)) in report.crashes.iter().enumerate() {
                let path = crashes.join(format!("{}-{k}.bin", t.name()));
                let _ = std::fs::write(&path, input);
                eprintln!("{}: {msg} (input in {})", t.name(), path.display());
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
