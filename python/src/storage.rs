//! Arrays in files: NumPy's `.npy` and Zarr (v2/v3, a directory or, built with the
//! `object-store` option, an `s3://`/`gs://`/`az://` URL). Reads are lazy, one task per
//! stored chunk; writes commit atomically.

use pyo3::prelude::*;
use tessera::io::npy;
use tessera::io::zarr::{self, ZarrStore, ZarrWriteOptions};

use crate::array::PyArray;
use crate::convert::chunks_of;
use crate::errors::IntoPy;
use crate::run::detached;

/// A lazy array over a `.npy` file, read block by block.
#[pyfunction]
#[pyo3(signature = (path, chunks=None, backend=None))]
pub fn from_npy(
    path: &str,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    // The rank comes from the file's header (read again by the second open: a few
    // hundred bytes), for specs such as `-1` that name every axis.
    let ndim = npy::from_npy(path, tessera::ChunkSpec::Auto, backend)
        .py_err()?
        .ndim();
    let spec = chunks_of(chunks, ndim)?;
    npy::from_npy(path, spec, backend).py_err().map(Into::into)
}

/// Computes `x` and writes it to a `.npy` file (atomically: the file appears whole).
#[pyfunction]
pub fn to_npy(py: Python<'_>, x: &PyArray, path: String) -> PyResult<()> {
    let a = x.inner.clone();
    detached(py, move || npy::to_npy(&a, &path)).map(|_| ())
}

/// A lazy array over the Zarr array `component` of the store at `url` (on its stored
/// chunks unless `chunks` asks for larger blocks).
#[pyfunction]
#[pyo3(signature = (url, component=None, chunks=None, backend=None))]
pub fn from_zarr(
    url: &str,
    component: Option<&str>,
    chunks: Option<Vec<usize>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    let store = ZarrStore::open(url).py_err()?;
    zarr::from_zarr(&store, component.unwrap_or(""), chunks.as_deref(), backend)
        .py_err()
        .map(Into::into)
}

/// Computes `x` and writes it as the Zarr array `component` of the store at `url` (the
/// store's root without one, as Dask's `to_zarr(x, url)`): metadata last, so a failed
/// write leaves nothing that opens; `overwrite=True` stages the new array beside the old
/// one and swaps it in when it is complete, so a failed overwrite keeps the old array.
#[pyfunction]
#[pyo3(signature = (x, url, component=None, overwrite=false))]
pub fn to_zarr(
    py: Python<'_>,
    x: &PyArray,
    url: String,
    component: Option<String>,
    overwrite: bool,
) -> PyResult<()> {
    let a = x.inner.clone();
    detached(py, move || {
        let store = ZarrStore::open(&url)?;
        let options = ZarrWriteOptions {
            overwrite,
            ..Default::default()
        };
        zarr::to_zarr(&a, &store, component.as_deref().unwrap_or(""), &options)
    })
    .map(|_| ())
}
