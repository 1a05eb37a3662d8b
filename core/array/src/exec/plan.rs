//! The lowered plan: tasks, what each does with its dependencies' chunks, and outputs.
//!
//! Lowering (`super::lower`) builds a [`Plan`]; the schedulers (`super::scheduler`) run it;
//! `super::explain` describes it.

use std::ops::Range;
use std::sync::Arc;

use crate::backend::BackendRef;
use crate::block_io::{BlockSink, BlockSource};
use crate::dtype::DType;
use crate::graph::BlockFn;
use crate::program::Program;
use crate::stored::Held;

/// What a task does with its dependencies' chunks.
pub(crate) enum TaskOp {
    /// Run a fused program (dependencies are its input slots, in order).
    Program(Program),
    /// An already materialised chunk (read back from disk if it was spilled).
    Stored(Held),
    /// Concatenate an n-d grid of pieces (C order) into one chunk.
    Assemble { grid: Vec<usize> },
    /// Flatten each dependency, take `[lo, hi)` of it, join, reshape to `shape`.
    ReshapeGather {
        pieces: Vec<(usize, usize)>,
        shape: Vec<usize>,
    },
    /// Sum of `deps[2l] @ deps[2l+1]`.
    MatmulSum,
    /// `P @ other` (`program_left`) or `other @ P` where `P` is the program's output: the
    /// deps are the program's input slots, then `other`. The operand is never a task of
    /// its own, so a backend can stream it into the product
    /// ([`ArrayBackend::matmul_program`](crate::ArrayBackend::matmul_program)).
    MatmulProgram {
        program: Program,
        program_left: bool,
    },
    /// `[x Ω ; xᵀ x Ω]` of a row block: with `program`, `x` is its output, the deps are
    /// its input slots and then `Ω` (streamed,
    /// [`ArrayBackend::sketch_program`](crate::ArrayBackend::sketch_program)); without,
    /// the deps are `x` and `Ω`.
    Sketch { program: Option<Program> },
    /// The sum over deps `i` of rows `skip[i] .. skip[i] + len` (a slice for one dep):
    /// the parts of packed range sketches.
    Rows { skip: Vec<usize>, len: usize },
    /// The packed sum and `M2` over `axes` of the program's output (the deps are its input
    /// slots; [`ArrayBackend::moments_program`](crate::ArrayBackend::moments_program)).
    Moments { program: Program, axes: Vec<usize> },
    /// Elementwise sum of the deps (the tree over a matmul's partial products).
    Sum,
    /// A user block function.
    MapBlocks {
        f: BlockFn,
        shape: Vec<usize>,
        dtype: DType,
        block: Vec<usize>,
    },
    /// Copy from another backend through the host.
    Transfer { from: BackendRef },
    /// Read a region of a stored array onto the task's backend.
    Read {
        source: Arc<dyn BlockSource>,
        region: Vec<Range<usize>>,
    },
    /// Write the dep (one block) as `region` of the sink; the output is one `u64`, the
    /// bytes written.
    Write {
        sink: Arc<dyn BlockSink>,
        region: Vec<Range<usize>>,
    },
}

impl TaskOp {
    /// The fused program the task runs, if it runs one (alone, or streamed into a product,
    /// a sketch or block moments).
    pub(crate) fn program(&self) -> Option<&Program> {
        match self {
            TaskOp::Program(p)
            | TaskOp::MatmulProgram { program: p, .. }
            | TaskOp::Sketch { program: Some(p) }
            | TaskOp::Moments { program: p, .. } => Some(p),
            _ => None,
        }
    }
}

/// One task.
pub(crate) struct Task {
    pub op: TaskOp,
    pub deps: Vec<usize>,
    pub backend: BackendRef,
    /// Bytes of the chunk it produces.
    pub out_bytes: u64,
    /// The last fold of an all-reduce: under a distributed scheduler it runs on every rank
    /// that needs its result, from the per-rank partials sent there, instead of on one
    /// rank that then sends the result on (see `super::distributed`).
    pub replicated: bool,
}

/// A lowered plan.
pub(crate) struct Plan {
    pub tasks: Vec<Task>,
    /// Per requested array: its blocks' tasks in C order.
    pub outputs: Vec<Vec<usize>>,
    /// Block reductions that reuse the task of their mirror block (see [`super::symmetry`]).
    pub mirrored: usize,
}

impl Task {
    /// True when the task's output is known to have `shape` without running it.
    pub(crate) fn out_shape_is(&self, shape: &[usize]) -> bool {
        match &self.op {
            TaskOp::Stored(c) => c.shape() == shape,
            TaskOp::Read { region, .. } => region.iter().map(|r| r.len()).eq(shape.iter().copied()),
            TaskOp::Program(p) => p.output_shape(0) == shape,
            TaskOp::ReshapeGather { shape: s, .. } | TaskOp::MapBlocks { shape: s, .. } => {
                s == shape
            }
            _ => false,
        }
    }
}
