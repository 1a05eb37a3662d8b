//! Searching a sorted array from another's values, chunked on both sides:
//! `searchsorted` (where each value would be inserted) and `isin` (whether each value
//! is a member of a set, which is sorted first).
//!
//! Both are lane ops ([`Op::AlongAxis`]) over the sorted 1-d array: output block `j`
//! (chunked like the values) reads every sorted block and its values' block, and
//! runs one binary search per value and block ([`HostArray::count_before`],
//! [`HostArray::members_of`], the values' keys made once per task): insertion positions
//! add up over the blocks, membership is any block's. The sorted array is never concatenated; both sides are compared in
//! their common dtype, as NumPy does.

use std::sync::Arc;

use crate::backend::{ArrayBackend, Chunk};
use crate::chunks::ChunkSpec;
use crate::dtype::{promote, DType, Scalar};
use crate::error::{Error, Result};
use crate::host::HostArray;
use crate::program::BinaryOp;

use super::lane::host_blocks;
use super::{Array, Op};

/// Which search a lane runs.
#[derive(Clone, Copy)]
enum Search {
    /// Insertion positions; `true` for NumPy's `side="right"`.
    Positions { right: bool },
    /// Membership.
    Members,
}

impl Array {
    /// For each element of `values`, the position in this array (1-d, sorted ascending in
    /// NumPy's order, NaN last) where inserting it keeps the order: before the elements
    /// equal to it (`right` false, NumPy's `side="left"`) or after them. `int64`, shaped
    /// and chunked like `values`.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// # fn main() -> tessera_core::Result<()> {
    /// let s = Array::from_slice(&[1.0, 2.0, 2.0, 5.0, 8.0], &[5], 2, None)?;
    /// let v = Array::from_slice(&[2.0, 0.0, 9.0, 6.0], &[4], 3, None)?;
    /// assert_eq!(s.searchsorted(&v, false)?.compute()?.to_f64_vec(), vec![1.0, 0.0, 5.0, 4.0]);
    /// assert_eq!(s.searchsorted(&v, true)?.compute()?.to_f64_vec(), vec![3.0, 0.0, 5.0, 4.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] when this array is not 1-d or the two are on different
    /// backends. The order is not checked: an unsorted array gives NumPy's unspecified
    /// positions.
    pub fn searchsorted(&self, values: &Array, right: bool) -> Result<Array> {
        self.search("searchsorted", values, Search::Positions { right })
    }

    /// Whether each element of this array equals some element of `test` (any shape),
    /// as `np.isin(x, test)`: `-0.0` equals `0.0`, NaN equals nothing, the two compared
    /// in their common dtype. `bool`, shaped and chunked like this array; `invert` gives
    /// the negation. `test` is sorted chunk by chunk first.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::from_slice(&[1i64, 4, 7, 4], &[4], 3, None)?;
    /// let t = Array::from_slice(&[4.0, 9.0], &[2], 1, None)?;
    /// assert_eq!(x.isin(&t, false)?.compute()?.to_f64_vec(), vec![0.0, 1.0, 0.0, 1.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] when the two are on different backends.
    pub fn isin(&self, test: &Array, invert: bool) -> Result<Array> {
        let flat = if test.ndim() == 1 {
            test.clone()
        } else {
            test.reshape(&[-1])?
        };
        if flat.size() == 0 {
            return Array::full(
                &self.shape(),
                Scalar::Bool(invert),
                ChunkSpec::Exact(self.chunks().clone()),
                Some(self.backend_name()),
            );
        }
        let common = promote(self.dtype(), flat.dtype());
        let sorted = flat.astype(common).sort(0, false)?;
        let found = sorted.search("isin", self, Search::Members)?;
        if invert {
            found.binary_scalar(BinaryOp::Eq, Scalar::Bool(false), false)
        } else {
            Ok(found)
        }
    }

    /// `search` of `values` against this sorted 1-d array.
    fn search(&self, op: &'static str, values: &Array, search: Search) -> Result<Array> {
        if self.ndim() != 1 {
            return Err(Error::invalid(
                op,
                format!("the sorted array must be 1-d; got shape {:?}", self.shape()),
            ));
        }
        values.require_same_backend(self, op, "the values")?;
        if values.ndim() == 0 {
            let one = values.reshape(&[1])?;
            return self.search(op, &one, search)?.reshape(&[]);
        }
        let common = promote(self.dtype(), values.dtype());
        let sorted = self.astype(common);
        let values = values.astype(common);
        let blocks = sorted.chunks().grid()[0];
        let lanes = values.chunks().grid()[0];
        let f = move |b: &dyn ArrayBackend, _j: usize, deps: &[Chunk]| -> Result<Chunk> {
            let h = host_blocks(b, deps, op, "each value is searched for on the host")?;
            let (v, parts) = h
                .split_last()
                .ok_or_else(|| Error::Internal(format!("a {op} task with no blocks")))?;
            let parts: Vec<&HostArray> = parts.iter().map(AsRef::as_ref).collect();
            b.from_host_owned(match search {
                Search::Positions { right } => HostArray::count_before(&parts, v, right)?,
                Search::Members => HostArray::members_of(&parts, v)?,
            })
        };
        let dtype = match search {
            Search::Positions { .. } => DType::I64,
            Search::Members => DType::Bool,
        };
        Ok(Array::new(
            Op::AlongAxis {
                inputs: vec![sorted],
                axis: 0,
                sources: Arc::new(vec![(0..blocks).collect(); lanes]),
                with: Some(values.clone()),
                f: Arc::new(f),
                name: match search {
                    Search::Positions { .. } => {
                        "searchsorted (each value against every sorted block)"
                    }
                    Search::Members => "isin (each value against every sorted block)",
                },
            },
            dtype,
            values.chunks().clone(),
            values.backend().clone(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_cpu as _;

    #[test]
    fn positions_add_up_over_the_sorted_blocks_for_values_of_any_shape() {
        let s = Array::from_slice(&[0i32, 2, 2, 4, 6, 6, 6, 9], &[8], 3, None).unwrap();
        let v = Array::from_host(
            HostArray::F64(
                ndarray::ArrayD::from_shape_vec(vec![2, 3], vec![6.0, -1.0, 2.5, 9.0, 10.0, 2.0])
                    .unwrap(),
            ),
            [1usize, 2].as_slice(),
            None,
        )
        .unwrap();
        let left = s.searchsorted(&v, false).unwrap();
        assert_eq!(left.shape(), vec![2, 3]);
        assert_eq!(
            left.compute().unwrap().to_f64_vec(),
            vec![4.0, 0.0, 3.0, 7.0, 8.0, 1.0]
        );
        let right = s
            .searchsorted(&v, true)
            .unwrap()
            .compute()
            .unwrap()
            .to_f64_vec();
        assert_eq!(right, vec![7.0, 0.0, 3.0, 8.0, 8.0, 3.0]);
        let scalar = Array::full(&[], 6.0, ChunkSpec::Auto, None).unwrap();
        assert_eq!(
            s.searchsorted(&scalar, false)
                .unwrap()
                .compute_f64()
                .unwrap(),
            4.0
        );
        assert!(v.searchsorted(&s, false).is_err());
    }

    #[test]
    fn membership_of_values_in_a_chunked_set() {
        let x = Array::from_slice(&[f64::NAN, -0.0, 3.0, 5.0, 1.0], &[5], 2, None).unwrap();
        let t = Array::from_slice(&[5i8, 0, 1, 0], &[4], 3, None).unwrap();
        assert_eq!(
            x.isin(&t, false).unwrap().compute().unwrap().to_f64_vec(),
            vec![0.0, 1.0, 0.0, 1.0, 1.0]
        );
        assert_eq!(
            x.isin(&t, true).unwrap().compute().unwrap().to_f64_vec(),
            vec![1.0, 0.0, 1.0, 0.0, 0.0]
        );
        let empty = Array::from_slice::<f64>(&[], &[0], 1, None).unwrap();
        assert_eq!(
            x.isin(&empty, false)
                .unwrap()
                .compute()
                .unwrap()
                .to_f64_vec(),
            vec![0.0; 5]
        );
    }
}
