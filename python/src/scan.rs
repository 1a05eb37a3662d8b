//! Cumulative scans from Python: `Array.cumsum`/`cumprod`, `tessera.cumsum`, the Array
//! API's `cumulative_sum`/`cumulative_prod` and `np.add.accumulate` all come here.
//!
//! The engine scans chunk by chunk and carries each chunk's running value into the next
//! (`tessera::Array::cumulative`); nothing is gathered into one chunk.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tessera::program::ScanOp;

use crate::array::{axes_of, PyArray};
use crate::convert::dtype_of;
use crate::errors::IntoPy;

/// The scan of that name (`sum`, `prod`, `max`, `min`).
fn scan_op(name: &str) -> PyResult<ScanOp> {
    match name {
        "sum" => Ok(ScanOp::Sum),
        "prod" => Ok(ScanOp::Prod),
        "max" => Ok(ScanOp::Max),
        "min" => Ok(ScanOp::Min),
        other => Err(PyValueError::new_err(format!(
            "no cumulative op '{other}': use 'sum', 'prod', 'max' or 'min'"
        ))),
    }
}

/// The running `op` (`"sum"`, `"prod"`, `"max"`, `"min"`) of `x` along `axis` (`None`:
/// over the flattened array, as NumPy's `cumsum`), in `dtype` (default: NumPy's
/// accumulation dtype, `int64` for bool and small signed integers); `include_initial`
/// starts the result with the empty sum or product (the Array API's `cumulative_sum`).
#[pyfunction]
#[pyo3(signature = (x, op, axis=None, dtype=None, include_initial=false))]
pub fn cumulative(
    py: Python<'_>,
    x: &PyArray,
    op: &str,
    axis: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    include_initial: bool,
) -> PyResult<PyArray> {
    let op = scan_op(op)?;
    let dtype = match dtype.filter(|d| !d.is_none()) {
        Some(d) => Some(dtype_of(py, d)?),
        None => None,
    };
    let a = &x.inner;
    let (a, axis) = match axes_of(axis, a.ndim())? {
        None if a.ndim() == 1 => (a.clone(), 0),
        None => (a.reshape(&[-1]).py_err()?, 0),
        Some(v) if v.len() == 1 => (a.clone(), v[0]),
        Some(_) => {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "a cumulative op takes one axis (an int) or None",
            ))
        }
    };
    a.cumulative(op, axis, dtype, include_initial)
        .py_err()
        .map(Into::into)
}
