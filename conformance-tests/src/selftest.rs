//! Deliberately broken backends, so the suite can prove that it catches breakage.
//!
//! [`BrokenBackend`] stores its data in CPU chunks wrapped in its own chunk type and
//! delegates every primitive to the CPU backend, except for planted faults, one or more
//! in each kind of path a backend can get wrong ([`Fault`]):
//!
//! 1. **a protocol kernel**: `subtract` on `float64` corrupts the first element of its
//!    result ([`Fault::WrongKernel`]);
//! 2. **a capability**: `cos` on `float64` is declared unsupported, yet computed anyway
//!    ([`Fault::LyingCapability`]: a declared gap must raise the typed error); `tanh` on
//!    `float32` is declared unsupported and refused properly (an honest gap, reported
//!    `unsupported`, which is not a failure);
//! 3. **a fused program**: `execute` corrupts its first result when a `float64` program
//!    chains two arithmetic ops (`(a + b) * c`: the bug a code generator has when it fuses)
//!    ([`Fault::FusedChain`]);
//! 4. **a user-API path**: the combine step of a tree reduction (a `float64` program that
//!    adds three or more partial results) drops the last partial, as a scheduler that
//!    loses a chunk would ([`Fault::DroppedPartial`]); protocol cases never send such a
//!    program, only the user-level reductions do;
//! 5. **an error path**: `reduce` with min, max, argmin or argmax over an empty axis
//!    returns a result instead of the error every backend must raise
//!    ([`Fault::MissingError`]).
//!
//! A fault records itself when it changes what the backend returns. [`run`] runs every
//! case alone and notes which faults fired in it; [`verify`] then demands exactly this:
//! no case fails, errors or trips the suite unless a fault fired in it, a fault that
//! changes a protocol result directly is caught in every case where it fired, and every
//! kind of fault is caught somewhere. The runner knows the backend as
//! `--backend selftest-broken`.

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use tessera_core::program::{BinaryOp, IndexMap, Node, Program, ReduceOp, ScanOp, UnaryOp};
use tessera_core::random::RandomSpec;
use tessera_core::{
    ArrayBackend, AxisSlice, BackendRef, Capabilities, Chunk, ChunkData, DType, HostArray, Result,
    Scalar,
};
use tessera_cpu::CpuBackend;

/// The registered name of [`BrokenBackend`].
pub const NAME: &str = "selftest-broken";

/// A planted fault (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// `subtract` on `float64` corrupts its first element.
    WrongKernel,
    /// `cos` on `float64` is computed though declared unsupported.
    LyingCapability,
    /// A program chaining two `float64` arithmetic ops corrupts its first result.
    FusedChain,
    /// A tree-reduction combine of three or more partials drops the last one.
    DroppedPartial,
    /// Min, max or an arg-reduction over an empty axis returns a result, not an error.
    MissingError,
}

impl Fault {
    /// Every planted fault.
    pub const ALL: [Fault; 5] = [
        Fault::WrongKernel,
        Fault::LyingCapability,
        Fault::FusedChain,
        Fault::DroppedPartial,
        Fault::MissingError,
    ];

    /// True for faults that change a protocol case's result directly, so every case in
    /// which they fire must fail. A fault inside a user-level computation may be masked
    /// by what follows it (a corrupted value that a `max` does not pick).
    pub fn always_visible(self) -> bool {
        !matches!(self, Fault::FusedChain | Fault::DroppedPartial)
    }
}

/// Faults fired since the last [`take_fired`], process-wide (a backend is reached through
/// the registry by name, so its instances share this record).
static FIRED: Mutex<BTreeSet<Fault>> = Mutex::new(BTreeSet::new());

fn fired() -> MutexGuard<'static, BTreeSet<Fault>> {
    FIRED.lock().unwrap_or_else(|p| p.into_inner())
}

fn fire(f: Fault) {
    fired().insert(f);
}

/// The faults fired since the last call, and a fresh record.
pub fn take_fired() -> BTreeSet<Fault> {
    std::mem::take(&mut *fired())
}

/// Replaces the first finite element `x` of a `float64` chunk by `x + 1 + |x|` (always a
/// different value); false when there is none to change.
fn corrupt_first(cpu: &CpuBackend, c: &Chunk) -> Result<Option<Chunk>> {
    if c.dtype() != DType::F64 {
        return Ok(None);
    }
    let mut h = cpu.to_host(c)?.into_typed::<f64>()?;
    let Some(x) = h.iter_mut().find(|x| x.is_finite()) else {
        return Ok(None);
    };
    *x += 1.0 + x.abs();
    Ok(Some(cpu.from_host(&HostArray::F64(h))?))
}

/// True when a `float64` program has an arithmetic binary node fed by another one.
fn chains_arithmetic(p: &Program) -> bool {
    let arith = |n: &Node| {
        matches!(
            n,
            Node::Binary {
                op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul,
                ..
            }
        )
    };
    p.nodes.iter().enumerate().any(|(i, n)| {
        p.dtypes[i] == DType::F64 && arith(n) && n.operands().any(|o| arith(&p.nodes[o]))
    })
}

/// The node to return instead when `p` is a reduction's combine step (`float64`, no
/// epilogue, an output that adds three or more inputs): its left operand, which lacks
/// the last partial.
fn combine_without_last(p: &Program) -> Option<usize> {
    let inputs = p
        .nodes
        .iter()
        .filter(|n| matches!(n, Node::Input { .. }))
        .count();
    let [out] = p.outputs.as_slice() else {
        return None;
    };
    match p.nodes[out.node] {
        Node::Binary {
            op: BinaryOp::Add,
            a,
            b,
        } if inputs >= 3
            && out.reduce.is_none()
            && p.dtypes[out.node] == DType::F64
            && matches!(p.nodes[b], Node::Input { .. }) =>
        {
            Some(a)
        }
        _ => None,
    }
}

/// A chunk of a self-test backend: a CPU chunk under its owner's name.
#[derive(Debug)]
pub struct BrokenChunk(Chunk, &'static str);

impl ChunkData for BrokenChunk {
    fn dtype(&self) -> DType {
        self.0.dtype()
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn backend(&self) -> &str {
        self.1
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Which faults a [`BrokenBackend`] plants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plant {
    /// Every [`Fault`] (`selftest-broken`).
    Faults,
    /// The truncating `floor_divide` and `max` reductions of fused programs computed as
    /// `min` ([`wrong_reference`]).
    WrongReference,
}

/// The CPU backend under another name with planted faults (see the module docs and
/// [`wrong_reference`]).
#[derive(Debug)]
pub struct BrokenBackend {
    cpu: CpuBackend,
    caps: Capabilities,
    name: &'static str,
    plant: Plant,
}

impl Default for BrokenBackend {
    fn default() -> Self {
        BrokenBackend::new()
    }
}

impl BrokenBackend {
    /// A new instance with every [`Fault`].
    pub fn new() -> BrokenBackend {
        BrokenBackend {
            cpu: CpuBackend::new(),
            caps: Capabilities::all("host")
                .with_native_programs()
                .without(UnaryOp::Cos, &[DType::F64])
                .without(UnaryOp::Tanh, &[DType::F32]),
            name: NAME,
            plant: Plant::Faults,
        }
    }

    fn faults(&self) -> bool {
        self.plant == Plant::Faults
    }

    fn inner<'a>(&self, c: &'a Chunk, op: &str) -> Result<&'a Chunk> {
        Ok(&tessera_core::backend::downcast_chunk::<BrokenChunk>(c, self.name, op)?.0)
    }

    fn inners(&self, cs: &[Chunk], op: &str) -> Result<Vec<Chunk>> {
        cs.iter().map(|c| self.inner(c, op).cloned()).collect()
    }

    fn wrap(&self, c: Chunk) -> Chunk {
        Arc::new(BrokenChunk(c, self.name))
    }
}

/// The broken backend as a shared handle.
pub fn broken() -> BackendRef {
    Arc::new(BrokenBackend::new())
}

impl ArrayBackend for BrokenBackend {
    fn name(&self) -> &str {
        self.name
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.from_host(data)?))
    }
    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        self.cpu.to_host(self.inner(chunk, "to_host")?)
    }
    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.full(shape, value)?))
    }
    fn random(&self, spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.random(spec, map, shape)?))
    }
    fn iota(&self, map: &IndexMap, axis: usize, shape: &[usize]) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.iota(map, axis, shape)?))
    }
    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.cast(self.inner(x, "astype")?, to)?))
    }
    fn unary(&self, op: UnaryOp, x: &Chunk) -> Result<Chunk> {
        // Fault 3 (honest): refuse what is declared unsupported...
        if op == UnaryOp::Tanh {
            self.caps.check(self.name, op, x.dtype())?;
        }
        // ...fault 2 (lying): but compute `cos` on float64 although it is declared missing.
        if self.faults() && op == UnaryOp::Cos && x.dtype() == DType::F64 {
            fire(Fault::LyingCapability);
        }
        Ok(self.wrap(self.cpu.unary(op, self.inner(x, op.name())?)?))
    }
    fn binary(&self, op: BinaryOp, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let (a, b) = (self.inner(a, op.name())?, self.inner(b, op.name())?);
        if self.plant == Plant::WrongReference && op == BinaryOp::FloorDiv {
            let (ha, hb) = (self.cpu.to_host(a)?, self.cpu.to_host(b)?);
            if let Some(q) = truncating_division(&ha, &hb) {
                return Ok(self.wrap(self.cpu.from_host(&q)?));
            }
        }
        let out = self.cpu.binary(op, a, b)?;
        if !self.faults() || op != BinaryOp::Sub {
            return Ok(self.wrap(out));
        }
        // Fault 1: a wrong first element.
        match corrupt_first(&self.cpu, &out)? {
            Some(bad) => {
                fire(Fault::WrongKernel);
                Ok(self.wrap(bad))
            }
            None => Ok(self.wrap(out)),
        }
    }
    fn where_(&self, cond: &Chunk, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.where_(
            self.inner(cond, "where")?,
            self.inner(a, "where")?,
            self.inner(b, "where")?,
        )?))
    }
    fn slice(&self, x: &Chunk, slices: &[AxisSlice]) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.slice(self.inner(x, "slice")?, slices)?))
    }
    fn transpose(&self, x: &Chunk, perm: &[usize]) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.transpose(self.inner(x, "transpose")?, perm)?))
    }
    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.reshape(self.inner(x, "reshape")?, shape)?))
    }
    fn broadcast_to(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(self.wrap(
            self.cpu
                .broadcast_to(self.inner(x, "broadcast_to")?, shape)?,
        ))
    }
    fn reduce(&self, x: &Chunk, op: ReduceOp, axes: &[usize]) -> Result<Chunk> {
        // Fault 5: min/max/arg* over an empty axis "succeed" with a filled result.
        if self.faults() && op.check_identity(x.shape(), axes).is_err() {
            let shape: Vec<usize> = (0..x.shape().len())
                .map(|a| if axes.contains(&a) { 1 } else { x.shape()[a] })
                .collect();
            fire(Fault::MissingError);
            let zero = Scalar::zero(op.result_dtype(x.dtype()));
            return Ok(self.wrap(self.cpu.full(&shape, zero)?));
        }
        Ok(self.wrap(self.cpu.reduce(self.inner(x, op.name())?, op, axes)?))
    }
    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk> {
        Ok(self.wrap(
            self.cpu
                .concatenate(&self.inners(parts, "concatenate")?, axis)?,
        ))
    }
    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        Ok(self.wrap(
            self.cpu
                .matmul(self.inner(a, "matmul")?, self.inner(b, "matmul")?)?,
        ))
    }
    fn qr(&self, x: &Chunk) -> Result<(Chunk, Chunk)> {
        let (q, r) = self.cpu.qr(self.inner(x, "qr")?)?;
        Ok((self.wrap(q), self.wrap(r)))
    }
    fn svd(&self, x: &Chunk) -> Result<(Chunk, Chunk, Chunk)> {
        let (u, s, vt) = self.cpu.svd(self.inner(x, "svd")?)?;
        Ok((self.wrap(u), self.wrap(s), self.wrap(vt)))
    }
    fn scan(&self, x: &Chunk, op: ScanOp, axis: usize) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.scan(self.inner(x, op.name())?, op, axis)?))
    }
    fn sort(&self, x: &Chunk, axis: usize, descending: bool) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.sort(self.inner(x, "sort")?, axis, descending)?))
    }
    fn execute(&self, program: &Program, inputs: &[Chunk]) -> Result<Vec<Chunk>> {
        let inputs = self.inners(inputs, "execute")?;
        if self.plant == Plant::WrongReference {
            // A user-API path: a fused program's `max` reduction computes `min` (the
            // protocol's own `reduce` primitive stays right).
            let mut wrong = program.clone();
            for o in &mut wrong.outputs {
                if let Some(r) = &mut o.reduce {
                    if r.op == ReduceOp::Max {
                        r.op = ReduceOp::Min;
                    }
                }
            }
            let out = self.cpu.execute(&wrong, &inputs)?;
            return Ok(out.into_iter().map(|c| self.wrap(c)).collect());
        }
        if !self.faults() {
            let out = self.cpu.execute(program, &inputs)?;
            return Ok(out.into_iter().map(|c| self.wrap(c)).collect());
        }
        // Fault 4: a reduction's combine step loses its last partial.
        if let Some(node) = combine_without_last(program) {
            let mut lossy = program.clone();
            lossy.outputs[0].node = node;
            let out = self.cpu.execute(&lossy, &inputs)?;
            fire(Fault::DroppedPartial);
            return Ok(out.into_iter().map(|c| self.wrap(c)).collect());
        }
        let mut out = self.cpu.execute(program, &inputs)?;
        // Fault 3: a wrong result where two arithmetic ops were fused.
        if chains_arithmetic(program) {
            if let Some(bad) = corrupt_first(&self.cpu, &out[0])? {
                fire(Fault::FusedChain);
                out[0] = bad;
            }
        }
        Ok(out.into_iter().map(|c| self.wrap(c)).collect())
    }
}

/// One case of a self-test run: its report and the faults that fired in it.
#[derive(Debug, Clone)]
pub struct FiredCase {
    /// The case's report.
    pub case: crate::CaseReport,
    /// The faults that changed what the backend returned during the case.
    pub fired: BTreeSet<Fault>,
}

/// Runs every case selected by `options` on the broken backend, one at a time, noting
/// which faults fired in each. Runs that share the process must not overlap (the record
/// of fired faults is process-wide); the crate's tests serialise them.
///
/// # Errors
/// Why the suite could not start (e.g. another backend holds the name).
pub fn run(options: &crate::Options) -> std::result::Result<Vec<FiredCase>, String> {
    let backend = broken();
    let mut out = Vec::new();
    for case in crate::cases(options.filter.as_deref()) {
        let one = crate::Options {
            filter: Some(case.id.clone()),
            ..options.clone()
        };
        take_fired();
        let report = crate::check_array_backend(&backend, &one);
        let fired = take_fired();
        if let Some(e) = report.setup_error {
            return Err(e);
        }
        out.extend(report.cases.into_iter().map(|c| FiredCase {
            case: c,
            fired: fired.clone(),
        }));
    }
    Ok(out)
}

/// Why the suite did not catch exactly the planted faults, if it did not (see the module
/// docs for the rules). Used by the crate's tests.
///
/// # Errors
/// Every case that broke a rule, and every fault kind no case caught.
pub fn verify(run: &[FiredCase]) -> std::result::Result<(), String> {
    use crate::Outcome;
    let mut problems = Vec::new();
    let mut caught = BTreeSet::new();
    for FiredCase { case: c, fired } in run {
        // The honest gap: `tanh` on float32 and the user-level functions computed in it.
        let gap = c.id.starts_with("tanh/float32/")
            || c.id.starts_with("api.tanh/")
            || c.id.starts_with("api.cos/");
        let problem = match c.outcome {
            Outcome::Unsupported if gap => None,
            Outcome::Unsupported => Some("declared unsupported without a planted gap".to_string()),
            Outcome::Pass if gap && !c.id.starts_with("api.") => {
                Some("passed, though its op is a declared gap".to_string())
            }
            Outcome::Pass => fired
                .iter()
                .find(|f| f.always_visible())
                .map(|f| format!("passed although fault {f:?} changed its result")),
            Outcome::Fail if fired.is_empty() => Some("failed, but no planted fault fired".into()),
            Outcome::Fail => {
                caught.extend(fired.iter().copied());
                None
            }
            Outcome::Error | Outcome::Suite | Outcome::Fallback => {
                Some(format!("ended {}", c.outcome.name()))
            }
        };
        if let Some(p) = problem {
            problems.push(format!("{}: {p} (fired {fired:?}): {}", c.id, c.message));
        }
    }
    for f in Fault::ALL {
        if !caught.contains(&f) {
            problems.push(format!("no case caught fault {f:?}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The registered name of the reference with a wrong kernel ([`wrong_reference`]).
pub const WRONG_REFERENCE: &str = "selftest-wrong-reference";

/// The CPU backend with two wrong paths: the `floor_divide` kernel on signed integers
/// truncates towards zero (C's `/`) instead of flooring (Python's `//`), the classic slip,
/// and a fused program's `max` reduction computes `min` (a path only the user-level API
/// takes). Used as *both* backend and reference, every comparison between them agrees,
/// so only the oracle can catch it: the crate's tests show the protocol cases of
/// `floor_divide` on signed integers and the API cases of `max` ending
/// [`Outcome::Suite`](crate::Outcome::Suite) and nothing else failing.
pub fn wrong_reference() -> BackendRef {
    let cpu = CpuBackend::new();
    Arc::new(BrokenBackend {
        caps: cpu.capabilities().clone(),
        cpu,
        name: WRONG_REFERENCE,
        plant: Plant::WrongReference,
    })
}

/// `a // b` truncated instead of floored, on a host array of a signed integer dtype.
fn truncating_division(a: &HostArray, b: &HostArray) -> Option<HostArray> {
    macro_rules! trunc {
        ($x:expr, $y:expr) => {
            Some(
                ndarray::Zip::from($x)
                    .and($y)
                    .map_collect(|&p, &q| if q == 0 { 0 } else { p.wrapping_div(q) })
                    .into_dyn(),
            )
        };
    }
    match (a, b) {
        (HostArray::I8(x), HostArray::I8(y)) => trunc!(x, y).map(HostArray::I8),
        (HostArray::I16(x), HostArray::I16(y)) => trunc!(x, y).map(HostArray::I16),
        (HostArray::I32(x), HostArray::I32(y)) => trunc!(x, y).map(HostArray::I32),
        (HostArray::I64(x), HostArray::I64(y)) => trunc!(x, y).map(HostArray::I64),
        _ => None,
    }
}
