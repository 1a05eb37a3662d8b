//! # tessera-conformance
//!
//! The contract every tessera array backend proves itself against. Each op of the
//! backend protocol and of the user-level array API has generated cases (0-d to 4-d
//! shapes with empty and size-1 axes, irregular chunkings, every dtype the op takes,
//! NaN/±inf/-0.0/subnormals/integer extremes) whose results are compared with the CPU
//! reference under dtype-aware tolerances ([`compare`]). A backend's declared
//! [`Capabilities`](tessera_core::Capabilities) decide which cases must pass and which must
//! be refused with [`Error::Unsupported`](tessera_core::Error::Unsupported); every case ends
//! `pass`, `fail`, `unsupported` or `error`, and a failure names the op, dtype, shapes,
//! chunks, the first differing index with both values, and a command that reruns it.
//!
//! Three ways in:
//! 1. [`check_array_backend`] returns a [`Report`];
//! 2. [`array_backend_tests!`] in a test file gives one `#[test]` per op and dtype;
//! 3. the `tessera-conformance` binary checks any registered backend by name, including
//!    one loaded from a plugin library (`--plugin path/to/libx.so`).
//!
//! The crate also ships [`selftest`]: deliberately broken backends that the suite must
//! catch, because a suite that passes everything proves nothing.

pub mod case;
pub mod cases;
/// Test support: builds a workspace plugin crate for tests that load it (feature
/// `test-support`; not part of the suite's API).
#[cfg(feature = "test-support")]
pub mod cdylib;
pub mod compare;
pub mod frame;
pub mod gen;
pub mod macros;
pub mod oracle;
pub mod report;
pub mod selftest;
/// Test support: visible skips (feature `test-support`).
#[cfg(feature = "test-support")]
pub mod skip;

use std::time::Instant;

use tessera_core::registry::{array_backend, ensure_array_backend};
use tessera_core::BackendRef;
// The reference backend must be linked for its `inventory` registration to survive.
use tessera_cpu as _;

pub use case::{Case, Family, Group, Outcome, Produced, Side};
pub use compare::Tol;
pub use frame::{check_frame_backend, check_frame_backend_against};
pub use report::{CaseReport, Report};

/// The seed CI uses unless told otherwise.
pub const DEFAULT_SEED: u64 = 1;

/// Name of the reference backend.
pub const REFERENCE: &str = "cpu";

/// How to run the suite.
#[derive(Debug, Clone)]
pub struct Options {
    /// Seed for every generated shape, chunking and value.
    pub seed: u64,
    /// Which cases: comma-separated items, each an op (`add`, `api.var`), an op and dtype
    /// (`add/float32`), a case id (`add/float32/2`), or a prefix ending in `*` (`api.*`).
    pub filter: Option<String>,
    /// The command printed to rerun one case, with `{id}` and `{seed}` placeholders.
    /// Default: the runner binary with `--backend <name> --filter {id} --seed {seed}`.
    pub rerun: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: DEFAULT_SEED,
            filter: None,
            rerun: None,
        }
    }
}

/// True when case `id` of op `op` is selected by `filter`.
pub fn matches_filter(filter: Option<&str>, op: &str, id: &str) -> bool {
    let Some(f) = filter else { return true };
    f.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .any(|item| {
            if let Some(prefix) = item.strip_suffix('*') {
                op.starts_with(prefix)
            } else {
                id == item || id.starts_with(&format!("{item}/"))
            }
        })
}

/// Every case, in a stable order (family, dtype, variant), narrowed by `filter`.
pub fn cases(filter: Option<&str>) -> Vec<Case> {
    let mut out = Vec::new();
    for family in cases::families() {
        for &dtype in &family.dtypes {
            for variant in 0..cases::VARIANTS {
                let id = format!("{}/{}/{}", family.op, dtype.name(), variant);
                if matches_filter(filter, &family.op, &id) {
                    out.push(Case {
                        id,
                        family: family.clone(),
                        dtype,
                        variant,
                    });
                }
            }
        }
    }
    out
}

/// The reference backend (`cpu`, from the registry).
pub fn reference() -> tessera_core::Result<BackendRef> {
    array_backend(REFERENCE)
}

/// Runs the suite on `backend` and reports every case.
///
/// The backend is registered at run time under its name unless a backend of that name is
/// already registered, in which case the registered one is checked: the user-level cases
/// reach backends through the registry by name, exactly as applications do.
pub fn check_array_backend(backend: &BackendRef, options: &Options) -> Report {
    match reference() {
        Ok(r) => check_array_backend_against(backend, &r, options),
        Err(e) => Report {
            backend: backend.name().to_string(),
            reference: REFERENCE.to_string(),
            seed: options.seed,
            filter: options.filter.clone(),
            cases: Vec::new(),
            elapsed_s: 0.0,
            setup_error: Some(e.to_string()),
        },
    }
}

/// Like [`check_array_backend`], against another reference than `cpu`. The reference is
/// still checked against the oracle first ([`oracle`]), so this is how a reference with a
/// wrong kernel is shown to fail (the crate's self-test does it with
/// [`selftest::wrong_reference`]).
pub fn check_array_backend_against(
    backend: &BackendRef,
    reference: &BackendRef,
    options: &Options,
) -> Report {
    let start = Instant::now();
    let mut report = Report {
        backend: backend.name().to_string(),
        reference: reference.name().to_string(),
        seed: options.seed,
        filter: options.filter.clone(),
        cases: Vec::new(),
        elapsed_s: 0.0,
        setup_error: None,
    };
    let setup = ensure_array_backend(backend.clone())
        .and_then(|b| Ok((b, ensure_array_backend(reference.clone())?)));
    let (backend, reference) = match setup {
        Ok(pair) => pair,
        Err(e) => {
            report.setup_error = Some(e.to_string());
            return report;
        }
    };
    let rerun = options.rerun.clone().unwrap_or_else(|| {
        format!(
            "cargo run -p tessera-conformance -- --backend {} --filter {{id}} --seed {{seed}}",
            backend.name()
        )
    });
    for case in cases(options.filter.as_deref()) {
        let t = Instant::now();
        let v = case::run_case(&case, &backend, &reference, options.seed);
        report.cases.push(CaseReport::of_run(
            case.id,
            case.family.op,
            case.family.group,
            case.dtype.name(),
            case.variant,
            v,
            &rerun,
            options.seed,
            t,
        ));
    }
    report.elapsed_s = start.elapsed().as_secs_f64();
    report
}

/// Runs the cases of one `#[test]` made by [`array_backend_tests!`] and panics with every
/// failure (and its rerun line) if any case fails. `TESSERA_CONFORMANCE_SEED` changes the
/// seed; `TESSERA_CONFORMANCE_FILTER` narrows the cases further (e.g. to one case id).
#[doc(hidden)]
pub fn run_generated_test(backend: BackendRef, selector: &str, test_name: &str) {
    let report = check_array_backend(&backend, &generated_test_options(selector, test_name));
    generated_test_verdict(&report, selector);
}

/// The options of a macro-generated test: the test's `selector` narrowed by
/// `TESSERA_CONFORMANCE_FILTER` when that names cases inside it, the seed from
/// `TESSERA_CONFORMANCE_SEED`, and a rerun line through `cargo test`.
#[doc(hidden)]
pub fn generated_test_options(selector: &str, test_name: &str) -> Options {
    let seed = std::env::var("TESSERA_CONFORMANCE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let narrow = std::env::var("TESSERA_CONFORMANCE_FILTER").ok();
    let filter = match narrow {
        Some(n) if matches_filter(Some(selector), n.split('/').next().unwrap_or(""), &n) => n,
        _ => selector.to_string(),
    };
    Options {
        seed,
        filter: Some(filter),
        rerun: Some(format!(
            "TESSERA_CONFORMANCE_SEED={{seed}} TESSERA_CONFORMANCE_FILTER={{id}} cargo test {test_name}"
        )),
    }
}

/// Panics with every failure of a macro-generated test's `report`, or when no case
/// matched its `selector` (a test that checks nothing must not pass).
#[doc(hidden)]
pub fn generated_test_verdict(report: &Report, selector: &str) {
    assert!(
        report.setup_error.is_some() || !report.cases.is_empty(),
        "no conformance case matches '{selector}'"
    );
    if !report.is_ok() {
        panic!("{}", report.failure_text());
    }
}

#[doc(hidden)]
pub use tessera_core::frame::FrameBackendRef as __FrameBackendRef;
#[doc(hidden)]
pub use tessera_core::BackendRef as __BackendRef;
