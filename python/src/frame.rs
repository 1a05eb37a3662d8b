//! `tessera.DataFrame`: a lazy partitioned dataframe with pandas' and Dask's method names,
//! and `tessera.ComputedFrame`, what `compute()` returns.
//!
//! Frames come from files (`read_csv`, `read_parquet`: globs, hive directories, object
//! URLs when built with `object-store`) or from Arrow data in memory (`from_arrow` takes
//! anything exporting the Arrow PyCapsule interface; `from_pandas` goes through pyarrow).
//! A computed result exports `__arrow_c_stream__`, so `pyarrow.table(r)` and
//! `polars.DataFrame(r)` read the engine's buffers without a copy; `to_pandas()`,
//! `to_polars()` and `to_arrow()` are the shortcuts.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use pyo3::exceptions::{PyAttributeError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList, PyString, PyTuple};
use tessera::frame::window::{RollingAgg, WindowFunc};
use tessera::frame::{
    AggFunc, Computed, CsvOptions, DataFrame, DropHow, GroupBy, JoinType, Keep, MergeOptions,
    RankMethod, Value,
};

use crate::arrow_ffi::{export_stream, import_stream};
use crate::errors::IntoPy;
use crate::expr::{data_type_of, expr_of, literal_of, PyExpr};
use crate::run::detached;

/// A lazy partitioned dataframe (see the module docs).
#[pyclass(name = "DataFrame", module = "tessera", frozen)]
#[derive(Clone)]
pub struct PyDataFrame {
    /// The Rust frame.
    pub inner: DataFrame,
}

impl From<DataFrame> for PyDataFrame {
    fn from(inner: DataFrame) -> Self {
        PyDataFrame { inner }
    }
}

fn wrap(r: tessera::Result<DataFrame>) -> PyResult<PyDataFrame> {
    r.py_err().map(Into::into)
}

/// One name or a list of names.
fn names_of(v: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(vec![s.to_str()?.to_string()]);
    }
    v.extract::<Vec<String>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected a column name or a list of names, got {v}"
        ))
    })
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The computed rows of a frame: Arrow batches, one per partition, exported without a
/// copy through the Arrow PyCapsule interface.
#[pyclass(name = "ComputedFrame", module = "tessera", frozen)]
pub struct PyComputed {
    inner: Computed,
}

impl From<Computed> for PyComputed {
    fn from(inner: Computed) -> Self {
        PyComputed { inner }
    }
}

#[pymethods]
impl PyComputed {
    /// The Arrow C stream of the rows (the PyCapsule interface): pyarrow, Polars and
    /// DuckDB read it in place. A `requested_schema` other than the result's is refused.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        export_stream(py, self.inner.schema.clone(), self.inner.batches.clone())
    }

    /// The rows as a `pyarrow.Table` (no copy).
    fn to_arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("pyarrow")?.call_method1("table", (slf,))
    }

    /// The rows as a `pandas.DataFrame` (through pyarrow).
    fn to_pandas<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        Self::to_arrow(slf)?.call_method0("to_pandas")
    }

    /// The rows as a `polars.DataFrame` (no copy).
    fn to_polars<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("polars")?.call_method1("DataFrame", (slf,))
    }

    /// Column names.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.inner
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// Number of rows.
    fn __len__(&self) -> usize {
        self.inner.num_rows()
    }

    /// The buffer addresses of every column's values, per batch (for the tests that
    /// check the export shares them).
    fn _buffer_addresses(&self) -> Vec<Vec<usize>> {
        self.inner
            .batches
            .iter()
            .map(|b| {
                b.columns()
                    .iter()
                    .map(|c| {
                        let d = c.to_data();
                        d.buffers().last().map_or(0, |buf| buf.as_ptr() as usize)
                    })
                    .collect()
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        self.inner.to_string()
    }

    fn _repr_html_<'py>(slf: &Bound<'py, Self>) -> PyResult<String> {
        match slf.py().import("pandas") {
            Ok(_) => Self::to_pandas(slf)?.call_method0("_repr_html_")?.extract(),
            Err(_) => Ok(format!("<pre>{}</pre>", slf.get().inner)),
        }
    }
}

/// `df.groupby(keys)`: aggregations and window functions per group.
#[pyclass(name = "GroupBy", module = "tessera", frozen)]
pub struct PyGroupBy {
    inner: GroupBy,
    frame: DataFrame,
    keys: Vec<String>,
    /// Columns chosen with `gb["x"]` (all non-key columns when `None`).
    selected: Option<Vec<String>>,
}

impl PyGroupBy {
    fn columns(&self, func: AggFunc) -> Vec<String> {
        let schema = self.frame.schema();
        match &self.selected {
            Some(c) => c.clone(),
            None => schema
                .fields()
                .iter()
                .filter(|f| !self.keys.contains(f.name()) && func.accepts(f.data_type()))
                .map(|f| f.name().clone())
                .collect(),
        }
    }

    fn all(&self, func: AggFunc) -> PyResult<PyDataFrame> {
        let cols = self.columns(func);
        let aggs: Vec<(&str, AggFunc, &str)> = cols
            .iter()
            .map(|c| (c.as_str(), func, c.as_str()))
            .collect();
        wrap(self.inner.agg_named(&aggs))
    }
}

/// `(column, func, output)` triples from pandas' agg arguments: a function name for every
/// selected column, `{col: func}`, `{col: [funcs]}` (outputs `col_func`), and named
/// aggregations `out=("col", "func")`.
fn agg_specs(
    gb: &PyGroupBy,
    arg: Option<&Bound<'_, PyAny>>,
    named: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, AggFunc, String)>> {
    let mut out = Vec::new();
    let parse = |s: &str| AggFunc::parse(s).py_err();
    if let Some(arg) = arg.filter(|a| !a.is_none()) {
        if let Ok(s) = arg.cast::<PyString>() {
            let f = parse(s.to_str()?)?;
            for c in gb.columns(f) {
                out.push((c.clone(), f, c));
            }
        } else if let Ok(d) = arg.cast::<PyDict>() {
            for (k, v) in d.iter() {
                let column: String = k.extract()?;
                if let Ok(s) = v.cast::<PyString>() {
                    out.push((column.clone(), parse(s.to_str()?)?, column));
                } else {
                    let funcs: Vec<String> = v.extract().map_err(|_| {
                        PyTypeError::new_err(format!(
                            "agg: the value for '{column}' must be a function name or a list of them"
                        ))
                    })?;
                    for f in funcs {
                        out.push((column.clone(), parse(&f)?, format!("{column}_{f}")));
                    }
                }
            }
        } else if let Ok(funcs) = arg.extract::<Vec<String>>() {
            for f in funcs {
                let func = parse(&f)?;
                for c in gb.columns(func) {
                    out.push((c.clone(), func, format!("{c}_{f}")));
                }
            }
        } else {
            return Err(PyTypeError::new_err(
                "agg takes a function name, a list of names, a dict {column: name or [names]}, or named aggregations out=(column, name)",
            ));
        }
    }
    if let Some(named) = named {
        for (k, v) in named.iter() {
            let output: String = k.extract()?;
            let (column, f): (String, String) = v.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "agg: named aggregation {output}= must be a (column, function) tuple"
                ))
            })?;
            out.push((column, parse(&f)?, output));
        }
    }
    if out.is_empty() {
        return Err(PyValueError::new_err("agg: no aggregations given"));
    }
    Ok(out)
}

/// `(expr, func, output)` triples with the function names parsed.
fn expr_aggs(
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
fn rank_method(method: &str) -> PyResult<RankMethod> {
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
fn value_to_py(py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
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
fn window_func(
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

#[pymethods]
impl PyGroupBy {
    /// Aggregates per group, pandas-style: `agg("sum")`, `agg({"x": "mean", "y":
    /// ["min", "max"]})`, or named `agg(total=("x", "sum"))`. Keys come back as columns.
    #[pyo3(signature = (arg=None, **named))]
    fn agg(
        &self,
        arg: Option<&Bound<'_, PyAny>>,
        named: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyDataFrame> {
        let specs = agg_specs(self, arg, named)?;
        let refs: Vec<(&str, AggFunc, &str)> = specs
            .iter()
            .map(|(c, f, o)| (c.as_str(), *f, o.as_str()))
            .collect();
        wrap(self.inner.agg_named(&refs))
    }

    /// The groupby restricted to some columns: `gb["x"].sum()`.
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<PyGroupBy> {
        let cols = names_of(key)?;
        let schema = self.frame.schema();
        for c in &cols {
            if schema.field_with_name(c).is_err() {
                return Err(PyKeyError::new_err(format!("no column '{c}'")));
            }
        }
        Ok(PyGroupBy {
            inner: self.inner.clone(),
            frame: self.frame.clone(),
            keys: self.keys.clone(),
            selected: Some(cols),
        })
    }

    /// Sum per group of every numeric column.
    fn sum(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Sum)
    }
    /// Mean per group.
    fn mean(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Mean)
    }
    /// Minimum per group.
    fn min(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Min)
    }
    /// Maximum per group.
    fn max(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Max)
    }
    /// Non-null count per group.
    fn count(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Count)
    }
    /// Sample standard deviation per group.
    fn std(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Std)
    }
    /// Sample variance per group.
    fn var(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Var)
    }
    /// Median per group.
    fn median(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::Median)
    }
    /// Distinct values per group.
    fn nunique(&self) -> PyResult<PyDataFrame> {
        self.all(AggFunc::NUnique)
    }

    /// The first `n` rows of each group, in the frame's order (pandas' `head(n)`), found
    /// in one pass without sorting.
    #[pyo3(signature = (n=5))]
    fn head(&self, n: usize) -> PyResult<PyDataFrame> {
        wrap(self.inner.head(n))
    }

    /// The `n` largest values of `column` per group, as rows of the keys and the value
    /// (pandas' `gb[column].nlargest(n)`), found by a bounded selection per group.
    fn nlargest(&self, n: usize, column: &str) -> PyResult<PyDataFrame> {
        wrap(self.inner.nlargest(n, column))
    }

    /// The `n` smallest values of `column` per group; see `nlargest`.
    fn nsmallest(&self, n: usize, column: &str) -> PyResult<PyDataFrame> {
        wrap(self.inner.nsmallest(n, column))
    }

    /// Each row's number within its group from 0, as a column `cumcount` (pandas'
    /// `cumcount()`, as a column of the frame rather than a Series).
    fn cumcount(&self) -> PyResult<PyDataFrame> {
        wrap(self.inner.cumcount("cumcount"))
    }

    /// Sample covariance of `x` and `y` per group (ddof 1), over the rows where both
    /// are present: pandas' `g.x.cov(g.y)` for each group, as a column `x_y_cov`.
    fn cov(&self, x: &str, y: &str) -> PyResult<PyDataFrame> {
        wrap(self.inner.cov(x, y))
    }

    /// Pearson correlation of `x` and `y` per group, over the rows where both are
    /// present: pandas' `g.x.corr(g.y)` for each group, as a column `x_y_corr` (missing
    /// below two rows or where either is constant).
    fn corr(&self, x: &str, y: &str) -> PyResult<PyDataFrame> {
        wrap(self.inner.corr(x, y))
    }

    /// Aggregations of expressions per group: `[(expr, "mean", "out"), ...]`, the
    /// function names as `agg` takes them (`"quantile(0.9)"` included).
    ///
    /// # Errors
    /// An unknown function name, or one that does not take the expression's type.
    fn agg_exprs(&self, aggs: Vec<(Bound<'_, PyExpr>, String, String)>) -> PyResult<PyDataFrame> {
        let specs = expr_aggs(&aggs)?;
        let refs: Vec<(tessera::frame::Expr, AggFunc, &str)> = specs
            .iter()
            .map(|(e, f, o)| (e.clone(), *f, o.as_str()))
            .collect();
        wrap(self.inner.agg_exprs(&refs))
    }

    /// The rank of `column` within each group into `output` (pandas'
    /// `gb[column].rank(method=, ascending=)`; see `DataFrame.rank`).
    ///
    /// # Errors
    /// An unknown method, a missing column, or one that cannot be sorted.
    #[pyo3(signature = (column, method="average", ascending=true, output=None))]
    fn rank(
        &self,
        column: &str,
        method: &str,
        ascending: bool,
        output: Option<&str>,
    ) -> PyResult<PyDataFrame> {
        let m = rank_method(method)?;
        wrap(
            self.inner
                .rank(column, m, !ascending, output.unwrap_or(column)),
        )
    }

    /// A window function within each group into `output` (default: the column
    /// itself), in the frame's row order: `"cumsum"`, `"shift"` (`periods`), `"diff"`,
    /// `"cummin"`, `"cummax"`, `"cumprod"`, `"ffill"`, `"bfill"`, `"rolling_mean"` etc.
    /// (`window`, `min_periods`).
    #[pyo3(signature = (column, func, output=None, periods=1, window=None, min_periods=None))]
    fn transform(
        &self,
        column: &str,
        func: &str,
        output: Option<&str>,
        periods: i64,
        window: Option<usize>,
        min_periods: Option<usize>,
    ) -> PyResult<PyDataFrame> {
        let f = window_func(func, periods, window, min_periods)?;
        wrap(self.inner.window(column, f, output.unwrap_or(column)))
    }
}

#[pymethods]
impl PyDataFrame {
    /// Column names.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.inner.columns()
    }

    /// Column types, `{name: arrow type}`.
    #[getter]
    fn dtypes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for f in self.inner.schema().fields() {
            d.set_item(f.name(), f.data_type().to_string())?;
        }
        Ok(d)
    }

    /// Number of partitions.
    #[getter]
    fn npartitions(&self) -> usize {
        self.inner.npartitions()
    }

    /// The dataframe backend.
    #[getter]
    fn backend(&self) -> String {
        self.inner.backend().to_string()
    }

    /// Computes the number of rows.
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let df = self.inner.clone();
        detached(py, move || df.len())
    }

    fn __repr__(&self) -> String {
        let cols: Vec<String> = self
            .inner
            .schema()
            .fields()
            .iter()
            .map(|f| format!("{}: {}", f.name(), f.data_type()))
            .collect();
        format!(
            "tessera.DataFrame<npartitions={}, backend={}>\n  {}",
            self.inner.npartitions(),
            self.inner.backend(),
            cols.join("\n  ")
        )
    }

    /// `df["x"]` is the column expression, `df[["a", "b"]]` selects columns, and
    /// `df[condition]` keeps the rows where it holds (pandas' boolean indexing).
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let py = key.py();
        if let Ok(s) = key.cast::<PyString>() {
            let name = s.to_str()?;
            if self.inner.schema().field_with_name(name).is_err() {
                return Err(PyKeyError::new_err(format!(
                    "no column '{name}'; columns: {}",
                    self.inner.columns().join(", ")
                )));
            }
            return Ok(Py::new(py, PyExpr::from(tessera::frame::col(name)))?.into_any());
        }
        if let Ok(e) = key.cast::<PyExpr>() {
            let df = self.inner.filter(e.get().inner.clone()).py_err()?;
            return Ok(Py::new(py, PyDataFrame::from(df))?.into_any());
        }
        if key.is_instance_of::<PyList>() || key.is_instance_of::<PyTuple>() {
            let cols: Vec<String> = key.extract()?;
            let df = self.inner.select(&strs(&cols)).py_err()?;
            return Ok(Py::new(py, PyDataFrame::from(df))?.into_any());
        }
        Err(PyTypeError::new_err(
            "a frame is indexed by a column name, a list of names, or a boolean expression",
        ))
    }

    /// `df.fare` is the column expression `col("fare")`.
    fn __getattr__(&self, name: &str) -> PyResult<PyExpr> {
        if self.inner.schema().field_with_name(name).is_ok() {
            Ok(tessera::frame::col(name).into())
        } else {
            Err(PyAttributeError::new_err(format!(
                "DataFrame has no attribute or column '{name}'"
            )))
        }
    }

    /// Computes the frame and exports it through the Arrow PyCapsule interface, so
    /// `polars.DataFrame(df)` and `pyarrow.table(df)` take a lazy frame directly.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let df = self.inner.clone();
        let c = detached(py, move || df.compute())?;
        export_stream(py, c.schema, c.batches)
    }

    /// `func` applied to every partition as a `pandas.DataFrame` (Dask's
    /// `map_partitions`; `arrow=True` passes a `pyarrow.Table` instead), returning a frame
    /// of the same kind. The output's columns are found, as Dask's `meta`, by calling
    /// `func` on an empty partition. The GIL is taken only inside `func`; an exception it
    /// raises comes out of `compute()` as itself.
    #[pyo3(signature = (func, arrow=false))]
    fn map_partitions(
        &self,
        py: Python<'_>,
        func: Py<PyAny>,
        arrow: bool,
    ) -> PyResult<PyDataFrame> {
        let empty = RecordBatch::new_empty(self.inner.schema());
        let meta = call_on_partition(py, &func, empty, arrow)?;
        let f = move |batch: RecordBatch| {
            Python::attach(|py| call_on_partition(py, &func, batch, arrow))
                .map_err(|e| crate::errors::park_python_error("map_partitions", "the function", e))
        };
        wrap(self.inner.map_partitions_with_schema(f, meta.schema()))
    }

    /// The rows where `predicate` (a boolean expression) holds.
    fn filter(&self, predicate: &PyExpr) -> PyResult<PyDataFrame> {
        wrap(self.inner.filter(predicate.inner.clone()))
    }

    /// These columns, in this order.
    fn select(&self, columns: &Bound<'_, PyAny>) -> PyResult<PyDataFrame> {
        let cols = names_of(columns)?;
        wrap(self.inner.select(&strs(&cols)))
    }

    /// The frame with column `name` set to `value` (an expression or a literal).
    fn with_column(&self, name: &str, value: &Bound<'_, PyAny>) -> PyResult<PyDataFrame> {
        wrap(self.inner.with_column(name, expr_of(value)?))
    }

    /// pandas' `assign`: `df.assign(tip_share=ts.col("tip") / ts.col("fare"))`.
    #[pyo3(signature = (**columns))]
    fn assign(&self, columns: Option<&Bound<'_, PyDict>>) -> PyResult<PyDataFrame> {
        let mut df = self.inner.clone();
        if let Some(columns) = columns {
            for (k, v) in columns.iter() {
                let name: String = k.extract()?;
                df = df.with_column(&name, expr_of(&v)?).py_err()?;
            }
        }
        Ok(df.into())
    }

    /// Columns renamed, `{old: new}`.
    fn rename(&self, columns: &Bound<'_, PyDict>) -> PyResult<PyDataFrame> {
        let pairs: Vec<(String, String)> = columns
            .iter()
            .map(|(k, v)| Ok((k.extract()?, v.extract()?)))
            .collect::<PyResult<_>>()?;
        let refs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        wrap(self.inner.rename(&refs))
    }

    /// The frame without these columns.
    fn drop(&self, columns: &Bound<'_, PyAny>) -> PyResult<PyDataFrame> {
        let cols = names_of(columns)?;
        wrap(self.inner.drop(&strs(&cols)))
    }

    /// Rows with a null (in `subset`, default every column) removed; `how="all"` only
    /// removes rows null in every one.
    #[pyo3(signature = (subset=None, how="any"))]
    fn dropna(&self, subset: Option<&Bound<'_, PyAny>>, how: &str) -> PyResult<PyDataFrame> {
        let cols = match subset {
            Some(s) if !s.is_none() => names_of(s)?,
            _ => Vec::new(),
        };
        let how = match how {
            "any" => DropHow::Any,
            "all" => DropHow::All,
            other => {
                return Err(PyValueError::new_err(format!(
                    "how={other:?}: use \"any\" or \"all\""
                )))
            }
        };
        wrap(self.inner.dropna(&strs(&cols), how))
    }

    /// Nulls replaced, per column: `fillna({"tip": 0.0})`.
    fn fillna(&self, value: &Bound<'_, PyDict>) -> PyResult<PyDataFrame> {
        let pairs: Vec<(String, tessera::frame::Literal)> = value
            .iter()
            .map(|(k, v)| Ok((k.extract()?, literal_of(&v)?)))
            .collect::<PyResult<_>>()?;
        let refs: Vec<(&str, tessera::frame::Literal)> =
            pairs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        wrap(self.inner.fillna(&refs))
    }

    /// Groups by key columns (`by`: a name or a list); `dropna=False` keeps a group for
    /// null keys, as pandas does.
    #[pyo3(signature = (by, dropna=true))]
    fn groupby(&self, by: &Bound<'_, PyAny>, dropna: bool) -> PyResult<PyGroupBy> {
        let keys = names_of(by)?;
        let inner = self.inner.groupby(&strs(&keys)).py_err()?.dropna(dropna);
        Ok(PyGroupBy {
            inner,
            frame: self.inner.clone(),
            keys,
            selected: None,
        })
    }

    /// Joins with `right` on key columns, pandas' `merge`: `on` (same names) or
    /// `left_on`/`right_on`, `how` in `inner`, `left`, `right`, `outer`, `semi`, `anti`.
    /// `suffixes` name the clashing non-key columns (pandas' `("_x", "_y")`),
    /// `indicator=True` (or a name) adds pandas' `_merge` column of `left_only`,
    /// `right_only` and `both`, and `nulls_equal=True` matches null keys with each other
    /// as pandas matches NaN keys.
    #[pyo3(signature = (right, on=None, how="inner", left_on=None, right_on=None, suffixes=None, indicator=None, nulls_equal=false))]
    #[allow(clippy::too_many_arguments)]
    fn merge(
        &self,
        right: &PyDataFrame,
        on: Option<&Bound<'_, PyAny>>,
        how: &str,
        left_on: Option<&Bound<'_, PyAny>>,
        right_on: Option<&Bound<'_, PyAny>>,
        suffixes: Option<(String, String)>,
        indicator: Option<&Bound<'_, PyAny>>,
        nulls_equal: bool,
    ) -> PyResult<PyDataFrame> {
        let how = match how {
            "inner" => JoinType::Inner,
            "left" => JoinType::Left,
            "right" => JoinType::Right,
            "outer" => JoinType::Outer,
            "semi" | "leftsemi" => JoinType::Semi,
            "anti" | "leftanti" => JoinType::Anti,
            other => {
                return Err(PyValueError::new_err(format!(
                    "how={other:?}: use inner, left, right, outer, semi or anti"
                )))
            }
        };
        let (l, r) = match (on.filter(|o| !o.is_none()), left_on, right_on) {
            (Some(on), None, None) => {
                let keys = names_of(on)?;
                (keys.clone(), keys)
            }
            (None, Some(l), Some(r)) => (names_of(l)?, names_of(r)?),
            _ => {
                return Err(PyValueError::new_err(
                    "merge needs on= (keys of the same name) or both left_on= and right_on=",
                ))
            }
        };
        let indicator = match indicator {
            None => None,
            Some(i) if i.extract::<bool>().ok() == Some(false) => None,
            Some(i) if i.extract::<bool>().ok() == Some(true) => Some("_merge".to_string()),
            Some(i) => Some(i.extract::<String>().map_err(|_| {
                PyTypeError::new_err("merge: indicator= takes True, False or a column name")
            })?),
        };
        if suffixes.is_none() && indicator.is_none() && !nulls_equal {
            return if l == r {
                wrap(self.inner.merge(&right.inner, &strs(&l), how))
            } else {
                wrap(self.inner.merge_on(
                    &right.inner,
                    &strs(&l),
                    &strs(&r),
                    how,
                    tessera::frame::JoinStrategy::Auto,
                ))
            };
        }
        let mut options = MergeOptions::new(how);
        if let Some((a, b)) = &suffixes {
            options = options.suffixes(a, b);
        }
        if let Some(name) = &indicator {
            options = options.indicator(name);
        }
        options = options.nulls_equal(nulls_equal);
        wrap(
            self.inner
                .merge_with(&right.inner, &strs(&l), &strs(&r), options),
        )
    }

    /// Whole-frame aggregations of expressions, one row: `[(expr, "mean", "out"),
    /// ...]`, the function names as `GroupBy.agg` takes them (`"quantile(0.9)"`).
    ///
    /// # Errors
    /// An unknown function name, or one that does not take the expression's type.
    fn agg_exprs(&self, aggs: Vec<(Bound<'_, PyExpr>, String, String)>) -> PyResult<PyDataFrame> {
        let specs = expr_aggs(&aggs)?;
        let refs: Vec<(tessera::frame::Expr, AggFunc, &str)> = specs
            .iter()
            .map(|(e, f, o)| (e.clone(), *f, o.as_str()))
            .collect();
        wrap(self.inner.agg_exprs(&refs))
    }

    /// How often each value of `column` occurs: columns `column` and `count`, most
    /// frequent first, ties by value (pandas' `value_counts`; nulls are not counted).
    ///
    /// # Errors
    /// An unknown column, or one named `count`.
    fn value_counts(&self, column: &str) -> PyResult<PyDataFrame> {
        wrap(self.inner.value_counts(column))
    }

    /// pandas' `describe()`: count, mean, std, min, the `percentiles` (default 25%, 50%,
    /// 75%) and max of every numeric, date and timestamp column, with a `statistic`
    /// column naming each row; `approximate=True` estimates the percentiles from
    /// t-digests.
    ///
    /// # Errors
    /// A frame without such columns, or a level outside `[0, 1]`.
    #[pyo3(signature = (percentiles=None, approximate=false))]
    fn describe(
        &self,
        py: Python<'_>,
        percentiles: Option<Vec<f64>>,
        approximate: bool,
    ) -> PyResult<PyComputed> {
        let df = self.inner.clone();
        let p = percentiles.unwrap_or_else(|| vec![0.25, 0.5, 0.75]);
        detached(py, move || df.describe_with(&p, approximate)).map(Into::into)
    }

    /// Sorted on `column` across partitions, as Dask's `set_index` partitions by key
    /// ranges (the divisions); the column stays a column.
    ///
    /// # Errors
    /// An unknown column or one that cannot be sorted.
    fn set_index(&self, column: &str) -> PyResult<PyDataFrame> {
        wrap(self.inner.set_index(column))
    }

    /// The first key of every non-empty partition and the last key of the last one
    /// when the frame is sorted on one column, else `None`; computes the frame.
    ///
    /// # Errors
    /// As `compute`.
    fn divisions(&self, py: Python<'_>) -> PyResult<Option<Vec<Py<PyAny>>>> {
        let df = self.inner.clone();
        let d = detached(py, move || df.divisions())?;
        d.map(|v| v.into_iter().map(|x| value_to_py(py, x)).collect())
            .transpose()
    }

    /// About `frac` of the rows, each kept or not by a hash of `seed` and its position,
    /// so the same seed gives the same rows however the frame is partitioned.
    ///
    /// # Errors
    /// A fraction outside `[0, 1]`.
    #[pyo3(signature = (frac, random_state=0))]
    fn sample(&self, frac: f64, random_state: u64) -> PyResult<PyDataFrame> {
        wrap(self.inner.sample(frac, random_state))
    }

    /// The rank of each row's `column` value into `output` (default: the column),
    /// pandas' `rank(method=, ascending=)`: `"average"` (Float64), `"min"`, `"max"`,
    /// `"first"`, `"dense"` (Int64); null where the value is.
    ///
    /// # Errors
    /// An unknown method, a missing column, or one that cannot be sorted.
    #[pyo3(signature = (column, method="average", ascending=true, output=None))]
    fn rank(
        &self,
        column: &str,
        method: &str,
        ascending: bool,
        output: Option<&str>,
    ) -> PyResult<PyDataFrame> {
        let m = rank_method(method)?;
        wrap(
            self.inner
                .rank(column, m, !ascending, output.unwrap_or(column)),
        )
    }

    /// pandas' `pivot_table(values=, index=, columns=, aggfunc=)`: one row per `index`
    /// key (sorted), one column per distinct value of `columns` (sorted).
    ///
    /// # Errors
    /// Missing columns, an unknown function or one that does not take `values`' type,
    /// or more than 1,000 distinct values of `columns`.
    #[pyo3(signature = (index, columns, values, aggfunc="mean"))]
    fn pivot_table(
        &self,
        index: &Bound<'_, PyAny>,
        columns: &str,
        values: &str,
        aggfunc: &str,
    ) -> PyResult<PyDataFrame> {
        let index = names_of(index)?;
        let f = AggFunc::parse(aggfunc).py_err()?;
        wrap(self.inner.pivot_table(&strs(&index), columns, values, f))
    }

    /// Sorted by columns (stable, nulls last); `ascending` one flag or one per column.
    #[pyo3(signature = (by, ascending=None))]
    fn sort_values(
        &self,
        by: &Bound<'_, PyAny>,
        ascending: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyDataFrame> {
        let cols = names_of(by)?;
        let asc: Vec<bool> = match ascending {
            None => vec![true],
            Some(a) => match a.extract::<bool>() {
                Ok(b) => vec![b],
                Err(_) => a.extract()?,
            },
        };
        wrap(self.inner.sort_values(&strs(&cols), &asc))
    }

    /// The `n` rows with the largest `columns`.
    fn nlargest(&self, n: usize, columns: &Bound<'_, PyAny>) -> PyResult<PyDataFrame> {
        let cols = names_of(columns)?;
        wrap(self.inner.nlargest(n, &strs(&cols)))
    }

    /// The `n` rows with the smallest `columns`.
    fn nsmallest(&self, n: usize, columns: &Bound<'_, PyAny>) -> PyResult<PyDataFrame> {
        let cols = names_of(columns)?;
        wrap(self.inner.nsmallest(n, &strs(&cols)))
    }

    /// Rows with distinct `subset` values (`keep`: `"first"`, `"last"` or `False`).
    #[pyo3(signature = (subset=None, keep=None))]
    fn drop_duplicates(
        &self,
        subset: Option<&Bound<'_, PyAny>>,
        keep: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyDataFrame> {
        let cols = match subset {
            Some(s) if !s.is_none() => names_of(s)?,
            _ => Vec::new(),
        };
        let keep = match keep {
            None => Keep::First,
            Some(k) if k.extract::<bool>().ok() == Some(false) => Keep::None,
            Some(k) => match k.extract::<String>()?.as_str() {
                "first" => Keep::First,
                "last" => Keep::Last,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "keep={other:?}: use \"first\", \"last\" or False"
                    )))
                }
            },
        };
        wrap(self.inner.drop_duplicates(&strs(&cols), keep))
    }

    /// A window function over the whole frame in row order into `output` (see
    /// `GroupBy.transform` for the functions).
    #[pyo3(signature = (column, func, output=None, periods=1, window=None, min_periods=None))]
    fn transform(
        &self,
        column: &str,
        func: &str,
        output: Option<&str>,
        periods: i64,
        window: Option<usize>,
        min_periods: Option<usize>,
    ) -> PyResult<PyDataFrame> {
        let f = window_func(func, periods, window, min_periods)?;
        wrap(self.inner.window(column, f, output.unwrap_or(column)))
    }

    /// The same rows in `npartitions` partitions.
    fn repartition(&self, npartitions: usize) -> PyResult<PyDataFrame> {
        wrap(self.inner.repartition(npartitions))
    }

    /// Sum of every numeric column (a one-row frame).
    fn sum(&self) -> PyResult<PyDataFrame> {
        wrap(self.inner.sum())
    }
    /// Mean of every numeric column.
    fn mean(&self) -> PyResult<PyDataFrame> {
        wrap(self.inner.mean())
    }
    /// Minimum of every orderable column.
    fn min(&self) -> PyResult<PyDataFrame> {
        wrap(self.inner.min())
    }
    /// Maximum of every orderable column.
    fn max(&self) -> PyResult<PyDataFrame> {
        wrap(self.inner.max())
    }
    /// Non-null count of every column.
    fn count(&self) -> PyResult<PyDataFrame> {
        wrap(self.inner.count())
    }

    /// The first `n` rows, computed.
    #[pyo3(signature = (n=5))]
    fn head(&self, py: Python<'_>, n: usize) -> PyResult<PyComputed> {
        let df = self.inner.clone();
        detached(py, move || df.head(n)).map(Into::into)
    }

    /// The last `n` rows, computed.
    #[pyo3(signature = (n=5))]
    fn tail(&self, py: Python<'_>, n: usize) -> PyResult<PyComputed> {
        let df = self.inner.clone();
        detached(py, move || df.tail(n)).map(Into::into)
    }

    /// Computes the frame: a `tessera.ComputedFrame` (Arrow batches) with `to_pandas()`,
    /// `to_polars()`, `to_arrow()` and `__arrow_c_stream__`. The GIL is released while
    /// it runs; Ctrl-C cancels it.
    fn compute(&self, py: Python<'_>) -> PyResult<PyComputed> {
        let df = self.inner.clone();
        detached(py, move || df.compute()).map(Into::into)
    }

    /// Computes and keeps the partitions in memory: a frame whose plan starts there.
    fn persist(&self, py: Python<'_>) -> PyResult<PyDataFrame> {
        let df = self.inner.clone();
        detached(py, move || df.persist()).map(Into::into)
    }

    /// The optimized plan in words.
    fn explain(&self) -> PyResult<String> {
        self.inner.explain().py_err()
    }

    /// The frame on another dataframe backend.
    fn to_backend(&self, py: Python<'_>, name: String) -> PyResult<PyDataFrame> {
        let df = self.inner.clone();
        detached(py, move || df.to_backend(&name)).map(Into::into)
    }

    /// Writes Parquet: one file, or one file per partition when the name has a `*`
    /// (`out/part-*.parquet`, committed as a whole); nothing half-written is left.
    /// Returns the paths written.
    fn to_parquet(&self, py: Python<'_>, path: String) -> PyResult<Vec<String>> {
        let df = self.inner.clone();
        detached(py, move || df.to_parquet(&path))
            .map(|v| v.iter().map(|p| p.display().to_string()).collect())
    }

    /// Writes CSV, as `to_parquet` does.
    fn to_csv(&self, py: Python<'_>, path: String) -> PyResult<Vec<String>> {
        let df = self.inner.clone();
        detached(py, move || df.to_csv(&path))
            .map(|v| v.iter().map(|p| p.display().to_string()).collect())
    }
}

/// Reads CSV files lazily (`path`: a file, a glob, or an object URL): `sep`, `header`
/// (`None` for none, with `names`), `dtype` (`{column: type}` overrides),
/// `parse_dates`, `na_values`, `blocksize` (bytes per partition).
#[pyfunction]
#[pyo3(signature = (path, sep=",", header=Some("infer"), names=None, dtype=None, parse_dates=None, na_values=None, blocksize=None))]
#[allow(clippy::too_many_arguments)]
pub fn read_csv(
    path: &str,
    sep: &str,
    header: Option<&str>,
    names: Option<Vec<String>>,
    dtype: Option<&Bound<'_, PyDict>>,
    parse_dates: Option<Vec<String>>,
    na_values: Option<Vec<String>>,
    blocksize: Option<u64>,
) -> PyResult<PyDataFrame> {
    let mut o = CsvOptions::default();
    let delim = sep.as_bytes();
    if delim.len() != 1 {
        return Err(PyValueError::new_err(format!(
            "sep={sep:?}: give one single-byte character"
        )));
    }
    o.delimiter = delim[0];
    o.has_header = header.is_some() && names.is_none();
    o.names = names;
    if let Some(d) = dtype {
        for (k, v) in d.iter() {
            let t: String = v.extract()?;
            o.dtypes.push((k.extract()?, data_type_of(&t)?));
        }
    }
    if let Some(p) = parse_dates {
        o.parse_dates = p;
    }
    if let Some(n) = na_values {
        // As pandas' `na_values`: added to the default missing markers ("", "NA", "NaN",
        // ...), not in place of them.
        for v in n {
            if !o.null_values.contains(&v) {
                o.null_values.push(v);
            }
        }
    }
    if let Some(b) = blocksize {
        o.partition_bytes = b.max(1);
    }
    wrap(tessera::frame::read_csv(path, o))
}

/// The rows of `frames` one after another (their partitions in order), matching
/// columns by name, as `pandas.concat`/`dd.concat`.
///
/// # Errors
/// No frames, frames on different backends, or columns that differ.
#[pyfunction]
pub fn concat_frames(frames: Vec<Bound<'_, PyDataFrame>>) -> PyResult<PyDataFrame> {
    let inner: Vec<DataFrame> = frames.iter().map(|f| f.get().inner.clone()).collect();
    wrap(DataFrame::concat(&inner))
}

/// Reads Parquet lazily: a file, a glob, a hive-partitioned directory (keys become
/// columns, and a filter on them skips files), or an object URL.
#[pyfunction]
pub fn read_parquet(path: &str) -> PyResult<PyDataFrame> {
    wrap(tessera::frame::read_parquet(path))
}

/// A frame from anything exporting `__arrow_c_stream__` (pyarrow, Polars, DuckDB): one
/// partition per batch, or `npartitions` of about equal rows; the buffers are shared.
#[pyfunction]
#[pyo3(signature = (data, npartitions=None, backend=None))]
pub fn from_arrow(
    data: &Bound<'_, PyAny>,
    npartitions: Option<usize>,
    backend: Option<&str>,
) -> PyResult<PyDataFrame> {
    let (schema, batches) = import_stream(data)?;
    frame_from_batches(schema, batches, npartitions, backend)
}

fn frame_from_batches(
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    npartitions: Option<usize>,
    backend: Option<&str>,
) -> PyResult<PyDataFrame> {
    let batches: Vec<RecordBatch> = batches.into_iter().filter(|b| b.num_rows() > 0).collect();
    match (npartitions, batches.len()) {
        (_, 0) => wrap(DataFrame::from_record_batches(
            vec![RecordBatch::new_empty(schema)],
            backend,
        )),
        (None, _) => wrap(DataFrame::from_record_batches(batches, backend)),
        (Some(n), 1) => wrap(DataFrame::from_record_batch(
            batches.into_iter().next().expect("one batch"),
            n.max(1),
            backend,
        )),
        (Some(n), _) => {
            let one = concat(&schema, &batches)?;
            wrap(DataFrame::from_record_batch(one, n.max(1), backend))
        }
    }
}

/// `batches` as one batch (the engine's `Computed::concat`).
fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> PyResult<RecordBatch> {
    let c = Computed {
        schema: Arc::clone(schema),
        batches: batches.to_vec(),
    };
    c.concat().py_err()
}

/// Calls `func` with `batch` as a pandas frame (or a pyarrow table with `arrow`) and reads
/// its result back as one batch, plain strings for large or view ones.
fn call_on_partition(
    py: Python<'_>,
    func: &Py<PyAny>,
    batch: RecordBatch,
    arrow: bool,
) -> PyResult<RecordBatch> {
    let pa = py.import("pyarrow")?;
    let schema = batch.schema();
    let part = Py::new(
        py,
        PyComputed::from(Computed {
            schema,
            batches: vec![batch],
        }),
    )?;
    let table = pa.call_method1("table", (part,))?;
    let arg = if arrow {
        table
    } else {
        table.call_method0("to_pandas")?
    };
    let out = func.bind(py).call1((arg,))?;
    let out = if arrow || out.hasattr("__arrow_c_stream__")? {
        out
    } else {
        let kwargs = PyDict::new(py);
        kwargs.set_item("preserve_index", false)?;
        pa.getattr("Table")?
            .call_method("from_pandas", (out,), Some(&kwargs))?
    };
    let normalized = py
        .import("tessera")?
        .call_method1("_normalized_arrow", (out,))?;
    let (schema, batches) = import_stream(&normalized)?;
    concat(&schema, &batches)
}
