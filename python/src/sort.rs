//! Sorting from Python: `np.sort(x)`, the Array API's `sort` and `tessera.sort`.
//!
//! The engine sorts each chunk, then merges every output chunk from the sorted chunks of
//! its lane (`tessera::Array::sort`); the chunking stays as it was.

use pyo3::prelude::*;

use crate::array::{axis_error, PyArray};
use crate::errors::IntoPy;

/// `x` sorted along `axis` (default the last, as `np.sort`; `None`: the flattened
/// array), ascending in NumPy's order (NaN last) or `descending`.
#[pyfunction]
#[pyo3(signature = (x, axis=-1, descending=false))]
pub fn sort(py: Python<'_>, x: &PyArray, axis: Option<i64>, descending: bool) -> PyResult<PyArray> {
    let a = &x.inner;
    let (a, axis) = match axis {
        None => (a.reshape(&[-1]).py_err()?, 0),
        Some(ax) => {
            let n = a.ndim() as i64;
            if ax < -n || ax >= n {
                return Err(axis_error(py, ax, a.ndim()));
            }
            (a.clone(), ax.rem_euclid(n) as usize)
        }
    };
    a.sort(axis, descending).py_err().map(Into::into)
}
