//! What the routines ask of their input, shared by TSQR and the decompositions built on
//! it: a float dtype, two dimensions, whole rows per chunk; and small arrays as one chunk.

use crate::array::Array;
use crate::backend::Chunk;
use crate::chunks::{ChunkSpec, Chunks};
use crate::dtype::DType;
use crate::error::{Error, Result};

/// The float dtype linear algebra runs in: floats stay, everything else becomes `float64`.
pub(crate) fn as_float(x: &Array) -> Array {
    match x.dtype() {
        DType::F32 | DType::F64 => x.clone(),
        _ => x.astype(DType::F64),
    }
}

/// An error unless `x` has one chunk along axis 1 (`why`: what needs whole rows).
pub(crate) fn require_whole_rows(x: &Array, op: &str, why: &str) -> Result<()> {
    let n = x.chunks().axis(1).len();
    if n == 1 {
        return Ok(());
    }
    Err(Error::invalid(
        op,
        format!(
            "{why}; {:?} has {n} column chunks: rechunk axis 1 into one chunk",
            x.shape()
        ),
    ))
}

/// The two dimensions of `x`, or an error naming `op` unless it is 2-d.
pub(crate) fn require_2d(x: &Array, op: &str) -> Result<(usize, usize)> {
    match x.shape().as_slice() {
        &[m, n] => Ok((m, n)),
        s => Err(Error::shape(
            op,
            format!("needs a 2-d array, got shape {s:?}"),
        )),
    }
}

/// One stored chunk as an array on `x`'s backend.
pub(crate) fn single(x: &Array, c: Chunk) -> Result<Array> {
    let shape = c.shape().to_vec();
    Array::from_chunks(vec![c], Chunks::single(&shape), x.backend().clone())
}

/// The array's data as one chunk (for small arrays: R factors, B of svd_compressed).
pub(crate) fn one_chunk(x: &Array) -> Result<Chunk> {
    let whole = x.rechunk(ChunkSpec::Exact(Chunks::single(&x.shape())))?;
    whole
        .compute_chunks()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal("a single-chunk array computed no chunk".into()))
}
