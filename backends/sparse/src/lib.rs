//! # tessera-sparse
//!
//! A backend whose chunks are sparse: explicit entries at sorted C-order positions (CSR
//! order for 2-d, linearised COO for n-d) and a **fill value** for everything else, as in
//! pydata/sparse. Registered as `sparse`, so `TESSERA_ARRAY_BACKEND=sparse` (or
//! `array.backend = "sparse"`, or `Some("sparse")` at creation) runs unchanged array code
//! on sparse chunks, checked by the same conformance suite as the dense backends.
//!
//! * **Elementwise** ops keep sparsity whatever the op: they run on the union of explicit
//!   entries and on the fills (`x + 1` on fill 0 is fill 1, `x * 0` prunes to nothing,
//!   comparisons against the fill give fill `false`), with the CPU reference's kernels on
//!   those compact arrays, so the numerics are the reference's exactly.
//! * **Reductions** (sum, prod, min, max, any, all, count, nansum — so mean, var, std and
//!   count-nonzero at the array level) fold the explicit entries and account for the
//!   implicit fill elements by count; **structure** (strided slices, transpose, reshape,
//!   broadcast, concatenate) maps coordinates; **matmul** is Gustavson's algorithm for
//!   sparse × sparse and sparse × dense.
//! * It **densifies** only where the math needs every element, and says so in `explain()`:
//!   dense generators (`random`, coordinates), arg-reductions, matmul with a non-zero left
//!   fill or non-finite values, joining chunks whose fills differ.
//!
//! Sparse-native creation: [`random`] (a density parameter, chunking-invariant), [`eye`],
//! [`from_coo`] / [`Coo::new`] (triplets), [`from_dense`] (with a threshold); host forms
//! [`to_coo`], [`Coo::to_csr`], [`Coo::to_record_batch`] (Arrow).

mod array_backend;
mod chunk;
mod generate;
mod host_form;
mod matmul;
mod reduce;
mod structure;

pub use array_backend::SparseBackend;
pub use chunk::SparseChunk;
pub use generate::{eye, random};
pub use host_form::{from_coo, to_coo, Coo, Csr};

use tessera_array::Array;
use tessera_core::backend::downcast_chunk;
use tessera_core::{Chunk, Result, Scalar};

/// The registry name.
pub const NAME: &str = "sparse";

tessera_core::inventory::submit! {
    tessera_core::registry::ArrayBackendFactory::new(NAME, || Ok(std::sync::Arc::new(SparseBackend::new())))
}

/// This backend's chunk inside a type-erased one.
pub fn downcast<'a>(chunk: &'a Chunk, op: &str) -> Result<&'a SparseChunk> {
    downcast_chunk::<SparseChunk>(chunk, NAME, op)
}

/// `array` on the sparse backend, with every element of magnitude `<= threshold` made
/// implicit (0). The thresholding runs where the array is (fused into its chunks), so a
/// dense chunk is converted once, chunk by chunk.
pub fn from_dense(array: &Array, threshold: f64) -> Result<Array> {
    let dtype = array.dtype();
    let keep = array.abs()?.gt_scalar(threshold)?;
    let zero = Array::full(
        &array.shape(),
        Scalar::zero(dtype),
        array.chunks().clone(),
        Some(array.backend_name()),
    )?;
    keep.where_(array, &zero)?.to_backend(NAME)
}
