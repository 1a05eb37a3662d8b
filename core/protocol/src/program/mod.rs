//! Fused elementwise programs: the unit of work a backend executes.
//!
//! A [`Program`] is a small SSA expression over one output region (a chunk): leaves read
//! stored chunks through affine [`IndexMap`]s or *generate* values from the element's
//! coordinates (constants, counter-based random numbers, coordinates for `arange`/`eye`);
//! inner nodes are casts and unary/binary/ternary ops; each output may end in a reduction
//! epilogue over some axes. The lazy array layer lowers a whole blockwise chain —
//! elementwise ops, slices with steps, transposes, broadcasts, and a final reduction — into
//! one program per output chunk, so `(x + 1)[::2, ::2].sum()` over a random `x` is one
//! pass per chunk that generates only the kept elements and materialises nothing.
//!
//! Operands of a binary op always share one dtype (the builder inserts the casts NumPy's
//! promotion implies), so a backend implements each op for homogeneous operands only, and
//! a CUDA backend can print one kernel per program.

mod array_op;
mod builder;
mod moments;
mod ops;
pub mod primitives;
mod scan_op;

pub use array_op::ArrayOp;
pub use builder::ProgramBuilder;
pub use moments::{check_moments, moments_shape};
pub use ops::{
    ipow_i64, py_floor_div_f32, py_floor_div_f64, py_fmod_f64, wrap_i64, BinaryOp, ReduceOp,
    UnaryOp,
};
pub use scan_op::ScanOp;

use crate::chunks::c_strides;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::random::RandomSpec;

/// Index of a node inside its program.
pub type NodeId = usize;

/// How one axis of a source is addressed from the output coordinates:
/// `coord = start + step * out[out_axis]`, or just `start` when `out_axis` is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AxisMap {
    /// Coordinate at output index 0.
    pub start: i64,
    /// Increment per output step (negative steps reverse; 0 broadcasts).
    pub step: i64,
    /// The output axis driving this source axis, if any.
    pub out_axis: Option<usize>,
}

impl AxisMap {
    /// Composes two views: `inner` addresses a source from a middle array, `outer`
    /// addresses the middle array from the output; the result addresses the source from the
    /// output (a slice of a transpose of a slice is one map).
    pub fn compose(inner: &[AxisMap], outer: &[AxisMap]) -> Vec<AxisMap> {
        inner
            .iter()
            .map(|v| match v.out_axis {
                None => AxisMap {
                    start: v.start,
                    step: 0,
                    out_axis: None,
                },
                Some(mid) => {
                    let m = outer[mid];
                    let step = if m.out_axis.is_some() {
                        v.step * m.step
                    } else {
                        0
                    };
                    AxisMap {
                        start: v.start + v.step * m.start,
                        step,
                        out_axis: if step == 0 { None } else { m.out_axis },
                    }
                }
            })
            .collect()
    }
}

/// An affine map from output coordinates to the coordinates of a source of `src_shape`.
///
/// It expresses slicing with steps, integer indexing, transposition, new axes and
/// broadcasting at once, and composes: a slice of a transpose of a slice is one map.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexMap {
    /// Shape of the source (a chunk for inputs, the whole array for generators).
    pub src_shape: Vec<usize>,
    /// One entry per source axis.
    pub axes: Vec<AxisMap>,
}

/// A linear form over output coordinates: `offset + sum(coef[a] * out[a])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linear {
    /// Value at the output origin.
    pub offset: i64,
    /// Coefficient per output axis.
    pub coef: Vec<i64>,
}

impl IndexMap {
    /// Reads a source of `src_shape` with its axes permuted (output axis `i` is source
    /// axis `perm[i]`), and the output shape: `transpose` on every backend.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `perm` is not a permutation of the source's axes.
    pub fn permuted(src_shape: &[usize], perm: &[usize]) -> Result<(IndexMap, Vec<usize>)> {
        let n = src_shape.len();
        if perm.len() != n || (0..n).any(|i| !perm.contains(&i)) {
            return Err(Error::invalid(
                "transpose",
                format!("{perm:?} is not a permutation of {n} axes"),
            ));
        }
        let shape: Vec<usize> = perm.iter().map(|&p| src_shape[p]).collect();
        let mut axes = vec![
            AxisMap {
                start: 0,
                step: 1,
                out_axis: None
            };
            n
        ];
        for (i, &p) in perm.iter().enumerate() {
            axes[p].out_axis = Some(i);
        }
        let map = IndexMap {
            src_shape: src_shape.to_vec(),
            axes,
        };
        Ok((map, shape))
    }

    /// Reads a source of `src_shape` with its size-1 axes repeated to `shape` (the same
    /// number of dimensions): `broadcast_to` on every backend.
    ///
    /// # Errors
    /// [`Error::Shape`] when `src_shape` does not broadcast to `shape`.
    pub fn broadcast(src_shape: &[usize], shape: &[usize]) -> Result<IndexMap> {
        if src_shape.len() != shape.len()
            || src_shape.iter().zip(shape).any(|(&a, &b)| a != b && a != 1)
        {
            return Err(Error::shape(
                "broadcast_to",
                format!("cannot broadcast {src_shape:?} to {shape:?}"),
            ));
        }
        Ok(IndexMap {
            src_shape: src_shape.to_vec(),
            axes: src_shape
                .iter()
                .enumerate()
                .map(|(a, &n)| AxisMap {
                    start: 0,
                    step: if n == 1 { 0 } else { 1 },
                    out_axis: Some(a),
                })
                .collect(),
        })
    }

    /// The identity map of a source whose shape is the output shape.
    pub fn identity(shape: &[usize]) -> IndexMap {
        IndexMap {
            src_shape: shape.to_vec(),
            axes: (0..shape.len())
                .map(|a| AxisMap {
                    start: 0,
                    step: 1,
                    out_axis: Some(a),
                })
                .collect(),
        }
    }

    /// The C-order flat source index as a linear form over `out_ndim` output axes.
    pub fn flat_linear(&self, out_ndim: usize) -> Linear {
        let strides = c_strides(&self.src_shape);
        let mut lin = Linear {
            offset: 0,
            coef: vec![0; out_ndim],
        };
        for (ax, &st) in self.axes.iter().zip(&strides) {
            lin.offset += ax.start * st as i64;
            if let Some(o) = ax.out_axis {
                lin.coef[o] += ax.step * st as i64;
            }
        }
        lin
    }

    /// The coordinate along source axis `axis` as a linear form.
    pub fn axis_linear(&self, axis: usize, out_ndim: usize) -> Linear {
        let ax = self.axes[axis];
        let mut coef = vec![0; out_ndim];
        if let Some(o) = ax.out_axis {
            coef[o] = ax.step;
        }
        Linear {
            offset: ax.start,
            coef,
        }
    }

    /// Checks that every output coordinate in `out_shape` maps inside the source.
    pub fn check(&self, out_shape: &[usize]) -> Result<(), String> {
        if self.axes.len() != self.src_shape.len() {
            return Err(format!(
                "index map has {} axes for a {}-d source",
                self.axes.len(),
                self.src_shape.len()
            ));
        }
        if out_shape.contains(&0) {
            return Ok(());
        }
        for (s, ax) in self.axes.iter().enumerate() {
            let n = self.src_shape[s] as i64;
            let (lo, hi) = match ax.out_axis {
                None => (ax.start, ax.start),
                Some(o) => {
                    if o >= out_shape.len() {
                        return Err(format!(
                            "source axis {s} follows output axis {o}, the output is {}-d",
                            out_shape.len()
                        ));
                    }
                    let last = ax.start + ax.step * (out_shape[o] as i64 - 1);
                    (ax.start.min(last), ax.start.max(last))
                }
            };
            if lo < 0 || hi >= n {
                return Err(format!(
                    "source axis {s} (length {n}) is read at {lo}..={hi}"
                ));
            }
        }
        Ok(())
    }
}

/// One node of a program.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Reads input chunk `slot` at `map(out)`.
    Input {
        /// Which input chunk.
        slot: usize,
        /// How output coordinates address it.
        map: IndexMap,
    },
    /// A constant broadcast over the output.
    Const(Scalar),
    /// Counter-based random numbers addressed by the flat index of `map(out)` in
    /// `map.src_shape` (the whole random array's shape).
    Random {
        /// Seed, stream, distribution, dtype.
        spec: RandomSpec,
        /// Output coordinates to global coordinates of the random array.
        map: IndexMap,
    },
    /// The coordinate (an `int64`) along source axis `axis` of `map(out)`.
    Index {
        /// Output coordinates to global coordinates.
        map: IndexMap,
        /// The source axis whose coordinate is produced.
        axis: usize,
    },
    /// `astype`.
    Cast {
        /// Operand.
        x: NodeId,
        /// Target dtype.
        to: DType,
    },
    /// A unary op.
    Unary {
        /// The op.
        op: UnaryOp,
        /// Operand.
        x: NodeId,
    },
    /// A binary op on two operands of one dtype.
    Binary {
        /// The op.
        op: BinaryOp,
        /// Left operand.
        a: NodeId,
        /// Right operand.
        b: NodeId,
    },
    /// `where(cond, a, b)`: `cond` is bool, `a` and `b` share a dtype.
    Where {
        /// Condition.
        cond: NodeId,
        /// Value where true.
        a: NodeId,
        /// Value where false.
        b: NodeId,
    },
}

/// A reduction epilogue: reduce an output over `axes` (kept as size-1 axes).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reduction {
    /// The reduction.
    pub op: ReduceOp,
    /// Axes reduced, ascending.
    pub axes: Vec<usize>,
}

/// One result of a program.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The node whose values are produced.
    pub node: NodeId,
    /// Optional reduction over axes.
    pub reduce: Option<Reduction>,
}

/// A fused elementwise program over one output region.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// Nodes in topological order.
    pub nodes: Vec<Node>,
    /// Dtype of each node.
    pub dtypes: Vec<DType>,
    /// The dtype each input slot must have.
    pub input_dtypes: Vec<DType>,
    /// Shape of the region the program is evaluated over.
    pub shape: Vec<usize>,
    /// Results.
    pub outputs: Vec<Output>,
}

impl Node {
    /// The nodes this node reads, in operand order (leaves read none). Every analysis of
    /// a program's data flow walks operands through this one definition.
    pub fn operands(&self) -> impl Iterator<Item = NodeId> {
        let (ids, n) = match *self {
            Node::Cast { x, .. } | Node::Unary { x, .. } => ([x, 0, 0], 1),
            Node::Binary { a, b, .. } => ([a, b, 0], 2),
            Node::Where { cond, a, b } => ([cond, a, b], 3),
            Node::Input { .. } | Node::Const(_) | Node::Random { .. } | Node::Index { .. } => {
                ([0; 3], 0)
            }
        };
        ids.into_iter().take(n)
    }
}

impl Program {
    /// Dtype of output `i`.
    pub fn output_dtype(&self, i: usize) -> DType {
        let o = &self.outputs[i];
        let d = self.dtypes[o.node];
        match &o.reduce {
            Some(r) => r.op.result_dtype(d),
            None => d,
        }
    }

    /// Shape of output `i` (reduced axes have length 1).
    pub fn output_shape(&self, i: usize) -> Vec<usize> {
        let mut s = self.shape.clone();
        if let Some(r) = &self.outputs[i].reduce {
            for &a in &r.axes {
                s[a] = 1;
            }
        }
        s
    }

    /// Number of input slots the program reads.
    pub fn num_inputs(&self) -> usize {
        self.input_dtypes.len()
    }

    /// True when no node reads an input (a pure generator).
    pub fn is_source(&self) -> bool {
        !self.nodes.iter().any(|n| matches!(n, Node::Input { .. }))
    }

    /// Ops used, for capability checks: `(op name, operand dtype)`.
    pub fn ops_used(&self) -> Vec<(ArrayOp, DType)> {
        let mut v = Vec::new();
        for n in &self.nodes {
            match n {
                Node::Unary { op, x } => v.push((ArrayOp::Unary(*op), self.dtypes[*x])),
                Node::Binary { op, a, .. } => v.push((ArrayOp::Binary(*op), self.dtypes[*a])),
                Node::Cast { x, .. } => v.push((ArrayOp::Astype, self.dtypes[*x])),
                Node::Random { spec, .. } => v.push((ArrayOp::Random, spec.dtype)),
                _ => {}
            }
        }
        for o in &self.outputs {
            if let Some(r) = &o.reduce {
                v.push((ArrayOp::Reduce(r.op), self.dtypes[o.node]));
            }
        }
        v
    }

    /// A stable text form (for explain, cache keys and error messages).
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let body = match n {
                Node::Input { slot, .. } => format!("input[{slot}]"),
                Node::Const(c) => format!("const {c}"),
                Node::Random { spec, .. } => format!("random {:?} seed={}", spec.dist, spec.seed),
                Node::Index { axis, .. } => format!("coord[{axis}]"),
                Node::Cast { x, to } => format!("astype(%{x}, {to})"),
                Node::Unary { op, x } => format!("{}(%{x})", op.name()),
                Node::Binary { op, a, b } => format!("{}(%{a}, %{b})", op.name()),
                Node::Where { cond, a, b } => format!("where(%{cond}, %{a}, %{b})"),
            };
            s.push_str(&format!("%{i}: {} = {body}\n", self.dtypes[i]));
        }
        for o in &self.outputs {
            match &o.reduce {
                Some(r) => s.push_str(&format!(
                    "out {}(%{}, axes={:?})\n",
                    r.op.name(),
                    o.node,
                    r.axes
                )),
                None => s.push_str(&format!("out %{}\n", o.node)),
            }
        }
        s
    }
}
