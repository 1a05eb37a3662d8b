//! Values between Python and tessera: dtypes, scalars, chunk specs, and n-d host arrays
//! to and from NumPy.
//!
//! A computed array goes to NumPy without a copy: the `ndarray` the engine assembled is
//! handed to NumPy as the owner of its buffer ([`numpy::PyArray::from_owned_array`]), so
//! the address NumPy reports is the one the engine wrote ([`host_to_numpy`] returns it for
//! the tests that check this). An array coming from NumPy is copied once into the first
//! chunks, as Dask's `from_array` reads its input.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple};
use tessera::{AxisChunks, ChunkSpec, DType, HostArray, Scalar};

/// A dtype from what NumPy users write: `"float32"`, `"f8"`, `numpy.int64`,
/// `numpy.dtype("u1")`, `float`, `int`, `bool`.
///
/// # Errors
/// `TypeError` naming the dtypes tessera has.
pub fn dtype_of(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    let np = py.import("numpy")?;
    let name: String = np
        .call_method1("dtype", (obj,))
        .and_then(|d| d.getattr("name"))
        .and_then(|n| n.extract())
        .map_err(|_| PyTypeError::new_err(format!("not a dtype: {obj}")))?;
    DType::parse(&name).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "dtype {name} is not one tessera computes with; use bool, int8-int64, uint8-uint64, float32 or float64"
        ))
    })
}

/// An optional dtype argument (`None`: `default`).
pub fn dtype_or(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>, default: DType) -> PyResult<DType> {
    match obj {
        None => Ok(default),
        Some(o) if o.is_none() => Ok(default),
        Some(o) => dtype_of(py, o),
    }
}

/// A Python scalar as a weak scalar (NEP 50: `bool`, `int` and `float` adapt to the
/// array's dtype); `None` for anything else. Exact types only: `numpy.float64`
/// subclasses `float` but is a strong NumPy scalar.
pub fn weak_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_exact_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(v) => Ok(Some(Scalar::I64(v))),
            Err(_) => match obj.extract::<u64>() {
                Ok(v) => Ok(Some(Scalar::U64(v))),
                Err(_) => Err(pyo3::exceptions::PyOverflowError::new_err(format!(
                    "Python int {obj} is out of bounds for every integer dtype"
                ))),
            },
        };
    }
    if obj.is_exact_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::F64(obj.extract()?)));
    }
    Ok(None)
}

/// A scalar of a fixed dtype (a fill value: `full(shape, 7, dtype=uint8)`).
pub fn scalar_as(obj: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Scalar> {
    let value: f64 = if obj.is_instance_of::<PyBool>() {
        if obj.extract::<bool>()? {
            1.0
        } else {
            0.0
        }
    } else if obj.is_instance_of::<PyInt>() && dtype.is_integer() {
        // Integers keep every bit (an f64 would round above 2^53).
        return int_scalar(obj, dtype);
    } else {
        obj.call_method0("__float__")?.extract()?
    };
    Ok(Scalar::F64(value).cast(dtype))
}

fn int_scalar(obj: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Scalar> {
    let out_of_range =
        || PyValueError::new_err(format!("Python integer {obj} is out of bounds for {dtype}"));
    Ok(match dtype {
        DType::I8 => Scalar::I8(obj.extract().map_err(|_| out_of_range())?),
        DType::I16 => Scalar::I16(obj.extract().map_err(|_| out_of_range())?),
        DType::I32 => Scalar::I32(obj.extract().map_err(|_| out_of_range())?),
        DType::I64 => Scalar::I64(obj.extract().map_err(|_| out_of_range())?),
        DType::U8 => Scalar::U8(obj.extract().map_err(|_| out_of_range())?),
        DType::U16 => Scalar::U16(obj.extract().map_err(|_| out_of_range())?),
        DType::U32 => Scalar::U32(obj.extract().map_err(|_| out_of_range())?),
        DType::U64 => Scalar::U64(obj.extract().map_err(|_| out_of_range())?),
        _ => Scalar::F64(obj.extract::<f64>()?).cast(dtype),
    })
}

/// A Python value of a scalar, typed as NumPy gives it back (`int`, `float`, `bool`).
pub fn scalar_to_py<'py>(py: Python<'py>, s: Scalar) -> PyResult<Bound<'py, PyAny>> {
    Ok(match s {
        Scalar::Bool(v) => PyBool::new(py, v).to_owned().into_any(),
        Scalar::F32(v) => PyFloat::new(py, v as f64).into_any(),
        Scalar::F64(v) => PyFloat::new(py, v).into_any(),
        Scalar::I8(v) => v.into_pyobject(py)?.into_any(),
        Scalar::I16(v) => v.into_pyobject(py)?.into_any(),
        Scalar::I32(v) => v.into_pyobject(py)?.into_any(),
        Scalar::I64(v) => v.into_pyobject(py)?.into_any(),
        Scalar::U8(v) => v.into_pyobject(py)?.into_any(),
        Scalar::U16(v) => v.into_pyobject(py)?.into_any(),
        Scalar::U32(v) => v.into_pyobject(py)?.into_any(),
        Scalar::U64(v) => v.into_pyobject(py)?.into_any(),
    })
}

/// A shape: an int or a sequence of ints.
pub fn shape_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    if let Ok(n) = obj.extract::<usize>() {
        return Ok(vec![n]);
    }
    obj.extract::<Vec<usize>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "shape must be a non-negative int or a sequence of them, got {obj}"
        ))
    })
}

/// A Dask chunk spec for an array of `ndim` axes: `"auto"`, an int (every axis; `-1`: one
/// block), or one entry per axis — an int, `-1` or `None` (the whole axis), `"auto"`, or a
/// tuple of explicit block sizes.
pub fn chunks_of(obj: Option<&Bound<'_, PyAny>>, ndim: usize) -> PyResult<ChunkSpec> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(ChunkSpec::Auto);
    };
    if let Ok(s) = obj.cast::<PyString>() {
        return match s.to_str()? {
            "auto" => Ok(ChunkSpec::Auto),
            other => Err(PyValueError::new_err(format!(
                "chunks={other:?}: a string chunk spec must be \"auto\"; give block sizes as ints"
            ))),
        };
    }
    if let Ok(n) = obj.extract::<i64>() {
        return Ok(match axis_of(n) {
            AxisChunks::Size(n) => ChunkSpec::Uniform(n),
            other => ChunkSpec::PerAxis(vec![other; ndim]),
        });
    }
    let items: Vec<Bound<'_, PyAny>> = obj
        .try_iter()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "chunks must be \"auto\", an int or a tuple, got {obj}"
            ))
        })?
        .collect::<PyResult<_>>()?;
    let mut axes = Vec::with_capacity(items.len());
    for item in items {
        axes.push(if item.is_none() {
            AxisChunks::Whole
        } else if let Ok(s) = item.cast::<PyString>() {
            match s.to_str()? {
                "auto" => AxisChunks::Auto,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "chunks entry {other:?}: must be an int, -1, None, \"auto\" or a tuple of sizes"
                    )))
                }
            }
        } else if let Ok(n) = item.extract::<i64>() {
            axis_of(n)
        } else if item.is_instance_of::<PyTuple>() || item.hasattr("__iter__")? {
            AxisChunks::Explicit(item.extract()?)
        } else {
            return Err(PyTypeError::new_err(format!(
                "chunks entry {item}: must be an int, -1, None, \"auto\" or a tuple of sizes"
            )));
        });
    }
    Ok(ChunkSpec::PerAxis(axes))
}

/// An int chunk entry: `-1` the whole axis, any other negative refused when resolved.
fn axis_of(n: i64) -> AxisChunks {
    match n {
        -1 => AxisChunks::Whole,
        n if n < 0 => AxisChunks::Negative(n),
        n => AxisChunks::Size(n as usize),
    }
}

/// A NumPy array (or anything `numpy.asarray` takes) as a host array (one copy).
///
/// # Errors
/// `TypeError` for a dtype tessera does not compute with.
pub fn numpy_to_host(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<HostArray> {
    let np = py.import("numpy")?;
    let mut arr = np.call_method1("asarray", (obj,))?;
    // Non-native byte orders (big-endian NetCDF and FITS data) as native values: NumPy
    // converts them; the engine's buffers are native.
    if !arr
        .getattr("dtype")?
        .getattr("isnative")?
        .extract::<bool>()?
    {
        let native = arr.getattr("dtype")?.call_method1("newbyteorder", ("=",))?;
        arr = arr.call_method1("astype", (native,))?;
    }
    // A strided view (a `map_blocks` function's windows, a transposed block) is copied
    // by NumPy's strided loops, many times faster than an element-by-element copy.
    if !arr
        .getattr("flags")?
        .getattr("c_contiguous")?
        .extract::<bool>()?
    {
        arr = np.call_method1("ascontiguousarray", (arr,))?;
    }
    let untyped = arr.cast::<numpy::PyUntypedArray>().map_err(PyErr::from)?;
    let name: String = untyped.dtype().getattr("name")?.extract()?;
    let dtype = DType::parse(&name).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "NumPy dtype {name} is not one tessera computes with; use bool, int8-int64, uint8-uint64, float32 or float64"
        ))
    })?;
    tessera::dispatch_dtype!(dtype, T => {
        let typed = arr.cast::<PyArrayDyn<T>>().map_err(PyErr::from)?;
        let owned = typed.readonly().as_array().to_owned();
        Ok(<T as tessera::HostElement>::wrap(owned))
    })
}

/// A computed host array as a NumPy array that owns the engine's buffer (no copy), and
/// the buffer's address.
pub fn host_to_numpy(py: Python<'_>, host: HostArray) -> (Bound<'_, PyAny>, usize) {
    tessera::dispatch_host!(host, a => {
        let a = if a.is_standard_layout() { a } else { a.as_standard_layout().into_owned() };
        let address = a.as_ptr() as usize;
        (numpy::PyArray::from_owned_array(py, a).into_any(), address)
    })
}

/// A computed NumPy array as Dask returns it: a 0-d result as a NumPy scalar.
///
/// # Errors
/// What NumPy's indexing raises (nothing for an ndarray).
pub fn scalar_if_0d(out: Bound<'_, PyAny>) -> PyResult<Bound<'_, PyAny>> {
    if out.getattr("ndim")?.extract::<usize>()? == 0 {
        out.get_item(PyTuple::empty(out.py()))
    } else {
        Ok(out)
    }
}

/// The key `obj[key]` reads or writes a region with, as Dask spells it: a tuple of
/// `slice(start, stop)` (no step), each shifted by `offset[axis]`.
///
/// # Errors
/// What Python raises building the slices (nothing, short of memory).
pub fn region_key<'py>(
    py: Python<'py>,
    region: &[std::ops::Range<usize>],
    offset: &[usize],
) -> PyResult<Bound<'py, PyTuple>> {
    let slice = py.import("builtins")?.getattr("slice")?;
    let items: Vec<Bound<'py, PyAny>> = region
        .iter()
        .enumerate()
        .map(|(axis, r)| {
            let o = offset.get(axis).copied().unwrap_or(0);
            slice.call1((r.start + o, r.end + o))
        })
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

/// `module.QualName` of `obj`'s type, for messages and plans (`zarr.core.array.Array`).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    let kind = obj.get_type();
    format!(
        "{}.{}",
        kind.module().map_or_else(|_| "?".into(), |m| m.to_string()),
        kind.qualname()
            .map_or_else(|_| "?".into(), |n| n.to_string())
    )
}

/// Python's spelling of a shape: `(3, 8)`, `(3,)`, `()`.
pub fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if parts.len() == 1 {
        format!("({},)", parts[0])
    } else {
        format!("({})", parts.join(", "))
    }
}
