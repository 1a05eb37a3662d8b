//! `tessera.DataFrame`'s methods: building the plan (select, filter, assign, merge, sort,
//! reshape, windows), `map_partitions` over Python functions, and running it.

use arrow_array::RecordBatch;
use pyo3::exceptions::{PyAttributeError, PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList, PyString, PyTuple};
use tessera::frame::{AggFunc, Computed, DropHow, JoinType, Keep, MergeOptions};

use super::args::{expr_aggs, names_of, rank_method, strs, value_to_py, window_func};
use super::computed::PyComputed;
use super::groupby::PyGroupBy;
use super::{concat, wrap, PyDataFrame};
use crate::arrow_ffi::{export_stream, import_stream};
use crate::errors::IntoPy;
use crate::expr::{expr_of, literal_of, PyExpr};
use crate::run::detached;

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

/// Calls `func` with `batch` as a pandas frame (or a pyarrow table with `arrow`) and reads
/// its result back as one batch, plain strings for large or view ones.
pub(super) fn call_on_partition(
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
