//! Sorting along an axis, chunked: each block sorted on its own, then every output block
//! merged from the sorted blocks of its lane, never one chunk holding the whole axis.
//!
//! Output block `j` along the axis holds global ranks `offsets[j]..offsets[j] + len[j]`
//! of each lane (the input's own chunking is kept). Its task reads the `k` sorted blocks
//! of its lane and copies out only its ranks: the split of each block at a rank comes
//! from a binary search ([`HostArray::merge_ranks`]), so the merge work over all output
//! blocks is one pass over the data, `O(n log k)`. Descending order takes the mirrored
//! rank range and reverses it (NaN first, as `np.flip(np.sort(np.flip(x)))`).

use std::sync::Arc;

use crate::backend::{ArrayBackend, Chunk};
use crate::error::{Error, Result};
use crate::host::HostArray;

use super::{Array, Op};

/// `h` with the order along `axis` reversed.
fn reversed(h: HostArray, axis: usize) -> HostArray {
    tessera_core::dispatch_host!(h, a => {
        let mut a = a;
        a.invert_axis(ndarray::Axis(axis));
        tessera_core::host::HostElement::wrap(a.as_standard_layout().into_owned())
    })
}

impl Array {
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
    /// [`Error::Invalid`] when `axis` is not an axis of the array.
    pub fn sort(&self, axis: usize, descending: bool) -> Result<Array> {
        if axis >= self.ndim() {
            return Err(Error::invalid(
                "sort",
                format!(
                    "axis {axis} is out of bounds for an array of {} dimensions (shape {:?})",
                    self.ndim(),
                    self.shape()
                ),
            ));
        }
        let blocks = self.chunks().grid()[axis];
        let dt = self.dtype();
        if blocks <= 1 {
            return Array::map_blocks_backend(
                &[self],
                Arc::new(move |b: &dyn ArrayBackend, c: &[Chunk]| b.sort(&c[0], axis, descending)),
                dt,
                None,
            );
        }
        let sorted = Array::map_blocks_backend(
            &[self],
            Arc::new(move |b: &dyn ArrayBackend, c: &[Chunk]| b.sort(&c[0], axis, false)),
            dt,
            None,
        )?;
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
            let copies: Vec<Option<HostArray>> = deps
                .iter()
                .map(|c| match b.host_view(c) {
                    Some(_) => Ok(None),
                    None => b.to_host(c).map(Some),
                })
                .collect::<Result<_>>()?;
            if copies.iter().any(Option::is_some) {
                crate::fallback::record(
                    b.name(),
                    "sort",
                    "the sorted blocks of a lane are merged on the host",
                );
            }
            let parts: Vec<&HostArray> = deps
                .iter()
                .zip(&copies)
                .map(|(c, copy)| {
                    copy.as_ref()
                        .or_else(|| b.host_view(c))
                        .ok_or_else(|| Error::Internal("a host view that went away".into()))
                })
                .collect::<Result<_>>()?;
            let merged = HostArray::merge_ranks(&parts, axis, start, len)?;
            b.from_host_owned(if descending {
                reversed(merged, axis)
            } else {
                merged
            })
        };
        Ok(Array::new(
            Op::AlongAxis {
                input: sorted,
                axis,
                sources: Arc::new(vec![(0..blocks).collect(); blocks]),
                f: Arc::new(merge),
            },
            dt,
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
    fn an_axis_out_of_bounds_is_refused() {
        let err = ramp(&[3], &[2]).sort(1, false).unwrap_err();
        assert!(err.to_string().contains("axis 1 is out of bounds"), "{err}");
    }
}
