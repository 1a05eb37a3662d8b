//! A deliberately broken backend, so the suite can prove that it catches breakage.
//!
//! [`BrokenBackend`] stores its data in CPU chunks wrapped in its own chunk type and
//! delegates every primitive to the CPU backend, except for three planted faults:
//!
//! 1. `subtract` on `float64` corrupts the first element of its result (a wrong kernel);
//! 2. its capabilities declare `cos` on `float64` unsupported, yet it computes it anyway
//!    (a lying capability table: a declared gap must raise the typed error);
//! 3. its capabilities declare `tanh` on `float32` unsupported and it refuses it properly
//!    (an honest gap: reported `unsupported`, which is not a failure).
//!
//! Fused programs run on the CPU backend untouched, so the protocol cases of (1) and (2)
//! must fail, the cases of (3) must be `unsupported`, and everything else must pass. The
//! crate's tests assert exactly that, and that the rerun command in a failure reproduces
//! it. The runner knows it as `--backend selftest-broken`.

use std::any::Any;
use std::sync::Arc;

use tessera_core::program::{BinaryOp, IndexMap, Program, ReduceOp, UnaryOp};
use tessera_core::random::RandomSpec;
use tessera_core::{
    ArrayBackend, AxisSlice, BackendRef, Capabilities, Chunk, ChunkData, DType, HostArray, Result,
    Scalar,
};
use tessera_cpu::CpuBackend;

/// The registered name of [`BrokenBackend`].
pub const NAME: &str = "selftest-broken";

/// A chunk of the broken backend: a CPU chunk under another owner's name.
#[derive(Debug)]
pub struct BrokenChunk(Chunk);

impl ChunkData for BrokenChunk {
    fn dtype(&self) -> DType {
        self.0.dtype()
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn backend(&self) -> &str {
        NAME
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The backend with planted faults (see the module docs).
#[derive(Debug)]
pub struct BrokenBackend {
    cpu: CpuBackend,
    caps: Capabilities,
}

impl Default for BrokenBackend {
    fn default() -> Self {
        BrokenBackend::new()
    }
}

impl BrokenBackend {
    /// A new instance.
    pub fn new() -> BrokenBackend {
        BrokenBackend {
            cpu: CpuBackend::new(),
            caps: Capabilities::all("host")
                .with_native_programs()
                .without("cos", &[DType::F64])
                .without("tanh", &[DType::F32]),
        }
    }

    fn inner<'a>(&self, c: &'a Chunk, op: &str) -> Result<&'a Chunk> {
        Ok(&tessera_core::backend::downcast_chunk::<BrokenChunk>(c, NAME, op)?.0)
    }

    fn inners(&self, cs: &[Chunk], op: &str) -> Result<Vec<Chunk>> {
        cs.iter().map(|c| self.inner(c, op).cloned()).collect()
    }

    fn wrap(c: Chunk) -> Chunk {
        Arc::new(BrokenChunk(c))
    }
}

/// The broken backend as a shared handle.
pub fn broken() -> BackendRef {
    Arc::new(BrokenBackend::new())
}

impl ArrayBackend for BrokenBackend {
    fn name(&self) -> &str {
        NAME
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.from_host(data)?))
    }
    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        self.cpu.to_host(self.inner(chunk, "to_host")?)
    }
    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.full(shape, value)?))
    }
    fn random(&self, spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.random(spec, map, shape)?))
    }
    fn iota(&self, map: &IndexMap, axis: usize, shape: &[usize]) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.iota(map, axis, shape)?))
    }
    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.cast(self.inner(x, "astype")?, to)?))
    }
    fn unary(&self, op: UnaryOp, x: &Chunk) -> Result<Chunk> {
        // Fault 3 (honest): refuse what is declared unsupported...
        if op == UnaryOp::Tanh {
            self.caps.check(NAME, op.name(), x.dtype())?;
        }
        // ...fault 2 (lying): but compute `cos` on float64 although it is declared missing.
        Ok(Self::wrap(self.cpu.unary(op, self.inner(x, op.name())?)?))
    }
    fn binary(&self, op: BinaryOp, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let out = self
            .cpu
            .binary(op, self.inner(a, op.name())?, self.inner(b, op.name())?)?;
        if op != BinaryOp::Sub || out.dtype() != DType::F64 || out.shape().contains(&0) {
            return Ok(Self::wrap(out));
        }
        // Fault 1: a wrong first element.
        let mut h = self.cpu.to_host(&out)?.into_typed::<f64>()?;
        if let Some(first) = h.iter_mut().next() {
            *first = if first.is_finite() {
                *first + 1.0
            } else {
                12345.0
            };
        }
        Ok(Self::wrap(self.cpu.from_host(&HostArray::F64(h))?))
    }
    fn where_(&self, cond: &Chunk, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.where_(
            self.inner(cond, "where")?,
            self.inner(a, "where")?,
            self.inner(b, "where")?,
        )?))
    }
    fn slice(&self, x: &Chunk, slices: &[AxisSlice]) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.slice(self.inner(x, "slice")?, slices)?))
    }
    fn transpose(&self, x: &Chunk, perm: &[usize]) -> Result<Chunk> {
        Ok(Self::wrap(
            self.cpu.transpose(self.inner(x, "transpose")?, perm)?,
        ))
    }
    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(Self::wrap(
            self.cpu.reshape(self.inner(x, "reshape")?, shape)?,
        ))
    }
    fn broadcast_to(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(Self::wrap(
            self.cpu
                .broadcast_to(self.inner(x, "broadcast_to")?, shape)?,
        ))
    }
    fn reduce(&self, x: &Chunk, op: ReduceOp, axes: &[usize]) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.reduce(
            self.inner(x, op.name())?,
            op,
            axes,
        )?))
    }
    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk> {
        Ok(Self::wrap(
            self.cpu
                .concatenate(&self.inners(parts, "concatenate")?, axis)?,
        ))
    }
    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        Ok(Self::wrap(self.cpu.matmul(
            self.inner(a, "matmul")?,
            self.inner(b, "matmul")?,
        )?))
    }
    fn qr(&self, x: &Chunk) -> Result<(Chunk, Chunk)> {
        let (q, r) = self.cpu.qr(self.inner(x, "qr")?)?;
        Ok((Self::wrap(q), Self::wrap(r)))
    }
    fn svd(&self, x: &Chunk) -> Result<(Chunk, Chunk, Chunk)> {
        let (u, s, vt) = self.cpu.svd(self.inner(x, "svd")?)?;
        Ok((Self::wrap(u), Self::wrap(s), Self::wrap(vt)))
    }
    fn execute(&self, program: &Program, inputs: &[Chunk]) -> Result<Vec<Chunk>> {
        let out = self
            .cpu
            .execute(program, &self.inners(inputs, "execute")?)?;
        Ok(out.into_iter().map(Self::wrap).collect())
    }
}

/// Why a planted fault was not caught, if one was not: compares a report of the broken
/// backend with what the suite must find. Used by the crate's tests and `--self-test`.
pub fn verify(report: &crate::Report) -> std::result::Result<(), String> {
    use crate::Outcome;
    let mut problems = Vec::new();
    for c in &report.cases {
        let planted_fail =
            c.id.starts_with("subtract/float64/") || c.id.starts_with("cos/float64/");
        // The user-level `cos`/`tanh` on dtypes computed in float64/float32 reach the
        // declared gaps too, and are refused before anything runs.
        let planted_gap = c.id.starts_with("tanh/float32/")
            || c.id.starts_with("api.tanh/")
            || c.id.starts_with("api.cos/");
        let ok = match c.outcome {
            Outcome::Fail => planted_fail,
            Outcome::Unsupported => planted_gap,
            Outcome::Pass => {
                // Only an empty `subtract` result may escape (there is nothing to corrupt).
                // The user-level cases pass on dtypes that do not reach the gaps.
                !c.id.starts_with("tanh/float32/")
                    && !c.id.starts_with("cos/float64/")
                    && (!planted_fail || has_empty_axis(&c.inputs))
            }
            Outcome::Error => false,
        };
        if !ok {
            problems.push(format!(
                "{} ended {}: {}",
                c.id,
                c.outcome.name(),
                c.message
            ));
        }
    }
    let fails = report.count(&Outcome::Fail);
    if fails == 0 {
        problems.push("no case failed".into());
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// True when a case's input description shows an empty axis (`[0, ...]` or `[..., 0]`).
fn has_empty_axis(inputs: &str) -> bool {
    inputs.contains("[0") || inputs.contains(", 0")
}
