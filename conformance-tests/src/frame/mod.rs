//! The contract every dataframe backend proves itself against, built like the array suite
//! (one case per op, type and variant, compared with the CPU reference; the same report,
//! the same three ways in).
//!
//! - **Protocol cases** (`frame.*`) call one partition-level primitive of
//!   [`DataFrameBackend`] on generated batches: import/export, filter and projection
//!   programs over every expression kind a type takes, hash and range partitioning, the
//!   three-step aggregation (partial per partition, combine in order, finalize) for every
//!   [`AggFunc`](tessera_core::frame::AggFunc), every join type with both pairwise algorithms, sort with nulls and
//!   descending keys, concat, slice and take.
//! - **API cases** (`frame.api.*`) run the user-level [`tessera_frame::DataFrame`] on the
//!   backend over random partitionings (empty partitions included) against the
//!   reference's one partition.
//!
//! Columns come in seven Arrow types ([`data::ColType`]) with nulls, NaN, ±inf, `-0.0`,
//! repeated keys and non-ASCII strings. Variants: 0 is empty, 1 has one partition and no
//! null keys, 2 and 3 have several partitions, null keys on both sides of a join, and a
//! key only the last partition holds (so a combine that loses a state shows).
//!
//! The reference is checked before any backend is compared with it: each case states,
//! through [`FrameSide::expect`], what [`oracle`] (a row-at-a-time interpreter sharing no
//! code with any backend) computes from its inputs, and a reference that disagrees makes
//! the case [`Outcome::Suite`]. [`oracle_coverage`] says which cases state one.
//!
//! Capabilities are data: an aggregation or join algorithm a backend declares missing must
//! raise [`Error::FrameUnsupported`] (or [`Error::Unsupported`]); returning a result anyway is a failure, and raising
//! `Unsupported` for something not declared missing is an error.
//!
//! Three ways in: [`check_frame_backend`], the [`frame_backend_tests!`](crate::frame_backend_tests)
//! macro, and `tessera-conformance --frame-backend NAME`.

pub mod api;
mod case;
pub mod compare;
pub mod data;
pub mod oracle;
pub mod protocol;
pub mod selftest;
pub mod stored_forms;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use arrow_array::RecordBatch;
use tessera_core::frame::{DataFrameBackend, FrameBackendRef};
use tessera_core::registry::{dataframe_backend, register_dataframe_backend};
use tessera_core::{Error, Result};
// The reference dataframe backend must be linked for its registration to survive.
use tessera_cpu_frame as _;

use crate::case::{Outcome, Verdict};
use crate::gen::Gen;
use crate::report::{CaseReport, Report};
use crate::{matches_filter, Options};
pub use case::{
    Expectation, FrameCase, FrameFamily, FrameRun, FrameSide, Need, Output, StoredForm,
};
use compare::compare_batches;

/// Variants per op and type.
pub const VARIANTS: usize = 4;

/// Name of the reference dataframe backend.
pub const FRAME_REFERENCE: &str = "cpu";

/// Every frame family: the protocol's, then the API's.
pub fn frame_families() -> Vec<FrameFamily> {
    let mut f = protocol::families();
    f.extend(stored_forms::families());
    f.extend(api::families());
    f
}

/// Every frame case, in a stable order, narrowed by `filter` (as for arrays).
pub fn frame_cases(filter: Option<&str>) -> Vec<FrameCase> {
    let mut out = Vec::new();
    for family in frame_families() {
        for &ty in &family.types {
            for variant in 0..VARIANTS {
                let id = format!("{}/{}/{}", family.op, ty.name(), variant);
                if matches_filter(filter, &family.op, &id) {
                    out.push(FrameCase {
                        id,
                        family: family.clone(),
                        ty,
                        variant,
                    });
                }
            }
        }
    }
    out
}

fn run_side(case: &FrameCase, side: &FrameSide, seed: u64) -> Result<Vec<Output>> {
    let mut g = Gen::for_case(seed, &case.id);
    match catch_unwind(AssertUnwindSafe(|| {
        (case.family.run)(side, &mut g, case.ty, case.variant)
    })) {
        Ok(r) => r,
        Err(p) => Err(Error::Panicked {
            task: format!("case {} on backend '{}'", case.id, side.backend.name()),
            message: tessera_core::error::panic_message(p.as_ref()),
        }),
    }
}

fn declared_missing(backend: &dyn DataFrameBackend, need: Need) -> bool {
    let caps = backend.capabilities();
    match need {
        Need::Required => false,
        Need::Aggregation(f) => caps.lacks(f),
        Need::JoinAlgorithm(a) => caps.missing_join_algorithms.contains(&a),
        Need::Windows => !caps.windows,
        Need::StoredForm(form) => !form.declared(backend),
    }
}

fn run_case(
    case: &FrameCase,
    backend: &FrameBackendRef,
    reference: &FrameBackendRef,
    seed: u64,
) -> Verdict {
    let ref_side = FrameSide::new(reference.clone(), true);
    let want = run_side(case, &ref_side, seed);
    let inputs = ref_side.notes();
    let verdict = |outcome, message: String| Verdict {
        outcome,
        inputs: inputs.clone(),
        message,
    };
    let want = match want {
        Ok(w) => w,
        Err(e) => {
            return verdict(
                Outcome::Suite,
                format!(
                    "the reference '{}' failed, so the case is broken: {e}",
                    reference.name()
                ),
            )
        }
    };
    if let Some(expect) = ref_side.take_expect() {
        if let Err(m) = check_reference(&want, expect) {
            return verdict(Outcome::Suite, m);
        }
    }
    let side = FrameSide::new(backend.clone(), false);
    // A frame case runs its stages on the pool's threads: the fallbacks they record are
    // read back by mark, for this backend.
    let mark = tessera_core::fallback::mark();
    let got = run_side(case, &side, seed);
    let fallbacks = tessera_core::fallback::since(mark, backend.name());
    if declared_missing(backend.as_ref(), case.family.need) {
        return match got {
            Err(Error::Unsupported { .. } | Error::FrameUnsupported { .. }) => {
                verdict(Outcome::Unsupported, String::new())
            }
            Err(e) => verdict(
                Outcome::Error,
                format!("declared missing in its capabilities, so it must raise Unsupported; it raised: {e}"),
            ),
            Ok(_) => verdict(
                Outcome::Fail,
                format!(
                    "declared missing in its capabilities ({:?}) but returned a result instead of raising Unsupported",
                    case.family.need
                ),
            ),
        };
    }
    let got = match got {
        Ok(g) => g,
        Err(e @ (Error::Unsupported { .. } | Error::FrameUnsupported { .. })) => {
            return verdict(
                Outcome::Error,
                format!("raised Unsupported for what its capabilities do not declare missing: {e}"),
            )
        }
        Err(e) => return verdict(Outcome::Error, e.to_string()),
    };
    if got.len() != want.len() {
        return verdict(
            Outcome::Fail,
            format!("{} outputs, want {}", got.len(), want.len()),
        );
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if let Err(m) = compare_batches(&g.batch, &w.batch, w.order, w.tol) {
            let which = if want.len() > 1 {
                format!("output {i}: ")
            } else {
                String::new()
            };
            return verdict(Outcome::Fail, format!("{which}{m}"));
        }
    }
    if fallbacks.is_empty() {
        verdict(Outcome::Pass, String::new())
    } else {
        verdict(
            Outcome::Fallback,
            fallbacks
                .iter()
                .map(|f| format!("{}: {}", f.op, f.why))
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

/// `Ok` when the reference's outputs are what the oracle states, else why not.
fn check_reference(want: &[Output], expect: Expectation) -> std::result::Result<(), String> {
    let stated = match expect {
        Expectation::Exact(answer) => answer,
        Expectation::Within(bounds) => {
            let (lo, hi) = bounds.map_err(|e| format!("the oracle cannot state this case: {e}"))?;
            return check_within(want, &lo, &hi);
        }
    };
    let stated = stated.map_err(|e| format!("the oracle cannot state this case: {e}"))?;
    if stated.len() != want.len() {
        return Err(format!(
            "the reference gave {} outputs, the oracle states {}",
            want.len(),
            stated.len()
        ));
    }
    for (i, (w, o)) in want.iter().zip(&stated).enumerate() {
        compare_batches(&w.batch, o, w.order, w.tol)
            .map_err(|m| format!("the reference disagrees with the oracle: output {i}: {m}"))?;
    }
    Ok(())
}

/// `Ok` when every output's columns but the last equal the bounds' and its last column
/// lies between the lower and the upper bound's, value by value.
fn check_within(
    want: &[Output],
    lo: &[RecordBatch],
    hi: &[RecordBatch],
) -> std::result::Result<(), String> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    if lo.len() != want.len() || hi.len() != want.len() {
        return Err(format!(
            "the reference gave {} outputs, the oracle bounds {}",
            want.len(),
            lo.len()
        ));
    }
    for (i, (w, (l, h))) in want.iter().zip(lo.iter().zip(hi)).enumerate() {
        let last = w.batch.num_columns().saturating_sub(1);
        let keys: Vec<usize> = (0..last).collect();
        let project = |b: &RecordBatch| b.project(&keys).map_err(|e| e.to_string());
        compare_batches(&project(&w.batch)?, &project(l)?, w.order, w.tol)
            .map_err(|m| format!("the reference disagrees with the oracle: output {i}: {m}"))?;
        let floats = |b: &RecordBatch| {
            arrow_cast::cast(b.column(last), &arrow_schema::DataType::Float64)
                .map(|a| a.as_primitive::<arrow_array::types::Float64Type>().clone())
                .map_err(|e| e.to_string())
        };
        let (g, l, h) = (floats(&w.batch)?, floats(l)?, floats(h)?);
        for r in 0..g.len() {
            let ok = match (g.is_null(r), l.is_null(r)) {
                (true, true) => true,
                (false, false) => l.value(r) <= g.value(r) && g.value(r) <= h.value(r),
                _ => false,
            };
            if !ok {
                let show = |a: &arrow_array::Float64Array| {
                    if a.is_null(r) {
                        "null".to_string()
                    } else {
                        a.value(r).to_string()
                    }
                };
                return Err(format!(
                    "the reference's estimate is outside the oracle's bounds: output {i}, row \
                     {r}: {} not in [{}, {}]",
                    show(&g),
                    show(&l),
                    show(&h)
                ));
            }
        }
    }
    Ok(())
}

/// Whether each case of `cases` states an oracle expectation: the reference side alone is
/// run (with `seed`), and a case counts as stated when it called
/// [`FrameSide::expect`] with an answer.
///
/// # Errors
/// When the reference backend is not registered.
pub fn oracle_coverage(cases: &[FrameCase], seed: u64) -> Result<Vec<(String, bool)>> {
    let reference = dataframe_backend(FRAME_REFERENCE)?;
    Ok(cases
        .iter()
        .map(|case| {
            let side = FrameSide::new(reference.clone(), true);
            let _ = run_side(case, &side, seed);
            let stated = matches!(
                side.take_expect(),
                Some(Expectation::Exact(Ok(_)) | Expectation::Within(Ok(_)))
            );
            (case.id.clone(), stated)
        })
        .collect())
}

/// `backend` as the registry knows it: registered under its name unless a backend of that
/// name already is (then that one is checked, as applications would reach it).
fn ensure_registered(backend: &FrameBackendRef) -> Result<FrameBackendRef> {
    if let Ok(b) = dataframe_backend(backend.name()) {
        return Ok(b);
    }
    match register_dataframe_backend(backend.clone()) {
        Ok(()) => dataframe_backend(backend.name()),
        // Another test registered it between the lookup and here: use that one.
        Err(e) => dataframe_backend(backend.name()).map_err(|_| e),
    }
}

/// Runs the frame suite on `backend` against the `cpu` reference.
pub fn check_frame_backend(backend: &FrameBackendRef, options: &Options) -> Report {
    match dataframe_backend(FRAME_REFERENCE) {
        Ok(r) => check_frame_backend_against(backend, &r, options),
        Err(e) => Report {
            backend: backend.name().to_string(),
            reference: FRAME_REFERENCE.to_string(),
            seed: options.seed,
            filter: options.filter.clone(),
            cases: Vec::new(),
            elapsed_s: 0.0,
            setup_error: Some(e.to_string()),
        },
    }
}

/// Like [`check_frame_backend`], against another reference.
pub fn check_frame_backend_against(
    backend: &FrameBackendRef,
    reference: &FrameBackendRef,
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
    let setup = ensure_registered(backend).and_then(|b| Ok((b, ensure_registered(reference)?)));
    let (backend, reference) = match setup {
        Ok(pair) => pair,
        Err(e) => {
            report.setup_error = Some(e.to_string());
            return report;
        }
    };
    let rerun = options.rerun.clone().unwrap_or_else(|| {
        format!(
            "cargo run -p tessera-conformance -- --frame-backend {} --filter {{id}} --seed {{seed}}",
            backend.name()
        )
    });
    for case in frame_cases(options.filter.as_deref()) {
        let t = Instant::now();
        let v = run_case(&case, &backend, &reference, options.seed);
        report.cases.push(CaseReport::of_run(
            case.id,
            case.family.op,
            case.family.group,
            case.ty.name(),
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

/// Runs the cases of one `#[test]` made by [`frame_backend_tests!`](crate::frame_backend_tests)
/// and panics with every failure if any case fails (`TESSERA_CONFORMANCE_SEED` and
/// `TESSERA_CONFORMANCE_FILTER` as for arrays).
#[doc(hidden)]
pub fn run_generated_frame_test(backend: FrameBackendRef, selector: &str, test_name: &str) {
    let options = crate::generated_test_options(selector, test_name);
    crate::generated_test_verdict(&check_frame_backend(&backend, &options), selector);
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch};

    use super::*;

    fn batch(keys: &[i64], out: &[Option<f64>]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("k", Arc::new(Int64Array::from(keys.to_vec())) as ArrayRef),
            (
                "out",
                Arc::new(Float64Array::from(out.to_vec())) as ArrayRef,
            ),
        ])
        .unwrap()
    }

    /// An estimate between its bounds passes; one outside them, a null where the bounds
    /// have a value, or another key fails, naming what was wrong.
    #[test]
    fn an_estimate_outside_its_bounds_is_caught() {
        let lo = vec![batch(&[1, 2], &[Some(1.0), None])];
        let hi = vec![batch(&[1, 2], &[Some(3.0), None])];
        let check = |keys: &[i64], out: &[Option<f64>]| {
            check_within(&[Output::exact(batch(keys, out))], &lo, &hi)
        };
        check(&[1, 2], &[Some(2.0), None]).unwrap();
        check(&[1, 2], &[Some(1.0), None]).unwrap();
        let e = check(&[1, 2], &[Some(3.5), None]).unwrap_err();
        assert!(e.contains("3.5 not in [1, 3]"), "{e}");
        let e = check(&[1, 2], &[Some(f64::NAN), None]).unwrap_err();
        assert!(e.contains("NaN not in"), "{e}");
        assert!(check(&[1, 2], &[None, None]).is_err());
        assert!(check(&[1, 3], &[Some(2.0), None]).is_err());
    }
}
