//! `tessera.col("x")` expressions with Python's operators, as Polars and Dask users write
//! them: `(ts.col("fare") / ts.col("distance") > 2.5) & ts.col("zone").isin([1, 2])`.
//! Python values on either side become literals (an `int` adapts to the column's integer
//! type, a `float` to a float32 column). `.str` and `.dt` hold the string and calendar
//! functions, as in pandas.

use arrow_schema::{DataType, TimeUnit};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use tessera::frame::expr::{BinaryOp, DatePart, Literal};
use tessera::frame::{col, lit, DateUnit, Expr};

/// An expression over the columns of a frame.
#[pyclass(name = "Expr", module = "tessera", frozen)]
#[derive(Clone)]
pub struct PyExpr {
    /// The Rust expression.
    pub inner: Expr,
}

impl From<Expr> for PyExpr {
    fn from(inner: Expr) -> Self {
        PyExpr { inner }
    }
}

/// A Python literal (`None`, `bool`, `int`, `float`, `str`).
pub fn literal_of(v: &Bound<'_, PyAny>) -> PyResult<Literal> {
    if v.is_none() {
        Ok(Literal::Null)
    } else if v.is_instance_of::<PyBool>() {
        Ok(Literal::Bool(v.extract()?))
    } else if v.is_instance_of::<PyInt>() {
        Ok(Literal::Int(v.extract()?))
    } else if v.is_instance_of::<PyFloat>() {
        Ok(Literal::Float(v.extract()?))
    } else if let Ok(s) = v.cast::<PyString>() {
        Ok(Literal::Str(s.to_str()?.to_string()))
    } else if let Ok(kind) = v
        .getattr("dtype")
        .and_then(|d| d.getattr("kind"))
        .and_then(|k| k.extract::<String>())
    {
        // NumPy scalars, by their kind.
        match kind.as_str() {
            "b" => Ok(Literal::Bool(v.call_method0("__bool__")?.extract()?)),
            "i" | "u" => Ok(Literal::Int(v.call_method0("__int__")?.extract()?)),
            "f" => Ok(Literal::Float(v.call_method0("__float__")?.extract()?)),
            _ => Err(PyTypeError::new_err(format!(
                "a NumPy scalar of kind {kind:?} is not a literal"
            ))),
        }
    } else {
        Err(PyTypeError::new_err(format!(
            "{} is not an expression or a literal (None, bool, int, float, str)",
            v.get_type().name()?
        )))
    }
}

/// An expression from an `Expr` or a Python literal.
pub fn expr_of(v: &Bound<'_, PyAny>) -> PyResult<Expr> {
    if let Ok(e) = v.cast::<PyExpr>() {
        return Ok(e.get().inner.clone());
    }
    literal_of(v).map(lit)
}

/// An Arrow type from what pandas and Polars users write: `"int64"`, `"float32"`,
/// `"bool"`, `"string"`/`"str"`, `"datetime64[us]"`, `"date32"`.
pub fn data_type_of(name: &str) -> PyResult<DataType> {
    Ok(match name {
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" | "int" => DataType::Int64,
        "uint8" => DataType::UInt8,
        "uint16" => DataType::UInt16,
        "uint32" => DataType::UInt32,
        "uint64" => DataType::UInt64,
        "float32" => DataType::Float32,
        "float64" | "float" => DataType::Float64,
        "bool" | "boolean" => DataType::Boolean,
        "string" | "str" | "utf8" => DataType::Utf8,
        "category" | "categorical" => tessera::frame::categorical_type(),
        "datetime64[us]" | "timestamp[us]" | "datetime" => {
            DataType::Timestamp(TimeUnit::Microsecond, None)
        }
        "datetime64[ns]" | "timestamp[ns]" => DataType::Timestamp(TimeUnit::Nanosecond, None),
        "date32" | "date" => DataType::Date32,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown type {other:?}; use int8-int64, uint8-uint64, float32, float64, bool, string, datetime64[us], datetime64[ns] or date32"
            )))
        }
    })
}

fn bin(op: BinaryOp, l: Expr, r: Expr) -> PyExpr {
    Expr::Binary {
        op,
        left: Box::new(l),
        right: Box::new(r),
    }
    .into()
}

#[pymethods]
impl PyExpr {
    fn __repr__(&self) -> String {
        format!("tessera.Expr({})", self.inner)
    }
    fn __add__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Add, self.inner.clone(), expr_of(o)?))
    }
    fn __radd__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Add, expr_of(o)?, self.inner.clone()))
    }
    fn __sub__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Sub, self.inner.clone(), expr_of(o)?))
    }
    fn __rsub__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Sub, expr_of(o)?, self.inner.clone()))
    }
    fn __mul__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Mul, self.inner.clone(), expr_of(o)?))
    }
    fn __rmul__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Mul, expr_of(o)?, self.inner.clone()))
    }
    fn __truediv__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Div, self.inner.clone(), expr_of(o)?))
    }
    fn __rtruediv__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Div, expr_of(o)?, self.inner.clone()))
    }
    fn __mod__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Rem, self.inner.clone(), expr_of(o)?))
    }
    fn __pow__(&self, o: &Bound<'_, PyAny>, _m: Option<&Bound<'_, PyAny>>) -> PyResult<PyExpr> {
        Ok(self.inner.clone().pow(expr_of(o)?).into())
    }
    fn __and__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::And, self.inner.clone(), expr_of(o)?))
    }
    fn __rand__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::And, expr_of(o)?, self.inner.clone()))
    }
    fn __or__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Or, self.inner.clone(), expr_of(o)?))
    }
    fn __ror__(&self, o: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(bin(BinaryOp::Or, expr_of(o)?, self.inner.clone()))
    }
    fn __invert__(&self) -> PyExpr {
        (!self.inner.clone()).into()
    }
    fn __neg__(&self) -> PyExpr {
        (-self.inner.clone()).into()
    }
    fn __abs__(&self) -> PyExpr {
        self.inner.clone().abs().into()
    }
    fn __richcmp__(&self, o: &Bound<'_, PyAny>, op: pyo3::basic::CompareOp) -> PyResult<PyExpr> {
        use pyo3::basic::CompareOp as C;
        let op = match op {
            C::Eq => BinaryOp::Eq,
            C::Ne => BinaryOp::NotEq,
            C::Lt => BinaryOp::Lt,
            C::Le => BinaryOp::LtEq,
            C::Gt => BinaryOp::Gt,
            C::Ge => BinaryOp::GtEq,
        };
        Ok(bin(op, self.inner.clone(), expr_of(o)?))
    }
    fn __bool__(&self) -> PyResult<bool> {
        Err(PyTypeError::new_err(
            "an expression has no truth value; combine conditions with & and | (not `and`/`or`), and wrap each in parentheses",
        ))
    }

    /// The names of the columns the expression reads, sorted.
    fn columns(&self) -> Vec<String> {
        let mut out = std::collections::BTreeSet::new();
        self.inner.columns_into(&mut out);
        out.into_iter().collect()
    }

    /// True where the value is null.
    fn isnull(&self) -> PyExpr {
        self.inner.clone().is_null().into()
    }
    /// True where the value is not null.
    fn notnull(&self) -> PyExpr {
        self.inner.clone().is_not_null().into()
    }
    /// True where a float is NaN.
    fn isnan(&self) -> PyExpr {
        self.inner.clone().is_nan().into()
    }
    /// Nulls replaced by `value`.
    fn fillna(&self, value: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(self.inner.clone().fill_null(expr_of(value)?).into())
    }
    /// The values as another type (`"int64"`, `"float32"`, `"string"`, ...).
    fn astype(&self, dtype: &str) -> PyResult<PyExpr> {
        Ok(self.inner.clone().cast(data_type_of(dtype)?).into())
    }
    /// True where the value is one of `values` (pandas' `isin`).
    fn isin(&self, values: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        let lits: Vec<Literal> = values
            .try_iter()?
            .map(|v| literal_of(&v?))
            .collect::<PyResult<_>>()?;
        Ok(self.inner.clone().is_in(lits).into())
    }
    /// `low <= self <= high`.
    fn between(&self, low: &Bound<'_, PyAny>, high: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(self
            .inner
            .clone()
            .between(expr_of(low)?, expr_of(high)?)
            .into())
    }
    /// Values limited to `[lower, upper]`.
    fn clip(&self, lower: &Bound<'_, PyAny>, upper: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        Ok(self
            .inner
            .clone()
            .clip(expr_of(lower)?, expr_of(upper)?)
            .into())
    }
    /// Absolute value.
    fn abs(&self) -> PyExpr {
        self.inner.clone().abs().into()
    }
    /// Square root.
    fn sqrt(&self) -> PyExpr {
        self.inner.clone().sqrt().into()
    }
    /// `e ** self`.
    fn exp(&self) -> PyExpr {
        self.inner.clone().exp().into()
    }
    /// Natural logarithm.
    fn log(&self) -> PyExpr {
        self.inner.clone().ln().into()
    }
    /// Rounded down.
    fn floor(&self) -> PyExpr {
        self.inner.clone().floor().into()
    }
    /// Rounded up.
    fn ceil(&self) -> PyExpr {
        self.inner.clone().ceil().into()
    }
    /// Rounded half to even.
    fn round(&self) -> PyExpr {
        self.inner.clone().round().into()
    }
    /// String functions (`.str.contains`, `.str.lower`, ...).
    #[getter]
    fn str(&self) -> StrAccessor {
        StrAccessor {
            inner: self.inner.clone(),
        }
    }
    /// Calendar parts of timestamps and dates (`.dt.year`, `.dt.hour`, ...).
    #[getter]
    fn dt(&self) -> DtAccessor {
        DtAccessor {
            inner: self.inner.clone(),
        }
    }
}

/// The `.str` functions of an expression.
#[pyclass(name = "ExprStr", module = "tessera", frozen)]
pub struct StrAccessor {
    inner: Expr,
}

#[pymethods]
impl StrAccessor {
    /// True where the string contains `pat` (a literal substring).
    fn contains(&self, pat: &str) -> PyExpr {
        self.inner.clone().contains(pat).into()
    }
    /// True where the string starts with `prefix`.
    fn startswith(&self, prefix: &str) -> PyExpr {
        self.inner.clone().starts_with(prefix).into()
    }
    /// True where the string ends with `suffix`.
    fn endswith(&self, suffix: &str) -> PyExpr {
        self.inner.clone().ends_with(suffix).into()
    }
    /// Lower case.
    fn lower(&self) -> PyExpr {
        self.inner.clone().lower().into()
    }
    /// Upper case.
    fn upper(&self) -> PyExpr {
        self.inner.clone().upper().into()
    }
    /// Length in characters.
    fn len(&self) -> PyExpr {
        self.inner.clone().str_len().into()
    }
    /// Leading and trailing whitespace removed.
    fn strip(&self) -> PyExpr {
        self.inner.clone().strip().into()
    }
    /// Every occurrence of the literal `pat` replaced by `repl`.
    fn replace(&self, pat: &str, repl: &str) -> PyExpr {
        self.inner.clone().replace(pat, repl).into()
    }
    /// The characters from `start` (negative: from the end) to before `stop` (pandas'
    /// `str.slice`, `str[start:stop]`, for a `start` and `stop` of the same sign).
    ///
    /// # Errors
    /// A `stop` of the other sign than `start`, which has no fixed length.
    #[pyo3(signature = (start=None, stop=None))]
    fn slice(&self, start: Option<i64>, stop: Option<i64>) -> PyResult<PyExpr> {
        let from = start.unwrap_or(0);
        let len = match stop {
            None => None,
            Some(stop) if (stop >= 0) == (from >= 0) => Some((stop - from).max(0) as u64),
            Some(stop) => {
                return Err(PyValueError::new_err(format!(
                    "str.slice({from}, {stop}): start and stop of different signs are not supported; give both from the start or both from the end"
                )))
            }
        };
        Ok(self.inner.clone().substring(from, len).into())
    }
}

/// The `.dt` parts of a timestamp or date expression (Int32).
#[pyclass(name = "ExprDt", module = "tessera", frozen)]
pub struct DtAccessor {
    inner: Expr,
}

#[pymethods]
impl DtAccessor {
    /// The year.
    #[getter]
    fn year(&self) -> PyExpr {
        self.inner.clone().year().into()
    }
    /// The month (1-12).
    #[getter]
    fn month(&self) -> PyExpr {
        self.inner.clone().month().into()
    }
    /// The day of the month.
    #[getter]
    fn day(&self) -> PyExpr {
        self.inner.clone().day().into()
    }
    /// The hour (0-23).
    #[getter]
    fn hour(&self) -> PyExpr {
        self.inner.clone().hour().into()
    }
    /// The day of the week, Monday 0 (pandas' `dayofweek`).
    #[getter]
    fn weekday(&self) -> PyExpr {
        self.inner.clone().weekday().into()
    }
    /// The minute (0-59).
    #[getter]
    fn minute(&self) -> PyExpr {
        self.inner.clone().date_part(DatePart::Minute).into()
    }
    /// The second (0-59).
    #[getter]
    fn second(&self) -> PyExpr {
        self.inner.clone().date_part(DatePart::Second).into()
    }
    /// The quarter (1-4).
    #[getter]
    fn quarter(&self) -> PyExpr {
        self.inner.clone().date_part(DatePart::Quarter).into()
    }
    /// The day of the year (1-366).
    #[getter]
    fn dayofyear(&self) -> PyExpr {
        self.inner.clone().date_part(DatePart::DayOfYear).into()
    }
    /// The start of the `unit` the instant falls in: `"year"`, `"quarter"`, `"month"`,
    /// `"week"` (from Monday), `"day"`, `"hour"`, `"minute"`, `"second"`,
    /// `"millisecond"`, `"microsecond"` (SQL's `date_trunc`).
    ///
    /// # Errors
    /// An unknown unit.
    fn truncate(&self, unit: &str) -> PyResult<PyExpr> {
        let u = DateUnit::ALL
            .into_iter()
            .find(|u| u.name() == unit)
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown unit {unit:?}; known: {}",
                    DateUnit::ALL.map(DateUnit::name).join(", ")
                ))
            })?;
        Ok(self.inner.clone().truncate(u).into())
    }
}

/// The column `name`.
#[pyfunction]
#[pyo3(name = "col")]
pub fn col_(name: &str) -> PyExpr {
    col(name).into()
}

/// A literal value.
#[pyfunction]
#[pyo3(name = "lit")]
pub fn lit_(value: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
    Ok(lit(literal_of(value)?).into())
}

/// `when(cond).then(a).otherwise(b)`: a conditional, SQL's `CASE WHEN`.
#[pyclass(name = "When", module = "tessera", frozen)]
pub struct PyWhen {
    cases: Vec<(Expr, Option<Expr>)>,
}

#[pymethods]
impl PyWhen {
    /// The value where the last condition holds.
    fn then(&self, value: &Bound<'_, PyAny>) -> PyResult<PyWhen> {
        let mut cases = self.cases.clone();
        match cases.last_mut() {
            Some((_, slot @ None)) => *slot = Some(expr_of(value)?),
            _ => return Err(PyValueError::new_err("then() must follow when()")),
        }
        Ok(PyWhen { cases })
    }
    /// Another condition, tried when the earlier ones do not hold.
    fn when(&self, condition: &Bound<'_, PyAny>) -> PyResult<PyWhen> {
        let mut cases = self.cases.clone();
        cases.push((expr_of(condition)?, None));
        Ok(PyWhen { cases })
    }
    /// The value where no condition holds.
    fn otherwise(&self, value: &Bound<'_, PyAny>) -> PyResult<PyExpr> {
        let mut cases = self.cases.iter();
        let Some((c0, Some(v0))) = cases.next() else {
            return Err(PyValueError::new_err(
                "otherwise() needs when(...).then(...) first",
            ));
        };
        let mut w = tessera::frame::when(c0.clone()).then(v0.clone());
        for (c, v) in cases {
            let v = v
                .clone()
                .ok_or_else(|| PyValueError::new_err("a when() without then()"))?;
            w = w.when(c.clone()).then(v);
        }
        Ok(w.otherwise(expr_of(value)?).into())
    }
}

/// Starts a conditional: `ts.when(cond).then(a).otherwise(b)`.
#[pyfunction]
#[pyo3(name = "when")]
pub fn when_(condition: &Bound<'_, PyAny>) -> PyResult<PyWhen> {
    Ok(PyWhen {
        cases: vec![(expr_of(condition)?, None)],
    })
}
