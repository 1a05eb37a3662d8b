//! Creating arrays, as `dask.array` names it: `ones`, `zeros`, `full`, `empty`, `arange`,
//! `linspace`, `eye`, `from_array`, `concatenate`, `stack`, `where`, plus
//! `tessera.random.RandomState` and the module-level `map_blocks` and `compute`.
//! Every function takes `chunks` as Dask does and `backend=` (the configured
//! `array.backend` when `None`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tessera::{Array, DType, RandomState};

use crate::array::{map_blocks_impl, operand, PyArray};
use crate::block_source;
use crate::convert::{
    chunks_of, dtype_of, dtype_or, host_to_numpy, numpy_to_host, scalar_as, scalar_if_0d, shape_of,
    weak_scalar,
};
use crate::errors::IntoPy;
use crate::run::detached;
use crate::ufunc::Operand;

fn wrap(a: tessera::Result<Array>) -> PyResult<PyArray> {
    a.py_err().map(Into::into)
}

/// An array of ones, lazily (`dask.array.ones`).
///
/// `shape` is an int or a tuple; `dtype` anything `numpy.dtype` takes (default
/// float64); `chunks` a Dask chunk spec — `"auto"` (the default: blocks of about
/// `chunk-size` bytes), an int for every axis, or one entry per axis (an int, `-1` or
/// `None` for the whole axis, `"auto"`, or a tuple of block sizes); `backend` the backend
/// the blocks live on (default: the `array.backend` config key, `TESSERA_ARRAY_BACKEND`).
///
/// >>> ts.ones((4, 6), chunks=(2, 3)).sum().compute()
/// np.float64(24.0)
#[pyfunction]
#[pyo3(signature = (shape, dtype=None, chunks=None, backend=None))]
pub fn ones(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    constant(py, shape, dtype, chunks, backend, tessera::Scalar::one)
}

/// An array of one value per dtype (`ones`, `zeros`), float64 unless `dtype` is given.
fn constant(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
    value: fn(DType) -> tessera::Scalar,
) -> PyResult<PyArray> {
    let shape = shape_of(shape)?;
    let d = dtype_or(py, dtype, DType::F64)?;
    wrap(Array::full(
        &shape,
        value(d),
        chunks_of(chunks, shape.len())?,
        backend,
    ))
}

/// An array of zeros.
#[pyfunction]
#[pyo3(signature = (shape, dtype=None, chunks=None, backend=None))]
pub fn zeros(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    constant(py, shape, dtype, chunks, backend, tessera::Scalar::zero)
}

/// An uninitialised array in NumPy's terms; tessera fills it with zeros (a lazy array
/// has no memory to leave uninitialised).
#[pyfunction]
#[pyo3(signature = (shape, dtype=None, chunks=None, backend=None))]
pub fn empty(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    zeros(py, shape, dtype, chunks, backend)
}

/// An array filled with `fill_value` (its dtype from the value, as NumPy's, unless given).
#[pyfunction]
#[pyo3(signature = (shape, fill_value, dtype=None, chunks=None, backend=None))]
pub fn full(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    let shape = shape_of(shape)?;
    let d = match dtype.filter(|d| !d.is_none()) {
        Some(d) => dtype_of(py, d)?,
        None => match weak_scalar(fill_value)? {
            Some(s) => s.dtype(),
            None => dtype_of(py, &fill_value.getattr("dtype")?)?,
        },
    };
    let value = scalar_as(fill_value, d)?;
    wrap(Array::full(
        &shape,
        value,
        chunks_of(chunks, shape.len())?,
        backend,
    ))
}

/// Evenly spaced values in `[start, stop)` (`arange(stop)` starts at 0); int64 when
/// every argument is an int, else float64, unless `dtype` is given.
#[pyfunction]
#[pyo3(signature = (start, stop=None, step=None, dtype=None, chunks=None, backend=None))]
pub fn arange(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    stop: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    let given: Vec<&Bound<'_, PyAny>> = [Some(start), stop, step]
        .into_iter()
        .flatten()
        .filter(|v| !v.is_none())
        .collect();
    // A float has no `__index__`, so only ints (Python's or NumPy's) extract.
    let all_int = given.iter().all(|v| v.extract::<i64>().is_ok());
    let f = |v: &Bound<'_, PyAny>| -> PyResult<f64> { v.call_method0("__float__")?.extract() };
    let (lo, hi) = match stop.filter(|s| !s.is_none()) {
        Some(s) => (f(start)?, f(s)?),
        None => (0.0, f(start)?),
    };
    let st = match step.filter(|s| !s.is_none()) {
        Some(s) => f(s)?,
        None => 1.0,
    };
    let d = dtype_or(py, dtype, if all_int { DType::I64 } else { DType::F64 })?;
    wrap(Array::arange(lo, hi, st, d, chunks_of(chunks, 1)?, backend))
}

/// `num` evenly spaced values from `start` to `stop` (included unless `endpoint=False`).
#[pyfunction]
#[pyo3(signature = (start, stop, num=50, endpoint=true, dtype=None, chunks=None, backend=None))]
#[allow(clippy::too_many_arguments)]
pub fn linspace(
    py: Python<'_>,
    start: f64,
    stop: f64,
    num: usize,
    endpoint: bool,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    let a = Array::linspace(start, stop, num, endpoint, chunks_of(chunks, 1)?, backend).py_err()?;
    let d = dtype_or(py, dtype, a.dtype())?;
    Ok(a.astype(d).into())
}

/// An `N × M` array with ones on diagonal `k`.
#[pyfunction]
#[pyo3(signature = (N, chunks=None, M=None, k=0, dtype=None, backend=None))]
#[allow(non_snake_case)]
pub fn eye(
    py: Python<'_>,
    N: usize,
    chunks: Option<&Bound<'_, PyAny>>,
    M: Option<usize>,
    k: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
) -> PyResult<PyArray> {
    let d = dtype_or(py, dtype, DType::F64)?;
    wrap(Array::eye(N, M, k, d, chunks_of(chunks, 2)?, backend))
}

/// A tessera array from a NumPy array (or anything `numpy.asarray` takes), cut into
/// `chunks` (a Dask chunk spec, as `ones` takes); the data is copied once into the
/// blocks. Raises `TypeError` for a dtype tessera does not compute with (strings,
/// objects, complex).
///
/// Any other object with `shape`, `dtype` and `__getitem__` (an h5py dataset, a
/// zarr-python array, a netCDF4 variable, xarray's backend arrays) is read lazily, as
/// `dask.array.from_array` reads it: each block is one task that indexes it with the
/// block's slices when a plan needs it, under `lock` (`True` for a new
/// `threading.Lock`, or a lock of your own) when given. With `auto` block sizes, blocks
/// are whole multiples of the object's `chunks`. A tessera array comes back as it is
/// (rechunked when `chunks` is given).
///
/// >>> x = ts.from_array(np.arange(12).reshape(3, 4), chunks=2)
/// >>> x.chunks
/// ((2, 1), (2, 2))
#[pyfunction]
#[pyo3(signature = (x, chunks=None, backend=None, lock=None))]
pub fn from_array(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    chunks: Option<&Bound<'_, PyAny>>,
    backend: Option<&str>,
    lock: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    if let Ok(a) = x.cast::<PyArray>() {
        let mut inner = a.borrow().inner.clone();
        if let Some(name) = backend {
            inner = inner.to_backend(name).py_err()?;
        }
        if let Some(c) = chunks.filter(|c| !c.is_none()) {
            inner = inner.rechunk(chunks_of(Some(c), inner.ndim())?).py_err()?;
        }
        return Ok(inner.into());
    }
    if block_source::is_lazy_source(py, x)? {
        return block_source::lazy_from_array(py, x, chunks, lock, backend).map(Into::into);
    }
    let host = numpy_to_host(py, x)?;
    let spec = chunks_of(chunks, host.shape().len())?;
    wrap(Array::from_host(host, spec, backend))
}

fn arrays_of(seq: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<Array>> {
    seq.try_iter()?
        .map(|a| {
            let a = a?;
            a.cast::<PyArray>()
                .map(|a| a.borrow().inner.clone())
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "{what} takes tessera arrays, got {}",
                        a.get_type()
                    ))
                })
        })
        .collect()
}

/// Arrays joined along an existing `axis`.
#[pyfunction]
#[pyo3(signature = (seq, axis=0))]
pub fn concatenate(seq: &Bound<'_, PyAny>, axis: i64) -> PyResult<PyArray> {
    let arrays = arrays_of(seq, "concatenate")?;
    let ndim = arrays.first().map_or(1, |a| a.ndim());
    let refs: Vec<&Array> = arrays.iter().collect();
    wrap(Array::concatenate(
        &refs,
        normalize_axis(seq.py(), axis, ndim)?,
    ))
}

/// Arrays of one shape stacked along a new `axis`.
#[pyfunction]
#[pyo3(signature = (seq, axis=0))]
pub fn stack(seq: &Bound<'_, PyAny>, axis: i64) -> PyResult<PyArray> {
    let arrays = arrays_of(seq, "stack")?;
    let ndim = arrays.first().map_or(0, |a| a.ndim()) + 1;
    let refs: Vec<&Array> = arrays.iter().collect();
    wrap(Array::stack(&refs, normalize_axis(seq.py(), axis, ndim)?))
}

/// `axis` of an array of `ndim` dimensions, a negative one counted from the end; one
/// outside `-ndim..ndim` raises NumPy's `AxisError`, as `np.concatenate` does.
fn normalize_axis(py: Python<'_>, axis: i64, ndim: usize) -> PyResult<usize> {
    let n = ndim as i64;
    if axis < -n || axis >= n {
        return Err(crate::array::axis_error(py, axis, ndim));
    }
    Ok(axis.rem_euclid(n.max(1)) as usize)
}

/// The dtype a weak Python scalar takes beside an array of dtype `like` (NEP 50: it
/// adapts within its kind, and lifts the kind where it must), or its own default alone.
fn weak_dtype(s: &tessera::Scalar, like: Option<DType>) -> DType {
    match (s, like) {
        (_, None) => s.dtype(),
        (tessera::Scalar::Bool(_), Some(l)) => l,
        (tessera::Scalar::F64(_), Some(l)) if !l.is_float() => DType::F64,
        (tessera::Scalar::I64(_) | tessera::Scalar::U64(_), Some(DType::Bool)) => s.dtype(),
        (_, Some(l)) => l,
    }
}

/// `v` as an array for `where`: a weak scalar becomes a 0-d array of the dtype NEP 50
/// gives it beside `like` (its own alone); anything else as an operator's operand.
fn as_array(
    py: Python<'_>,
    v: &Bound<'_, PyAny>,
    c: &Array,
    like: Option<&Array>,
) -> PyResult<Array> {
    match operand(py, v, c)? {
        Some(Operand::Array(a)) => Ok(a),
        Some(Operand::Weak(s)) => {
            let d = weak_dtype(&s, like.map(Array::dtype));
            Array::full(
                &[],
                s.cast(d),
                tessera::ChunkSpec::Auto,
                Some(c.backend_name()),
            )
            .py_err()
        }
        None => Err(PyTypeError::new_err(format!(
            "where takes tessera arrays, NumPy data or Python scalars, got {}",
            v.get_type()
        ))),
    }
}

/// `x` broadcast to `shape` by NumPy's rules, without copying (a broadcast axis reads
/// the same block again), as `numpy.broadcast_to`.
///
/// >>> ts.broadcast_to(ts.arange(3), (2, 3)).compute().tolist()
/// [[0, 1, 2], [0, 1, 2]]
#[pyfunction]
pub fn broadcast_to(x: &PyArray, shape: &Bound<'_, PyAny>) -> PyResult<PyArray> {
    let shape = match shape.extract::<usize>() {
        Ok(n) => vec![n],
        Err(_) => shape_of(shape)?,
    };
    x.inner.broadcast_to(&shape).py_err().map(Into::into)
}

/// The arrays broadcast against each other to one shape, as `numpy.broadcast_arrays`.
///
/// >>> a, b = ts.broadcast_arrays(ts.ones((2, 1)), ts.zeros(3))
/// >>> a.shape, b.shape
/// ((2, 3), (2, 3))
#[pyfunction]
#[pyo3(signature = (*arrays))]
pub fn broadcast_arrays(arrays: Vec<Bound<'_, PyArray>>) -> PyResult<Vec<PyArray>> {
    let mut shape: Vec<usize> = Vec::new();
    for a in &arrays {
        shape =
            tessera::array::broadcast_shapes("broadcast_arrays", &shape, &a.borrow().inner.shape())
                .py_err()?;
    }
    arrays
        .iter()
        .map(|a| {
            a.borrow()
                .inner
                .broadcast_to(&shape)
                .py_err()
                .map(Into::into)
        })
        .collect()
}

/// `x` where `condition` is true, else `y` (arrays, broadcast; scalars allowed).
#[pyfunction]
#[pyo3(name = "where")]
pub fn where_(
    py: Python<'_>,
    condition: &PyArray,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<PyArray> {
    let c = &condition.inner;
    let like = [x, y]
        .iter()
        .find_map(|v| v.cast::<PyArray>().ok().map(|a| a.borrow().inner.clone()));
    let (a, b) = (
        as_array(py, x, c, like.as_ref())?,
        as_array(py, y, c, like.as_ref())?,
    );
    wrap(c.where_(&a, &b))
}

/// `func` applied to every block of `arrays` (aligned like an elementwise op): it gets
/// NumPy blocks and returns a NumPy block, with the GIL taken only inside it. `dtype`
/// is inferred, as Dask does, by calling `func` on empty blocks unless given; `chunks`
/// declares other output block sizes. An exception `func` raises comes out of
/// `compute()` as that exception.
#[pyfunction]
#[pyo3(signature = (func, *arrays, dtype=None, chunks=None))]
pub fn map_blocks(
    py: Python<'_>,
    func: Py<PyAny>,
    arrays: Vec<Bound<'_, PyArray>>,
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let arrays: Vec<Array> = arrays.iter().map(|a| a.borrow().inner.clone()).collect();
    map_blocks_impl(py, func, &arrays, dtype, chunks)
}

/// Computes several arrays in one plan (what they share runs once), like
/// `dask.compute`; returns a tuple of NumPy arrays.
#[pyfunction]
#[pyo3(signature = (*arrays))]
pub fn compute<'py>(
    py: Python<'py>,
    arrays: Vec<Bound<'py, PyArray>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let inner: Vec<Array> = arrays.iter().map(|a| a.borrow().inner.clone()).collect();
    let hosts = detached(py, move || tessera::exec::compute_many(&inner))?;
    let outs: Vec<Bound<'py, PyAny>> = hosts
        .into_iter()
        .map(|h| scalar_if_0d(host_to_numpy(py, h).0))
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, outs)
}

/// Random arrays from a seed, as `dask.array.random.RandomState`: counter-based
/// (Philox), so a block depends only on the seed, the draw and its position — the same
/// values on every backend, chunking and worker count.
#[pyclass(name = "RandomState", module = "tessera.random", frozen)]
pub struct PyRandomState {
    inner: RandomState,
    seed: u64,
}

/// The shape (`size`: an int, a tuple, or `None` for a scalar), dtype (`default` unless
/// given) and chunk spec of a draw.
fn draw(
    py: Python<'_>,
    size: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    default: DType,
    chunks: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Vec<usize>, DType, tessera::ChunkSpec)> {
    let shape = match size.filter(|s| !s.is_none()) {
        None => Vec::new(),
        Some(s) => shape_of(s)?,
    };
    let spec = chunks_of(chunks, shape.len())?;
    Ok((shape, dtype_or(py, dtype, default)?, spec))
}

#[pymethods]
impl PyRandomState {
    /// A generator from `seed` (0 when `None`).
    #[new]
    #[pyo3(signature = (seed=None))]
    fn new(seed: Option<u64>) -> Self {
        let seed = seed.unwrap_or(0);
        PyRandomState {
            inner: RandomState::new(seed),
            seed,
        }
    }

    /// Normal draws with mean `loc` and standard deviation `scale`, of shape `size`
    /// (an int or a tuple), in `chunks` (a Dask chunk spec), float64 unless `dtype` is
    /// float32, on `backend` (default: the configured one). Generated where they are
    /// used: a slice of the result draws only the elements it keeps.
    #[pyo3(signature = (loc=0.0, scale=1.0, size=None, chunks=None, dtype=None, backend=None))]
    #[allow(clippy::too_many_arguments)]
    fn normal(
        &self,
        py: Python<'_>,
        loc: f64,
        scale: f64,
        size: Option<&Bound<'_, PyAny>>,
        chunks: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        backend: Option<&str>,
    ) -> PyResult<PyArray> {
        let (shape, d, spec) = draw(py, size, dtype, DType::F64, chunks)?;
        wrap(
            self.inner
                .normal_typed(loc, scale, d, &shape, spec, backend),
        )
    }

    /// Uniform draws in `[low, high)`.
    #[pyo3(signature = (low=0.0, high=1.0, size=None, chunks=None, dtype=None, backend=None))]
    #[allow(clippy::too_many_arguments)]
    fn uniform(
        &self,
        py: Python<'_>,
        low: f64,
        high: f64,
        size: Option<&Bound<'_, PyAny>>,
        chunks: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        backend: Option<&str>,
    ) -> PyResult<PyArray> {
        let (shape, d, spec) = draw(py, size, dtype, DType::F64, chunks)?;
        wrap(
            self.inner
                .uniform_typed(low, high, d, &shape, spec, backend),
        )
    }

    /// Uniform draws in `[0, 1)`.
    #[pyo3(signature = (size=None, chunks=None, backend=None))]
    fn random_sample(
        &self,
        py: Python<'_>,
        size: Option<&Bound<'_, PyAny>>,
        chunks: Option<&Bound<'_, PyAny>>,
        backend: Option<&str>,
    ) -> PyResult<PyArray> {
        let (shape, d, spec) = draw(py, size, None, DType::F64, chunks)?;
        wrap(self.inner.uniform_typed(0.0, 1.0, d, &shape, spec, backend))
    }

    /// Integers in `[low, high)` (`randint(high)` draws from `[0, high)`).
    #[pyo3(signature = (low, high=None, size=None, chunks=None, dtype=None, backend=None))]
    #[allow(clippy::too_many_arguments)]
    fn randint(
        &self,
        py: Python<'_>,
        low: i64,
        high: Option<i64>,
        size: Option<&Bound<'_, PyAny>>,
        chunks: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
        backend: Option<&str>,
    ) -> PyResult<PyArray> {
        let (lo, hi) = match high {
            Some(h) => (low, h),
            None => (0, low),
        };
        let (shape, d, spec) = draw(py, size, dtype, DType::I64, chunks)?;
        wrap(self.inner.randint(lo, hi, d, &shape, spec, backend))
    }

    fn __repr__(&self) -> String {
        format!("tessera.random.RandomState(seed={})", self.seed)
    }
}

/// The running `op` (`"sum"`, `"prod"`, `"max"`, `"min"`) of `x` along `axis` (`None`:
/// over the flattened array, as NumPy's `cumsum`), in `dtype` (default: NumPy's
/// accumulation dtype, `int64` for bool and small signed integers); `include_initial`
/// starts the result with the empty sum or product (the Array API's `cumulative_sum`).
#[pyfunction]
#[pyo3(signature = (x, op, axis=None, dtype=None, include_initial=false))]
pub fn cumulative(
    py: Python<'_>,
    x: &PyArray,
    op: &str,
    axis: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    include_initial: bool,
) -> PyResult<PyArray> {
    crate::scan::cumulative_of(py, &x.inner, op, axis, dtype, include_initial).map(Into::into)
}
