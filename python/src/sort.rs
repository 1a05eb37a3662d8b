//! Sorting from Python: `np.sort(x)`, `np.argsort(x)`, the Array API's `sort` and
//! `argsort`, and `tessera.sort` and `tessera.argsort`.
//!
//! The engine sorts each chunk, then merges every output chunk from the sorted chunks of
//! its lane (`tessera::Array::sort`); `argsort` carries each element's position through
//! the same merge. The chunking stays as it was.

use pyo3::prelude::*;

use crate::array::PyArray;
use crate::axes::flat_or_axis;
use crate::errors::IntoPy;

/// `x` sorted along `axis` (default the last, as `np.sort`; `None`: the flattened
/// array), ascending in NumPy's order (NaN last) or `descending`.
#[pyfunction]
#[pyo3(signature = (x, axis=-1, descending=false))]
pub fn sort(py: Python<'_>, x: &PyArray, axis: Option<i64>, descending: bool) -> PyResult<PyArray> {
    let (a, axis) = flat_or_axis(py, &x.inner, axis)?;
    a.sort(axis, descending).py_err().map(Into::into)
}

/// The `int64` positions that sort `x` along `axis` (default the last; `None`: the
/// flattened array), stable, ascending in NumPy's order (NaN last) or `descending` (NaN
/// first, equal elements in their order, as the Array API's `argsort`).
#[pyfunction]
#[pyo3(signature = (x, axis=-1, descending=false))]
pub fn argsort(
    py: Python<'_>,
    x: &PyArray,
    axis: Option<i64>,
    descending: bool,
) -> PyResult<PyArray> {
    let (a, axis) = flat_or_axis(py, &x.inner, axis)?;
    a.argsort(axis, descending).py_err().map(Into::into)
}
