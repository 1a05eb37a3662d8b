//! What a case is, how one runs, and how its outcome is decided.
//!
//! A [`Family`] is one op of the protocol or of the user API with the dtypes it takes and
//! a run function. The run function is written once and called twice with identically
//! seeded [`Gen`]s: on the backend under test (with irregular chunkings) and on the CPU
//! reference (one chunk per array). Whatever the function builds, computes and returns
//! is then compared under the family's tolerance. The same code on both sides means the
//! inputs are the same by construction, and a case reruns from `(seed, id)` alone.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use tessera_core::chunks::Chunks;
use tessera_core::{ArrayBackend, BackendRef, Chunk, DType, Error, HostArray, Result};

use crate::compare::{compare, Tol};
use crate::gen::Gen;

/// Whether a family exercises a backend primitive directly or the user-level array API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// A method of `ArrayBackend`, called on single chunks.
    Protocol,
    /// The lazy `Array` API on chunked arrays (lowering, fusion, scheduling included).
    Api,
}

impl Group {
    /// `protocol` or `api`.
    pub fn name(self) -> &'static str {
        match self {
            Group::Protocol => "protocol",
            Group::Api => "api",
        }
    }
}

/// One side of a comparison: the backend under test or the reference.
pub struct Side {
    /// The backend.
    pub backend: BackendRef,
    /// True on the reference side: arrays get one chunk instead of irregular ones.
    pub reference: bool,
}

impl Side {
    /// The backend's registered name.
    pub fn name(&self) -> &str {
        self.backend.name()
    }

    /// The backend.
    pub fn b(&self) -> &dyn ArrayBackend {
        &*self.backend
    }

    /// Draws an irregular chunking of `shape` (always, so both sides consume the same
    /// random numbers) and returns it, or one chunk on the reference side.
    pub fn chunks(&self, g: &mut Gen, shape: &[usize]) -> Chunks {
        let c = g.chunks(shape);
        if self.reference {
            Chunks::single(shape)
        } else {
            c
        }
    }

    /// Copies host data into a chunk, checking the chunk's metadata.
    pub fn upload(&self, h: &HostArray) -> Result<Chunk> {
        let c = self.b().from_host(h)?;
        self.check_meta(&c, h.dtype(), h.shape(), "from_host")?;
        Ok(c)
    }

    /// Copies a chunk to the host, checking that the host copy matches the chunk's
    /// declared dtype and shape and that the chunk names this backend.
    pub fn download(&self, c: &Chunk) -> Result<HostArray> {
        let h = self.b().to_host(c)?;
        self.check_meta(c, h.dtype(), h.shape(), "to_host")?;
        Ok(h)
    }

    fn check_meta(&self, c: &Chunk, dtype: DType, shape: &[usize], op: &str) -> Result<()> {
        let problem = if c.backend() != self.name() {
            Some(format!("chunk names backend '{}'", c.backend()))
        } else if c.dtype() != dtype {
            Some(format!("chunk says dtype {}, data is {dtype}", c.dtype()))
        } else if c.shape() != shape {
            Some(format!(
                "chunk says shape {:?}, data is {shape:?}",
                c.shape()
            ))
        } else {
            None
        };
        match problem {
            Some(p) => Err(Error::Internal(format!(
                "{op} on backend '{}': inconsistent chunk metadata: {p}",
                self.name()
            ))),
            None => Ok(()),
        }
    }
}

/// What a run function returns: the results, the tolerance, and the inputs in words.
pub struct Produced {
    /// Results (most cases have one).
    pub out: Vec<HostArray>,
    /// Tolerance for float results.
    pub tol: Tol,
    /// The inputs: shapes, chunks, dtypes, parameters.
    pub inputs: String,
}

impl Produced {
    /// One result.
    pub fn one(out: HostArray, tol: Tol, inputs: String) -> Produced {
        Produced {
            out: vec![out],
            tol,
            inputs,
        }
    }
}

/// A run function: `(side, gen, dtype, variant)`.
pub type RunFn = Arc<dyn Fn(&Side, &mut Gen, DType, usize) -> Result<Produced> + Send + Sync>;

/// One op with its dtypes and run function.
#[derive(Clone)]
pub struct Family {
    /// Op name (`add`, `api.var`, ...).
    pub op: String,
    /// Protocol or API.
    pub group: Group,
    /// The dtypes it takes (the case's dtype is the operand's).
    pub dtypes: Vec<DType>,
    /// The run function.
    pub run: RunFn,
}

impl Family {
    /// A family.
    pub fn new(
        op: impl Into<String>,
        group: Group,
        dtypes: Vec<DType>,
        run: impl Fn(&Side, &mut Gen, DType, usize) -> Result<Produced> + Send + Sync + 'static,
    ) -> Family {
        Family {
            op: op.into(),
            group,
            dtypes,
            run: Arc::new(run),
        }
    }
}

/// One generated case: a family, a dtype and a variant.
#[derive(Clone)]
pub struct Case {
    /// `op/dtype/variant`, e.g. `add/float32/2`.
    pub id: String,
    /// The family.
    pub family: Family,
    /// The dtype.
    pub dtype: DType,
    /// The variant (selects shapes and value flavour).
    pub variant: usize,
}

/// How one case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Matches the reference (or raises the same kind of error the reference raises).
    Pass,
    /// Differs from the reference, or breaks a declared capability.
    Fail,
    /// Declared unsupported, and refused with the typed error.
    Unsupported,
    /// The backend raised an unexpected error or panicked.
    Error,
}

impl Outcome {
    /// `pass`, `fail`, `unsupported`, `error`.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unsupported => "unsupported",
            Outcome::Error => "error",
        }
    }
}

/// The verdict on one case.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Outcome.
    pub outcome: Outcome,
    /// The inputs in words.
    pub inputs: String,
    /// Why it failed or errored (empty on pass).
    pub message: String,
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

fn run_side(case: &Case, side: &Side, seed: u64) -> Result<Produced> {
    let mut g = Gen::for_case(seed, &case.id);
    g.edges = case.variant == 0;
    match catch_unwind(AssertUnwindSafe(|| {
        (case.family.run)(side, &mut g, case.dtype, case.variant)
    })) {
        Ok(r) => r,
        Err(p) => Err(Error::Internal(format!("panicked: {}", panic_text(p)))),
    }
}

fn same_kind(a: &Error, b: &Error) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// Runs `case` on `backend` and on `reference` (seeded by `seed`) and decides the outcome.
pub fn run_case(case: &Case, backend: &BackendRef, reference: &BackendRef, seed: u64) -> Verdict {
    let caps = backend.capabilities();
    let declared_unsupported =
        case.family.group == Group::Protocol && !caps.supports(&case.family.op, case.dtype);
    let want = run_side(
        case,
        &Side {
            backend: reference.clone(),
            reference: true,
        },
        seed,
    );
    let got = run_side(
        case,
        &Side {
            backend: backend.clone(),
            reference: false,
        },
        seed,
    );
    let inputs = match (&want, &got) {
        (Ok(p), _) | (_, Ok(p)) => p.inputs.clone(),
        _ => String::new(),
    };
    let verdict = |outcome, message: String| Verdict {
        outcome,
        inputs: inputs.clone(),
        message,
    };
    // A declared gap must be refused with the typed error.
    if let Err(Error::Unsupported { op, dtype, .. }) = &got {
        return if !caps.supports(op, *dtype) {
            verdict(Outcome::Unsupported, String::new())
        } else {
            verdict(
                Outcome::Fail,
                format!("raised 'unsupported' for {op} on {dtype}, which its capabilities declare supported"),
            )
        };
    }
    if declared_unsupported {
        return match got {
            Ok(_) => verdict(
                Outcome::Fail,
                format!(
                    "capabilities declare {} on {} unsupported, yet it returned a result (a declared gap must raise Error::Unsupported)",
                    case.family.op, case.dtype
                ),
            ),
            Err(e) => verdict(
                Outcome::Fail,
                format!(
                    "capabilities declare {} on {} unsupported; expected Error::Unsupported, got: {e}",
                    case.family.op, case.dtype
                ),
            ),
        };
    }
    match (want, got) {
        (Err(we), Err(ge)) if same_kind(&we, &ge) => verdict(Outcome::Pass, String::new()),
        (Err(we), Err(ge)) => verdict(
            Outcome::Fail,
            format!(
                "the reference raises \"{we}\"; the backend raised another kind of error: {ge}"
            ),
        ),
        (Err(we), Ok(_)) => verdict(
            Outcome::Fail,
            format!("the reference raises \"{we}\"; the backend returned a result"),
        ),
        (Ok(_), Err(ge)) => verdict(Outcome::Error, ge.to_string()),
        (Ok(w), Ok(g)) => {
            if w.out.len() != g.out.len() {
                return verdict(
                    Outcome::Fail,
                    format!("{} results, the reference has {}", g.out.len(), w.out.len()),
                );
            }
            for (i, (go, wo)) in g.out.iter().zip(&w.out).enumerate() {
                if let Err(m) = compare(go, wo, w.tol) {
                    let which = if w.out.len() > 1 {
                        format!("result {i}: ")
                    } else {
                        String::new()
                    };
                    return verdict(
                        Outcome::Fail,
                        format!(
                            "{which}{m} (tolerance rtol={:e} atol={:e})",
                            w.tol.rtol, w.tol.atol
                        ),
                    );
                }
            }
            verdict(Outcome::Pass, String::new())
        }
    }
}
