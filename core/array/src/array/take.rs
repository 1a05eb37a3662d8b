//! Integer-array indexing along an axis: `take` (one 1-d index array, NumPy's
//! `x[..., idx, ...]` with one array on one axis) and `take_along_axis` (an index per
//! output element, as `np.take_along_axis` and what `argsort` results are used with).
//!
//! Both are lane gathers ([`Op::AlongAxis`]): output block `j` along the axis reads the
//! index block `j` and the blocks of the input's lane its positions fall in, and copies
//! each picked slab once; nothing is concatenated. The output is chunked like the
//! indices along the axis and like the input elsewhere, as in Dask.
//!
//! Which input blocks an output block needs depends on the index values. When they are
//! known now (a stored array: what a NumPy index from Python becomes), the plan reads
//! only the blocks the indices touch and an index out of bounds is refused at once, as
//! NumPy does. When they are lazy, every block of the lane is read and the bounds are
//! checked as the block is computed.

use std::sync::Arc;

use crate::backend::{ArrayBackend, Chunk};
use crate::chunks::Chunks;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host::HostArray;

use super::lane::host_blocks;
use super::{Array, Op};

/// The host copy of `a` when it is stored and resident (its values known without
/// running a plan), else `None`.
fn known_values(a: &Array) -> Option<HostArray> {
    let Op::Stored(blocks) = a.op() else {
        return None;
    };
    let chunks = blocks
        .iter()
        .map(|h| match h {
            crate::stored::Held::Resident(c) => Some(c.clone()),
            _ => None,
        })
        .collect::<Option<Vec<Chunk>>>()?;
    Array::from_chunks(chunks, a.chunks().clone(), a.backend().clone())
        .ok()?
        .compute()
        .ok()
}

fn check_indices(op: &str, indices: &Array, x: &Array) -> Result<()> {
    if !indices.dtype().is_integer() {
        return Err(Error::dtype(
            op,
            indices.dtype(),
            format!(
                "indices must be of an integer dtype; got {} (use astype(int64))",
                indices.dtype()
            ),
        ));
    }
    indices.require_same_backend(x, op, "the indices")
}

impl Array {
    /// The elements at `indices` (a 1-d integer array; negative values count from the
    /// end) along `axis`, as `np.take(x, indices, axis)`. The result has the indices'
    /// length and chunks along `axis` and the array's elsewhere.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::from_slice(&[10.0, 11.0, 12.0, 13.0, 14.0], &[5], 2, None)?;
    /// let idx = Array::from_slice(&[4i64, 0, -1, 1], &[4], 3, None)?;
    /// let got = x.take(&idx, 0)?.compute()?.to_f64_vec();
    /// assert_eq!(got, vec![14.0, 10.0, 14.0, 11.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] for an axis out of bounds, indices that are not 1-d, or (when
    /// the indices are stored, else at compute) an index out of bounds, named with the
    /// axis and its size; [`Error::DType`] for indices of a non-integer dtype.
    pub fn take(&self, indices: &Array, axis: usize) -> Result<Array> {
        self.check_axis("take", axis)?;
        check_indices("take", indices, self)?;
        if indices.ndim() != 1 {
            return Err(Error::invalid(
                "take",
                format!(
                    "indices must be 1-d; got shape {:?} (flatten them, or use take_along_axis)",
                    indices.shape()
                ),
            ));
        }
        let n = self.shape()[axis];
        let blocks = self.chunks().grid()[axis];
        let starts = self.chunks().offsets(axis)[..blocks].to_vec();
        let idx_sizes = indices.chunks().axis(0).to_vec();
        let sources: Vec<Vec<usize>> = match known_values(indices) {
            Some(values) => {
                let picks = values.positions("take", axis, n)?;
                let mut at = 0;
                idx_sizes
                    .iter()
                    .map(|&len| {
                        let mut touched: Vec<usize> = picks[at..at + len]
                            .iter()
                            .map(|&p| starts.partition_point(|&s| s <= p) - 1)
                            .collect();
                        at += len;
                        touched.sort_unstable();
                        touched.dedup();
                        if touched.is_empty() {
                            touched.push(0);
                        }
                        touched
                    })
                    .collect()
            }
            None => vec![(0..blocks).collect(); idx_sizes.len()],
        };
        let sources = Arc::new(sources);
        let mut sizes = self.chunks().sizes().to_vec();
        sizes[axis] = idx_sizes;
        let mut shape = self.shape();
        shape[axis] = indices.shape()[0];
        let chunks = Chunks::new(&shape, sizes)?;
        let lanes = sources.clone();
        let gather = move |b: &dyn ArrayBackend, j: usize, deps: &[Chunk]| -> Result<Chunk> {
            let h = host_blocks(
                b,
                deps,
                "take",
                "the picked elements are gathered on the host",
            )?;
            let (index, parts) = h
                .split_last()
                .ok_or_else(|| Error::Internal("a take task with no blocks".into()))?;
            let picks = index.positions("take", axis, n)?;
            let parts: Vec<&HostArray> = parts.iter().map(AsRef::as_ref).collect();
            let part_starts: Vec<usize> = lanes[j].iter().map(|&i| starts[i]).collect();
            b.from_host_owned(HostArray::gather(&parts, &part_starts, axis, &picks)?)
        };
        Ok(Array::new(
            Op::AlongAxis {
                inputs: vec![self.clone()],
                axis,
                sources,
                with: Some(indices.clone()),
                f: Arc::new(gather),
                name: "take (gather from the blocks of a lane)",
            },
            self.dtype(),
            chunks,
            self.backend().clone(),
        ))
    }

    /// For every element of `indices` (an integer array of this array's rank), the
    /// element of this array at that position along `axis` in the same lane, as
    /// `np.take_along_axis`: the axes other than `axis` broadcast together, and the
    /// result has the indices' length and chunks along `axis`.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::from_slice(&[3.0, 1.0, 2.0, 9.0, 7.0, 8.0], &[2, 3], 2, None)?;
    /// let order = x.argsort(1, false)?;
    /// let sorted = x.take_along_axis(&order, 1)?.compute()?.to_f64_vec();
    /// assert_eq!(sorted, vec![1.0, 2.0, 3.0, 7.0, 8.0, 9.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] for an axis out of bounds, indices of another rank or shapes
    /// that do not broadcast off `axis`, or (at compute) an index out of bounds;
    /// [`Error::DType`] for indices of a non-integer dtype.
    pub fn take_along_axis(&self, indices: &Array, axis: usize) -> Result<Array> {
        self.check_axis("take_along_axis", axis)?;
        check_indices("take_along_axis", indices, self)?;
        if indices.ndim() != self.ndim() {
            return Err(Error::invalid(
                "take_along_axis",
                format!(
                    "indices must have the array's {} dimensions; got shape {:?} for an array of shape {:?}",
                    self.ndim(),
                    indices.shape(),
                    self.shape()
                ),
            ));
        }
        let (xs, is) = (self.shape(), indices.shape());
        let mut x_shape = Vec::with_capacity(xs.len());
        let mut i_shape = Vec::with_capacity(xs.len());
        for d in 0..xs.len() {
            if d == axis {
                x_shape.push(xs[d]);
                i_shape.push(is[d]);
                continue;
            }
            let m = match (xs[d], is[d]) {
                (a, b) if a == b => a,
                (1, b) => b,
                (a, 1) => a,
                (a, b) => {
                    return Err(Error::invalid(
                        "take_along_axis",
                        format!(
                            "indices of shape {is:?} do not broadcast with the array's shape {xs:?} off axis {axis} (axis {d}: {b} vs {a})"
                        ),
                    ))
                }
            };
            x_shape.push(m);
            i_shape.push(m);
        }
        let x = if x_shape == xs {
            self.clone()
        } else {
            self.broadcast_to(&x_shape)?
        };
        let mut sizes = x.chunks().sizes().to_vec();
        // Broadcasting leaves `axis` as it is: the output follows the indices' chunks there.
        sizes[axis] = indices.chunks().axis(axis).to_vec();
        let chunks = Chunks::new(&i_shape, sizes)?;
        let idx = if i_shape == is {
            indices.clone()
        } else {
            indices.broadcast_to(&i_shape)?
        };
        let idx = if idx.chunks() == &chunks {
            idx
        } else {
            idx.rechunk(crate::chunks::ChunkSpec::Exact(chunks.clone()))?
        };
        let n = x_shape[axis];
        let blocks = x.chunks().grid()[axis];
        let starts = x.chunks().offsets(axis)[..blocks].to_vec();
        let gather = move |b: &dyn ArrayBackend, _j: usize, deps: &[Chunk]| -> Result<Chunk> {
            let h = host_blocks(
                b,
                deps,
                "take_along_axis",
                "the picked elements are gathered on the host",
            )?;
            let (index, parts) = h
                .split_last()
                .ok_or_else(|| Error::Internal("a take_along_axis task with no blocks".into()))?;
            let picks = index.positions("take_along_axis", axis, n)?;
            let picks = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(index.shape()), picks)
                .map_err(|e| Error::Internal(format!("index block shape: {e}")))?;
            let parts: Vec<&HostArray> = parts.iter().map(AsRef::as_ref).collect();
            b.from_host_owned(HostArray::gather_lanes(
                &parts,
                &starts,
                axis,
                &picks.view(),
            )?)
        };
        let dtype: DType = x.dtype();
        let backend = x.backend().clone();
        Ok(Array::new(
            Op::AlongAxis {
                inputs: vec![x],
                axis,
                sources: Arc::new(vec![(0..blocks).collect(); chunks.grid()[axis]]),
                with: Some(idx),
                f: Arc::new(gather),
                name: "take_along_axis (gather from the blocks of a lane)",
            },
            dtype,
            chunks,
            backend,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_cpu as _;

    fn ramp(shape: &[usize], chunks: &[usize]) -> Array {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let h = HostArray::F64(ndarray::ArrayD::from_shape_vec(shape.to_vec(), v).unwrap());
        Array::from_host(h, chunks, None).unwrap()
    }

    fn ints(v: &[i64], chunk: usize) -> Array {
        Array::from_slice(v, &[v.len()], chunk, None).unwrap()
    }

    #[test]
    fn take_on_every_axis_equals_numpy_fancy_indexing() {
        let x = ramp(&[5, 4, 6], &[2, 3, 4]);
        let whole = x.compute().unwrap();
        let idx = [3i64, -1, 0, 0, 2];
        for axis in 0..3 {
            let n = x.shape()[axis] as i64;
            let picks: Vec<usize> = idx.iter().map(|&i| i.rem_euclid(n) as usize).collect();
            let want = HostArray::gather(&[&whole], &[0], axis, &picks).unwrap();
            // Stored indices (read now) and lazy ones (read at compute) agree.
            let stored = x.take(&ints(&idx, 2), axis).unwrap();
            let lazy = x
                .take(
                    &ints(&idx, 2)
                        .binary_scalar(
                            crate::program::BinaryOp::Add,
                            crate::dtype::Scalar::I64(0),
                            false,
                        )
                        .unwrap(),
                    axis,
                )
                .unwrap();
            assert_eq!(stored.chunks().axis(axis), &[2, 2, 1]);
            assert_eq!(stored.compute().unwrap(), want);
            assert_eq!(lazy.compute().unwrap(), want);
        }
    }

    #[test]
    fn stored_indices_read_only_the_blocks_they_touch() {
        let x = ramp(&[12], &[3]);
        let got = x.take(&ints(&[7, 6, 8], 3), 0).unwrap();
        let plan = got.explain().unwrap();
        assert!(
            plan.contains("take (gather from the blocks of a lane)"),
            "{plan}"
        );
        // One gather, one index chunk and one of the four input chunks.
        assert_eq!(got.num_tasks().unwrap(), 3, "{plan}");
        assert_eq!(got.compute().unwrap().to_f64_vec(), vec![7.0, 6.0, 8.0]);
    }

    #[test]
    fn out_of_bounds_and_wrong_dtypes_are_refused_with_the_axis_and_size() {
        let x = ramp(&[4, 3], &[2, 2]);
        let err = x.take(&ints(&[0, 3], 2), 1).unwrap_err().to_string();
        assert!(
            err.contains("index 3 is out of bounds for axis 1 with size 3"),
            "{err}"
        );
        let lazy = ints(&[0, -5], 2)
            .binary_scalar(
                crate::program::BinaryOp::Add,
                crate::dtype::Scalar::I64(0),
                false,
            )
            .unwrap();
        let err = x.take(&lazy, 0).unwrap().compute().unwrap_err().to_string();
        assert!(
            err.contains("index -5 is out of bounds for axis 0 with size 4"),
            "{err}"
        );
        let floats = Array::from_slice(&[0.0], &[1], 1, None).unwrap();
        assert!(matches!(x.take(&floats, 0), Err(Error::DType { .. })));
        assert!(x.take(&ints(&[0], 1), 2).is_err());
    }

    #[test]
    fn take_along_axis_broadcasts_off_the_axis_and_follows_the_index_chunks() {
        let x = ramp(&[3, 5], &[2, 2]);
        let idx = Array::from_host(
            HostArray::I64(ndarray::ArrayD::from_shape_vec(vec![1, 4], vec![4, 0, -1, 2]).unwrap()),
            [1usize, 3].as_slice(),
            None,
        )
        .unwrap();
        let got = x.take_along_axis(&idx, 1).unwrap();
        assert_eq!(got.shape(), vec![3, 4]);
        assert_eq!(got.chunks().axis(1), &[3, 1]);
        assert_eq!(
            got.compute().unwrap().to_f64_vec(),
            vec![4.0, 0.0, 4.0, 2.0, 9.0, 5.0, 9.0, 7.0, 14.0, 10.0, 14.0, 12.0]
        );
        let wrong = ramp(&[2, 5], &[2, 2]).astype(DType::I64);
        assert!(x.take_along_axis(&wrong, 1).is_err());
    }
}
