//! Axis arguments as NumPy takes them: an int (negative from the end), a tuple of ints,
//! or `None`; one out of range is NumPy's own `AxisError`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// `axis` as given to a reduction: `None`, an int or a sequence of ints, negative ones
/// counted from the end.
pub fn axes_of(axis: Option<&Bound<'_, PyAny>>, ndim: usize) -> PyResult<Option<Vec<usize>>> {
    let Some(axis) = axis.filter(|a| !a.is_none()) else {
        return Ok(None);
    };
    let raw: Vec<i64> = match axis.extract::<i64>() {
        Ok(a) => vec![a],
        Err(_) => axis.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "axis must be None, an int or a tuple of ints, got {axis}"
            ))
        })?,
    };
    raw.into_iter()
        .map(|a| {
            let n = ndim as i64;
            if a < -n || a >= n {
                Err(axis_error(axis.py(), a, ndim))
            } else {
                Ok(a.rem_euclid(n.max(1)) as usize)
            }
        })
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

/// One axis as an int (negative from the end) of an `ndim`-d array.
///
/// # Errors
/// NumPy's `AxisError` for an axis out of range.
pub fn axis_of(py: Python<'_>, axis: i64, ndim: usize) -> PyResult<usize> {
    let n = ndim as i64;
    if axis < -n || axis >= n {
        return Err(axis_error(py, axis, ndim));
    }
    Ok(axis.rem_euclid(n) as usize)
}

/// `x` and the axis an `axis=` argument names: `None` is the flattened array's only axis,
/// as NumPy's sorting and `take` functions read it.
///
/// # Errors
/// NumPy's `AxisError` for an axis out of range; the engine's error for a reshape.
pub fn flat_or_axis(
    py: Python<'_>,
    x: &tessera::Array,
    axis: Option<i64>,
) -> PyResult<(tessera::Array, usize)> {
    use crate::errors::IntoPy;
    match axis {
        None => Ok((x.reshape(&[-1]).py_err()?, 0)),
        Some(ax) => Ok((x.clone(), axis_of(py, ax, x.ndim())?)),
    }
}

/// NumPy's `AxisError` (a `ValueError` and an `IndexError`) for `axis` of an array of
/// `ndim` dimensions, with NumPy's message.
pub fn axis_error(py: Python<'_>, axis: i64, ndim: usize) -> PyErr {
    let class = py
        .import("numpy.exceptions")
        .and_then(|m| m.getattr("AxisError"))
        .or_else(|_| py.import("numpy").and_then(|m| m.getattr("AxisError")));
    match class.and_then(|c| c.call1((axis, ndim))) {
        Ok(e) => PyErr::from_value(e),
        Err(_) => PyValueError::new_err(format!(
            "axis {axis} is out of bounds for array of dimension {ndim}"
        )),
    }
}
