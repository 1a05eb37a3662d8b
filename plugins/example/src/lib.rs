//! # tessera-plugin-example: the `loops` backend
//!
//! A complete third-party backend, written only against `tessera-core` (the protocol), that
//! ships two ways from this one crate:
//!
//! * **statically** — link the `rlib` and register [`LoopBackend`] at run time
//!   (`examples/custom_backend.rs` in the tessera repository does this);
//! * **as a plugin** — the `cdylib` (`libtessera_plugin_example.so`) exports the plugin ABI
//!   through [`tessera_plugin::export_plugin!`]; an application loads it with
//!   `TESSERA_PLUGINS=path/libtessera_plugin_example.so` or `plugins = [...]` in
//!   `tessera.toml` and selects it with `TESSERA_ARRAY_BACKEND=loops`, without
//!   recompiling.
//!
//! `loops` keeps its chunks as host arrays and computes everything itself with plain
//! loops over the protocol's definitions: generators and structural ops read through the
//! protocol's index maps ([`layout`]), reductions and products fold element by element
//! ([`reduce`]), and elementwise work — unary, binary and `where` — applies the scalar
//! definitions in `tessera_core::program`. It shares no kernel with the CPU reference, so
//! the conformance suite compares two independent implementations. It implements
//! elementwise ops for `bool`, `int64`, `float32` and `float64` only, and declares every
//! other dtype unsupported in its capabilities (the suite reports those cases as
//! `unsupported`, declared); it has no block QR/SVD (`Capabilities::BLOCK_LINALG`). It
//! runs fused programs with the protocol's default op-by-op evaluator, i.e. through its
//! own kernels.

pub mod layout;
pub mod reduce;

use std::any::Any;
use std::sync::Arc;

use ndarray::{ArrayD, Zip};
use tessera_core::backend::downcast_chunk;
use tessera_core::program::{ArrayOp, BinaryOp, IndexMap, ReduceOp, UnaryOp};
use tessera_core::random::RandomSpec;
use tessera_core::{
    ArrayBackend, AxisSlice, Capabilities, Chunk, ChunkData, DType, HostArray, Result, Scalar,
};

/// The registry name.
pub const NAME: &str = "loops";

/// The dtypes the elementwise kernels handle.
const KERNEL_DTYPES: [DType; 4] = [DType::Bool, DType::I64, DType::F32, DType::F64];

/// A chunk: a host array owned by `loops`.
#[derive(Debug)]
struct LoopChunk(HostArray);

impl ChunkData for LoopChunk {
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

/// The backend.
#[derive(Debug)]
pub struct LoopBackend {
    caps: Capabilities,
}

impl Default for LoopBackend {
    fn default() -> LoopBackend {
        LoopBackend::new()
    }
}

impl LoopBackend {
    /// The backend with its capabilities.
    pub fn new() -> LoopBackend {
        let others: Vec<DType> = DType::ALL
            .iter()
            .copied()
            .filter(|d| !KERNEL_DTYPES.contains(d))
            .collect();
        let mut caps = Capabilities::all("host");
        for op in UnaryOp::ALL {
            caps = caps.without(op, &others);
        }
        for op in BinaryOp::ALL {
            caps = caps.without(op, &others);
        }
        LoopBackend {
            caps: caps
                .without(ArrayOp::Where, &others)
                .without_ops(Capabilities::BLOCK_LINALG),
        }
    }

    /// The host array inside one of our chunks.
    fn inner<'a>(&self, c: &'a Chunk, op: &str) -> Result<&'a HostArray> {
        Ok(&downcast_chunk::<LoopChunk>(c, NAME, op)?.0)
    }

    fn host(&self, c: &Chunk, op: &str) -> Result<HostArray> {
        self.inner(c, op).cloned()
    }

    fn store(&self, h: HostArray) -> Result<Chunk> {
        Ok(Arc::new(LoopChunk(h.into_standard_layout())))
    }
}

/// Applies `f` elementwise to two arrays of one shape.
fn zip2<A: Copy, B: Copy, C>(a: &ArrayD<A>, b: &ArrayD<B>, f: impl Fn(A, B) -> C) -> ArrayD<C> {
    Zip::from(a).and(b).map_collect(|&x, &y| f(x, y))
}

/// Comparisons and predicates compute 0/1 in the operand type; bool results convert.
fn finish(out: HostArray, result: DType) -> HostArray {
    out.cast(result)
}

impl ArrayBackend for LoopBackend {
    fn name(&self) -> &str {
        NAME
    }
    fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    // ---- elementwise: the scalar definitions, one element at a time ---------------------

    fn unary(&self, op: UnaryOp, x: &Chunk) -> Result<Chunk> {
        self.caps.check(NAME, op, x.dtype())?;
        let result = op.result_dtype(x.dtype());
        let out = match self.host(x, op.name())? {
            HostArray::F64(a) => HostArray::F64(a.mapv(|v| op.apply_f64(v))),
            HostArray::F32(a) => HostArray::F32(a.mapv(|v| op.apply_f32(v))),
            HostArray::I64(a) => HostArray::I64(a.mapv(|v| op.apply_i64(v))),
            HostArray::Bool(a) => HostArray::I64(a.mapv(|v| op.apply_i64(i64::from(v)))),
            other => unreachable!("capabilities exclude {}", other.dtype()),
        };
        self.store(finish(out, result))
    }

    fn binary(&self, op: BinaryOp, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        self.caps.check(NAME, op, a.dtype())?;
        if a.shape() != b.shape() || a.dtype() != b.dtype() {
            return Err(tessera_core::Error::shape(
                op.name(),
                format!(
                    "operands {}{:?} and {}{:?}: need one shape and dtype",
                    a.dtype(),
                    a.shape(),
                    b.dtype(),
                    b.shape()
                ),
            ));
        }
        let result = op.result_dtype(a.dtype());
        let out = match (self.host(a, op.name())?, self.host(b, op.name())?) {
            (HostArray::F64(x), HostArray::F64(y)) => {
                HostArray::F64(zip2(&x, &y, |p, q| op.apply_f64(p, q)))
            }
            (HostArray::F32(x), HostArray::F32(y)) => {
                HostArray::F32(zip2(&x, &y, |p, q| op.apply_f32(p, q)))
            }
            (HostArray::I64(x), HostArray::I64(y)) => {
                HostArray::I64(zip2(&x, &y, |p, q| op.apply_i64(p, q)))
            }
            (HostArray::Bool(x), HostArray::Bool(y)) => HostArray::I64(zip2(&x, &y, |p, q| {
                op.apply_i64(i64::from(p), i64::from(q))
            })),
            (x, _) => unreachable!("capabilities exclude {}", x.dtype()),
        };
        self.store(finish(out, result))
    }

    fn where_(&self, cond: &Chunk, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        self.caps.check(NAME, ArrayOp::Where, a.dtype())?;
        let c = self.host(cond, "where")?.into_typed::<bool>()?;
        let pick = |x: HostArray, y: HostArray| -> HostArray {
            macro_rules! sel {
                ($v:ident, $p:expr, $q:expr) => {
                    HostArray::$v(Zip::from(&c).and(&$p).and(&$q).map_collect(|&k, &p, &q| {
                        if k {
                            p
                        } else {
                            q
                        }
                    }))
                };
            }
            match (x, y) {
                (HostArray::F64(p), HostArray::F64(q)) => sel!(F64, p, q),
                (HostArray::F32(p), HostArray::F32(q)) => sel!(F32, p, q),
                (HostArray::I64(p), HostArray::I64(q)) => sel!(I64, p, q),
                (HostArray::Bool(p), HostArray::Bool(q)) => sel!(Bool, p, q),
                (x, _) => unreachable!("capabilities exclude {}", x.dtype()),
            }
        };
        self.store(pick(self.host(a, "where")?, self.host(b, "where")?))
    }

    // ---- storage, generators and structure: reads through index maps -------------------

    fn from_host(&self, data: &HostArray) -> Result<Chunk> {
        self.store(data.clone())
    }
    fn to_host(&self, chunk: &Chunk) -> Result<HostArray> {
        self.host(chunk, "to_host")
    }
    fn full(&self, shape: &[usize], value: Scalar) -> Result<Chunk> {
        self.store(HostArray::full(shape, value, value.dtype()))
    }
    fn random(&self, spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<Chunk> {
        self.store(layout::random(spec, map, shape)?)
    }
    fn iota(&self, map: &IndexMap, axis: usize, shape: &[usize]) -> Result<Chunk> {
        self.store(layout::iota(map, axis, shape)?)
    }
    fn cast(&self, x: &Chunk, to: DType) -> Result<Chunk> {
        self.store(self.inner(x, "astype")?.cast(to))
    }
    fn slice(&self, x: &Chunk, slices: &[AxisSlice]) -> Result<Chunk> {
        let x = self.inner(x, "slice")?;
        let (map, shape) = AxisSlice::map(x.shape(), slices)?;
        self.store(layout::gather("slice", x, &map, &shape)?)
    }
    fn transpose(&self, x: &Chunk, perm: &[usize]) -> Result<Chunk> {
        self.store(layout::transpose(self.inner(x, "transpose")?, perm)?)
    }
    fn reshape(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        self.store(self.inner(x, "reshape")?.reshape(shape)?)
    }
    fn broadcast_to(&self, x: &Chunk, shape: &[usize]) -> Result<Chunk> {
        self.store(layout::broadcast_to(self.inner(x, "broadcast_to")?, shape)?)
    }
    fn concatenate(&self, parts: &[Chunk], axis: usize) -> Result<Chunk> {
        let hosts = parts
            .iter()
            .map(|p| self.host(p, "concatenate"))
            .collect::<Result<Vec<_>>>()?;
        self.store(layout::concatenate(&hosts, axis)?)
    }

    // ---- reductions and products: element-by-element folds ------------------------------

    fn reduce(&self, x: &Chunk, op: ReduceOp, axes: &[usize]) -> Result<Chunk> {
        self.store(reduce::reduce(self.inner(x, op.name())?, op, axes)?)
    }
    fn matmul(&self, a: &Chunk, b: &Chunk) -> Result<Chunk> {
        self.store(reduce::matmul(
            self.inner(a, "matmul")?,
            self.inner(b, "matmul")?,
        )?)
    }
}

tessera_plugin::export_plugin!(LoopBackend::new());
