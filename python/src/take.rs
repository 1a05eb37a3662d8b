//! `np.take`, `np.take_along_axis` and the Array API's `take` and `take_along_axis` from
//! Python, on index arrays as [`crate::index_array`] reads them.

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use tessera::{Array, HostArray};

use crate::array::PyArray;
use crate::axes::flat_or_axis;
use crate::convert::numpy_to_host;
use crate::errors::IntoPy;
use crate::index_array::{index_error, take_axis, IndexArray};

/// The elements of `x` at `indices` along `axis`, as `np.take` (`axis=None`: of the
/// flattened array). `indices` is a tessera array (lazy) or anything NumPy converts
/// (checked now; only the chunks it touches are read).
#[pyfunction]
#[pyo3(signature = (x, indices, axis=None))]
pub fn take(
    py: Python<'_>,
    x: &PyArray,
    indices: &Bound<'_, PyAny>,
    axis: Option<i64>,
) -> PyResult<PyArray> {
    let (a, axis) = flat_or_axis(py, &x.inner, axis)?;
    let lazy = indices
        .cast::<PyArray>()
        .ok()
        .map(|i| i.borrow().inner.clone());
    let idx = IndexArray::of(py, indices, lazy, axis, a.shape()[axis])?;
    take_axis(&a, &idx, axis).map(Into::into)
}

/// For every element of `indices` (an integer array of `x`'s rank), the element of `x`
/// at that position along `axis` in the same lane, as `np.take_along_axis`
/// (`axis=None`: of the flattened array, with 1-d indices).
#[pyfunction]
#[pyo3(signature = (x, indices, axis=-1))]
pub fn take_along_axis(
    py: Python<'_>,
    x: &PyArray,
    indices: &Bound<'_, PyAny>,
    axis: Option<i64>,
) -> PyResult<PyArray> {
    let (a, axis) = flat_or_axis(py, &x.inner, axis)?;
    let idx = match indices.cast::<PyArray>() {
        Ok(i) => i.borrow().inner.clone(),
        Err(_) => {
            let h: HostArray = numpy_to_host(py, indices)?;
            if !h.dtype().is_integer() {
                return Err(PyIndexError::new_err(format!(
                    "take_along_axis: indices must be of an integer dtype; got {}",
                    h.dtype()
                )));
            }
            if h.ndim() == a.ndim() {
                let n = a.shape()[axis];
                h.positions("take_along_axis", axis, n)
                    .map_err(index_error)?;
            }
            let chunks: Vec<usize> = (0..h.ndim())
                .map(|d| match a.chunks().sizes().get(d) {
                    Some(s) if d != axis && h.shape()[d] == a.shape()[d] => {
                        s.iter().copied().max().unwrap_or(1).max(1)
                    }
                    _ => h.shape()[d].max(1),
                })
                .collect();
            Array::from_host(h, chunks.as_slice(), Some(a.backend_name())).py_err()?
        }
    };
    if idx.ndim() != a.ndim() {
        return Err(PyValueError::new_err(format!(
            "take_along_axis: indices must have the array's {} dimensions; got shape {:?}",
            a.ndim(),
            idx.shape()
        )));
    }
    a.take_along_axis(&idx, axis).py_err().map(Into::into)
}
