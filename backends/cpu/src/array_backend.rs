//! The `cpu` backend type and its chunk type.

use std::any::Any;
use std::sync::Arc;

use tessera_core::backend::{downcast_chunk, ArrayBackend, Capabilities, Chunk, ChunkData};
use tessera_core::program::{Program, ScanOp};
use tessera_core::{DType, HostArray, Result, Scalar};

use crate::fused::{self, kernels};

/// A chunk on the CPU backend: a C-contiguous host array.
#[derive(Debug)]
pub struct CpuChunk {
    data: HostArray,
}

impl CpuChunk {
    /// Wraps a host array (made C-contiguous).
    pub fn new(data: HostArray) -> CpuChunk {
        CpuChunk {
            data: data.into_standard_layout(),
        }
    }

    /// The data.
    pub fn data(&self) -> &HostArray {
        &self.data
    }
}

impl ChunkData for CpuChunk {
    fn dtype(&self) -> DType {
        self.data.dtype()
    }
    fn shape(&self) -> &[usize] {
        self.data.shape()
    }
    fn backend(&self) -> &str {
        "cpu"
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The reference CPU backend.
#[derive(Debug)]
pub struct CpuBackend {
    caps: Capabilities,
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl CpuBackend {
    /// A new instance (stateless; cheap).
    pub fn new() -> CpuBackend {
        CpuBackend {
            caps: Capabilities::all("host").with_native_programs(),
        }
    }

    /// Borrows the host array inside one of this backend's chunks.
    pub fn host<'a>(&self, chunk: &'a Chunk, op: &str) -> Result<&'a HostArray> {
        Ok(downcast_chunk::<CpuChunk>(chunk, "cpu", op)?.data())
    }

    /// Borrows the host arrays inside several of this backend's chunks.
    fn hosts<'a>(&self, chunks: &'a [Chunk], op: &str) -> Result<Vec<&'a HostArray>> {
        chunks.iter().map(|c| self.host(c, op)).collect()
    }

    fn wrap(data: HostArray) -> Chunk {
        Arc::new(CpuChunk::new(data))
    }
}

impl ArrayBackend for CpuBackend {
    fn name(&self) -> &str {
        "cpu"
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        Ok(CpuBackend::wrap(data.clone()))
    }

    fn from_host_owned(&self, data: HostArray) -> Result<Chunk> {
        Ok(CpuBackend::wrap(data))
    }

    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        Ok(self.host(chunk, "to_host")?.clone())
    }

    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        Ok(CpuBackend::wrap(HostArray::full(
            shape,
            value,
            value.dtype(),
        )))
    }

    tessera_core::program_primitives!();

    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        Ok(CpuBackend::wrap(self.host(x, "astype")?.cast(to)))
    }

    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(CpuBackend::wrap(self.host(x, "reshape")?.reshape(shape)?))
    }

    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk> {
        let hosts: Vec<&HostArray> = parts
            .iter()
            .map(|p| self.host(p, "concatenate"))
            .collect::<Result<_>>()?;
        Ok(CpuBackend::wrap(kernels::concatenate(&hosts, axis)?))
    }

    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        Ok(CpuBackend::wrap(kernels::matmul(
            self.host(a, "matmul")?,
            self.host(b, "matmul")?,
        )?))
    }

    fn matmul_program(
        &self,
        program: &Program,
        inputs: &[Chunk],
        other: &Chunk,
        program_left: bool,
    ) -> Result<Chunk> {
        let hosts = self.hosts(inputs, "matmul")?;
        let other = self.host(other, "matmul")?;
        crate::stream::matmul_program(program, &hosts, other, program_left).map(CpuBackend::wrap)
    }

    fn sketch_program(&self, program: &Program, inputs: &[Chunk], omega: &Chunk) -> Result<Chunk> {
        let hosts = self.hosts(inputs, "sketch")?;
        let omega = self.host(omega, "sketch")?;
        crate::stream::sketch_program(program, &hosts, omega).map(CpuBackend::wrap)
    }

    fn moments_program(
        &self,
        program: &Program,
        inputs: &[Chunk],
        axes: &[usize],
    ) -> Result<Chunk> {
        let hosts = self.hosts(inputs, "moments")?;
        fused::moments(program, &hosts, axes).map(CpuBackend::wrap)
    }

    fn host_view<'a>(&self, chunk: &'a Chunk) -> Option<&'a HostArray> {
        self.host(chunk, "to_host").ok()
    }

    fn sort(&self, x: &Chunk, axis: usize, descending: bool) -> Result<Chunk> {
        Ok(CpuBackend::wrap(
            self.host(x, "sort")?.sort(axis, descending)?,
        ))
    }

    fn scan(&self, x: &Chunk, op: ScanOp, axis: usize) -> Result<Chunk> {
        Ok(CpuBackend::wrap(self.host(x, op.name())?.scan(op, axis)?))
    }

    fn qr(&self, x: &Chunk) -> Result<(Chunk, Chunk)> {
        let (q, r) = crate::linalg::qr(self.host(x, "qr")?)?;
        Ok((CpuBackend::wrap(q), CpuBackend::wrap(r)))
    }

    fn svd(&self, x: &Chunk) -> Result<(Chunk, Chunk, Chunk)> {
        let (u, s, vt) = crate::linalg::svd(self.host(x, "svd")?)?;
        Ok((
            CpuBackend::wrap(u),
            CpuBackend::wrap(s),
            CpuBackend::wrap(vt),
        ))
    }

    fn execute(&self, program: &Program, inputs: &[Chunk]) -> Result<Vec<Chunk>> {
        for o in &program.outputs {
            if let Some(r) = &o.reduce {
                r.op.check_identity(&program.shape, &r.axes)?;
            }
        }
        let hosts = self.hosts(inputs, "execute")?;
        fused::run(program, &hosts).map(|outs| outs.into_iter().map(CpuBackend::wrap).collect())
    }
}
