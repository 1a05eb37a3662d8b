//! Any Python object with `shape`, `dtype` and `__getitem__` (an h5py dataset, a
//! zarr-python array, a netCDF4 variable, one of xarray's lazily indexed backend arrays)
//! as a lazy tessera array, as `dask.array.from_array` makes one: each block is one task
//! that takes the GIL, indexes the object with the block's slices and converts what comes
//! back with `numpy.asarray`. Nothing is read when the array is made; a slice of it reads
//! only the blocks it touches.
//!
//! Blocks follow the object's own `chunks` (h5py and zarr-python have one) when the user
//! leaves the block size to `auto`: each block is a whole number of stored chunks, so no
//! stored chunk is read twice.

use std::ops::Range;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use tessera::array::BlockSource;
use tessera::{Array, DType, HostArray};

use crate::convert::{
    chunks_of, dtype_of, numpy_to_host, region_key, shape_of, shape_text, type_name,
};
use crate::errors::{park_python_error, IntoPy};

/// A Python object read region by region under the GIL (and its `lock`, when given).
pub struct PySource {
    obj: Py<PyAny>,
    lock: Option<Py<PyAny>>,
    dtype: DType,
    what: String,
}

impl PySource {
    /// Indexes the object with `region`'s slices, under the lock.
    fn index<'py>(&self, py: Python<'py>, region: &[Range<usize>]) -> PyResult<Bound<'py, PyAny>> {
        let key = region_key(py, region, &[])?;
        locked(py, self.lock.as_ref(), || self.obj.bind(py).get_item(key))
    }
}

impl BlockSource for PySource {
    fn describe(&self) -> String {
        self.what.clone()
    }

    fn read(&self, region: &[Range<usize>]) -> tessera::Result<HostArray> {
        Python::attach(|py| {
            let got = self
                .index(py, region)
                .map_err(|e| park_python_error("from_array", &self.what, e))?;
            let host = numpy_to_host(py, &got)
                .map_err(|e| park_python_error("from_array", "a block read", e))?;
            let want: Vec<usize> = region.iter().map(Range::len).collect();
            let problem = if host.shape() != want.as_slice() {
                Some(format!(
                    "returned shape {} for the region {region:?}, which is {}",
                    shape_text(host.shape()),
                    shape_text(&want)
                ))
            } else if host.dtype() != self.dtype {
                Some(format!(
                    "returned {} where its dtype attribute says {}",
                    host.dtype(),
                    self.dtype
                ))
            } else {
                None
            };
            match problem {
                None => Ok(host),
                Some(p) => Err(park_python_error(
                    "from_array",
                    &self.what,
                    PyValueError::new_err(format!("{}[...] {p}", self.what)),
                )),
            }
        })
    }
}

/// Whether `x` should be read lazily: anything with `shape`, `dtype` and `__getitem__`
/// that is not already in memory as NumPy (an ndarray, a list, a scalar).
pub fn is_lazy_source(py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<bool> {
    let np = py.import("numpy")?;
    if x.is_instance(&np.getattr("ndarray")?)? || x.is_instance(&np.getattr("generic")?)? {
        return Ok(false);
    }
    Ok(x.hasattr("shape")? && x.hasattr("dtype")? && x.hasattr("__getitem__")?)
}

/// The stored chunk shape an object reports (`chunks` as a tuple of ints, one per axis, as
/// h5py and zarr-python give it), if any.
fn stored_chunks(x: &Bound<'_, PyAny>, ndim: usize) -> Option<Vec<usize>> {
    let c: Vec<usize> = x.getattr("chunks").ok()?.extract().ok()?;
    (c.len() == ndim && c.iter().all(|&n| n > 0)).then_some(c)
}

/// A lazy array over `x` (see the module docs) in blocks of `chunks` (a Dask chunk
/// spec); `lock` as [`lock_of`] takes it.
///
/// # Errors
/// `TypeError` when `x.dtype` is not one tessera computes with, `x.shape` is not a
/// tuple of ints or `lock` is not a lock; `ValueError` for a chunk spec that does not fit
/// the shape.
pub fn lazy_from_array(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    chunks: Option<&Bound<'_, PyAny>>,
    lock: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<Array> {
    let what = type_name(x);
    let shape = shape_of(&x.getattr("shape")?).map_err(|_| {
        PyTypeError::new_err(format!(
            "from_array: {what}.shape must be a tuple of non-negative ints"
        ))
    })?;
    let dtype = dtype_of(py, &x.getattr("dtype")?)
        .map_err(|e| PyTypeError::new_err(format!("from_array: {what}.dtype: {}", e.value(py))))?;
    let chunks = chunks_of(chunks, shape.len())?;
    let lock = lock_of(py, lock)?;
    let target = tessera::config::chunk_size_bytes().py_err()?;
    let resolved = match stored_chunks(x, shape.len()) {
        Some(stored) => chunks.resolve_aligned(&shape, dtype.size(), target, &stored),
        None => chunks.resolve(&shape, dtype.size(), target),
    }
    .py_err()?;
    let source = PySource {
        obj: x.clone().unbind(),
        lock,
        dtype,
        what: format!("{what} of shape {}", shape_text(&shape)),
    };
    Array::from_source(Arc::new(source), dtype, resolved, backend).py_err()
}

/// `work()` with `lock` entered around it (`with lock:`), or alone without one; the lock
/// is left whatever `work` returns.
///
/// # Errors
/// What entering or leaving the lock raises, else what `work` returns.
pub fn locked<'py, T>(
    py: Python<'py>,
    lock: Option<&Py<PyAny>>,
    work: impl FnOnce() -> PyResult<T>,
) -> PyResult<T> {
    let Some(lock) = lock else {
        return work();
    };
    let lock = lock.bind(py);
    lock.call_method0("__enter__")?;
    let out = work();
    let none = py.None();
    lock.call_method1("__exit__", (&none, &none, &none))?;
    out
}

/// The lock `from_array(lock=...)` asks for: none for `None`/`False`, a new
/// `threading.Lock` for `True`, or the object itself (anything with `__enter__` and
/// `__exit__`).
///
/// # Errors
/// `TypeError` for an object that is not a lock.
pub fn lock_of(py: Python<'_>, lock: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Py<PyAny>>> {
    let Some(lock) = lock.filter(|l| !l.is_none()) else {
        return Ok(None);
    };
    if let Ok(flag) = lock.cast::<pyo3::types::PyBool>() {
        return Ok(if flag.is_true() {
            Some(py.import("threading")?.call_method0("Lock")?.unbind())
        } else {
            None
        });
    }
    if !(lock.hasattr("__enter__")? && lock.hasattr("__exit__")?) {
        return Err(PyTypeError::new_err(format!(
            "lock={lock}: give True, False or a lock object such as threading.Lock()"
        )));
    }
    Ok(Some(lock.clone().unbind()))
}
