//! Lazy chunked arrays: the user API.
//!
//! An [`Array`] is a node in a lazy graph with a shape, dtype, chunk grid and the backend
//! its chunks live on (fixed when it is created: the backend follows the data, not the
//! current config). Nothing runs until [`Array::compute`] or [`Array::persist`]: then the
//! graph is lowered to one task per output chunk (see [`crate::exec`]), with every
//! blockwise chain — elementwise ops, slices, transposes, broadcasts and a reduction
//! epilogue — fused into a single [`crate::program::Program`] per chunk.

mod creation;
mod elementwise;
mod indexing;
mod linalg;
mod map_blocks;
mod reduction;
mod structure;

pub use creation::RandomState;
pub(crate) use indexing::compose as compose_maps;
pub use indexing::Index;
pub(crate) use map_blocks::BlockFn;
pub use map_blocks::{BackendBlockFn, HostBlockFn};

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::backend::{BackendRef, Chunk};
use crate::chunks::{format_bytes, numel, Chunks};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::host::HostArray;
use crate::program::{AxisMap, BinaryOp, ReduceOp, UnaryOp};
use crate::random::RandomSpec;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A lazy, chunked n-d array on one backend.
#[derive(Clone)]
pub struct Array {
    pub(crate) node: Arc<Node>,
}

/// One node of the lazy graph.
pub(crate) struct Node {
    pub id: u64,
    pub op: Op,
    pub dtype: DType,
    pub chunks: Chunks,
    pub backend: BackendRef,
}

/// How a [`Combine`](Op::Combine) folds partial results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fold {
    /// Fold with a binary op.
    Binary(BinaryOp),
    /// Arg-reduction fold over (values, indices); `out` 0 = values, 1 = indices.
    Arg { max: bool, out: usize },
}

/// The operation producing a node.
pub(crate) enum Op {
    /// Every element equals the scalar.
    Const(Scalar),
    /// Counter-based random values.
    Random(RandomSpec),
    /// The `int64` coordinate along `axis`.
    Iota { axis: usize },
    /// Materialised chunks, in C order of the grid.
    Stored(Arc<Vec<Chunk>>),
    /// `astype`.
    Cast(Array),
    /// Unary op.
    Unary(UnaryOp, Array),
    /// Binary op on same-shape operands.
    Binary(BinaryOp, Array, Array),
    /// Floor division.
    FloorDiv(Array, Array),
    /// `where`.
    Where(Array, Array, Array),
    /// Affine view: one [`AxisMap`] per *input* axis, in this node's coordinates.
    View(Array, Vec<AxisMap>),
    /// Concatenation along an axis (inputs share dtype).
    Concat(Vec<Array>, usize),
    /// Reduce each input block over `axes` (kept, size 1 per block).
    ReduceBlocks {
        input: Array,
        op: ReduceOp,
        axes: Vec<usize>,
    },
    /// Per input block, its sum and `M2` over `axes` packed along the first of them (2
    /// elements per block there, 1 along the other reduced axes; see
    /// [`crate::program::moments_with_primitives`]): the partials of `var`.
    Moments { input: Array, axes: Vec<usize> },
    /// Tree level: fold groups of `split` blocks along `axes`.
    Combine {
        inputs: Vec<Array>,
        axes: Vec<usize>,
        split: Vec<usize>,
        fold: Fold,
    },
    /// Each element is the start offset, along `axis`, of the block of `like` it stands for.
    BlockStart { like: Chunks, axis: usize },
    /// Each element is the number of elements, over `axes`, of the block of `like` it
    /// stands for (as the array's dtype).
    BlockCount { like: Chunks, axes: Vec<usize> },
    /// New chunk boundaries, same data.
    Rechunk(Array),
    /// C-order reshape (input chunked along axis 0 only).
    Reshape(Array),
    /// Matrix product of 2-d arrays.
    Matmul(Array, Array),
    /// Per row block `b` of `x` (one column chunk) and the one-chunk `omega`, the block
    /// `[x_b Ω ; x_bᵀ x_b Ω]`, stacked along axis 0 ([`crate::linalg::sketch`]).
    Sketch(Array, Array),
    /// One product of a [`Op::Sketch`] array `packed`: `x Ω` (rows `0..r_b` of each
    /// packed block, chunked like `x`'s rows) or, when `xty`, `xᵀ x Ω` (the sum over
    /// blocks of rows `r_b..r_b + n`; one chunk).
    SketchPart { packed: Array, xty: bool },
    /// A user function per block.
    MapBlocks(Vec<Array>, map_blocks::BlockFn),
    /// Move to another backend.
    Transfer(Array),
}

impl Array {
    /// An error naming both backends unless `other` lives on `self`'s backend (`what`
    /// names the two in the message: "operands", "x and omega").
    pub(crate) fn require_same_backend(&self, other: &Array, op: &str, what: &str) -> Result<()> {
        if self.backend().same_as(other.backend().as_ref()) {
            return Ok(());
        }
        Err(Error::invalid(
            op,
            format!(
                "{what} live on '{}' and '{}'; move one with to_backend",
                self.backend_name(),
                other.backend_name()
            ),
        ))
    }
}

impl Array {
    pub(crate) fn new(op: Op, dtype: DType, chunks: Chunks, backend: BackendRef) -> Array {
        Array {
            node: Arc::new(Node {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                op,
                dtype,
                chunks,
                backend,
            }),
        }
    }

    /// Shape.
    pub fn shape(&self) -> Vec<usize> {
        self.node.chunks.shape()
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> usize {
        self.node.chunks.ndim()
    }

    /// Number of elements.
    pub fn size(&self) -> usize {
        numel(&self.shape())
    }

    /// Element dtype.
    pub fn dtype(&self) -> DType {
        self.node.dtype
    }

    /// Chunk grid.
    pub fn chunks(&self) -> &Chunks {
        &self.node.chunks
    }

    /// Total bytes (dense).
    pub fn nbytes(&self) -> u64 {
        self.size() as u64 * self.dtype().size() as u64
    }

    /// The backend the chunks live on.
    pub fn backend(&self) -> &BackendRef {
        &self.node.backend
    }

    /// Name of the backend.
    pub fn backend_name(&self) -> &str {
        self.node.backend.name()
    }

    /// True when both handles are the same lazy node (no copy was made).
    pub fn id_eq(&self, other: &Array) -> bool {
        self.node.id == other.node.id
    }

    pub(crate) fn id(&self) -> u64 {
        self.node.id
    }

    pub(crate) fn op(&self) -> &Op {
        &self.node.op
    }

    /// Number of tasks the optimized plan runs.
    pub fn num_tasks(&self) -> Result<usize> {
        Ok(crate::exec::lower(std::slice::from_ref(self))?.tasks.len())
    }

    /// Runs the graph and returns the result on the host.
    pub fn compute(&self) -> Result<HostArray> {
        let mut v = crate::exec::compute(std::slice::from_ref(self))?;
        Ok(v.pop().expect("one output per input"))
    }

    /// Computes a 0-d (or one-element) array as a scalar.
    pub fn compute_scalar(&self) -> Result<Scalar> {
        if self.size() != 1 {
            return Err(Error::shape(
                "compute_scalar",
                format!(
                    "array of shape {:?} has {} elements, not 1",
                    self.shape(),
                    self.size()
                ),
            ));
        }
        let h = self.compute()?;
        h.get_flat(0)
            .ok_or_else(|| Error::Internal("one-element result is empty".into()))
    }

    /// Computes as `f64` (one element).
    pub fn compute_f64(&self) -> Result<f64> {
        Ok(self.compute_scalar()?.as_f64())
    }

    /// Computes and keeps the chunks on the backend, returning an array over them.
    pub fn persist(&self) -> Result<Array> {
        let chunks = crate::exec::persist(self)?;
        Ok(Array::new(
            Op::Stored(Arc::new(chunks)),
            self.dtype(),
            self.chunks().clone(),
            self.backend().clone(),
        ))
    }

    /// Computes the array and returns its chunks, in C order of the block grid, still on
    /// the backend (no copy to the host). Backends with their own chunk formats (sparse)
    /// read them back with `downcast_chunk`.
    pub fn compute_chunks(&self) -> Result<Vec<Chunk>> {
        crate::exec::persist(self)
    }

    /// An array over chunks that already live on `backend`, one per block of `chunks` in C
    /// order of the grid. Each chunk's owner, dtype and shape are checked against the grid.
    pub fn from_chunks(parts: Vec<Chunk>, chunks: Chunks, backend: BackendRef) -> Result<Array> {
        if parts.len() != chunks.count() {
            return Err(Error::invalid(
                "from_chunks",
                format!(
                    "{} chunks for a grid of {:?} ({} blocks)",
                    parts.len(),
                    chunks.grid(),
                    chunks.count()
                ),
            ));
        }
        let dtype = parts.first().map_or(DType::F64, |c| c.dtype());
        for (part, block) in parts.iter().zip(chunks.blocks()) {
            if part.backend() != backend.name() {
                return Err(Error::ForeignChunk {
                    op: "from_chunks".into(),
                    backend: backend.name().into(),
                    owner: part.backend().into(),
                });
            }
            let want = chunks.block_shape(&block);
            if part.shape() != want.as_slice() || part.dtype() != dtype {
                return Err(Error::invalid(
                    "from_chunks",
                    format!(
                        "block {block:?} is {}{:?}; the grid needs {dtype}{:?}",
                        part.dtype(),
                        part.shape(),
                        want.as_slice()
                    ),
                ));
            }
        }
        Ok(Array::new(
            Op::Stored(Arc::new(parts)),
            dtype,
            chunks,
            backend,
        ))
    }

    /// The same data on backend `name` (a no-op when already there).
    pub fn to_backend(&self, name: &str) -> Result<Array> {
        if name == self.backend_name() {
            return Ok(self.clone());
        }
        let target = crate::registry::array_backend(name)?;
        target
            .capabilities()
            .check(name, "from_host", self.dtype())?;
        self.backend()
            .capabilities()
            .check(self.backend_name(), "to_host", self.dtype())?;
        Ok(Array::new(
            Op::Transfer(self.clone()),
            self.dtype(),
            self.chunks().clone(),
            target,
        ))
    }

    /// The optimized plan in words: tasks, fused programs, sources.
    pub fn explain(&self) -> Result<String> {
        let plan = crate::exec::lower(std::slice::from_ref(self))?;
        Ok(plan.explain())
    }
}

impl fmt::Debug for Array {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Array {
    /// A repr like Dask's: shape, dtype, chunk shape, bytes, chunks and tasks, backend.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let chunk = self.chunks().max_block_shape();
        let chunk_bytes = numel(&chunk) as u64 * self.dtype().size() as u64;
        let tasks = self
            .num_tasks()
            .map(|t| t.to_string())
            .unwrap_or_else(|e| format!("? ({e})"));
        write!(
            f,
            "tessera.Array<shape={:?}, dtype={}, chunksize={:?}, backend={} ({})>\n  bytes: {} total, {} per chunk; {} chunks, {} tasks",
            self.shape(),
            self.dtype(),
            chunk,
            self.backend_name(),
            self.backend().capabilities().device,
            format_bytes(self.nbytes()),
            format_bytes(chunk_bytes),
            self.chunks().count(),
            tasks
        )
    }
}
