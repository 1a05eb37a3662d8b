//! The suite's report: per-case outcomes, the op x dtype matrix, and the JSON form.
//!
//! JSON schema (`"schema": "tessera-conformance/1"`):
//!
//! ```text
//! {
//!   "schema": "tessera-conformance/1",
//!   "backend": "cpu",            // backend under test
//!   "reference": "cpu",          // backend results are compared with
//!   "seed": 1,                   // suite seed; with a case id it reruns one case
//!   "filter": null,              // the --filter given, if any
//!   "elapsed_s": 2.5,
//!   "setup_error": null,         // set when the suite could not start (e.g. registry clash)
//!   "summary": {"cases": 2100, "pass": 2100, "fail": 0, "unsupported": 0, "error": 0},
//!   "cases": [
//!     {"id": "add/float32/0", "op": "add", "group": "protocol", "dtype": "float32",
//!      "variant": 0, "outcome": "pass", "inputs": "a, b: float32[3, 4]",
//!      "message": "", "rerun": "cargo run -p tessera-conformance -- ...", "ms": 0.21}
//!   ]
//! }
//! ```
//!
//! `outcome` is one of `pass`, `fail`, `unsupported`, `error`; `message` says why for the
//! last three (the first mismatch with its index and both values, or the error).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;
use tessera_core::DType;

use crate::case::{Group, Outcome};

/// The rerun command of case `id`: `template` with `{id}` and `{seed}` filled in.
pub fn rerun_line(template: &str, id: &str, seed: u64) -> String {
    template
        .replace("{id}", id)
        .replace("{seed}", &seed.to_string())
}

/// The result of one case.
#[derive(Debug, Clone)]
pub struct CaseReport {
    /// `op/dtype/variant`.
    pub id: String,
    /// Op name.
    pub op: String,
    /// Protocol or API.
    pub group: Group,
    /// The element type the case runs on: an array dtype (`float32`) or, for dataframe
    /// cases, the Arrow type of the columns under test (`utf8`, `timestamp[us]`).
    pub dtype: String,
    /// Variant.
    pub variant: usize,
    /// Outcome.
    pub outcome: Outcome,
    /// Inputs in words.
    pub inputs: String,
    /// Why it did not pass.
    pub message: String,
    /// A command that reruns exactly this case.
    pub rerun: String,
    /// Wall time, milliseconds.
    pub ms: f64,
}

impl CaseReport {
    /// The report of one case run: what the case is, its verdict, the rerun line made from
    /// the suite's `rerun` template, and how long it took since `started`.
    #[allow(clippy::too_many_arguments)] // the fields of a case, named at the call
    pub(crate) fn of_run(
        id: String,
        op: String,
        group: Group,
        dtype: &str,
        variant: usize,
        verdict: crate::case::Verdict,
        rerun: &str,
        seed: u64,
        started: std::time::Instant,
    ) -> CaseReport {
        CaseReport {
            rerun: rerun_line(rerun, &id, seed),
            id,
            op,
            group,
            dtype: dtype.to_string(),
            variant,
            outcome: verdict.outcome,
            inputs: verdict.inputs,
            message: verdict.message,
            ms: started.elapsed().as_secs_f64() * 1e3,
        }
    }

    /// The failure text: op, dtype, inputs (shapes and chunks), the mismatch, the rerun line.
    pub fn describe(&self) -> String {
        format!(
            "[{}] {} (op {}, dtype {}): {}\n    inputs: {}\n    rerun: {}",
            self.outcome.name().to_uppercase(),
            self.id,
            self.op,
            self.dtype,
            self.message,
            self.inputs.replace('\n', "\n            "),
            self.rerun
        )
    }
}

/// Everything one run of the suite found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Backend under test.
    pub backend: String,
    /// Reference backend.
    pub reference: String,
    /// Seed.
    pub seed: u64,
    /// Filter, if any.
    pub filter: Option<String>,
    /// Per-case results, in case order.
    pub cases: Vec<CaseReport>,
    /// Seconds.
    pub elapsed_s: f64,
    /// Why the suite could not run at all, if it could not.
    pub setup_error: Option<String>,
}

impl Report {
    /// Number of cases with `outcome`.
    pub fn count(&self, outcome: &Outcome) -> usize {
        self.cases.iter().filter(|c| &c.outcome == outcome).count()
    }

    /// True when nothing failed or errored and the suite found nothing wrong with itself
    /// (unsupported is fine: it was declared; a fallback is a pass that says how).
    pub fn is_ok(&self) -> bool {
        self.setup_error.is_none()
            && self.cases.iter().all(|c| {
                matches!(
                    c.outcome,
                    Outcome::Pass | Outcome::Fallback | Outcome::Unsupported
                )
            })
    }

    /// The cases that failed, errored, or where the suite itself is wrong.
    pub fn problems(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Fail | Outcome::Error | Outcome::Suite))
    }

    /// One line: counts per outcome.
    pub fn summary(&self) -> String {
        format!(
            "backend '{}' vs reference '{}', seed {}: {} cases: {} pass, {} fallback, {} fail, {} unsupported, {} error, {} suite ({:.1} s)",
            self.backend,
            self.reference,
            self.seed,
            self.cases.len(),
            self.count(&Outcome::Pass),
            self.count(&Outcome::Fallback),
            self.count(&Outcome::Fail),
            self.count(&Outcome::Unsupported),
            self.count(&Outcome::Error),
            self.count(&Outcome::Suite),
            self.elapsed_s
        )
    }

    /// Every failure and error, described, then the summary.
    pub fn failure_text(&self) -> String {
        let mut s = String::new();
        if let Some(e) = &self.setup_error {
            let _ = writeln!(s, "suite could not run: {e}");
        }
        for c in self.problems() {
            let _ = writeln!(s, "{}", c.describe());
        }
        s.push_str(&self.summary());
        s
    }

    /// The op x dtype matrix: `ok`, `fb` (passed through a recorded fallback), `FAIL`,
    /// `ERR`, `uns` (declared unsupported), `SUITE`
    /// (the reference disagrees with the oracle or the case is broken), or `.`
    /// where the op does not take the dtype. A cell aggregates the op's variants, worst
    /// outcome first.
    pub fn matrix(&self) -> String {
        let mut cells: BTreeMap<(usize, String), BTreeMap<String, Outcome>> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        // Columns: the array dtypes in their usual order, then any other types (dataframe
        // cases) in order of appearance.
        let mut columns: Vec<String> = DType::ALL
            .iter()
            .map(|d| d.name().to_string())
            .filter(|d| self.cases.iter().any(|c| &c.dtype == d))
            .collect();
        for c in &self.cases {
            if !columns.contains(&c.dtype) {
                columns.push(c.dtype.clone());
            }
        }
        for c in &self.cases {
            if !order.contains(&c.op) {
                order.push(c.op.clone());
            }
            let pos = order.iter().position(|o| o == &c.op).unwrap_or(0);
            let cell = cells
                .entry((pos, c.op.clone()))
                .or_default()
                .entry(c.dtype.clone())
                .or_insert(Outcome::Pass);
            let rank = |o: &Outcome| match o {
                Outcome::Pass => 0,
                Outcome::Fallback => 1,
                Outcome::Unsupported => 1,
                Outcome::Error => 2,
                Outcome::Fail => 3,
                Outcome::Suite => 4,
            };
            if rank(&c.outcome) > rank(cell) {
                *cell = c.outcome.clone();
            }
        }
        let width = order.iter().map(|o| o.len()).max().unwrap_or(2).max(2);
        let mut s = format!("{:width$}", "op");
        for d in &columns {
            let _ = write!(s, " {d:>7}");
        }
        s.push('\n');
        for ((_, op), row) in &cells {
            let _ = write!(s, "{op:width$}");
            for d in &columns {
                let cell = match row.get(d) {
                    None => ".",
                    Some(Outcome::Pass) => "ok",
                    Some(Outcome::Fallback) => "fb",
                    Some(Outcome::Fail) => "FAIL",
                    Some(Outcome::Error) => "ERR",
                    Some(Outcome::Unsupported) => "uns",
                    Some(Outcome::Suite) => "SUITE",
                };
                let _ = write!(s, " {cell:>7}");
            }
            s.push('\n');
        }
        s
    }

    /// The machine-readable report (schema in the module docs).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "schema": "tessera-conformance/1",
            "backend": self.backend,
            "reference": self.reference,
            "seed": self.seed,
            "filter": self.filter,
            "elapsed_s": self.elapsed_s,
            "setup_error": self.setup_error,
            "summary": {
                "cases": self.cases.len(),
                "pass": self.count(&Outcome::Pass),
                "fallback": self.count(&Outcome::Fallback),
                "fail": self.count(&Outcome::Fail),
                "unsupported": self.count(&Outcome::Unsupported),
                "error": self.count(&Outcome::Error),
                "suite": self.count(&Outcome::Suite),
            },
            "cases": self.cases.iter().map(|c| json!({
                "id": c.id,
                "op": c.op,
                "group": c.group.name(),
                "dtype": c.dtype,
                "variant": c.variant,
                "outcome": c.outcome.name(),
                "inputs": c.inputs,
                "message": c.message,
                "rerun": c.rerun,
                "ms": c.ms,
            })).collect::<Vec<_>>(),
        })
    }
}
