//! `tessera.ComputedFrame`: what `compute()` returns, Arrow batches on the host that
//! export `__arrow_c_stream__` and convert to pandas, Polars and pyarrow.

use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use tessera::frame::Computed;

use crate::arrow_ffi::export_stream;

/// The computed rows of a frame: Arrow batches, one per partition, exported without a
/// copy through the Arrow PyCapsule interface.
#[pyclass(name = "ComputedFrame", module = "tessera", frozen)]
pub struct PyComputed {
    pub(super) inner: Computed,
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
