//! `tessera.linalg`: the decompositions of `dask.array.linalg`, with their return tuples.
//! Tall-and-skinny inputs (one block of columns) factor by TSQR in one pass; `svd` of an
//! array chunked in both dimensions and `svd_compressed` use the randomized algorithm.
//!
//! The factorizations compute blocks while they run (TSQR reads its input once), so each
//! runs with the GIL released: blocks read from Python objects (`from_array` of an h5py or
//! xarray array) take it in the worker threads.

use pyo3::prelude::*;
use tessera::linalg;

use crate::array::PyArray;
use crate::errors::IntoPy;
use crate::run::detached;

/// `(u, s, vt)` of a 2-d array (exact; TSQR for tall-and-skinny arrays).
#[pyfunction]
pub fn svd(py: Python<'_>, a: &PyArray) -> PyResult<(PyArray, PyArray, PyArray)> {
    let x = a.inner.clone();
    let d = detached(py, move || linalg::svd(&x))?;
    Ok((d.u.into(), d.s.into(), d.vt.into()))
}

/// `(u, s, vt)` of rank `k` by randomized SVD (Halko et al.), with `n_power_iter` power
/// iterations and `n_oversamples` extra columns; `seed` fixes the test matrix.
#[pyfunction]
#[pyo3(signature = (a, k, n_power_iter=0, n_oversamples=10, seed=None, compute=false))]
pub fn svd_compressed(
    py: Python<'_>,
    a: &PyArray,
    k: usize,
    n_power_iter: usize,
    n_oversamples: usize,
    seed: Option<u64>,
    compute: bool,
) -> PyResult<(PyArray, PyArray, PyArray)> {
    // `compute` is Dask's switch for persisting the input between passes; tessera's
    // passes regenerate or re-read blocks, so it is accepted and has no effect.
    let _ = compute;
    let x = a.inner.clone();
    let d = detached(py, move || {
        linalg::svd_compressed(&x, k, n_power_iter, n_oversamples, seed.unwrap_or(0))
    })?;
    Ok((d.u.into(), d.s.into(), d.vt.into()))
}

/// `(q, r)` of a 2-d array.
#[pyfunction]
pub fn qr(py: Python<'_>, a: &PyArray) -> PyResult<(PyArray, PyArray)> {
    let x = a.inner.clone();
    let d = detached(py, move || linalg::qr(&x))?;
    Ok((d.q.into(), d.r.into()))
}

/// Least squares `a x ≈ b`: `(x, residuals, rank, s)` as NumPy's `lstsq`.
#[pyfunction]
pub fn lstsq(
    py: Python<'_>,
    a: &PyArray,
    b: &PyArray,
) -> PyResult<(PyArray, PyArray, usize, PyArray)> {
    let (x, y) = (a.inner.clone(), b.inner.clone());
    let d = detached(py, move || linalg::lstsq(&x, &y))?;
    Ok((d.x.into(), d.residuals.into(), d.rank, d.s.into()))
}

/// The 2-norm (Frobenius for matrices) of the whole array, or along `axis`.
#[pyfunction]
#[pyo3(signature = (x, axis=None))]
pub fn norm(x: &PyArray, axis: Option<usize>) -> PyResult<PyArray> {
    match axis {
        None => linalg::norm(&x.inner),
        Some(a) => linalg::norm_axis(&x.inner, a),
    }
    .py_err()
    .map(Into::into)
}
