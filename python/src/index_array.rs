//! Index arrays as `x[key]` and `np.take` read them: a tessera array (lazy) or anything
//! NumPy converts (known now), and the take along one axis that both become.
//!
//! An index given as a NumPy array or a list is known now: it is checked here (NumPy's
//! `IndexError` for a position out of bounds) and the plan reads only the chunks of `x`
//! it touches. A tessera array as the index stays lazy: the plan reads every chunk of
//! the lane, and a position out of bounds is an error when the plan runs. The result is
//! chunked like `x`'s axis (a known index is cut into chunks of `x`'s chunk length
//! there), like `x` elsewhere.

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use tessera::{Array, DType, Index};

use crate::convert::numpy_to_host;
use crate::errors::IntoPy;

/// An index array: lazy (a tessera array) or known now (from NumPy), as `int64`
/// positions along the axis with their shape.
pub(crate) enum IndexArray {
    /// A tessera array of an integer dtype.
    Lazy(Array),
    /// Positions known now, already checked against the axis, and their shape.
    Known(Vec<i64>, Vec<usize>),
}

impl IndexArray {
    /// `obj` as the index of an axis of length `n` (`axis` for messages): `lazy`, the
    /// tessera array `obj` holds when it is one, stays lazy; anything NumPy converts is
    /// checked now. A 1-d boolean mask of length `n` known now becomes the positions of
    /// its true elements.
    pub(crate) fn of(
        py: Python<'_>,
        obj: &Bound<'_, PyAny>,
        lazy: Option<Array>,
        axis: usize,
        n: usize,
    ) -> PyResult<IndexArray> {
        if let Some(a) = lazy {
            if a.dtype() == DType::Bool {
                return Err(PyIndexError::new_err(
                    "a tessera boolean array as an index selects a number of elements known only when it runs, which tessera does not support yet; compute the mask to NumPy first, or use where()",
                ));
            }
            if !a.dtype().is_integer() {
                return Err(PyIndexError::new_err(format!(
                    "arrays used as indices must be of integer (or boolean) type; got {}",
                    a.dtype()
                )));
            }
            return Ok(IndexArray::Lazy(a));
        }
        let h = numpy_to_host(py, obj)?;
        if h.dtype() == DType::Bool {
            if h.ndim() != 1 || h.shape()[0] != n {
                return Err(PyIndexError::new_err(format!(
                    "boolean index of shape {:?} does not match axis {axis} of length {n} (tessera takes a 1-d mask per axis)",
                    h.shape()
                )));
            }
            let picks: Vec<i64> = h
                .to_f64_vec()
                .iter()
                .enumerate()
                .filter(|(_, &v)| v != 0.0)
                .map(|(i, _)| i as i64)
                .collect();
            let len = picks.len();
            return Ok(IndexArray::Known(picks, vec![len]));
        }
        // An empty list converts to float64; as an index it selects nothing.
        let h = if h.is_empty() && !h.dtype().is_integer() {
            h.cast(DType::I64)
        } else {
            h
        };
        if !h.dtype().is_integer() {
            return Err(PyIndexError::new_err(format!(
                "arrays used as indices must be of integer (or boolean) type; got {}",
                h.dtype()
            )));
        }
        let picks = h.positions("take", axis, n).map_err(index_error)?;
        Ok(IndexArray::Known(
            picks.into_iter().map(|p| p as i64).collect(),
            h.shape().to_vec(),
        ))
    }

    /// The shape of the index.
    pub(crate) fn shape(&self) -> Vec<usize> {
        match self {
            IndexArray::Lazy(a) => a.shape(),
            IndexArray::Known(_, s) => s.clone(),
        }
    }

    /// The index flattened to 1-d, as an array on `like`'s backend: a known one cut
    /// into chunks of `like`'s longest chunk along `axis`.
    fn flat(&self, like: &Array, axis: usize) -> tessera::Result<Array> {
        match self {
            IndexArray::Lazy(a) if a.ndim() == 1 => Ok(a.clone()),
            IndexArray::Lazy(a) => a.reshape(&[-1]),
            IndexArray::Known(v, _) => {
                let chunk = like
                    .chunks()
                    .axis(axis)
                    .iter()
                    .copied()
                    .max()
                    .unwrap_or(1)
                    .max(1);
                Array::from_slice(v, &[v.len()], [chunk].as_slice(), Some(like.backend_name()))
            }
        }
    }
}

/// `x` indexed along `axis` by `idx`: the axis replaced by the index's axes (none for a
/// 0-d index), as `np.take(x, idx, axis)`.
pub(crate) fn take_axis(x: &Array, idx: &IndexArray, axis: usize) -> PyResult<Array> {
    let ishape = idx.shape();
    if ishape.is_empty() {
        // A 0-d index drops the axis, as an integer does.
        let at = match idx {
            IndexArray::Known(v, _) => v[0],
            IndexArray::Lazy(_) => {
                let flat = idx.flat(x, axis).py_err()?;
                let picked = x.take(&flat, axis).py_err()?;
                return picked.squeeze(Some(&[axis])).py_err();
            }
        };
        let mut index = vec![Index::FULL; x.ndim()];
        index[axis] = Index::At(at);
        return x.slice(&index).py_err();
    }
    let flat = idx.flat(x, axis).py_err()?;
    let picked = x.take(&flat, axis).py_err()?;
    if ishape.len() == 1 {
        return Ok(picked);
    }
    let shape = x.shape();
    let out: Vec<i64> = shape[..axis]
        .iter()
        .chain(&ishape)
        .chain(&shape[axis + 1..])
        .map(|&n| n as i64)
        .collect();
    picked.reshape(&out).py_err()
}

/// An index out of bounds as NumPy's `IndexError`, with NumPy's message.
pub(crate) fn index_error(e: tessera::Error) -> PyErr {
    match e {
        tessera::Error::Invalid { detail, .. } => PyIndexError::new_err(detail),
        other => crate::errors::to_py(other),
    }
}

/// Refuses a key with more than one array index, naming how many it had.
pub(crate) fn one_array_only(count: usize) -> PyResult<()> {
    if count > 1 {
        return Err(PyIndexError::new_err(format!(
            "tessera takes one array among the indices of a key (got {count}); index with them one after the other, or use take_along_axis"
        )));
    }
    Ok(())
}
