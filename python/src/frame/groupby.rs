//! `tessera.GroupBy`: a frame grouped by key columns, with pandas' and Dask's aggregation,
//! window and per-group methods.

use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tessera::frame::{AggFunc, DataFrame, GroupBy};

use super::args::{expr_aggs, names_of, rank_method, window_func};
use super::{wrap, PyDataFrame};
use crate::errors::IntoPy;
use crate::expr::PyExpr;

/// `df.groupby(keys)`: aggregations and window functions per group.
#[pyclass(name = "GroupBy", module = "tessera", frozen)]
pub struct PyGroupBy {
    pub(super) inner: GroupBy,
    pub(super) frame: DataFrame,
    pub(super) keys: Vec<String>,
    /// Columns chosen with `gb["x"]` (all non-key columns when `None`).
    pub(super) selected: Option<Vec<String>>,
}

impl PyGroupBy {
    pub(super) fn columns(&self, func: AggFunc) -> Vec<String> {
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

    pub(super) fn all(&self, func: AggFunc) -> PyResult<PyDataFrame> {
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
pub(super) fn agg_specs(
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
