//! The lazy graph: the IR that the user API builds and the lowering reads.
//!
//! An [`Array`] is a handle on one [`Node`]: an [`Op`] over operand arrays, with the
//! node's dtype, chunk grid and backend. The user API (`crate::array`) only creates
//! nodes; lowering (`crate::exec`) only reads them. Both depend on this module and not on
//! each other's internals, so there is no import circle between the API and the engine.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::backend::{ArrayBackend, BackendRef, Chunk};
use crate::chunks::Chunks;
use crate::dtype::{DType, Scalar};
use crate::error::Result;
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
    Stored(Arc<Vec<crate::stored::Held>>),
    /// `astype`.
    Cast(Array),
    /// Unary op.
    Unary(UnaryOp, Array),
    /// Binary op on same-shape operands.
    Binary(BinaryOp, Array, Array),
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
    /// [`tessera_core::backend::moments_with_primitives`]): the partials of `var`.
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
    MapBlocks(Vec<Array>, BlockFn),
    /// Per output block, a function of the blocks of `inputs` along `axis` that
    /// `sources[j]` names (`j` the output block's index along `axis`; the other axes'
    /// block indices are the output's), then of the block of `with` at the output's
    /// block: the shape of sorts, merges and gathers, where an output block needs several
    /// input blocks of its lane but not the whole array.
    ///
    /// The lane inputs share one block grid, whose axes other than `axis` are the
    /// output's (or are 1-d: the whole input is the lane, for every output block); the
    /// function gets `sources[j].len()` blocks of each, input by input, then `with`'s
    /// block. `with` is chunked like the output, or is 1-d and chunked
    /// like the output's `axis` (its block `j`). `name` says what the tasks do, in
    /// `explain()` and in errors.
    AlongAxis {
        inputs: Vec<Array>,
        axis: usize,
        sources: Arc<Vec<Vec<usize>>>,
        with: Option<Array>,
        f: LaneBlockFn,
        name: &'static str,
    },
    /// Move to another backend.
    Transfer(Array),
    /// Blocks read from storage (a leaf).
    Source(Arc<dyn crate::block_io::BlockSource>),
    /// Each block of the input written to the sink; one `u64` per block (bytes written).
    Store(Array, Arc<dyn crate::block_io::BlockSink>),
}

/// A function over host blocks (one per input) returning the output block.
pub type HostBlockFn = Arc<dyn Fn(&[HostArray]) -> Result<HostArray> + Send + Sync>;

/// A function over backend chunks (one per input) returning the output chunk.
pub type BackendBlockFn = Arc<dyn Fn(&dyn ArrayBackend, &[Chunk]) -> Result<Chunk> + Send + Sync>;

/// A function of output block `j` along an axis and the input blocks its lane needs
/// (see [`Op::AlongAxis`]).
pub type LaneBlockFn =
    Arc<dyn Fn(&dyn ArrayBackend, usize, &[Chunk]) -> Result<Chunk> + Send + Sync>;

/// Either form of block function, or a lane function with the axis its `j` is read on.
#[derive(Clone)]
pub(crate) enum BlockFn {
    Host(HostBlockFn),
    Backend(BackendBlockFn),
    Lane {
        f: LaneBlockFn,
        axis: usize,
        name: &'static str,
    },
}

impl BlockFn {
    /// What the function's tasks are called: `map_blocks` for a user's function, the
    /// operation's name for a lane function.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            BlockFn::Host(_) | BlockFn::Backend(_) => "map_blocks",
            BlockFn::Lane { name, .. } => name,
        }
    }
}

impl Array {
    /// A new node computing `op`.
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

    /// The node's identity (unique in the process).
    pub(crate) fn id(&self) -> u64 {
        self.node.id
    }

    /// The operation producing this node.
    pub(crate) fn op(&self) -> &Op {
        &self.node.op
    }
}
