//! Cumulative scans from Python: `Array.cumsum`/`cumprod`, `tessera.cumsum`, the Array
//! API's `cumulative_sum`/`cumulative_prod` and `np.add.accumulate` all come here
//! (through `creation::cumulative`, the module function).
//!
//! The engine scans chunk by chunk and carries each chunk's running value into the next
//! (`tessera::Array::cumulative`); nothing is gathered into one chunk.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tessera::program::ScanOp;
use tessera::Array;

use crate::axes::axes_of;
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

/// The running `op` (`"sum"`, `"prod"`, `"max"`, `"min"`) of `a` along `axis` (`None`:
/// over the flattened array, as NumPy's `cumsum`), in `dtype` (default: NumPy's
/// accumulation dtype, `int64` for bool and small signed integers); `include_initial`
/// starts the result with the empty sum or product (the Array API's `cumulative_sum`).
///
/// # Errors
/// `ValueError` for an unknown op, NumPy's `AxisError` for an axis out of range,
/// `TypeError` for several axes, and the engine's errors.
pub fn cumulative_of(
    py: Python<'_>,
    a: &Array,
    op: &str,
    axis: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    include_initial: bool,
) -> PyResult<Array> {
    let op = scan_op(op)?;
    let dtype = match dtype.filter(|d| !d.is_none()) {
        Some(d) => Some(dtype_of(py, d)?),
        None => None,
    };
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
    a.cumulative(op, axis, dtype, include_initial).py_err()
}
