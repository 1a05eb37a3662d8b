//! Cumulative scans along an axis (`cumsum`, `cumprod`, `cumulative_sum` with
//! `include_initial`, running max and min), chunked: never gathered into one chunk.
//!
//! Three steps, as Dask's `cumreduction` does them:
//! 1. every block scanned on its own ([`ArrayBackend::scan`](crate::backend::ArrayBackend::scan));
//! 2. the last element of each block along the axis taken (a slab one element thick), the
//!    slabs of one lane of blocks joined into one small chunk and turned into an
//!    *exclusive* scan: the carry of block `j` is the combination of blocks `0..j`, the
//!    op's bit-neutral identity for block 0;
//! 3. each block combined with its carry broadcast along the axis.
//!
//! The carries are as large as the array with the axis cut to one element per block, so
//! step 2 costs a fraction of a pass; each block is read once and written once, and the
//! memory held is a block per worker plus the carries.

use std::sync::Arc;

use crate::backend::{ArrayBackend, AxisSlice, Chunk};
use crate::chunks::Chunks;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::program::ScanOp;

use super::Array;

impl Array {
    /// The inclusive scan `op` along `axis`, in `dtype` (default:
    /// [`ScanOp::result_dtype`], NumPy's accumulation dtype: `int64` for bool and signed
    /// integers, `uint64` for unsigned). With `include_initial` the result is one longer
    /// along `axis` and starts with the empty scan (`0` for sums, `1` for products), as
    /// the Array API's `cumulative_sum(..., include_initial=True)`.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// use tessera_core::{program::ScanOp, DType};
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::arange(1.0, 7.0, 1.0, DType::I64, 2, None)?; // [1, 2, 3, 4, 5, 6] in 3 chunks
    /// let c = x.cumulative(ScanOp::Sum, 0, None, false)?;
    /// assert_eq!(c.to_ndarray::<i64>()?.into_raw_vec_and_offset().0, vec![1, 3, 6, 10, 15, 21]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] when `axis` is not an axis of the array, or `include_initial`
    /// is asked of a running max or min (they have no empty value).
    pub fn cumulative(
        &self,
        op: ScanOp,
        axis: usize,
        dtype: Option<DType>,
        include_initial: bool,
    ) -> Result<Array> {
        self.check_axis(op.name(), axis)?;
        if include_initial && matches!(op, ScanOp::Max | ScanOp::Min) {
            return Err(Error::invalid(
                op.name(),
                "include_initial is defined for sums and products only (a running max or min of nothing has no value)",
            ));
        }
        let dt = dtype.unwrap_or_else(|| op.result_dtype(self.dtype()));
        let x = self.astype(dt);
        let scanned = if self.shape()[axis] == 0 {
            x
        } else {
            x.scan_blocks(op, axis)?
        };
        if !include_initial {
            return Ok(scanned);
        }
        let mut shape = self.shape();
        shape[axis] = 1;
        let mut sizes = scanned.chunks().sizes().to_vec();
        sizes[axis] = vec![1];
        let empty = match op {
            ScanOp::Sum => crate::dtype::Scalar::I64(0),
            _ => crate::dtype::Scalar::I64(1),
        }
        .cast(dt);
        let first = Array::full(
            &shape,
            empty,
            crate::chunks::ChunkSpec::Exact(Chunks::new(&shape, sizes)?),
            Some(self.backend_name()),
        )?;
        Array::concatenate(&[&first, &scanned], axis)
    }

    /// Steps 1–3 of the module docs on an array already in the scan's dtype.
    fn scan_blocks(&self, op: ScanOp, axis: usize) -> Result<Array> {
        let dt = self.dtype();
        let local = Array::map_blocks_backend(
            &[self],
            Arc::new(move |b: &dyn ArrayBackend, c: &[Chunk]| b.scan(&c[0], op, axis)),
            dt,
            None,
        )?;
        let blocks = self.chunks().grid()[axis];
        if blocks <= 1 {
            return Ok(local);
        }
        // Step 2: each block's last slab along the axis, one element thick.
        let mut slab_sizes = self.chunks().sizes().to_vec();
        slab_sizes[axis] = vec![1; blocks];
        let mut slab_shape = self.shape();
        slab_shape[axis] = blocks;
        let slab_chunks = Chunks::new(&slab_shape, slab_sizes.clone())?;
        let lasts = Array::map_blocks_backend(
            &[&local],
            Arc::new(move |b: &dyn ArrayBackend, c: &[Chunk]| {
                let shape = c[0].shape().to_vec();
                let slices: Vec<AxisSlice> = shape
                    .iter()
                    .enumerate()
                    .map(|(a, &n)| AxisSlice {
                        start: if a == axis { n - 1 } else { 0 },
                        step: 1,
                        len: if a == axis { 1 } else { n },
                    })
                    .collect();
                b.slice(&c[0], &slices)
            }),
            dt,
            Some(slab_chunks.clone()),
        )?;
        let mut joined = slab_sizes.clone();
        joined[axis] = vec![blocks];
        let joined = lasts.rechunk(crate::chunks::ChunkSpec::Exact(Chunks::new(
            &slab_shape,
            joined,
        )?))?;
        let identity = op.identity(dt);
        let carries = Array::map_blocks_backend(
            &[&joined],
            Arc::new(move |b: &dyn ArrayBackend, c: &[Chunk]| {
                let shape = c[0].shape().to_vec();
                let n = shape[axis];
                let inclusive = b.scan(&c[0], op, axis)?;
                let mut one = shape.clone();
                one[axis] = 1;
                let first = b.full(&one, identity)?;
                let head: Vec<AxisSlice> = shape
                    .iter()
                    .enumerate()
                    .map(|(a, &m)| AxisSlice {
                        start: 0,
                        step: 1,
                        len: if a == axis { n - 1 } else { m },
                    })
                    .collect();
                let head = b.slice(&inclusive, &head)?;
                b.concatenate(&[first, head], axis)
            }),
            dt,
            None,
        )?
        .rechunk(crate::chunks::ChunkSpec::Exact(slab_chunks))?;
        // Step 3.
        Array::map_blocks_backend(
            &[&local, &carries],
            Arc::new(move |b: &dyn ArrayBackend, c: &[Chunk]| {
                let carry = b.broadcast_to(&c[1], c[0].shape())?;
                b.binary(op.combine(), &c[0], &carry)
            }),
            dt,
            None,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Scalar;
    use crate::host::HostArray;
    use tessera_cpu as _;

    fn ramp(shape: &[usize], chunks: &[usize]) -> Array {
        let n: usize = shape.iter().product();
        let v: Vec<f64> = (0..n).map(|i| ((i * 7919) % 23) as f64 - 11.5).collect();
        let h = HostArray::F64(ndarray::ArrayD::from_shape_vec(shape.to_vec(), v).unwrap());
        Array::from_host(h, chunks, None).unwrap()
    }

    #[test]
    fn a_chunked_scan_equals_the_host_scan_of_the_whole_array_on_every_axis() {
        let x = ramp(&[7, 5, 6], &[3, 2, 4]);
        let whole = x.compute().unwrap();
        for op in ScanOp::ALL {
            for axis in 0..3 {
                let got = x
                    .cumulative(op, axis, None, false)
                    .unwrap()
                    .compute()
                    .unwrap();
                assert_eq!(got, whole.scan(op, axis).unwrap(), "{op} axis {axis}");
            }
        }
    }

    #[test]
    fn integers_accumulate_in_int64_and_include_initial_prepends_the_empty_sum() {
        let x = Array::arange(1.0, 6.0, 1.0, DType::I32, 2, None).unwrap();
        let c = x.cumulative(ScanOp::Sum, 0, None, true).unwrap();
        assert_eq!(c.dtype(), DType::I64);
        assert_eq!(c.shape(), vec![6]);
        assert_eq!(
            c.to_ndarray::<i64>().unwrap().into_raw_vec_and_offset().0,
            vec![0, 1, 3, 6, 10, 15]
        );
        let p = x
            .cumulative(ScanOp::Prod, 0, Some(DType::F64), true)
            .unwrap();
        assert_eq!(
            p.compute().unwrap().to_f64_vec(),
            vec![1.0, 1.0, 2.0, 6.0, 24.0, 120.0]
        );
        assert!(x.cumulative(ScanOp::Max, 0, None, true).is_err());
        let err = x.cumulative(ScanOp::Sum, 1, None, false).unwrap_err();
        assert!(err.to_string().contains("axis 1 is out of bounds"), "{err}");
    }

    #[test]
    fn a_negative_zero_survives_the_carry_of_a_later_block() {
        let h = HostArray::F64(ndarray::ArrayD::from_shape_vec(vec![4], vec![-0.0; 4]).unwrap());
        let x = Array::from_host(h, 2, None).unwrap();
        let got = x
            .cumulative(ScanOp::Sum, 0, None, false)
            .unwrap()
            .compute()
            .unwrap();
        assert!(got
            .to_f64_vec()
            .iter()
            .all(|v| *v == 0.0 && v.is_sign_negative()));
        assert_eq!(ScanOp::Sum.identity(DType::F64), Scalar::F64(-0.0));
    }
}
