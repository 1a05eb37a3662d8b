//! Per-block moments of a program's output: its sum and `M2`, the sum of squared
//! deviations from the block's *own* mean — the partials of `var`/`std`'s parallel merge.
//!
//! Why one request for both: `M2` about the block's mean needs that mean first, so as two
//! reductions it takes two passes over the block, and a block that is *generated* (a random
//! array, a fused chain over one) is generated twice. A backend that implements
//! [`ArrayBackend::moments_program`] natively computes both in one pass (the CPU backend
//! folds each run of a tile exactly and merges runs with the update of Chan, Golub and
//! LeVeque). The reference here, [`moments_with_primitives`], takes the two passes with the
//! backend's own program execution — what plans did before the request existed — so every
//! backend gets it unchanged.
//!
//! **Packed layout.** The result has the program's shape with every reduced axis of length
//! 1, except the *first* reduced axis, of length 2: index 0 along it holds the sum, index 1
//! holds `M2`. Both are in the output's float dtype. One chunk per block keeps a task's
//! single-output contract; `var` reads the two halves through step-2 views.

use super::{AxisMap, BinaryOp, IndexMap, Output, Program, ProgramBuilder, ReduceOp, Reduction};
use crate::backend::{ArrayBackend, Chunk};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};

/// Checks that `program` can have its moments taken over `axes`: one unreduced float
/// output, and `axes` ascending, distinct, inside the program's dimensions and not empty.
pub fn check_moments(program: &Program, axes: &[usize]) -> Result<()> {
    let [out] = program.outputs.as_slice() else {
        return Err(Error::invalid(
            "moments",
            format!(
                "the program has {} outputs; moments take one",
                program.outputs.len()
            ),
        ));
    };
    if out.reduce.is_some() {
        return Err(Error::invalid(
            "moments",
            "the program's output is already reduced; moments take an unreduced one",
        ));
    }
    let dtype = program.dtypes[out.node];
    if !dtype.is_float() {
        return Err(Error::dtype(
            "moments",
            dtype,
            "moments are taken of float32 or float64 values (var casts first)",
        ));
    }
    let ndim = program.shape.len();
    if axes.is_empty() || axes.windows(2).any(|w| w[0] >= w[1]) || axes[axes.len() - 1] >= ndim {
        return Err(Error::invalid(
            "moments",
            format!("axes {axes:?} must be ascending, distinct, non-empty and below {ndim}"),
        ));
    }
    Ok(())
}

/// The shape of the packed moments of a region of `shape` over `axes` (see the module
/// docs): reduced axes of length 1, the first of them of length 2.
pub fn moments_shape(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    let mut s = shape.to_vec();
    for &a in axes {
        s[a] = 1;
    }
    if let Some(&first) = axes.first() {
        s[first] = 2;
    }
    s
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
