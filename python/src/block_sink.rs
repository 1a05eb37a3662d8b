//! Any Python object with `__setitem__` (a NumPy array, a zarr-python array, an h5py
//! dataset, a memory map) as the destination of a tessera array, as `dask.array.store`
//! writes into one: one write task per block, fed by the task that computes it, each
//! taking the GIL (and the store's lock) to assign the block to its region of the target.
//! A block is written as soon as it exists and dropped after, so an array larger than
//! memory is stored in bounded memory.

use std::ops::Range;
use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PySlice, PySliceMethods, PyTuple};
use tessera::array::BlockSink;
use tessera::{Array, HostArray};

use crate::block_source::locked;
use crate::convert::{host_to_numpy, region_key, shape_of, shape_text, type_name};
use crate::errors::{park_python_error, IntoPy};

/// A Python object written region by region, the regions shifted by `offset`.
struct PySink {
    target: Py<PyAny>,
    offset: Vec<usize>,
    lock: Option<Py<PyAny>>,
    what: String,
}

impl PySink {
    fn assign(&self, py: Python<'_>, region: &[Range<usize>], data: &HostArray) -> PyResult<()> {
        let key = region_key(py, region, &self.offset)?;
        let value = host_to_numpy(py, data.clone()).0;
        let target = self.target.bind(py);
        locked(py, self.lock.as_ref(), || target.set_item(key, value))
    }
}

impl BlockSink for PySink {
    fn describe(&self) -> String {
        self.what.clone()
    }

    fn write(&self, region: &[Range<usize>], data: &HostArray) -> tessera::Result<u64> {
        Python::attach(|py| self.assign(py, region, data))
            .map_err(|e| park_python_error("store", &self.what, e))?;
        Ok(data.nbytes() as u64)
    }
}

/// Where in `target` the source of `shape` goes: per axis the offset, from `region` (a
/// tuple of slices with step 1, as `dask.array.store`'s `regions` take) or 0.
fn offsets(
    target: &Bound<'_, PyAny>,
    shape: &[usize],
    region: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Vec<usize>> {
    let target_shape = match target.getattr("shape") {
        Ok(s) => Some(shape_of(&s)?),
        Err(_) => None,
    };
    let Some(region) = region.filter(|r| !r.is_none()) else {
        if let Some(t) = target_shape.filter(|t| t.as_slice() != shape) {
            return Err(PyValueError::new_err(format!(
                "store: the source has shape {} and {what} has shape {}; give regions= to \
                 write into part of it",
                shape_text(shape),
                shape_text(&t)
            )));
        }
        return Ok(vec![0; shape.len()]);
    };
    let items: Vec<Bound<'_, PyAny>> = match region.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![region.clone()],
    };
    let refuse = |detail: String| {
        PyValueError::new_err(format!(
            "store: region {region} of {what} for a source of shape {}: {detail}",
            shape_text(shape)
        ))
    };
    if items.len() > shape.len() {
        return Err(refuse(format!(
            "{} slices for {} axes",
            items.len(),
            shape.len()
        )));
    }
    let mut out = Vec::with_capacity(shape.len());
    for (axis, &n) in shape.iter().enumerate() {
        let dim = target_shape.as_ref().and_then(|t| t.get(axis).copied());
        let Some(item) = items.get(axis) else {
            match dim {
                Some(d) if d != n => {
                    return Err(refuse(format!(
                        "axis {axis} has no slice, and the target's {d} is not the source's {n}"
                    )))
                }
                _ => out.push(0),
            }
            continue;
        };
        let slice = item
            .cast::<PySlice>()
            .map_err(|_| refuse(format!("axis {axis}: {item} is not a slice")))?;
        let length = dim.map_or(isize::MAX, |d| d as isize);
        let ix = slice.indices(length)?;
        if ix.step != 1 {
            return Err(refuse(format!(
                "axis {axis}: step {} (only 1 is written)",
                ix.step
            )));
        }
        let len = (ix.stop - ix.start).max(0) as usize;
        if len != n {
            return Err(refuse(format!(
                "axis {axis} selects {len} elements, the source has {n}"
            )));
        }
        out.push(ix.start as usize);
    }
    Ok(out)
}

/// The lazy plan that writes `x` into `target` (at `region`, under `lock`): an array of
/// the bytes written per block, whose computation does the writes.
///
/// # Errors
/// `TypeError` when `target` has no `__setitem__`; `ValueError` when the shapes or the
/// region do not fit.
pub fn store_plan(
    x: &Array,
    target: &Bound<'_, PyAny>,
    region: Option<&Bound<'_, PyAny>>,
    lock: Option<Py<PyAny>>,
) -> PyResult<Array> {
    let what = type_name(target);
    if !target.hasattr("__setitem__")? {
        return Err(PyTypeError::new_err(format!(
            "store: the target {what} has no __setitem__; give a NumPy array, a zarr or h5py \
             array, or another object that takes target[region] = block"
        )));
    }
    let offset = offsets(target, &x.shape(), region, &what)?;
    let sink = PySink {
        target: target.clone().unbind(),
        offset,
        lock,
        what,
    };
    x.store_plan(Arc::new(sink)).py_err()
}

/// `_store_plan(x, target, region=None, lock=None)`: the lazy array whose computation
/// writes `x` into `target` (see `tessera.store`, which calls it once per target).
#[pyfunction]
#[pyo3(name = "_store_plan", signature = (x, target, region=None, lock=None))]
pub fn store_plan_py(
    x: &crate::array::PyArray,
    target: &Bound<'_, PyAny>,
    region: Option<&Bound<'_, PyAny>>,
    lock: Option<Py<PyAny>>,
) -> PyResult<crate::array::PyArray> {
    store_plan(&x.inner, target, region, lock).map(Into::into)
}
