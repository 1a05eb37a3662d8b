//! Per-block moments of a program's output: its sum and `M2`, the sum of squared
//! deviations from the block's *own* mean — the partials of `var`/`std`'s parallel merge.
//!
//! Why one request for both: `M2` about the block's mean needs that mean first, so as two
//! reductions it takes two passes over the block, and a block that is *generated* (a random
//! array, a fused chain over one) is generated twice. A backend that implements
//! [`ArrayBackend::moments_program`](crate::backend::ArrayBackend::moments_program) natively computes both in one pass (the CPU backend
//! folds each run of a tile exactly and merges runs with the update of Chan, Golub and
//! LeVeque). The reference, [`moments_with_primitives`](crate::backend::moments_with_primitives), takes the two passes with the
//! backend's own program execution — what plans did before the request existed — so every
//! backend gets it unchanged.
//!
//! **Packed layout.** The result has the program's shape with every reduced axis of length
//! 1, except the *first* reduced axis, of length 2: index 0 along it holds the sum, index 1
//! holds `M2`. Both are in the output's float dtype. One chunk per block keeps a task's
//! single-output contract; `var` reads the two halves through step-2 views.

use super::Program;
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
