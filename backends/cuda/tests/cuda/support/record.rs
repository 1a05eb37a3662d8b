//! A backend that runs every program-shaped primitive as the program the CUDA backend would
//! generate a kernel for (`tessera_core::program::primitives`), executes it on the CPU backend, and
//! records each program with its inputs and the CPU's outputs.
//!
//! Run through the conformance suite it does two things: the suite's verdict checks the
//! primitive-to-program mapping against the reference, and the recording is the set of
//! programs — with the suite's own edge values — that the kernel tests compile with NVRTC
//! and run through the host shim.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use std::any::Any;

use tessera_core::backend::{downcast_chunk, ArrayBackend, Capabilities, Chunk, ChunkData};
use tessera_core::program::primitives as programs;
use tessera_core::program::Program;
use tessera_core::{DType, HostArray, Result, Scalar};
use tessera_cpu::CpuBackend;

/// One program run: its inputs and what the CPU backend returned.
#[derive(Clone)]
pub struct Run {
    pub program: Program,
    pub inputs: Vec<HostArray>,
    pub outputs: Vec<HostArray>,
}

/// The recording backend.
#[derive(Debug)]
pub struct Recorder {
    name: String,
    cpu: CpuBackend,
    caps: Capabilities,
    runs: Arc<Mutex<Vec<Run>>>,
    per_structure: Arc<Mutex<HashMap<String, usize>>>,
    structures: Arc<Mutex<Vec<Program>>>,
    keep: usize,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.program.describe())
    }
}

/// A recorder's chunk: a CPU chunk under the recorder's name.
#[derive(Debug)]
struct RecChunk(Chunk, String);

impl ChunkData for RecChunk {
    fn dtype(&self) -> DType {
        self.0.dtype()
    }
    fn shape(&self) -> &[usize] {
        self.0.shape()
    }
    fn backend(&self) -> &str {
        &self.1
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Inputs larger than this are not kept (the suite's cases are small; the API cases'
/// larger blocks add time, not coverage).
const MAX_ELEMENTS: usize = 20_000;

impl Recorder {
    /// A recorder registered as `name`, keeping at most `keep` runs of each program
    /// structure (the same ops on other shapes and values).
    pub fn new(name: &str, keep: usize) -> Recorder {
        Recorder {
            name: name.to_string(),
            cpu: CpuBackend::new(),
            caps: Capabilities::all("host"),
            runs: Arc::default(),
            per_structure: Arc::default(),
            structures: Arc::default(),
            keep,
        }
    }

    /// One program of each structure seen, whatever its size (data or not).
    pub fn structures(&self) -> Vec<Program> {
        self.structures.lock().expect("recorder lock").clone()
    }

    /// Everything recorded so far.
    pub fn runs(&self) -> Vec<Run> {
        self.runs.lock().expect("recorder lock").clone()
    }

    fn wrap(&self, c: Chunk) -> Chunk {
        Arc::new(RecChunk(c, self.name.clone()))
    }

    fn inner(&self, c: &Chunk, op: &str) -> Result<Chunk> {
        Ok(downcast_chunk::<RecChunk>(c, &self.name, op)?.0.clone())
    }

    fn inners(&self, cs: &[Chunk], op: &str) -> Result<Vec<Chunk>> {
        cs.iter().map(|c| self.inner(c, op)).collect()
    }
}

/// A structure key: the hashes of the program's kernel texts, which depend on its
/// structure only (ops, dtypes, dimensions, reduced axes), never on its values.
fn structure(p: &Program) -> String {
    (0..p.outputs.len())
        .map(|o| match tessera_cuda::codegen::generate(p, o, 1) {
            Ok(k) => format!("{:016x}", k.hash),
            Err(e) => e.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

impl ArrayBackend for Recorder {
    fn name(&self) -> &str {
        &self.name
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }
    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.from_host(data)?))
    }
    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        self.cpu.to_host(&self.inner(chunk, "to_host")?)
    }
    tessera_core::program_primitives!();

    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        programs::run_one(self, programs::full(shape, value)?, &[])
    }
    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        programs::run_one(
            self,
            programs::cast(x.dtype(), x.shape(), to)?,
            std::slice::from_ref(x),
        )
    }
    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(self.wrap(self.cpu.reshape(&self.inner(x, "reshape")?, shape)?))
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
                .matmul(&self.inner(a, "matmul")?, &self.inner(b, "matmul")?)?,
        ))
    }
    fn qr(&self, x: &Chunk) -> Result<(Chunk, Chunk)> {
        let (q, r) = self.cpu.qr(&self.inner(x, "qr")?)?;
        Ok((self.wrap(q), self.wrap(r)))
    }
    fn svd(&self, x: &Chunk) -> Result<(Chunk, Chunk, Chunk)> {
        let (u, s, vt) = self.cpu.svd(&self.inner(x, "svd")?)?;
        Ok((self.wrap(u), self.wrap(s), self.wrap(vt)))
    }
    fn execute(&self, program: &Program, inputs: &[Chunk]) -> Result<Vec<Chunk>> {
        let inputs = self.inners(inputs, "execute")?;
        let out = self.cpu.execute(program, &inputs)?;
        let small = inputs
            .iter()
            .all(|c| c.shape().iter().product::<usize>() <= MAX_ELEMENTS)
            && program.shape.iter().product::<usize>() <= MAX_ELEMENTS;
        let key = structure(program);
        let mut seen = self.per_structure.lock().expect("recorder lock");
        if !seen.contains_key(&key) {
            self.structures
                .lock()
                .expect("recorder lock")
                .push(program.clone());
        }
        let count = seen.entry(key).or_insert(0);
        if small && *count < self.keep {
            *count += 1;
            let inputs = inputs
                .iter()
                .map(|c| self.cpu.to_host(c))
                .collect::<Result<_>>()?;
            let outputs = out
                .iter()
                .map(|c| self.cpu.to_host(c))
                .collect::<Result<_>>()?;
            self.runs.lock().expect("recorder lock").push(Run {
                program: program.clone(),
                inputs,
                outputs,
            });
        }
        Ok(out.into_iter().map(|c| self.wrap(c)).collect())
    }
}
