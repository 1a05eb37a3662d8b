//! `map_blocks`: a user function applied to every block.
//!
//! Two forms: on host ndarrays (any backend; each block is copied to the host and back,
//! which the plan names), or on the backend's own chunks (no copies; the function gets the
//! backend to call primitives on). The output dtype and block shapes are declared up
//! front, as in Dask, and checked when each block is produced.

use super::{Array, BackendBlockFn, BlockFn, HostBlockFn, Op};
use crate::chunks::Chunks;
use crate::dtype::DType;
use crate::error::{Error, Result};

impl Array {
    fn map_blocks_impl(
        inputs: &[&Array],
        f: BlockFn,
        dtype: DType,
        chunks: Option<Chunks>,
    ) -> Result<Array> {
        let first = inputs
            .first()
            .ok_or_else(|| Error::invalid("map_blocks", "need at least one input array"))?;
        let aligned = if inputs.iter().all(|a| a.shape() == first.shape()) {
            Array::align("map_blocks", inputs)?
        } else {
            let grid = first.chunks().grid();
            if inputs.iter().any(|a| a.chunks().grid() != grid) {
                return Err(Error::invalid(
                    "map_blocks",
                    "inputs of different shapes must have the same number of blocks along every axis",
                ));
            }
            inputs.iter().map(|a| (*a).clone()).collect()
        };
        let in_chunks = aligned[0].chunks().clone();
        let chunks = match chunks {
            Some(c) => {
                if c.grid() != in_chunks.grid() {
                    return Err(Error::invalid(
                        "map_blocks",
                        format!(
                            "declared output chunks have a {:?} block grid; the inputs have {:?}",
                            c.grid(),
                            in_chunks.grid()
                        ),
                    ));
                }
                c
            }
            None => in_chunks,
        };
        Ok(Array::new(
            Op::MapBlocks(aligned, f),
            dtype,
            chunks,
            first.backend().clone(),
        ))
    }

    /// Applies `f` to the host copy of every block of `inputs` (aligned like an
    /// elementwise op). `dtype` and `chunks` declare the output (default: the inputs'
    /// chunks); a block of another shape or dtype is an error naming the block.
    pub fn map_blocks(
        inputs: &[&Array],
        f: HostBlockFn,
        dtype: DType,
        chunks: Option<Chunks>,
    ) -> Result<Array> {
        Array::map_blocks_impl(inputs, BlockFn::Host(f), dtype, chunks)
    }

    /// Like [`Array::map_blocks`] but on the backend's chunks, without host copies.
    pub fn map_blocks_backend(
        inputs: &[&Array],
        f: BackendBlockFn,
        dtype: DType,
        chunks: Option<Chunks>,
    ) -> Result<Array> {
        Array::map_blocks_impl(inputs, BlockFn::Backend(f), dtype, chunks)
    }
}
