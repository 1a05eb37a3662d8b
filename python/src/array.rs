//! `tessera.Array`: a lazy chunked n-d array, shaped like `dask.array.Array`.
//!
//! Every method builds a new lazy array (nothing runs until `compute()`, `persist()` or a
//! NumPy conversion), with Dask's names and NumPy's rules: operators with Python scalars
//! follow NEP 50 (a Python `int` or `float` adapts to the array's dtype; a NumPy scalar
//! keeps its own), `__getitem__` takes ints, slices with steps, `None`, `...` and one
//! integer array or 1-d boolean mask known now (see `take`), and
//! reductions take `axis` (an int, a tuple or `None`) and `keepdims`. `compute()` returns
//! a NumPy array that owns the engine's buffer (no copy; see `convert`).

use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyEllipsis, PyList, PySlice, PyTuple};
use tessera::program::{BinaryOp, UnaryOp};
use tessera::{Array, DType, HostArray, Index};

pub use crate::axes::{axes_of, axis_error};
use crate::convert::{
    chunks_of, dtype_of, host_to_numpy, numpy_to_host, scalar_as, scalar_if_0d, scalar_to_py,
    weak_scalar,
};
use crate::errors::{park_python_error, IntoPy};
use crate::run::detached;
use crate::ufunc::Operand;

/// A lazy chunked n-d array (see the module docs).
#[pyclass(name = "Array", module = "tessera")]
#[derive(Clone)]
pub struct PyArray {
    /// The Rust array.
    pub inner: Array,
}

impl From<Array> for PyArray {
    fn from(inner: Array) -> Self {
        PyArray { inner }
    }
}

/// The other operand of a binary operator: a tessera array, a Python scalar (weak), or
/// anything NumPy converts (a NumPy scalar keeps its dtype; an array is chunked like
/// `like`).
pub fn operand(
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    like: &Array,
) -> PyResult<Option<Operand>> {
    if let Ok(a) = other.cast::<PyArray>() {
        return Ok(Some(Operand::Array(a.borrow().inner.clone())));
    }
    if let Some(s) = weak_scalar(other)? {
        return Ok(Some(Operand::Weak(s)));
    }
    let np = py.import("numpy")?;
    let is_numpy = other.is_instance(&np.getattr("ndarray")?)?
        || other.is_instance(&np.getattr("generic")?)?;
    if !is_numpy {
        return Ok(None);
    }
    let host = numpy_to_host(py, other)?;
    let chunks = if host.shape() == like.shape() {
        tessera::ChunkSpec::Exact(like.chunks().clone())
    } else {
        tessera::ChunkSpec::Auto
    };
    Ok(Some(Operand::Array(
        Array::from_host(host, chunks, Some(like.backend_name())).py_err()?,
    )))
}

fn binary(
    py: Python<'_>,
    me: &Array,
    op: BinaryOp,
    other: &Bound<'_, PyAny>,
    reflected: bool,
) -> PyResult<Option<PyArray>> {
    let out = match operand(py, other, me)? {
        None => return Ok(None),
        Some(Operand::Weak(s)) => me.binary_scalar(op, s, reflected),
        Some(Operand::Array(o)) if reflected => o.binary(op, me),
        Some(Operand::Array(o)) => me.binary(op, &o),
    };
    out.py_err().map(|a| Some(a.into()))
}

/// An integer index out of range raises `IndexError` with NumPy's message (what Python's
/// iteration protocol stops on), before the engine sees it. `index` is a key as
/// `__getitem__` parsed it; axes past the array's are left to the engine's error.
fn check_bounds(index: &[Index], shape: &[usize]) -> PyResult<()> {
    let takes_axis = |i: &Index| matches!(i, Index::At(_) | Index::Slice { .. });
    let (head, tail) = match index.iter().position(|i| matches!(i, Index::Ellipsis)) {
        Some(p) => (&index[..p], &index[p + 1..]),
        None => (index, &[][..]),
    };
    let tail_from = shape
        .len()
        .saturating_sub(tail.iter().filter(|i| takes_axis(i)).count());
    for (part, first) in [(head, 0), (tail, tail_from)] {
        let mut axis = first;
        for i in part {
            if let (Index::At(k), Some(&n)) = (i, shape.get(axis)) {
                let n = n as i64;
                if *k < -n || *k >= n {
                    return Err(PyIndexError::new_err(format!(
                        "index {k} is out of bounds for axis {axis} with size {n}"
                    )));
                }
            }
            axis += usize::from(takes_axis(i));
        }
    }
    Ok(())
}

fn one_axis(axis: Option<&Bound<'_, PyAny>>, ndim: usize) -> PyResult<Option<usize>> {
    match axes_of(axis, ndim)? {
        None => Ok(None),
        Some(v) if v.len() == 1 => Ok(Some(v[0])),
        Some(_) => Err(PyTypeError::new_err("axis must be a single int here")),
    }
}

/// One entry of a key: a basic index, or `None` for an array (an integer array or a
/// boolean mask, handled by [`crate::index_array`]).
fn index_item(item: &Bound<'_, PyAny>) -> PyResult<Option<Index>> {
    if item.is_none() {
        return Ok(Some(Index::NewAxis));
    }
    if item.is_instance_of::<PyEllipsis>() {
        return Ok(Some(Index::Ellipsis));
    }
    if let Ok(s) = item.cast::<PySlice>() {
        let part = |name: &str| -> PyResult<Option<i64>> {
            let v = s.getattr(name)?;
            if v.is_none() {
                Ok(None)
            } else {
                v.extract().map(Some).map_err(|_| {
                    PyTypeError::new_err(format!("slice {name} must be an int or None, got {v}"))
                })
            }
        };
        let step = part("step")?.unwrap_or(1);
        if step == 0 {
            return Err(PyValueError::new_err("slice step cannot be zero"));
        }
        return Ok(Some(Index::Slice {
            start: part("start")?,
            stop: part("stop")?,
            step,
        }));
    }
    if item.is_instance_of::<PyBool>() {
        return Err(PyIndexError::new_err(
            "a bool as an index (NumPy adds an axis of length 1 or 0) is not supported; use None for a new axis",
        ));
    }
    if let Ok(i) = item.extract::<i64>() {
        return Ok(Some(Index::At(i)));
    }
    if item.cast::<PyArray>().is_ok()
        || item.is_instance_of::<PyList>()
        || item.hasattr("__array__")?
    {
        return Ok(None);
    }
    Err(PyIndexError::new_err(format!(
        "only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays are valid indices; got {}",
        item.get_type().name()?
    )))
}

/// `x[key]` for a key holding one array among basic indices, NumPy's way: the basic
/// indices first, then the array along the axis it stands on; when integers and the
/// array are apart in the key (a slice, `...` or `None` between them), the array's
/// axes go first, as NumPy's rule for separated advanced indices.
fn getitem_with_array(
    py: Python<'_>,
    x: &Array,
    items: &[Bound<'_, PyAny>],
    parsed: &[Option<Index>],
) -> PyResult<Array> {
    let arrays: Vec<usize> = (0..parsed.len()).filter(|&i| parsed[i].is_none()).collect();
    crate::index_array::one_array_only(arrays.len())?;
    let at = arrays[0];
    let index: Vec<Index> = parsed.iter().map(|i| i.unwrap_or(Index::FULL)).collect();
    let shape = x.shape();
    check_bounds(&index, &shape)?;
    let basic = x.slice(&index).py_err()?;
    let consumes = |i: &Index| matches!(i, Index::At(_) | Index::Slice { .. });
    let ellipsis = shape
        .len()
        .saturating_sub(index.iter().filter(|i| consumes(i)).count());
    let (mut in_axis, mut out_axis) = (0, 0);
    for i in &index[..at] {
        match i {
            Index::At(_) => in_axis += 1,
            Index::Slice { .. } => {
                in_axis += 1;
                out_axis += 1;
            }
            Index::NewAxis => out_axis += 1,
            Index::Ellipsis => {
                in_axis += ellipsis;
                out_axis += ellipsis;
            }
        }
    }
    let n = shape[in_axis];
    let lazy = items[at]
        .cast::<PyArray>()
        .ok()
        .map(|a| a.borrow().inner.clone());
    let idx = crate::index_array::IndexArray::of(py, &items[at], lazy, in_axis, n)?;
    let out = crate::index_array::take_axis(&basic, &idx, out_axis)?;
    let advanced: Vec<usize> = (0..index.len())
        .filter(|&i| i == at || matches!(index[i], Index::At(_)))
        .collect();
    let apart = advanced[advanced.len() - 1] - advanced[0] + 1 != advanced.len();
    if !apart || out_axis == 0 {
        return Ok(out);
    }
    let k = idx.shape().len();
    let perm: Vec<usize> = (out_axis..out_axis + k)
        .chain(0..out_axis)
        .chain(out_axis + k..out.ndim())
        .collect();
    out.permute_dims(&perm).py_err()
}

/// Calls the Python function `f` with NumPy copies of `blocks`, the GIL taken only for the
/// call; a raised exception is parked for the caller of `compute()`.
fn call_on_blocks(f: &Py<PyAny>, blocks: &[HostArray]) -> tessera::Result<HostArray> {
    Python::attach(|py| {
        let args: Vec<Bound<'_, PyAny>> = blocks
            .iter()
            .map(|b| host_to_numpy(py, b.clone()).0)
            .collect();
        let args = PyTuple::new(py, args)
            .map_err(|e| park_python_error("map_blocks", "the function", e))?;
        let out = f
            .bind(py)
            .call1(args)
            .map_err(|e| park_python_error("map_blocks", "the function", e))?;
        numpy_to_host(py, &out).map_err(|e| park_python_error("map_blocks", "its result", e))
    })
}

/// `map_blocks(func, *arrays, dtype=None, chunks=None)` (see the Python docstring).
pub fn map_blocks_impl(
    py: Python<'_>,
    func: Py<PyAny>,
    arrays: &[Array],
    dtype: Option<&Bound<'_, PyAny>>,
    chunks: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyArray> {
    let first = arrays
        .first()
        .ok_or_else(|| PyTypeError::new_err("map_blocks needs at least one array"))?;
    let dtype = match dtype.filter(|d| !d.is_none()) {
        Some(d) => dtype_of(py, d)?,
        None => infer_dtype(py, &func, arrays)?.unwrap_or(first.dtype()),
    };
    let chunks = match chunks.filter(|c| !c.is_none()) {
        None => None,
        Some(c) => {
            let sizes: Vec<Vec<usize>> = c.extract().map_err(|_| {
                PyTypeError::new_err(
                    "map_blocks chunks= must give every block's size per axis, as Array.chunks does: ((10, 10), (5, 5))",
                )
            })?;
            let shape: Vec<usize> = sizes.iter().map(|s| s.iter().sum()).collect();
            Some(tessera::Chunks::new(&shape, sizes).py_err()?)
        }
    };
    let f: tessera::array::HostBlockFn =
        Arc::new(move |blocks: &[HostArray]| call_on_blocks(&func, blocks));
    let refs: Vec<&Array> = arrays.iter().collect();
    Array::map_blocks(&refs, f, dtype, chunks)
        .py_err()
        .map(Into::into)
}

/// Dask's meta inference: the dtype `func` returns on empty blocks of the inputs' dtypes,
/// or `None` when it cannot take them.
fn infer_dtype(py: Python<'_>, func: &Py<PyAny>, arrays: &[Array]) -> PyResult<Option<DType>> {
    let np = py.import("numpy")?;
    let mut args = Vec::new();
    for a in arrays {
        let shape = PyTuple::new(py, vec![0usize; a.ndim()])?;
        args.push(np.call_method1("empty", (shape, a.dtype().to_string()))?);
    }
    let Ok(out) = func.bind(py).call1(PyTuple::new(py, args)?) else {
        return Ok(None);
    };
    let Ok(dt) = out.getattr("dtype") else {
        return Ok(None);
    };
    Ok(dtype_of(py, &dt).ok())
}

fn reduce(
    a: &Array,
    axis: Option<&Bound<'_, PyAny>>,
    f: impl FnOnce(Option<&[usize]>) -> tessera::Result<Array>,
) -> PyResult<PyArray> {
    let axes = axes_of(axis, a.ndim())?;
    f(axes.as_deref()).py_err().map(Into::into)
}

fn chunks_tuple<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyTuple>> {
    let axes: Vec<Bound<'py, PyTuple>> = (0..a.ndim())
        .map(|i| PyTuple::new(py, a.chunks().axis(i)))
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, axes)
}

/// Computes `a` without the GIL (Ctrl-C cancels it) and hands the result to NumPy: the
/// ndarray, which owns the engine's buffer.
fn computed_ndarray<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyAny>> {
    let arr = a.clone();
    let host = detached(py, move || arr.compute())?;
    Ok(host_to_numpy(py, host).0)
}

/// The computed array as NumPy (a 0-d result as a NumPy scalar, as Dask gives it).
fn to_numpy<'py>(py: Python<'py>, a: &Array) -> PyResult<Bound<'py, PyAny>> {
    scalar_if_0d(computed_ndarray(py, a)?)
}

#[pymethods]
impl PyArray {
    /// The shape, a tuple of ints.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.inner.size()
    }

    /// Bytes of the whole array.
    #[getter]
    fn nbytes(&self) -> u64 {
        self.inner.nbytes()
    }

    /// Bytes of one element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.dtype().size()
    }

    /// The element type, a `numpy.dtype`.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?
            .call_method1("dtype", (self.inner.dtype().to_string(),))
    }

    /// Block sizes along every axis, as Dask's `chunks`: `((1000, 1000), (500,))`.
    #[getter]
    fn chunks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        chunks_tuple(py, &self.inner)
    }

    /// The largest block's shape.
    #[getter]
    fn chunksize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.chunks().max_block_shape())
    }

    /// Blocks along every axis.
    #[getter]
    fn numblocks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.chunks().grid())
    }

    /// Number of blocks.
    #[getter]
    fn npartitions(&self) -> usize {
        self.inner.chunks().count()
    }

    /// The backend the blocks live on (`"cpu"`, `"cuda"`, `"sparse"`, a plugin's name).
    #[getter]
    fn backend(&self) -> String {
        self.inner.backend_name().to_string()
    }

    /// The transpose (axes reversed).
    #[getter(T)]
    fn transpose_property(&self) -> PyResult<PyArray> {
        self.inner.transpose().py_err().map(Into::into)
    }

    /// Computes the array and returns it as a NumPy array (a 0-d result as a NumPy
    /// scalar), like Dask's `compute()`. The GIL is released while it runs; Ctrl-C
    /// cancels it (no further task starts; `KeyboardInterrupt` is raised within a
    /// second). The NumPy array owns the buffer the engine wrote: no copy is made.
    /// Errors are typed: `InvalidArgumentError`, `MemoryLimitError` (over
    /// `memory-limit`), `FileChangedError` (an input file changed since the array was
    /// made), or the exception a `map_blocks` function raised.
    fn compute<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_numpy(py, &self.inner)
    }

    /// `compute()` for tests of the export: the NumPy array, the address of the buffer
    /// the engine wrote, and the seconds the hand-over to NumPy took.
    fn _compute_traced<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, usize, f64)> {
        let arr = self.inner.clone();
        let host = detached(py, move || arr.compute())?;
        let start = std::time::Instant::now();
        let (out, address) = host_to_numpy(py, host);
        Ok((out, address, start.elapsed().as_secs_f64()))
    }

    /// Computes the array and keeps its blocks in memory (spilling to `spill-dir` under
    /// `memory-limit`): a new array whose plan starts from them.
    fn persist(&self, py: Python<'_>) -> PyResult<PyArray> {
        let arr = self.inner.clone();
        detached(py, move || arr.persist()).map(Into::into)
    }

    /// The plan in words: fused programs per block, pushed-down slices, symmetry.
    fn explain(&self) -> PyResult<String> {
        self.inner.explain().py_err()
    }

    /// Writes the array block by block into `target` (anything with `__setitem__`):
    /// `tessera.store([self], [target], **kwargs)`, as Dask's `Array.store`.
    #[pyo3(signature = (target, **kwargs))]
    fn store<'py>(
        slf: &Bound<'py, Self>,
        target: &Bound<'py, PyAny>,
        kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import("tessera")?
            .getattr("store")?
            .call((slf, target), kwargs)
    }

    /// The array on another backend (blocks moved when computed).
    fn to_backend(&self, name: &str) -> PyResult<PyArray> {
        self.inner.to_backend(name).py_err().map(Into::into)
    }

    /// Number of tasks the plan runs.
    fn num_tasks(&self) -> PyResult<usize> {
        self.inner.num_tasks().py_err()
    }

    fn __repr__(&self) -> String {
        self.inner.to_string()
    }

    /// The chunk table Jupyter shows, as Dask's.
    fn _repr_html_(&self) -> String {
        crate::html::array_table(&self.inner)
    }

    fn __len__(&self) -> PyResult<usize> {
        self.inner
            .shape()
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d array"))
    }

    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = computed_ndarray(py, &self.inner)?;
        match dtype.filter(|d| !d.is_none()) {
            None => Ok(out),
            Some(d) => {
                let kwargs = PyDict::new(py);
                kwargs.set_item("copy", copy)?;
                out.call_method("astype", (d,), Some(&kwargs))
            }
        }
    }

    /// DLPack export of the computed array (host results through NumPy's own
    /// `__dlpack__`, so the consumer reads the engine's buffer).
    #[pyo3(signature = (**kwargs))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.host_only("__dlpack__")?;
        computed_ndarray(py, &self.inner)?.call_method("__dlpack__", (), kwargs)
    }

    /// The DLPack device: `(1, 0)`, the CPU, for host backends.
    fn __dlpack_device__(&self) -> PyResult<(i32, i32)> {
        self.host_only("__dlpack_device__")?;
        Ok((1, 0))
    }

    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        self.scalar(py)?.extract()
    }

    fn __int__(&self, py: Python<'_>) -> PyResult<i64> {
        self.scalar(py)?.call_method0("__int__")?.extract()
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        self.scalar(py)?.is_truthy()
    }

    /// `x[key] = value`, as Dask's: `x` becomes a new lazy plan with the selection
    /// replaced (nothing is computed, the chunks stay); arrays built from `x` before keep
    /// the old values. Keys and values as NumPy assigns them (see `tessera._setitem`).
    fn __setitem__(
        slf: &Bound<'_, Self>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let py = slf.py();
        let current = Bound::new(py, PyArray::from(slf.borrow().inner.clone()))?;
        let out = py
            .import("tessera._setitem")?
            .call_method1("assign", (current, key, value))?;
        let out = out.cast::<PyArray>()?.borrow().inner.clone();
        slf.borrow_mut().inner = out;
        Ok(())
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
            Ok(t) => t.iter().collect(),
            Err(_) => vec![key.clone()],
        };
        let parsed: Vec<Option<Index>> = items.iter().map(index_item).collect::<PyResult<_>>()?;
        if parsed.iter().any(Option::is_none) {
            return getitem_with_array(py, &self.inner, &items, &parsed).map(Into::into);
        }
        let index: Vec<Index> = parsed.into_iter().flatten().collect();
        check_bounds(&index, &self.inner.shape())?;
        self.inner.slice(&index).py_err().map(Into::into)
    }

    // Arithmetic and comparison operators; NotImplemented for operands NumPy cannot
    // convert, so Python tries the other side.
    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Add, o, false)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Add, o, true)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Sub, o, false)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Sub, o, true)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Mul, o, false)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Mul, o, true)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Div, o, false)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Div, o, true)
    }
    fn __floordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::FloorDiv, o, false)
    }
    fn __rfloordiv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::FloorDiv, o, true)
    }
    fn __mod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Rem, o, false)
    }
    fn __rmod__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Rem, o, true)
    }
    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyArray>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(PyTypeError::new_err(
                "pow() with a modulus is not supported",
            ));
        }
        binary(py, &self.inner, BinaryOp::Pow, o, false)
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::Pow, o, true)
    }
    // `&`, `|`, `^` are NumPy's bitwise ops: logical on bool, bitwise on integers, a
    // `TypeError` (`DTypeError`) on floats.
    fn __and__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::BitAnd, o, false)
    }
    fn __rand__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::BitAnd, o, true)
    }
    fn __or__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::BitOr, o, false)
    }
    fn __ror__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::BitOr, o, true)
    }
    fn __xor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::BitXor, o, false)
    }
    fn __rxor__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::BitXor, o, true)
    }
    fn __lshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::LeftShift, o, false)
    }
    fn __rlshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::LeftShift, o, true)
    }
    fn __rshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::RightShift, o, false)
    }
    fn __rrshift__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        binary(py, &self.inner, BinaryOp::RightShift, o, true)
    }
    fn __matmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        match operand(py, o, &self.inner)? {
            Some(Operand::Array(b)) => self.inner.matmul(&b).py_err().map(|a| Some(a.into())),
            _ => Ok(None),
        }
    }
    fn __rmatmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Option<PyArray>> {
        match operand(py, o, &self.inner)? {
            Some(Operand::Array(a)) => a.matmul(&self.inner).py_err().map(|a| Some(a.into())),
            _ => Ok(None),
        }
    }
    fn __richcmp__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Option<PyArray>> {
        use pyo3::basic::CompareOp as C;
        let op = match op {
            C::Eq => BinaryOp::Eq,
            C::Ne => BinaryOp::Ne,
            C::Lt => BinaryOp::Lt,
            C::Le => BinaryOp::Le,
            C::Gt => BinaryOp::Gt,
            C::Ge => BinaryOp::Ge,
        };
        binary(py, &self.inner, op, o, false)
    }
    fn __neg__(&self) -> PyResult<PyArray> {
        self.inner.unary(UnaryOp::Neg).py_err().map(Into::into)
    }
    fn __pos__(&self) -> PyArray {
        self.clone()
    }
    fn __abs__(&self) -> PyResult<PyArray> {
        self.inner.unary(UnaryOp::Abs).py_err().map(Into::into)
    }
    /// `~`: bitwise not of integers, logical not of bools (NumPy's `invert`).
    fn __invert__(&self) -> PyResult<PyArray> {
        self.inner.unary(UnaryOp::Invert).py_err().map(Into::into)
    }

    /// NumPy ufuncs on tessera arrays stay lazy: `np.sqrt(x)`, `np.maximum(x, 0)`,
    /// `np_array + x`.
    #[pyo3(signature = (ufunc, method, *inputs, **kwargs))]
    fn __array_ufunc__(
        &self,
        py: Python<'_>,
        ufunc: &Bound<'_, PyAny>,
        method: &str,
        inputs: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let not_implemented = || py.NotImplemented();
        // `out=`, `dtype=`, `where=`, `.reduce`, `.accumulate`, `.outer` and the ufuncs
        // that are not elementwise ops (`matmul`): the Python half
        // (`tessera/_numpy_functions.py`) maps them onto the array methods.
        let in_python = || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("tessera._numpy_functions")?
                .call_method1("array_ufunc", (ufunc, method, inputs, kwargs))?
                .unbind())
        };
        if method != "__call__" || kwargs.is_some_and(|k| !k.is_empty()) {
            return in_python();
        }
        let name: String = ufunc.getattr("__name__")?.extract()?;
        let mut operands = Vec::with_capacity(inputs.len());
        for i in inputs.iter() {
            match operand(py, &i, &self.inner)? {
                Some(o) => operands.push(o),
                None => return Ok(not_implemented()),
            }
        }
        match crate::ufunc::apply(&name, operands) {
            Some(r) => Ok(Py::new(py, PyArray::from(r.py_err()?))?.into_any()),
            None => in_python(),
        }
    }

    /// NEP 18: NumPy functions on tessera arrays (`np.mean(x)`, `np.concatenate([x, y])`,
    /// `np.cumsum(x)`) run tessera's lazy implementation; one tessera does not have
    /// returns `NotImplemented`, so NumPy raises `TypeError` naming the function instead
    /// of computing it eagerly.
    fn __array_function__(
        &self,
        py: Python<'_>,
        func: &Bound<'_, PyAny>,
        types: &Bound<'_, PyAny>,
        args: &Bound<'_, PyAny>,
        kwargs: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        Ok(py
            .import("tessera._numpy_functions")?
            .call_method1("array_function", (func, types, args, kwargs))?
            .unbind())
    }

    /// The Python Array API namespace of this array (`tessera.array_api`, standard
    /// 2024.12; `api_version` may name 2023.12 or 2024.12).
    #[pyo3(signature = (api_version=None))]
    fn __array_namespace__<'py>(
        &self,
        py: Python<'py>,
        api_version: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match api_version {
            None | Some("2024.12") | Some("2023.12") => Ok(py.import("tessera.array_api")?.into_any()),
            Some(v) => Err(PyValueError::new_err(format!(
                "tessera implements the Array API standard 2024.12 (and 2023.12); {v} is not one of them"
            ))),
        }
    }

    /// Where the chunks live, as an Array API device: `"cpu"` for host backends,
    /// `"cuda:N"` on a GPU.
    #[getter]
    fn device(&self) -> String {
        crate::array_device::device_of(&self.inner)
    }

    /// The array on `device` (`"cpu"` or `"cuda"`/`"cuda:N"`): the same array when it is
    /// there already, else a transfer to that device's backend.
    #[pyo3(signature = (device, /, *, stream=None))]
    fn to_device(
        &self,
        device: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        crate::array_device::to_device(&self.inner, device, stream).map(Into::into)
    }

    /// The transpose of the last two axes (a stack of matrices transposed).
    #[getter(mT)]
    fn matrix_transpose(&self) -> PyResult<PyArray> {
        let n = self.inner.ndim();
        if n < 2 {
            return Err(PyValueError::new_err(format!(
                "mT needs at least 2 dimensions; the array has {n}"
            )));
        }
        let mut perm: Vec<usize> = (0..n).collect();
        perm.swap(n - 2, n - 1);
        self.inner.permute_dims(&perm).py_err().map(Into::into)
    }

    /// Running sum along `axis` (`None`: the flattened array), as `dask.array.cumsum`:
    /// each chunk scanned and the totals of the chunks before it carried in.
    #[pyo3(signature = (axis=None, dtype=None))]
    fn cumsum(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        crate::scan::cumulative_of(py, &self.inner, "sum", axis, dtype, false).map(Into::into)
    }

    /// Running product along `axis` (`None`: the flattened array).
    #[pyo3(signature = (axis=None, dtype=None))]
    fn cumprod(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        crate::scan::cumulative_of(py, &self.inner, "prod", axis, dtype, false).map(Into::into)
    }

    /// Sum over `axis` (all axes when `None`).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn sum(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.sum(a, keepdims))
    }
    /// Product over `axis`.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn prod(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.prod(a, keepdims))
    }
    /// Minimum over `axis` (NaN propagates, as in NumPy).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn min(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.min(a, keepdims))
    }
    /// Maximum over `axis`.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn max(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.max(a, keepdims))
    }
    /// Sum over `axis` with NaNs counted as zero.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn nansum(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.nansum(a, keepdims))
    }
    /// Mean over `axis` of the elements that are not NaN.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn nanmean(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.nanmean(a, keepdims))
    }
    /// Maximum over `axis` ignoring NaN (NaN where all are NaN).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn nanmax(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.nanmax(a, keepdims))
    }
    /// Minimum over `axis` ignoring NaN (NaN where all are NaN).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn nanmin(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.nanmin(a, keepdims))
    }
    /// Product over `axis` with NaNs counted as one.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn nanprod(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.nanprod(a, keepdims))
    }
    /// Variance over `axis` of the elements that are not NaN.
    #[pyo3(signature = (axis=None, ddof=0, keepdims=false))]
    fn nanvar(
        &self,
        axis: Option<&Bound<'_, PyAny>>,
        ddof: usize,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.nanvar(a, ddof, keepdims))
    }
    /// Standard deviation over `axis` of the elements that are not NaN.
    #[pyo3(signature = (axis=None, ddof=0, keepdims=false))]
    fn nanstd(
        &self,
        axis: Option<&Bound<'_, PyAny>>,
        ddof: usize,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.nanstd(a, ddof, keepdims))
    }
    /// Mean over `axis` (float64 for integer input).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn mean(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.mean(a, keepdims))
    }
    /// Variance over `axis` with `ddof` delta degrees of freedom (chunk-merged moments).
    #[pyo3(signature = (axis=None, ddof=0, keepdims=false))]
    fn var(
        &self,
        axis: Option<&Bound<'_, PyAny>>,
        ddof: usize,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.var(a, ddof, keepdims))
    }
    /// Standard deviation over `axis`.
    #[pyo3(signature = (axis=None, ddof=0, keepdims=false))]
    fn std(
        &self,
        axis: Option<&Bound<'_, PyAny>>,
        ddof: usize,
        keepdims: bool,
    ) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.std(a, ddof, keepdims))
    }
    /// True where any element along `axis` is nonzero.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn any(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.any(a, keepdims))
    }
    /// True where every element along `axis` is nonzero.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn all(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        reduce(&self.inner, axis, |a| self.inner.all(a, keepdims))
    }
    /// Index of the minimum (flat when `axis` is `None`).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn argmin(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        let axis = one_axis(axis, self.inner.ndim())?;
        self.inner.argmin(axis, keepdims).py_err().map(Into::into)
    }
    /// Index of the maximum (flat when `axis` is `None`).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn argmax(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        let axis = one_axis(axis, self.inner.ndim())?;
        self.inner.argmax(axis, keepdims).py_err().map(Into::into)
    }
    /// Index of the minimum ignoring NaN (`np.nanargmin`); a lane of NaN only is an
    /// error when the plan runs.
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn nanargmin(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        let axis = one_axis(axis, self.inner.ndim())?;
        self.inner
            .nanargmin(axis, keepdims)
            .py_err()
            .map(Into::into)
    }
    /// Index of the maximum ignoring NaN (`np.nanargmax`).
    #[pyo3(signature = (axis=None, keepdims=false))]
    fn nanargmax(&self, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<PyArray> {
        let axis = one_axis(axis, self.inner.ndim())?;
        self.inner
            .nanargmax(axis, keepdims)
            .py_err()
            .map(Into::into)
    }

    /// The complex conjugate, as NumPy's `conj`: the array itself, since every dtype
    /// tessera has is real (xarray's `corr` and `cov` call it).
    fn conj(&self) -> PyArray {
        self.inner.clone().into()
    }

    /// The complex conjugate (`conj`).
    fn conjugate(&self) -> PyArray {
        self.conj()
    }

    /// The array with another dtype (NumPy's `astype`, unsafe casting).
    fn astype(&self, py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        Ok(self.inner.astype(dtype_of(py, dtype)?).into())
    }

    /// A new shape with the same elements in C order (one `-1` inferred). `order` is
    /// NumPy's keyword: `"C"` only (a Fortran-order reshape reorders the elements).
    #[pyo3(signature = (*shape, order="C"))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>, order: &str) -> PyResult<PyArray> {
        if order != "C" {
            return Err(PyNotImplementedError::new_err(format!(
                "reshape(order={order:?}): tessera reshapes in C order only; transpose first for Fortran order"
            )));
        }
        let dims: Vec<i64> = if shape.len() == 1 {
            let only = shape.get_item(0)?;
            match only.extract::<i64>() {
                Ok(n) => vec![n],
                Err(_) => only.extract()?,
            }
        } else {
            shape.extract()?
        };
        self.inner.reshape(&dims).py_err().map(Into::into)
    }

    /// The same values in other blocks (`chunks` as in `from_array`).
    fn rechunk(&self, chunks: &Bound<'_, PyAny>) -> PyResult<PyArray> {
        let spec = chunks_of(Some(chunks), self.inner.ndim())?;
        self.inner.rechunk(spec).py_err().map(Into::into)
    }

    /// Axes permuted (`axes` given) or reversed.
    #[pyo3(signature = (*axes))]
    fn transpose(&self, axes: &Bound<'_, PyTuple>) -> PyResult<PyArray> {
        if axes.is_empty() {
            return self.inner.transpose().py_err().map(Into::into);
        }
        let perm: Vec<usize> = if axes.len() == 1 {
            axes.get_item(0)?.extract()?
        } else {
            axes.extract()?
        };
        self.inner.permute_dims(&perm).py_err().map(Into::into)
    }

    /// Axes of length 1 removed (`axis`: only those).
    #[pyo3(signature = (axis=None))]
    fn squeeze(&self, axis: Option<&Bound<'_, PyAny>>) -> PyResult<PyArray> {
        let axes = axes_of(axis, self.inner.ndim())?;
        self.inner.squeeze(axes.as_deref()).py_err().map(Into::into)
    }

    /// Values limited to `[min, max]` (either may be `None`).
    #[pyo3(signature = (min=None, max=None))]
    fn clip(
        &self,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let d = self.inner.dtype();
        let bound = |b: Option<&Bound<'_, PyAny>>| -> PyResult<Option<tessera::Scalar>> {
            b.filter(|b| !b.is_none())
                .map(|b| scalar_as(b, d))
                .transpose()
        };
        self.inner
            .clip(bound(min)?, bound(max)?)
            .py_err()
            .map(Into::into)
    }

    /// Rounded half to even (`decimals` other than 0 is not supported).
    #[pyo3(signature = (decimals=0))]
    fn round(&self, decimals: i64) -> PyResult<PyArray> {
        if decimals != 0 {
            return Err(PyValueError::new_err(
                "round(decimals != 0) is not supported; scale first",
            ));
        }
        self.inner.unary(UnaryOp::Round).py_err().map(Into::into)
    }

    /// Matrix product (`@`).
    fn dot(&self, other: &PyArray) -> PyResult<PyArray> {
        self.inner.dot(&other.inner).py_err().map(Into::into)
    }

    /// `func` applied to every block (see `tessera.map_blocks`).
    #[pyo3(signature = (func, *others, dtype=None, chunks=None))]
    fn map_blocks(
        &self,
        py: Python<'_>,
        func: Py<PyAny>,
        others: Vec<Bound<'_, PyArray>>,
        dtype: Option<&Bound<'_, PyAny>>,
        chunks: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyArray> {
        let mut arrays = vec![self.inner.clone()];
        arrays.extend(others.iter().map(|a| a.borrow().inner.clone()));
        map_blocks_impl(py, func, &arrays, dtype, chunks)
    }
}

impl PyArray {
    fn scalar<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.size() != 1 {
            return Err(PyTypeError::new_err(format!(
                "only arrays of one element convert to Python scalars; this one has shape {:?}",
                self.inner.shape()
            )));
        }
        let arr = self.inner.clone();
        let s = detached(py, move || arr.compute_scalar())?;
        scalar_to_py(py, s)
    }

    fn host_only(&self, what: &str) -> PyResult<()> {
        if self.inner.backend().capabilities().device == "host" {
            return Ok(());
        }
        Err(crate::errors::to_py(tessera::Error::Unsupported {
            backend: self.inner.backend_name().to_string(),
            op: format!(
                "{what} (device arrays export through the host: call to_backend(\"cpu\") first)"
            ),
            dtype: self.inner.dtype(),
        }))
    }
}
