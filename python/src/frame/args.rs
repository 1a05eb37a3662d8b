//! Python arguments as the engine takes them, shared by `DataFrame` and `GroupBy`: column
//! names, aggregations of expressions, rank methods, window functions, and engine values
//! back as Python objects.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use tessera::frame::window::{RollingAgg, WindowFunc};
use tessera::frame::{AggFunc, RankMethod, Value};

use crate::errors::IntoPy;
use crate::expr::PyExpr;

/// One name or a list of names.
pub(super) fn names_of(v: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(vec![s.to_str()?.to_string()]);
    }
    v.extract::<Vec<String>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected a column name or a list of names, got {v}"
        ))
    })
}

pub(super) fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `(expr, func, output)` triples with the function names parsed.
pub(super) fn expr_aggs(
    aggs: &[(Bound<'_, PyExpr>, String, String)],
) -> PyResult<Vec<(tessera::frame::Expr, AggFunc, String)>> {
    aggs.iter()
        .map(|(e, f, o)| {
            Ok((
                e.get().inner.clone(),
                AggFunc::parse(f).py_err()?,
                o.clone(),
            ))
        })
        .collect()
}

/// A rank method from pandas' name.
pub(super) fn rank_method(method: &str) -> PyResult<RankMethod> {
    Ok(match method {
        "average" => RankMethod::Average,
        "min" => RankMethod::Min,
        "max" => RankMethod::Max,
        "first" => RankMethod::First,
        "dense" => RankMethod::Dense,
        other => {
            return Err(PyValueError::new_err(format!(
                "rank: method={other:?}; use \"average\", \"min\", \"max\", \"first\" or \"dense\""
            )))
        }
    })
}

/// A value of a frame as a Python object: `None`, `bool`, `int`, `float`, `str`,
/// `numpy.datetime64` (microseconds or days) or `decimal.Decimal`.
pub(super) fn value_to_py(py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::UInt(u) => u.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        Value::Str(s) => s.into_pyobject(py)?.into_any().unbind(),
        Value::TimestampMicros(t) => py
            .import("numpy")?
            .call_method1("datetime64", (t, "us"))?
            .unbind(),
        Value::Date(d) => py
            .import("numpy")?
            .call_method1("datetime64", (d, "D"))?
            .unbind(),
        v @ Value::Decimal { .. } => py
            .import("decimal")?
            .call_method1("Decimal", (v.to_string(),))?
            .unbind(),
    })
}

/// A window function from its pandas name and parameters.
pub(super) fn window_func(
    func: &str,
    periods: i64,
    window: Option<usize>,
    min_periods: Option<usize>,
) -> PyResult<WindowFunc> {
    let rolling = |agg| -> PyResult<WindowFunc> {
        let window =
            window.ok_or_else(|| PyValueError::new_err(format!("{func} needs window=")))?;
        Ok(WindowFunc::Rolling {
            agg,
            window,
            min_periods: min_periods.unwrap_or(window),
        })
    };
    Ok(match func {
        "shift" => WindowFunc::Shift(periods),
        "diff" => WindowFunc::Diff(periods),
        "cumsum" => WindowFunc::CumSum,
        "cumprod" => WindowFunc::CumProd,
        "cummin" => WindowFunc::CumMin,
        "cummax" => WindowFunc::CumMax,
        "ffill" => WindowFunc::FillForward,
        "bfill" => WindowFunc::FillBackward,
        "rolling_sum" => rolling(RollingAgg::Sum)?,
        "rolling_mean" => rolling(RollingAgg::Mean)?,
        "rolling_min" => rolling(RollingAgg::Min)?,
        "rolling_max" => rolling(RollingAgg::Max)?,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown window function {other:?}; known: shift, diff, cumsum, cumprod, cummin, cummax, ffill, bfill, rolling_sum, rolling_mean, rolling_min, rolling_max"
            )))
        }
    })
}
