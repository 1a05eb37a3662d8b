//! Building programs with NumPy's promotion rules applied on the way in.

use super::{BinaryOp, IndexMap, Node, NodeId, Output, Program, Reduction, UnaryOp};
use crate::dtype::{promote, DType, DTypeKind, Scalar};
use crate::error::{Error, Result};
use crate::random::RandomSpec;

/// Builds a [`Program`] node by node, inserting the casts that promotion implies.
#[derive(Debug, Clone)]
pub struct ProgramBuilder {
    nodes: Vec<Node>,
    dtypes: Vec<DType>,
    input_dtypes: Vec<Option<DType>>,
    shape: Vec<usize>,
}

impl ProgramBuilder {
    /// A builder for programs over a region of `shape`.
    pub fn new(shape: &[usize]) -> ProgramBuilder {
        ProgramBuilder {
            nodes: Vec::new(),
            dtypes: Vec::new(),
            input_dtypes: Vec::new(),
            shape: shape.to_vec(),
        }
    }

    /// A builder that goes on from `program`'s nodes and input slots (its outputs are
    /// dropped; [`ProgramBuilder::finish`] names new ones), for deriving a program from
    /// another one.
    pub fn extend(program: &Program) -> ProgramBuilder {
        ProgramBuilder {
            nodes: program.nodes.clone(),
            dtypes: program.dtypes.clone(),
            input_dtypes: program.input_dtypes.iter().map(|&d| Some(d)).collect(),
            shape: program.shape.clone(),
        }
    }

    /// The region shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// A node.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// Dtype of a node.
    pub fn dtype(&self, id: NodeId) -> DType {
        self.dtypes[id]
    }

    fn push(&mut self, node: Node, dtype: DType) -> NodeId {
        // Structural sharing: an identical node is reused (x + x reads x once).
        if let Some(i) = self.nodes.iter().position(|n| *n == node) {
            if self.dtypes[i] == dtype {
                return i;
            }
        }
        self.nodes.push(node);
        self.dtypes.push(dtype);
        self.nodes.len() - 1
    }

    /// Reads input chunk `slot` (of `dtype`) through `map`.
    pub fn input(&mut self, slot: usize, dtype: DType, map: IndexMap) -> NodeId {
        if self.input_dtypes.len() <= slot {
            self.input_dtypes.resize(slot + 1, None);
        }
        self.input_dtypes[slot] = Some(dtype);
        self.push(Node::Input { slot, map }, dtype)
    }

    /// A constant.
    pub fn constant(&mut self, value: Scalar) -> NodeId {
        self.push(Node::Const(value), value.dtype())
    }

    /// Counter-based random values.
    pub fn random(&mut self, spec: RandomSpec, map: IndexMap) -> NodeId {
        self.push(Node::Random { spec, map }, spec.dtype)
    }

    /// The `int64` coordinate along source axis `axis` of `map`.
    pub fn index(&mut self, map: IndexMap, axis: usize) -> NodeId {
        self.push(Node::Index { map, axis }, DType::I64)
    }

    /// `astype` (a no-op when the dtype already matches).
    pub fn cast(&mut self, x: NodeId, to: DType) -> NodeId {
        if self.dtypes[x] == to {
            return x;
        }
        if let Node::Const(c) = self.nodes[x] {
            return self.constant(c.cast(to));
        }
        self.push(Node::Cast { x, to }, to)
    }

    /// A unary op, casting the operand as NumPy would (`sqrt(int8)` computes in `f32`).
    pub fn unary(&mut self, op: UnaryOp, x: NodeId) -> Result<NodeId> {
        let d = self.dtypes[x];
        // `~` of a bool is logical not (NumPy's `invert` on bool), so backends see one op.
        let op = if op == UnaryOp::Invert && d == DType::Bool {
            UnaryOp::Not
        } else {
            op
        };
        let operand = op
            .operand_dtype(d)
            .ok_or_else(|| Error::dtype(op.name(), d, op.bool_refusal()))?;
        let x = self.cast(x, operand);
        Ok(self.push(Node::Unary { op, x }, op.result_dtype(operand)))
    }

    /// A binary op with promotion. `Div` is true division (`/`): integer operands are
    /// computed in `f64`, as NumPy does.
    pub fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId> {
        let (da, db) = (self.dtypes[a], self.dtypes[b]);
        let common = self.operand_dtype(op, da, db)?;
        let common = if op == BinaryOp::Div && !common.is_float() {
            DType::F64
        } else {
            common
        };
        let a = self.cast(a, common);
        let b = self.cast(b, common);
        Ok(self.push(Node::Binary { op, a, b }, op.result_dtype(common)))
    }

    /// Floor division (`//`): integer division rounding down, `floor(a / b)` on floats.
    pub fn floor_div(&mut self, a: NodeId, b: NodeId) -> Result<NodeId> {
        let (da, db) = (self.dtypes[a], self.dtypes[b]);
        let common = self.operand_dtype(BinaryOp::FloorDiv, da, db)?;
        let a = self.cast(a, common);
        let b = self.cast(b, common);
        Ok(self.push(
            Node::Binary {
                op: BinaryOp::FloorDiv,
                a,
                b,
            },
            common,
        ))
    }

    /// The dtype both operands of `op` are cast to.
    pub fn operand_dtype(&self, op: BinaryOp, da: DType, db: DType) -> Result<DType> {
        if op.is_logical() {
            return Ok(DType::Bool);
        }
        let common = promote(da, db);
        if op.is_arithmetic() && common.kind() == DTypeKind::Bool {
            return Err(Error::dtype(
                op.name(),
                DType::Bool,
                "arithmetic on two bool operands; cast one to an integer dtype first",
            ));
        }
        if op.is_bitwise() && common.is_float() {
            return Err(Error::dtype(
                op.name(),
                common,
                "bitwise ops are defined for integer and bool dtypes; cast to an integer dtype first",
            ));
        }
        // The float-only ops compute integers and bools in the float dtype NumPy picks;
        // shifts of two bools shift int8s, as NumPy's `left_shift` loops do.
        Ok(if op.is_float_only() {
            common.float_result()
        } else if op.is_shift() && common == DType::Bool {
            DType::I8
        } else {
            common
        })
    }

    /// `where(cond, a, b)` with `cond` cast to bool and `a`, `b` promoted together.
    pub fn where_(&mut self, cond: NodeId, a: NodeId, b: NodeId) -> NodeId {
        let cond = self.cast(cond, DType::Bool);
        let common = promote(self.dtypes[a], self.dtypes[b]);
        let a = self.cast(a, common);
        let b = self.cast(b, common);
        self.push(Node::Where { cond, a, b }, common)
    }

    /// Finishes with the given outputs.
    pub fn finish(self, outputs: Vec<(NodeId, Option<Reduction>)>) -> Result<Program> {
        let input_dtypes = self
            .input_dtypes
            .iter()
            .enumerate()
            .map(|(i, d)| {
                d.ok_or_else(|| Error::Internal(format!("program input slot {i} is never read")))
            })
            .collect::<Result<Vec<_>>>()?;
        for (n, _) in &outputs {
            if *n >= self.nodes.len() {
                return Err(Error::Internal(format!(
                    "program output node {n} does not exist"
                )));
            }
        }
        Ok(Program {
            nodes: self.nodes,
            dtypes: self.dtypes,
            input_dtypes,
            shape: self.shape,
            outputs: outputs
                .into_iter()
                .map(|(node, reduce)| Output { node, reduce })
                .collect(),
        })
    }
}
