//! One program, two configurations: the backend and scheduler come from config/env, the
//! code never changes.
//!
//! ```text
//! cargo run --example backend_switch
//! TESSERA_ARRAY_BACKEND=nope cargo run --example backend_switch   # lists the backends
//! ```

use tessera::{config, Index, RandomState};

fn job() -> tessera::Result<f64> {
    let x = RandomState::new(3).normal(10.0, 1.0, &[2000, 2000], 500, None)?;
    println!("{x}");
    (&x + 1.0)?
        .slice(&[Index::step(2), Index::step(2)])?
        .mean(None, false)?
        .compute_f64()
}

fn main() {
    let run = || -> tessera::Result<()> {
        let (backend, from) = config::get("array.backend")?;
        println!("array.backend = {backend} ({from})");
        let a = job()?;
        // The same job under a scoped override of the scheduler.
        let b = {
            let _g = config::set(&[("scheduler", "single-threaded")])?;
            job()?
        };
        println!("threads: {a}\nsingle-threaded: {b}");
        if a != b {
            return Err(tessera::Error::Internal(format!(
                "schedulers disagree: {a} vs {b}"
            )));
        }
        Ok(())
    };
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
