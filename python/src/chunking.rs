//! `normalize_chunks`: Dask's chunk normalization, answered by the engine's own rules.
//!
//! xarray asks its chunk manager to turn what a user wrote (`chunks={"time": 365}`,
//! `"auto"`, `"100MiB"`, `-1`) into explicit block sizes before it builds any array, and
//! passes the stored chunks of the file as `previous_chunks`. Answering with the engine's
//! [`ChunkSpec`] resolution keeps the blocks xarray plans with equal to the blocks
//! `from_array` then makes: `"auto"` grows whole multiples of the stored chunks
//! ([`ChunkSpec::resolve_aligned`]), so no task reads a stored chunk twice.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::convert::{chunks_of, dtype_or, shape_text};
use crate::errors::IntoPy;

/// A byte size such as `"100MiB"` or `"1 GB"`, as Dask's `parse_bytes` reads it.
fn byte_size(text: &str) -> PyResult<usize> {
    tessera::config::parse_bytes(text)
        .map(|b| b as usize)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "chunks={text:?}: not a byte size; give \"auto\", an int, or a size such as \"100MiB\""
            ))
        })
}

/// The chunk spec with dict keys placed by axis and byte sizes taken out as the limit.
fn per_axis<'py>(
    py: Python<'py>,
    chunks: &Bound<'py, PyAny>,
    ndim: usize,
    limit: &mut Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let items: Vec<Bound<'py, PyAny>> = if let Ok(d) = chunks.cast::<PyDict>() {
        let mut items = vec![py.None().into_bound(py); ndim];
        for (k, v) in d.iter() {
            let axis: i64 = k.extract().map_err(|_| {
                PyTypeError::new_err(format!("chunks: dict keys must be axis numbers, got {k}"))
            })?;
            let a = if axis < 0 { axis + ndim as i64 } else { axis };
            if a < 0 || a >= ndim as i64 {
                return Err(PyValueError::new_err(format!(
                    "chunks: axis {axis} is out of range for {ndim} dimensions"
                )));
            }
            items[a as usize] = v;
        }
        items
    } else if chunks.is_instance_of::<PyString>() || chunks.extract::<i64>().is_ok() {
        vec![chunks.clone(); ndim]
    } else if chunks.is_instance_of::<PyTuple>() || chunks.is_instance_of::<PyList>() {
        chunks.try_iter()?.collect::<PyResult<_>>()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "chunks must be \"auto\", an int, a byte size, a tuple or a dict by axis, got {chunks}"
        )));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        if let Ok(s) = item.cast::<PyString>() {
            let text = s.to_str()?;
            if text != "auto" {
                let bytes = byte_size(text)?;
                match *limit {
                    Some(l) if l != bytes => {
                        return Err(PyValueError::new_err(format!(
                            "chunks: one byte size per call, got {bytes} and {l} bytes"
                        )))
                    }
                    _ => *limit = Some(bytes),
                }
                out.push(PyString::new(py, "auto").into_any());
                continue;
            }
        }
        out.push(item);
    }
    Ok(PyTuple::new(py, out)?.into_any())
}

/// `normalize_chunks(chunks, shape, limit=None, dtype=None, previous_chunks=None)`: the
/// block sizes per axis, as `dask.array.core.normalize_chunks` gives them, by the
/// engine's rules (see the module docs). `previous_chunks` (a tuple of ints or of block
/// tuples: the stored chunks) makes `"auto"` blocks whole multiples of them; `limit` is
/// the bytes an `"auto"` block aims at (default: the `array.chunk-size` setting).
///
/// # Errors
/// `TypeError` for a spec of the wrong type, `ValueError` for one that does not fit the
/// shape (blocks that do not add up, a negative size, a bad byte size).
#[pyfunction]
#[pyo3(signature = (chunks, shape, limit=None, dtype=None, previous_chunks=None))]
pub fn normalize_chunks<'py>(
    py: Python<'py>,
    chunks: &Bound<'py, PyAny>,
    shape: Vec<usize>,
    limit: Option<&Bound<'py, PyAny>>,
    dtype: Option<&Bound<'py, PyAny>>,
    previous_chunks: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyTuple>> {
    if chunks.is_none() {
        return Err(PyValueError::new_err(
            "chunks=None: give \"auto\", an int, a tuple of sizes per axis or a dict by axis",
        ));
    }
    let mut target = match limit.filter(|l| !l.is_none()) {
        Some(l) => Some(match l.cast::<PyString>() {
            Ok(s) => byte_size(s.to_str()?)?,
            Err(_) => l.extract()?,
        }),
        None => None,
    };
    let spec_obj = per_axis(py, chunks, shape.len(), &mut target)?;
    let spec = chunks_of(Some(&spec_obj), shape.len())?;
    let itemsize = dtype_or(py, dtype.filter(|d| !d.is_none()), tessera::DType::F64)?.size();
    let target = match target {
        Some(t) => t,
        None => tessera::config::chunk_size_bytes().py_err()?,
    };
    let stored = match previous_chunks.filter(|p| !p.is_none()) {
        None => None,
        Some(p) => {
            let mut sizes = Vec::with_capacity(shape.len());
            for axis in p.try_iter()? {
                let axis = axis?;
                let size = match axis.extract::<usize>() {
                    Ok(n) => n,
                    Err(_) => axis.extract::<Vec<usize>>()?.into_iter().max().unwrap_or(0),
                };
                sizes.push(size);
            }
            (sizes.len() == shape.len() && sizes.iter().all(|&n| n > 0)).then_some(sizes)
        }
    };
    let resolved = match stored {
        Some(stored) => spec.resolve_aligned(&shape, itemsize, target, &stored),
        None => spec.resolve(&shape, itemsize, target),
    }
    .map_err(|e| {
        PyValueError::new_err(format!(
            "normalize_chunks: chunks={spec_obj} for shape {}: {e}",
            shape_text(&shape)
        ))
    })?;
    let axes = (0..shape.len())
        .map(|i| PyTuple::new(py, resolved.axis(i)))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, axes)
}

/// `chunk_size_bytes()`: the bytes an `"auto"` block aims at (the `array.chunk-size`
/// setting), as xarray's `get_auto_chunk_size` asks for it.
///
/// # Errors
/// `ValueError` when the setting is not a byte size.
#[pyfunction]
pub fn chunk_size_bytes() -> PyResult<usize> {
    tessera::config::chunk_size_bytes().py_err()
}
