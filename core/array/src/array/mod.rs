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
mod io;
mod lane;
mod linalg;
mod map_blocks;
mod nan_reduction;
mod quantile;
mod reduction;
mod scan;
mod search;
mod sort;
mod structure;
mod take;

pub(crate) use crate::block_io::block_region;
pub use crate::block_io::{BlockSink, BlockSource, StoreSummary};
pub use crate::graph::{Array, BackendBlockFn, HostBlockFn};
pub(crate) use crate::graph::{BlockFn, Fold, Op};
pub use creation::RandomState;
pub use elementwise::broadcast_shapes;
pub use indexing::Index;

use std::fmt;
use std::sync::Arc;

use crate::backend::{BackendRef, Chunk};
use crate::chunks::{format_bytes, numel, Chunks};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::host::HostArray;
use crate::program::ArrayOp;
use crate::stored::Held;

impl Array {
    /// An error naming the op, the axis and the shape unless `axis` is an axis of this
    /// array.
    pub(crate) fn check_axis(&self, op: &str, axis: usize) -> Result<()> {
        if axis < self.ndim() {
            return Ok(());
        }
        Err(Error::invalid(
            op,
            format!(
                "axis {axis} is out of bounds for an array of {} dimensions (shape {:?})",
                self.ndim(),
                self.shape()
            ),
        ))
    }

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

    /// Number of tasks the optimized plan runs.
    pub fn num_tasks(&self) -> Result<usize> {
        Ok(crate::exec::lower(std::slice::from_ref(self))?.tasks.len())
    }

    /// Runs the graph and returns the result on the host.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// use tessera_core::DType;
    /// # fn main() -> tessera_core::Result<()> {
    /// let a = Array::arange(0.0, 6.0, 1.0, DType::F64, 2, None)?.reshape(&[2, 3])?;
    /// let m = a.mean(Some(&[0]), false)?.compute()?; // column means
    /// assert_eq!(m.to_f64_vec(), vec![1.5, 2.5, 3.5]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Whatever a task fails with (a backend error, a user function's error), or
    /// [`Error::MemoryLimit`] when the plan's projected peak exceeds `memory-limit`.
    pub fn compute(&self) -> Result<HostArray> {
        let mut v = crate::exec::compute(std::slice::from_ref(self))?;
        Ok(v.pop().expect("one output per input"))
    }

    /// [`Array::compute`], recording a [`Profile`](tessera_observe::Profile): every
    /// task's start, end, worker, kind and bytes, memory in use over time, and the plan's
    /// `explain()` text. Write it with `write_chrome_trace` (Perfetto, `chrome://tracing`)
    /// or `write_html` (a report to open in a browser).
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// use tessera_core::DType;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::ones(&[100, 100], DType::F64, 25, None)?.sum(None, false)?;
    /// let (sum, profile) = x.compute_with_profile()?;
    /// assert_eq!(sum.to_f64_vec(), vec![10_000.0]);
    /// assert_eq!(profile.spans.len(), x.num_tasks()?);
    /// assert!(profile.html().contains("Task stream"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Array::compute`].
    pub fn compute_with_profile(&self) -> Result<(HostArray, tessera_observe::Profile)> {
        let explain = self.explain()?;
        let (out, mut profile) = tessera_observe::profile::record(|| self.compute());
        profile.explain = explain;
        profile.title = "tessera profile: array compute".into();
        Ok((out?, profile))
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

    /// Computes and keeps the chunks on the backend, returning an array over them. Under
    /// `scheduler = "mpi"` each chunk stays on the rank that computed it, and later plans
    /// run the tasks that read it there.
    pub fn persist(&self) -> Result<Array> {
        let chunks = crate::exec::persist(self)?;
        Ok(self.with_held(chunks))
    }

    /// An array over materialised blocks (C order of `chunks`' grid).
    pub(crate) fn from_held(
        blocks: Vec<Held>,
        chunks: Chunks,
        dtype: DType,
        backend: BackendRef,
    ) -> Array {
        Array::new(Op::Stored(Arc::new(blocks)), dtype, chunks, backend)
    }

    /// An array like this one over materialised blocks (C order of its grid).
    pub(crate) fn with_held(&self, blocks: Vec<Held>) -> Array {
        Array::new(
            Op::Stored(Arc::new(blocks)),
            self.dtype(),
            self.chunks().clone(),
            self.backend().clone(),
        )
    }

    /// Computes the array and returns its chunks, in C order of the block grid, still on
    /// the backend (no copy to the host). Backends with their own chunk formats (sparse)
    /// read them back with `downcast_chunk`.
    pub fn compute_chunks(&self) -> Result<Vec<Chunk>> {
        crate::exec::compute_chunks(self)
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
            Op::Stored(Arc::new(parts.into_iter().map(Held::from).collect())),
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
            .check(name, ArrayOp::FromHost, self.dtype())?;
        self.backend()
            .capabilities()
            .check(self.backend_name(), ArrayOp::ToHost, self.dtype())?;
        Ok(Array::new(
            Op::Transfer(self.clone()),
            self.dtype(),
            self.chunks().clone(),
            target,
        ))
    }

    /// The optimized plan in words: tasks, fused programs, sources.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::{Index, RandomState};
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = RandomState::new(0).normal(10.0, 1.0, &[400, 400], 100, None)?;
    /// let y = (&x + 1.0)?.slice(&[Index::step(2), Index::step(2)])?.sum(None, false)?;
    /// let plan = y.explain()?;
    /// assert!(plan.contains("fused program"), "{plan}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A backend that cannot run one of the plan's programs (declared in its capabilities).
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
