//! Searching from Python: `np.searchsorted`, `np.isin`, the Array API's `searchsorted`
//! and `tessera.isin`, on the engine's chunked searches (`tessera::Array::searchsorted`,
//! `tessera::Array::isin`): every sorted chunk searched per value chunk, nothing
//! concatenated.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::array::PyArray;
use crate::errors::IntoPy;

/// For each of `v`, where inserting it into the sorted 1-d `a` keeps the order:
/// `side="left"` before equal elements, `"right"` after them (`int64`, shaped like `v`).
#[pyfunction]
#[pyo3(signature = (a, v, side="left"))]
pub fn searchsorted(a: &PyArray, v: &PyArray, side: &str) -> PyResult<PyArray> {
    let right = match side {
        "left" => false,
        "right" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "side must be 'left' or 'right' (got {other:?})"
            )))
        }
    };
    a.inner
        .searchsorted(&v.inner, right)
        .py_err()
        .map(Into::into)
}

/// Whether each element of `x` equals some element of `test` (`invert`: the negation).
#[pyfunction]
#[pyo3(signature = (x, test, invert=false))]
pub fn isin(x: &PyArray, test: &PyArray, invert: bool) -> PyResult<PyArray> {
    x.inner.isin(&test.inner, invert).py_err().map(Into::into)
}
