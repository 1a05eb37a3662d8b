//! [`SparseBackend`]: the array protocol on [`SparseChunk`]s.
//!
//! Elementwise ops work on the union of the operands' explicit entries and on their fill
//! values, with the reference's own kernels applied to those compact 1-d arrays — so the
//! numerics are the CPU backend's exactly, and the result is sparse whatever the op
//! (`x + 1` gets fill 1; a comparison against the fill gets fill `false`). Structure and
//! reductions have native kernels ([`crate::structure`], [`crate::reduce`]), matmul is
//! Gustavson's algorithm ([`crate::matmul`]).
//!
//! Densifying happens only where the math needs every element, and [`plan_notes`] says so
//! in `explain()`: dense generators (`random`, coordinates), arg-reductions, matmul with
//! a non-zero left fill or non-finite values, concatenation of chunks whose fills differ.
//!
//! [`plan_notes`]: ArrayBackend::plan_notes

use std::sync::Arc;

use tessera_core::backend::downcast_chunk;
use tessera_core::program::{BinaryOp, IndexMap, Node, Program, ReduceOp, UnaryOp};
use tessera_core::random::RandomSpec;
use tessera_core::{
    ArrayBackend, AxisSlice, Capabilities, Chunk, DType, Error, HostArray, Result, Scalar,
};
use tessera_cpu::CpuBackend;

use crate::chunk::{union, zero, SparseChunk};
use crate::{matmul, reduce, structure, NAME};

/// Where `matmul` densifies.
const MATMUL_NOTE: &str =
    "densified: a left operand with a non-zero fill, or a non-finite value, runs on the dense form";

/// Where `concatenate` densifies.
const CONCATENATE_NOTE: &str = "densified: chunks whose fill values differ are joined densely";

/// The sparse backend.
#[derive(Debug)]
pub struct SparseBackend {
    cpu: CpuBackend,
    caps: Capabilities,
}

impl Default for SparseBackend {
    fn default() -> SparseBackend {
        SparseBackend::new()
    }
}

fn sp<'a>(c: &'a Chunk, op: &str) -> Result<&'a SparseChunk> {
    downcast_chunk::<SparseChunk>(c, NAME, op)
}

fn wrap(s: SparseChunk) -> Chunk {
    Arc::new(s)
}

fn one(s: Scalar) -> HostArray {
    HostArray::full(&[1], s, s.dtype())
}

impl SparseBackend {
    /// The backend (everything but the block QR/SVD kernels; see the module docs for where
    /// it densifies).
    pub fn new() -> SparseBackend {
        SparseBackend {
            cpu: CpuBackend::new(),
            caps: Capabilities::all("host (sparse)").without_ops(Capabilities::BLOCK_LINALG),
        }
    }

    /// Runs a reference op on host arrays of one length.
    fn on_cpu(
        &self,
        inputs: &[HostArray],
        f: &dyn Fn(&CpuBackend, &[Chunk]) -> Result<Chunk>,
    ) -> Result<HostArray> {
        let chunks: Vec<Chunk> = inputs
            .iter()
            .map(|h| self.cpu.from_host(h))
            .collect::<Result<_>>()?;
        self.cpu.to_host(&f(&self.cpu, &chunks)?)
    }

    /// An elementwise op over same-shape sparse chunks: values on the union of explicit
    /// entries, fill from the fills.
    fn elementwise(
        &self,
        op: &str,
        parts: &[&SparseChunk],
        f: &dyn Fn(&CpuBackend, &[Chunk]) -> Result<Chunk>,
    ) -> Result<Chunk> {
        let shape = &parts[0].shape;
        if let Some(p) = parts.iter().find(|p| &p.shape != shape) {
            return Err(Error::shape(
                op,
                format!("operands of shapes {shape:?} and {:?}", p.shape),
            ));
        }
        let lists: Vec<&[u64]> = parts.iter().map(|p| p.idx.as_slice()).collect();
        let at = union(&lists);
        let vals = self.on_cpu(&parts.iter().map(|p| p.gather(&at)).collect::<Vec<_>>(), f)?;
        let fills = self.on_cpu(&parts.iter().map(|p| one(p.fill)).collect::<Vec<_>>(), f)?;
        let fill = fills
            .get_flat(0)
            .ok_or_else(|| Error::Internal("elementwise fill has no element".into()))?;
        Ok(wrap(SparseChunk::from_parts(shape, fill, at, vals)))
    }

    /// The dense reference's answer, stored back sparse (fill 0): a fallback for `op`,
    /// recorded with `why` when it produces a result (an error the reference raises is the
    /// answer, not a fallback).
    fn via_dense(
        &self,
        op: &str,
        why: &str,
        parts: &[&SparseChunk],
        f: &dyn Fn(&CpuBackend, &[Chunk]) -> Result<Chunk>,
    ) -> Result<Chunk> {
        let dense = self.on_cpu(&parts.iter().map(|p| p.to_dense()).collect::<Vec<_>>(), f)?;
        tessera_core::fallback::record(NAME, op, why);
        let fill = zero(dense.dtype());
        Ok(wrap(SparseChunk::from_dense(&dense, fill)))
    }
}

impl ArrayBackend for SparseBackend {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        Ok(wrap(SparseChunk::from_dense(data, zero(data.dtype()))))
    }

    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        Ok(sp(chunk, "to_host")?.to_dense())
    }

    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        Ok(wrap(SparseChunk::filled(shape, value)))
    }

    fn random(&self, spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<Chunk> {
        let dense = self.cpu.to_host(&self.cpu.random(spec, map, shape)?)?;
        self.from_host(&dense)
    }

    fn iota(&self, map: &IndexMap, axis: usize, shape: &[usize]) -> Result<Chunk> {
        let dense = self.cpu.to_host(&self.cpu.iota(map, axis, shape)?)?;
        self.from_host(&dense)
    }

    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        self.elementwise("astype", &[sp(x, "astype")?], &|c, v| c.cast(&v[0], to))
    }

    fn unary(&self, op: UnaryOp, x: &Chunk) -> Result<Chunk> {
        self.elementwise(op.name(), &[sp(x, op.name())?], &|c, v| c.unary(op, &v[0]))
    }

    fn binary(&self, op: BinaryOp, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let parts = [sp(a, op.name())?, sp(b, op.name())?];
        self.elementwise(op.name(), &parts, &|c, v| c.binary(op, &v[0], &v[1]))
    }

    fn where_(&self, cond: &Chunk, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let parts = [sp(cond, "where")?, sp(a, "where")?, sp(b, "where")?];
        self.elementwise("where", &parts, &|c, v| c.where_(&v[0], &v[1], &v[2]))
    }

    fn slice(&self, x: &Chunk, slices: &[AxisSlice]) -> Result<Chunk> {
        Ok(wrap(structure::slice(sp(x, "slice")?, slices)?))
    }

    fn transpose(&self, x: &Chunk, perm: &[usize]) -> Result<Chunk> {
        Ok(wrap(structure::transpose(sp(x, "transpose")?, perm)?))
    }

    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(wrap(structure::reshape(sp(x, "reshape")?, shape)?))
    }

    fn broadcast_to(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        Ok(wrap(structure::broadcast_to(
            sp(x, "broadcast_to")?,
            shape,
        )?))
    }

    fn reduce(&self, x: &Chunk, op: ReduceOp, axes: &[usize]) -> Result<Chunk> {
        let s = sp(x, op.name())?;
        if axes.iter().any(|&a| a >= s.shape.len()) || !reduce::handles(s, op, axes) {
            // Out-of-range axes, empty min/max, arg-reductions: the reference decides.
            return self.via_dense(
                op.name(),
                "densified: positional, runs on the dense chunk",
                &[s],
                &|c, v| c.reduce(&v[0], op, axes),
            );
        }
        let mut axes = axes.to_vec();
        axes.sort_unstable();
        axes.dedup();
        Ok(wrap(reduce::reduce(s, op, &axes)?))
    }

    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk> {
        let ps: Vec<&SparseChunk> = parts
            .iter()
            .map(|p| sp(p, "concatenate"))
            .collect::<Result<_>>()?;
        let Some(first) = ps.first() else {
            return Err(Error::invalid("concatenate", "no chunks to join"));
        };
        let same_fill = ps
            .iter()
            .all(|p| crate::chunk::same_scalar(p.fill, first.fill));
        let compatible = ps.iter().all(|p| {
            p.shape.len() == first.shape.len()
                && axis < p.shape.len()
                && p.shape
                    .iter()
                    .zip(&first.shape)
                    .enumerate()
                    .all(|(a, (x, y))| a == axis || x == y)
        });
        if same_fill && compatible {
            return Ok(wrap(structure::concatenate(&ps, axis)?));
        }
        // Different fills (or an error the reference words): join densely.
        self.via_dense("concatenate", CONCATENATE_NOTE, &ps, &|c, v| {
            c.concatenate(v, axis)
        })
    }

    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        let (x, y) = (sp(a, "matmul")?, sp(b, "matmul")?);
        let shapes_ok = x.shape.len() == 2 && y.shape.len() == 2 && x.shape[1] == y.shape[0];
        if shapes_ok && x.dtype() == y.dtype() && matmul::applies(x, y) {
            return Ok(wrap(matmul::matmul(x, y)));
        }
        self.via_dense("matmul", MATMUL_NOTE, &[x, y], &|c, v| {
            c.matmul(&v[0], &v[1])
        })
    }

    fn primitive_note(&self, op: &str) -> Option<String> {
        match op {
            "matmul" => Some(format!("matmul may be {MATMUL_NOTE}")),
            "concatenate" => Some(format!("concatenate may be {CONCATENATE_NOTE}")),
            _ => None,
        }
    }

    fn plan_notes(&self, program: &Program) -> Vec<String> {
        let mut notes = Vec::new();
        for n in &program.nodes {
            let note = match n {
                Node::Random { .. } => {
                    "densifies: a dense random generator stores every element (use tessera_sparse::random for a sparse one)"
                }
                Node::Index { .. } => "densifies: coordinates (arange, eye, ...) store every element",
                _ => continue,
            };
            if !notes.iter().any(|x: &String| x == note) {
                notes.push(note.to_string());
            }
        }
        for o in &program.outputs {
            if let Some(r) = &o.reduce {
                if matches!(r.op, ReduceOp::ArgMin | ReduceOp::ArgMax) {
                    notes.push(format!(
                        "densifies: {} runs on the dense chunk (positional)",
                        r.op.name()
                    ));
                }
            }
        }
        notes
    }
}
