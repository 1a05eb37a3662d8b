//! Quantiles and medians from Python (`np.quantile`, `np.percentile`, `np.median` and
//! their NaN-skipping forms, in `tessera/_statistics.py`): the engine's exact chunked
//! selection (`tessera::Array::quantile`, `tessera::Array::median`).

use pyo3::prelude::*;
use tessera::DType;

use crate::array::PyArray;
use crate::axes::axis_of;
use crate::errors::IntoPy;

/// The quantiles `q` (each in `[0, 1]`) of `x` along `axis` (`None`: the flattened
/// array), stacked along a new leading axis, by NumPy's `linear` method; `float32`
/// computes and returns `float32` (NumPy's rule for a `float32` array and a Python
/// scalar `q`), else `float64`. `skip_nan` ignores NaN.
#[pyfunction]
#[pyo3(signature = (x, q, axis=None, keepdims=false, skip_nan=false, float32=false))]
pub fn quantile(
    py: Python<'_>,
    x: &PyArray,
    q: Vec<f64>,
    axis: Option<i64>,
    keepdims: bool,
    skip_nan: bool,
    float32: bool,
) -> PyResult<PyArray> {
    let a = &x.inner;
    let axis = axis.map(|ax| axis_of(py, ax, a.ndim())).transpose()?;
    let dtype = if float32 { DType::F32 } else { DType::F64 };
    a.quantile(&q, axis, keepdims, skip_nan, dtype)
        .py_err()
        .map(Into::into)
}

/// The median of `x` along `axis` (`None`: the flattened array), as `np.median`;
/// `skip_nan` ignores NaN (`np.nanmedian`).
#[pyfunction]
#[pyo3(signature = (x, axis=None, keepdims=false, skip_nan=false))]
pub fn median(
    py: Python<'_>,
    x: &PyArray,
    axis: Option<i64>,
    keepdims: bool,
    skip_nan: bool,
) -> PyResult<PyArray> {
    let a = &x.inner;
    let axis = axis.map(|ax| axis_of(py, ax, a.ndim())).transpose()?;
    a.median(axis, keepdims, skip_nan).py_err().map(Into::into)
}
