//! Sorting along an axis, chunked: each block sorted on its own, then every output block
//! merged from the sorted blocks of its lane, never one chunk holding the whole axis.
//!
//! Output block `j` along the axis holds global ranks `offsets[j]..offsets[j] + len[j]`
//! of each lane (the input's own chunking is kept). Its task reads the `k` sorted blocks
//! of its lane and copies out only its ranks: the split of each block at a rank comes
//! from a binary search ([`HostArray::merge_ranks`]), so the merge work over all output
//! blocks is one pass over the data, `O(n log k)`. Descending order takes the mirrored
//! rank range and reverses it (NaN first, as `np.flip(np.sort(np.flip(x)))`).
//!
//! `argsort` runs the same plan with indices beside the values: each block's stable
//! argsort (shifted to global positions) travels with its sorted block, and the merge
//! reads the indices of its ranks ([`HostArray::merge_rank_indices`]); ties go to the
//! earlier block, so the result is the stable argsort of the whole lane. Descending is
//! the Array API's definition, `n - 1 - flip(argsort(flip(x)))`: equal elements keep
//! their order, NaN first.

use std::sync::Arc;

use crate::backend::{ArrayBackend, Chunk};
use crate::error::Result;
use crate::host::HostArray;

use super::lane::host_blocks;
use super::{Array, Index, Op};

/// `h` with the order along `axis` reversed.
fn reversed(h: HostArray, axis: usize) -> HostArray {
    tessera_core::dispatch_host!(h, a => {
        let mut a = a;
        a.invert_axis(ndarray::Axis(axis));
        tessera_core::host::HostElement::wrap(a.as_standard_layout().into_owned())
    })
}

impl Array {
    /// Every block sorted along `axis` on its own (the first step of a chunked sort or
    /// argsort, and the whole sort of a one-block axis), on the backend's own sort.
    fn sorted_blocks(&self, axis: usize, descending: bool) -> Result<Array> {
        Array::map_blocks_backend(
            &[self],
            Arc::new(move |b: &dyn ArrayBackend, c: &[Chunk]| b.sort(&c[0], axis, descending)),
            self.dtype(),
            None,
        )
    }

    /// The array sorted along `axis`: ascending in NumPy's order (NaN last, equal
    /// elements in order) or `descending`. The chunks stay as they are.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::from_slice(&[5.0, f64::NAN, -1.0, 3.0, 2.0, 0.5], &[6], 2, None)?;
    /// let s = x.sort(0, false)?.compute()?.to_f64_vec();
    /// assert_eq!(&s[..5], &[-1.0, 0.5, 2.0, 3.0, 5.0]);
    /// assert!(s[5].is_nan());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`crate::error::Error::Invalid`] when `axis` is not an axis of the array.
    pub fn sort(&self, axis: usize, descending: bool) -> Result<Array> {
        self.check_axis("sort", axis)?;
        let blocks = self.chunks().grid()[axis];
        let dt = self.dtype();
        if blocks <= 1 {
            return self.sorted_blocks(axis, descending);
        }
        let sorted = self.sorted_blocks(axis, false)?;
        let sizes = self.chunks().axis(axis).to_vec();
        let offsets = self.chunks().offsets(axis).to_vec();
        let n = self.shape()[axis];
        let merge = move |b: &dyn ArrayBackend, j: usize, deps: &[Chunk]| -> Result<Chunk> {
            let len = sizes[j];
            let start = if descending {
                n - offsets[j] - len
            } else {
                offsets[j]
            };
            let blocks = host_blocks(
                b,
                deps,
                "sort",
                "the sorted blocks of a lane are merged on the host",
            )?;
            let parts: Vec<&HostArray> = blocks.iter().map(AsRef::as_ref).collect();
            let merged = HostArray::merge_ranks(&parts, axis, start, len)?;
            b.from_host_owned(if descending {
                reversed(merged, axis)
            } else {
                merged
            })
        };
        Ok(Array::new(
            Op::AlongAxis {
                inputs: vec![sorted],
                axis,
                sources: Arc::new(vec![(0..blocks).collect(); blocks]),
                with: None,
                f: Arc::new(merge),
                name: "sort merge of a lane's sorted blocks",
            },
            dt,
            self.chunks().clone(),
            self.backend().clone(),
        ))
    }
}

impl Array {
    /// The `int64` positions that sort the array along `axis` (stable: equal elements
    /// in their order), ascending in NumPy's order (NaN last) or `descending` (NaN
    /// first, equal elements still in their order, as the Array API's `argsort`). The
    /// chunks stay as they are.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::from_slice(&[5.0, 1.0, 5.0, -2.0, 1.0], &[5], 2, None)?;
    /// let up = x.argsort(0, false)?.compute()?.to_f64_vec();
    /// assert_eq!(up, vec![3.0, 1.0, 4.0, 0.0, 2.0]);
    /// let down = x.argsort(0, true)?.compute()?.to_f64_vec();
    /// assert_eq!(down, vec![0.0, 2.0, 1.0, 4.0, 3.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`crate::error::Error::Invalid`] when `axis` is not an axis of the array.
    pub fn argsort(&self, axis: usize, descending: bool) -> Result<Array> {
        self.check_axis("argsort", axis)?;
        if descending {
            let mut flip = vec![Index::FULL; self.ndim()];
            flip[axis] = Index::step(-1);
            let n = self.shape()[axis] as i64;
            let up = self.slice(&flip)?.argsort(axis, false)?.slice(&flip)?;
            return up.binary_scalar(
                crate::program::BinaryOp::Sub,
                crate::dtype::Scalar::I64(n - 1),
                true,
            );
        }
        let blocks = self.chunks().grid()[axis];
        let offsets = self.chunks().offsets(axis).to_vec();
        let local = move |b: &dyn ArrayBackend, j: usize, deps: &[Chunk]| -> Result<Chunk> {
            let h = host_blocks(b, deps, "argsort", "each block is argsorted on the host")?;
            b.from_host_owned(h[0].argsort(axis, offsets[j])?)
        };
        let idx = Array::new(
            Op::AlongAxis {
                inputs: vec![self.clone()],
                axis,
                sources: Arc::new((0..blocks).map(|j| vec![j]).collect()),
                with: None,
                f: Arc::new(local),
                name: "argsort of a block",
            },
            crate::dtype::DType::I64,
            self.chunks().clone(),
            self.backend().clone(),
        );
        if blocks <= 1 {
            return Ok(idx);
        }
        let sorted = self.sorted_blocks(axis, false)?;
        let sizes = self.chunks().axis(axis).to_vec();
        let offsets = self.chunks().offsets(axis).to_vec();
        let merge = move |b: &dyn ArrayBackend, j: usize, deps: &[Chunk]| -> Result<Chunk> {
            let h = host_blocks(
                b,
                deps,
                "argsort",
                "the sorted blocks of a lane are merged on the host",
            )?;
            let (values, indices) = h.split_at(blocks);
            let values: Vec<&HostArray> = values.iter().map(AsRef::as_ref).collect();
            let indices: Vec<&HostArray> = indices.iter().map(AsRef::as_ref).collect();
            b.from_host_owned(HostArray::merge_rank_indices(
                &values, &indices, axis, offsets[j], sizes[j],
            )?)
        };
        Ok(Array::new(
            Op::AlongAxis {
                inputs: vec![sorted, idx],
                axis,
                sources: Arc::new(vec![(0..blocks).collect(); blocks]),
                with: None,
                f: Arc::new(merge),
                name: "argsort merge of a lane's sorted blocks",
            },
            crate::dtype::DType::I64,
            self.chunks().clone(),
            self.backend().clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_cpu as _;

    fn ramp(shape: &[usize], chunks: &[usize]) -> Array {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n)
            .map(|i| {
                if i % 11 == 5 {
                    f64::NAN
                } else {
                    ((i * 7919) % 23) as f64 - 11.5
                }
            })
            .collect();
        let h = HostArray::F64(ndarray::ArrayD::from_shape_vec(shape.to_vec(), v).unwrap());
        Array::from_host(h, chunks, None).unwrap()
    }

    fn same(a: &HostArray, b: &HostArray) {
        let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
        assert_eq!(x.len(), y.len());
        for (p, q) in x.iter().zip(&y) {
            assert!(p == q || (p.is_nan() && q.is_nan()), "{x:?} != {y:?}");
        }
    }

    #[test]
    fn a_chunked_sort_equals_the_host_sort_of_the_whole_array_on_every_axis() {
        let x = ramp(&[9, 4, 7], &[2, 3, 3]);
        let whole = x.compute().unwrap();
        for axis in 0..3 {
            for descending in [false, true] {
                let got = x.sort(axis, descending).unwrap();
                assert_eq!(got.chunks(), x.chunks());
                same(
                    &got.compute().unwrap(),
                    &whole.sort(axis, descending).unwrap(),
                );
            }
        }
    }

    #[test]
    fn a_chunked_argsort_equals_the_host_argsort_of_the_whole_array_on_every_axis() {
        let x = ramp(&[9, 4, 7], &[2, 3, 3]);
        let whole = x.compute().unwrap();
        for axis in 0..3 {
            let got = x.argsort(axis, false).unwrap();
            assert_eq!(got.chunks(), x.chunks());
            assert_eq!(got.dtype(), crate::dtype::DType::I64);
            same(&got.compute().unwrap(), &whole.argsort(axis, 0).unwrap());
            // Descending: the positions, read in order, give the descending sort.
            let down = x.argsort(axis, true).unwrap().compute().unwrap();
            let picked = x.take_along_axis(
                &Array::from_host(down, [2usize, 3, 3].as_slice(), None).unwrap(),
                axis,
            );
            same(
                &picked.unwrap().compute().unwrap(),
                &whole.sort(axis, true).unwrap(),
            );
        }
    }

    #[test]
    fn an_axis_out_of_bounds_is_refused() {
        let err = ramp(&[3], &[2]).sort(1, false).unwrap_err();
        assert!(err.to_string().contains("axis 1 is out of bounds"), "{err}");
    }
}
