//! Searching sorted blocks: the host steps of a chunked `searchsorted` and `isin`.
//!
//! A chunked search never concatenates the sorted array: each output block is computed
//! from every sorted block of it, one binary search per value and block — the positions
//! before a value add up over the blocks (`searchsorted`), and a value is a member when
//! any block holds it (`isin`). Order and equality are NumPy's sort order
//! ([`super::sort`]'s keys): NaN last, the two zeros equal; for membership NaN equals
//! nothing, as `==` says.

use ndarray::ArrayD;

use super::sort::SortKey;
use super::{HostArray, HostElement};
use crate::dtype::DType;
use crate::error::{Error, Result};

fn keys<T: SortKey>(a: &ArrayD<T>) -> Vec<u64> {
    a.iter().map(|v| v.key()).collect()
}

fn check(op: &str, sorted: &HostArray, values: &HostArray) -> Result<()> {
    if sorted.ndim() != 1 {
        return Err(Error::invalid(
            op,
            format!(
                "the sorted array must be 1-d; got shape {:?}",
                sorted.shape()
            ),
        ));
    }
    if sorted.dtype() != values.dtype() {
        return Err(Error::dtype(
            op,
            values.dtype(),
            format!(
                "the values must have the sorted array's dtype {} (cast both to their common dtype first)",
                sorted.dtype()
            ),
        ));
    }
    Ok(())
}

fn key_vec<T: SortKey>(_like: &ArrayD<T>, h: &HostArray) -> Result<Vec<u64>> {
    T::view(h)
        .map(|v| v.iter().map(|x| x.key()).collect())
        .ok_or_else(|| Error::Internal("dtypes were checked".into()))
}

/// Whether `k` is the key of a NaN of `dtype` (every NaN has the largest key).
fn is_nan_key(dtype: DType, k: u64) -> bool {
    dtype.is_float() && k == u64::MAX
}

/// The keys of `values` once, and of each sorted part, after checking every part.
fn part_and_value_keys(
    op: &str,
    parts: &[&HostArray],
    values: &HostArray,
) -> Result<(Vec<Vec<u64>>, Vec<u64>)> {
    let first = parts
        .first()
        .ok_or_else(|| Error::invalid(op, "no sorted blocks to search"))?;
    for p in parts {
        check(op, p, values)?;
    }
    let v = crate::dispatch_host!(*first, a => key_vec(a, values))?;
    let s = parts
        .iter()
        .map(|p| crate::dispatch_host!(*p, a => keys(a)))
        .collect();
    Ok((s, v))
}

impl HostArray {
    /// For each of `values`, how many elements of the sorted `parts` (1-d blocks of one
    /// array sorted ascending in NumPy's order) come before it: those less than it
    /// (`right` false, NumPy's `side="left"`) or not greater (`side="right"`), summed
    /// over the parts. The values' keys are computed once for all parts. The result is
    /// `int64` of the values' shape.
    ///
    /// ```
    /// use ndarray::{ArrayD, IxDyn};
    /// use tessera_core::HostArray;
    /// let a = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![1.0, 2.0]).unwrap());
    /// let b = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[2]), vec![2.0, f64::NAN]).unwrap());
    /// let v = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![2.0, 0.0, f64::NAN]).unwrap());
    /// assert_eq!(HostArray::count_before(&[&a, &b], &v, false).unwrap().to_f64_vec(), vec![1.0, 0.0, 3.0]);
    /// assert_eq!(HostArray::count_before(&[&a, &b], &v, true).unwrap().to_f64_vec(), vec![3.0, 0.0, 4.0]);
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] for no parts or a part that is not 1-d; [`Error::DType`] when
    /// the dtypes differ.
    pub fn count_before(
        parts: &[&HostArray],
        values: &HostArray,
        right: bool,
    ) -> Result<HostArray> {
        let (sorted, v) = part_and_value_keys("searchsorted", parts, values)?;
        let counts: Vec<i64> = v
            .iter()
            .map(|&k| {
                let n: usize = sorted
                    .iter()
                    .map(|s| {
                        if right {
                            s.partition_point(|&x| x <= k)
                        } else {
                            s.partition_point(|&x| x < k)
                        }
                    })
                    .sum();
                n as i64
            })
            .collect();
        let out = ArrayD::from_shape_vec(values.shape(), counts)
            .map_err(|e| Error::Internal(format!("searchsorted shape: {e}")))?;
        Ok(i64::wrap(out))
    }

    /// For each of `values`, whether one of the sorted `parts` (1-d, ascending in
    /// NumPy's order) holds an element equal to it (`-0.0` equals `0.0`; NaN equals
    /// nothing). The result is `bool` of the values' shape.
    ///
    /// # Errors
    /// As [`HostArray::count_before`].
    pub fn members_of(parts: &[&HostArray], values: &HostArray) -> Result<HostArray> {
        let (sorted, v) = part_and_value_keys("isin", parts, values)?;
        let dtype = values.dtype();
        let found: Vec<bool> = v
            .iter()
            .map(|&k| !is_nan_key(dtype, k) && sorted.iter().any(|s| s.binary_search(&k).is_ok()))
            .collect();
        let out = ArrayD::from_shape_vec(values.shape(), found)
            .map_err(|e| Error::Internal(format!("isin shape: {e}")))?;
        Ok(bool::wrap(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    fn f64s(v: &[f64]) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap())
    }

    #[test]
    fn membership_takes_the_zeros_as_one_and_nan_as_nothing() {
        let s = f64s(&[-0.0, 1.0, f64::NAN]);
        let got = HostArray::members_of(&[&s], &f64s(&[0.0, f64::NAN, 1.0, 2.0])).unwrap();
        assert_eq!(got.to_f64_vec(), vec![1.0, 0.0, 1.0, 0.0]);
    }

    #[test]
    fn mismatched_inputs_are_refused() {
        let s = f64s(&[1.0]);
        let i = HostArray::I64(ArrayD::from_shape_vec(IxDyn(&[1]), vec![1]).unwrap());
        assert!(matches!(
            HostArray::count_before(&[&s], &i, false),
            Err(Error::DType { .. })
        ));
        let m = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[1, 1]), vec![1.0]).unwrap());
        assert!(HostArray::members_of(&[&s], &m).is_ok());
        assert!(HostArray::members_of(&[&m], &s).is_err());
        assert!(HostArray::members_of(&[], &s).is_err());
    }
}
