//! Structure: transpose, reshape, concatenate, stack, rechunk, squeeze, expand_dims.
//!
//! Transposes, squeezes and new axes are free views. `concatenate` is free too: the
//! result's chunks are the inputs' chunks side by side. `rechunk` and a general `reshape`
//! move data:
//!
//! **Reshape rules.** A reshape that only inserts or removes length-1 axes is a view. Any
//! other reshape is done in C order on row blocks: the input is rechunked so that only its
//! first axis is split (every other axis whole), and the output is chunked along its first
//! axis only, with about as many bytes per chunk as the input's largest chunk; each output
//! chunk gathers the contiguous C-order range it needs from the input row blocks. Chunk
//! along the first axis before a reshape to keep this cheap (Dask has the same constraint).

use super::{Array, Index, Op};
use crate::chunks::{numel, ChunkSpec, Chunks};
use crate::dtype::promote;
use crate::error::{Error, Result};
use crate::program::AxisMap;

impl Array {
    /// Permutes axes: output axis `i` is input axis `perm[i]`.
    pub fn permute_dims(&self, perm: &[usize]) -> Result<Array> {
        let n = self.ndim();
        let mut seen = vec![false; n];
        if perm.len() != n
            || perm
                .iter()
                .any(|&p| p >= n || std::mem::replace(&mut seen[p], true))
        {
            return Err(Error::invalid(
                "permute_dims",
                format!("{perm:?} is not a permutation of the {n} axes"),
            ));
        }
        let shape = self.shape();
        let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
        let mut maps = vec![
            AxisMap {
                start: 0,
                step: 1,
                out_axis: None
            };
            n
        ];
        for (i, &p) in perm.iter().enumerate() {
            maps[p].out_axis = Some(i);
        }
        self.view(maps, &out_shape)
    }

    /// Reverses the axes.
    pub fn transpose(&self) -> Result<Array> {
        let perm: Vec<usize> = (0..self.ndim()).rev().collect();
        self.permute_dims(&perm)
    }

    /// Alias of [`Array::transpose`] (`x.T`).
    #[allow(non_snake_case)]
    pub fn T(&self) -> Result<Array> {
        self.transpose()
    }

    /// Removes length-1 axes (`None`: all of them).
    pub fn squeeze(&self, axes: Option<&[usize]>) -> Result<Array> {
        let shape = self.shape();
        let axes: Vec<usize> = match axes {
            Some(a) => a.to_vec(),
            None => (0..shape.len()).filter(|&a| shape[a] == 1).collect(),
        };
        for &a in &axes {
            if a >= shape.len() || shape[a] != 1 {
                return Err(Error::invalid(
                    "squeeze",
                    format!("cannot squeeze axis {a} of shape {shape:?}: only length-1 axes can be removed"),
                ));
            }
        }
        let index: Vec<Index> = (0..shape.len())
            .map(|a| {
                if axes.contains(&a) {
                    Index::At(0)
                } else {
                    Index::FULL
                }
            })
            .collect();
        self.slice(&index)
    }

    /// Inserts a length-1 axis at position `axis` of the result.
    pub fn expand_dims(&self, axis: usize) -> Result<Array> {
        if axis > self.ndim() {
            return Err(Error::invalid(
                "expand_dims",
                format!(
                    "axis {axis} is out of bounds for a {}-d result",
                    self.ndim() + 1
                ),
            ));
        }
        let mut index = vec![Index::FULL; self.ndim()];
        index.insert(axis, Index::NewAxis);
        self.slice(&index)
    }

    /// New chunk boundaries for the same data.
    pub fn rechunk(&self, chunks: impl Into<ChunkSpec>) -> Result<Array> {
        let chunks = super::creation::resolve_chunks(&self.shape(), self.dtype(), chunks)?;
        if &chunks == self.chunks() {
            return Ok(self.clone());
        }
        Ok(Array::new(
            Op::Rechunk(self.clone()),
            self.dtype(),
            chunks,
            self.backend().clone(),
        ))
    }

    /// C-order reshape; one entry may be `-1` (inferred). See the module docs for the rules.
    pub fn reshape(&self, shape: &[i64]) -> Result<Array> {
        let size = self.size();
        let known: usize = shape
            .iter()
            .filter(|&&d| d >= 0)
            .map(|&d| d as usize)
            .product();
        let unknown = shape.iter().filter(|&&d| d < 0).count();
        let bad = || {
            Error::shape(
                "reshape",
                format!(
                    "cannot reshape array of shape {:?} ({size} elements) into shape {shape:?}",
                    self.shape()
                ),
            )
        };
        if unknown > 1 || shape.iter().any(|&d| d < -1) {
            return Err(bad());
        }
        let out: Vec<usize> = shape
            .iter()
            .map(|&d| {
                if d >= 0 {
                    Ok(d as usize)
                } else {
                    size.checked_div(known).ok_or_else(bad)
                }
            })
            .collect::<Result<_>>()?;
        if numel(&out) != size {
            return Err(bad());
        }
        let own = self.shape();
        if out == own {
            return Ok(self.clone());
        }
        // Only length-1 axes added or removed: a view.
        let core_in: Vec<usize> = own.iter().copied().filter(|&d| d != 1).collect();
        let core_out: Vec<usize> = out.iter().copied().filter(|&d| d != 1).collect();
        if core_in == core_out {
            let squeezed = self.squeeze(None)?;
            let mut index: Vec<Index> = Vec::new();
            for &d in &out {
                index.push(if d == 1 { Index::NewAxis } else { Index::FULL });
            }
            return squeezed.slice(&index);
        }
        // General case: row blocks in, row blocks out.
        let itemsize = self.dtype().size();
        let target = (numel(&self.chunks().max_block_shape()) * itemsize).max(itemsize);
        let row_in: usize = own.iter().skip(1).product::<usize>().max(1);
        let rows_in = (target / (row_in * itemsize)).max(1);
        let input = if own.is_empty() {
            self.clone()
        } else {
            let mut spec = vec![crate::chunks::AxisChunks::Whole; own.len()];
            spec[0] = crate::chunks::AxisChunks::Size(rows_in);
            self.rechunk(ChunkSpec::PerAxis(spec))?
        };
        let out_chunks = if out.is_empty() {
            Chunks::single(&out)
        } else {
            let row_out: usize = out.iter().skip(1).product::<usize>().max(1);
            let rows_out = (target / (row_out * itemsize)).max(1);
            let mut sizes: Vec<Vec<usize>> = out.iter().map(|&d| vec![d]).collect();
            sizes[0] = crate::chunks::split_axis(out[0], rows_out);
            Chunks::new(&out, sizes)?
        };
        Ok(Array::new(
            Op::Reshape(input),
            self.dtype(),
            out_chunks,
            self.backend().clone(),
        ))
    }

    /// Joins arrays along an existing axis (dtypes promote).
    pub fn concatenate(arrays: &[&Array], axis: usize) -> Result<Array> {
        let first = arrays
            .first()
            .ok_or_else(|| Error::invalid("concatenate", "need at least one array"))?;
        let nd = first.ndim();
        if axis >= nd {
            return Err(Error::invalid(
                "concatenate",
                format!("axis {axis} is out of bounds for {nd}-d arrays"),
            ));
        }
        let mut dtype = first.dtype();
        for a in arrays {
            let (s0, s) = (first.shape(), a.shape());
            if s.len() != nd || (0..nd).any(|i| i != axis && s[i] != s0[i]) {
                return Err(Error::shape(
                    "concatenate",
                    format!("all shapes must match except on axis {axis}: {s0:?} vs {s:?}"),
                ));
            }
            first.require_same_backend(a, "concatenate", "arrays")?;
            dtype = promote(dtype, a.dtype());
        }
        // Other axes: common refinement of all inputs' chunks.
        let mut sizes: Vec<Vec<usize>> = first.chunks().sizes().to_vec();
        for a in &arrays[1..] {
            for (ax, s) in sizes.iter_mut().enumerate() {
                if ax != axis {
                    *s = super::elementwise::refine(s, a.chunks().axis(ax));
                }
            }
        }
        let inputs: Vec<Array> = arrays
            .iter()
            .map(|a| {
                let mut own = sizes.clone();
                own[axis] = a.chunks().axis(axis).to_vec();
                let c = Chunks::new(&a.shape(), own)?;
                let a = a.astype(dtype);
                Ok(if *a.chunks() == c {
                    a
                } else {
                    a.with_chunks_view(c)
                })
            })
            .collect::<Result<_>>()?;
        let nonempty: Vec<usize> = inputs
            .iter()
            .flat_map(|a| a.chunks().axis(axis).iter().copied().filter(|&s| s > 0))
            .collect();
        let mut axis_sizes = nonempty;
        if axis_sizes.is_empty() {
            axis_sizes.push(0);
        }
        sizes[axis] = axis_sizes;
        let mut shape = first.shape();
        shape[axis] = inputs.iter().map(|a| a.shape()[axis]).sum();
        let chunks = Chunks::new(&shape, sizes)?;
        let inputs: Vec<Array> = inputs.into_iter().filter(|a| a.shape()[axis] > 0).collect();
        if inputs.is_empty() {
            return Array::zeros(&shape, dtype, chunks, Some(first.backend_name()));
        }
        Ok(Array::new(
            Op::Concat(inputs, axis),
            dtype,
            chunks,
            first.backend().clone(),
        ))
    }

    /// Joins arrays along a new axis.
    pub fn stack(arrays: &[&Array], axis: usize) -> Result<Array> {
        let expanded: Vec<Array> = arrays
            .iter()
            .map(|a| a.expand_dims(axis))
            .collect::<Result<_>>()?;
        let refs: Vec<&Array> = expanded.iter().collect();
        Array::concatenate(&refs, axis)
    }
}
