//! The defaults a backend gets for what it does not do natively: a program evaluated one
//! primitive call per node, and a block's moments taken in two runs of its own program.
//!
//! Backends that do not execute programs natively get correct (if unfused) execution from
//! [`evaluate_with_primitives`]; the conformance suite checks both paths against the CPU
//! reference. [`moments_with_primitives`] is the reference for
//! [`ArrayBackend::moments_program`] (layout: [`crate::program::moments_shape`]).

use super::{ArrayBackend, AxisSlice, Chunk};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::program::{
    check_moments, moments_shape, AxisMap, BinaryOp, IndexMap, Node, Output, Program,
    ProgramBuilder, ReduceOp, Reduction,
};

/// Evaluates `program` on `backend` by calling its primitives node by node.
pub fn evaluate_with_primitives<B: ArrayBackend + ?Sized>(
    backend: &B,
    program: &Program,
    inputs: &[Chunk],
) -> Result<Vec<Chunk>> {
    if inputs.len() != program.num_inputs() {
        return Err(Error::Internal(format!(
            "program reads {} inputs, {} were given",
            program.num_inputs(),
            inputs.len()
        )));
    }
    let shape = &program.shape;
    let mut values: Vec<Option<Chunk>> = vec![None; program.nodes.len()];
    let get = |values: &Vec<Option<Chunk>>, i: usize| -> Result<Chunk> {
        values[i]
            .clone()
            .ok_or_else(|| Error::Internal(format!("program node {i} used before definition")))
    };
    for (i, node) in program.nodes.iter().enumerate() {
        let v = match node {
            Node::Input { slot, map } => apply_map(backend, &inputs[*slot], map, shape)?,
            Node::Const(c) => backend.full(shape, *c)?,
            Node::Random { spec, map } => backend.random(spec, map, shape)?,
            Node::Index { map, axis } => backend.iota(map, *axis, shape)?,
            Node::Cast { x, to } => backend.cast(&get(&values, *x)?, *to)?,
            Node::Unary { op, x } => backend.unary(*op, &get(&values, *x)?)?,
            Node::Binary { op, a, b } => {
                backend.binary(*op, &get(&values, *a)?, &get(&values, *b)?)?
            }
            Node::Where { cond, a, b } => backend.where_(
                &get(&values, *cond)?,
                &get(&values, *a)?,
                &get(&values, *b)?,
            )?,
        };
        values[i] = Some(v);
    }
    program
        .outputs
        .iter()
        .map(|o| {
            let v = get(&values, o.node)?;
            match &o.reduce {
                Some(r) => backend.reduce(&v, r.op, &r.axes),
                None => Ok(v),
            }
        })
        .collect()
}

/// Reads `chunk` through an affine map into a chunk of `out_shape`, with primitives:
/// slice, drop fixed axes, transpose into output order, insert broadcast axes, broadcast.
pub fn apply_map<B: ArrayBackend + ?Sized>(
    backend: &B,
    chunk: &Chunk,
    map: &IndexMap,
    out_shape: &[usize],
) -> Result<Chunk> {
    map.check(out_shape)
        .map_err(|e| Error::Internal(format!("input map out of bounds: {e}")))?;
    if *map == IndexMap::identity(out_shape) && chunk.shape() == out_shape {
        return Ok(chunk.clone());
    }
    // An empty output reads nothing: its map's starts and steps may point anywhere (a
    // reversed axis starts at its end, which an emptied neighbour leaves undefined).
    if out_shape.contains(&0) {
        return backend.full(out_shape, Scalar::zero(chunk.dtype()));
    }
    // 1. Slice every source axis.
    let slices: Vec<AxisSlice> = map
        .axes
        .iter()
        .map(|ax| match ax.out_axis {
            Some(o) => AxisSlice {
                start: ax.start as usize,
                step: if ax.step == 0 { 1 } else { ax.step as isize },
                len: if ax.step == 0 {
                    1.min(out_shape[o])
                } else {
                    out_shape[o]
                },
            },
            None => AxisSlice {
                start: ax.start as usize,
                step: 1,
                len: 1,
            },
        })
        .collect();
    let mut x = backend.slice(chunk, &slices)?;
    // 2. Drop axes fixed to one coordinate; remember which output axis each kept one feeds.
    let kept: Vec<(usize, usize)> = map
        .axes
        .iter()
        .enumerate()
        .filter_map(|(s, ax)| ax.out_axis.map(|o| (s, o)))
        .collect();
    let kept_shape: Vec<usize> = kept.iter().map(|&(s, _)| slices[s].len).collect();
    if kept.len() != map.axes.len() {
        x = backend.reshape(&x, &kept_shape)?;
    }
    // 3. Order kept axes by the output axis they feed.
    let mut order: Vec<usize> = (0..kept.len()).collect();
    order.sort_by_key(|&i| kept[i].1);
    if order.iter().enumerate().any(|(i, &j)| i != j) {
        x = backend.transpose(&x, &order)?;
    }
    // 4. Insert size-1 axes for output axes no source axis feeds, then broadcast.
    let mut shape1 = vec![1usize; out_shape.len()];
    for &i in &order {
        let (_, o) = kept[i];
        shape1[o] = kept_shape[i];
    }
    if x.shape() != shape1.as_slice() {
        x = backend.reshape(&x, &shape1)?;
    }
    if shape1 != out_shape {
        x = backend.broadcast_to(&x, out_shape)?;
    }
    Ok(x)
}

/// The reference for [`ArrayBackend::moments_program`]: the block sum with one run of the
/// program (a sum epilogue), then `M2` with a second run that reads the sum back as a
/// broadcast input, and the two joined along the first reduced axis.
pub fn moments_with_primitives<B: ArrayBackend + ?Sized>(
    b: &B,
    program: &Program,
    inputs: &[Chunk],
    axes: &[usize],
) -> Result<Chunk> {
    check_moments(program, axes)?;
    let node = program.outputs[0].node;
    let dtype = program.dtypes[node];
    let reduce = Reduction {
        op: ReduceOp::Sum,
        axes: axes.to_vec(),
    };
    let mut sum_program = program.clone();
    sum_program.outputs = vec![Output {
        node,
        reduce: Some(reduce.clone()),
    }];
    let sum = first(b.execute(&sum_program, inputs)?)?;

    // M2 = sum((x - sum / n)^2), the block sum broadcast over the reduced axes.
    let mut pb = ProgramBuilder::extend(program);
    let count: usize = axes.iter().map(|&a| program.shape[a]).product();
    let reduced: Vec<usize> = (0..program.shape.len())
        .map(|a| {
            if axes.contains(&a) {
                1
            } else {
                program.shape[a]
            }
        })
        .collect();
    let map = IndexMap {
        src_shape: reduced,
        axes: (0..program.shape.len())
            .map(|a| AxisMap {
                start: 0,
                step: if axes.contains(&a) { 0 } else { 1 },
                out_axis: (!axes.contains(&a)).then_some(a),
            })
            .collect(),
    };
    let s = pb.input(program.num_inputs(), dtype, map);
    let n = pb.constant(Scalar::F64(count as f64).cast(dtype));
    let mean = pb.binary(BinaryOp::Div, s, n)?;
    let d = pb.binary(BinaryOp::Sub, node, mean)?;
    let d2 = pb.binary(BinaryOp::Mul, d, d)?;
    let m2_program = pb.finish(vec![(d2, Some(reduce))])?;
    let mut m2_inputs = inputs.to_vec();
    m2_inputs.push(sum.clone());
    let m2 = first(b.execute(&m2_program, &m2_inputs)?)?;
    b.concatenate(&[sum, m2], axes[0])
}

fn first(outputs: Vec<Chunk>) -> Result<Chunk> {
    outputs
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal("a moments program produced no output".into()))
}

/// Checks a backend's packed moments chunk against the layout (see the module docs).
pub fn check_packed(chunk: &Chunk, program: &Program, axes: &[usize]) -> Result<()> {
    let want = moments_shape(&program.shape, axes);
    let dtype: DType = program.dtypes[program.outputs[0].node];
    if chunk.shape() != want.as_slice() || chunk.dtype() != dtype {
        return Err(Error::Internal(format!(
            "a backend's moments chunk is {:?} {}, the layout needs {want:?} {dtype}",
            chunk.shape(),
            chunk.dtype()
        )));
    }
    Ok(())
}
