//! Creating arrays: constants, ranges, identity matrices, counter-based random, host data.
//!
//! Every function takes an optional backend name; `None` means the configured
//! `array.backend`. Generators (constants, ranges, random) never materialise anything on
//! their own: they become leaves of the fused program of whatever consumes them.

use std::sync::Arc;

use ndarray::ArrayD;

use super::{Array, Op};
use crate::backend::BackendRef;
use crate::chunks::{ChunkSpec, Chunks};
use crate::dtype::{DType, Element, Scalar};
use crate::error::{Error, Result};
use crate::host::{HostArray, HostElement};
use crate::program::{ArrayOp, BinaryOp};
use crate::random::{Distribution, RandomSpec};
use crate::registry::resolve_array_backend;

pub(crate) fn resolve_chunks(
    shape: &[usize],
    dtype: DType,
    chunks: impl Into<ChunkSpec>,
) -> Result<Chunks> {
    chunks
        .into()
        .resolve(shape, dtype.size(), crate::config::chunk_size_bytes()?)
}

fn on(backend: Option<&str>) -> Result<BackendRef> {
    resolve_array_backend(backend)
}

impl Array {
    /// An array of `shape` where every element is `value` (its dtype is the value's).
    pub fn full(
        shape: &[usize],
        value: impl Into<Scalar>,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        let value = value.into();
        let b = on(backend)?;
        b.capabilities()
            .check(b.name(), ArrayOp::Full, value.dtype())?;
        let chunks = resolve_chunks(shape, value.dtype(), chunks)?;
        Ok(Array::new(Op::Const(value), value.dtype(), chunks, b))
    }

    /// Zeros of `dtype`.
    pub fn zeros(
        shape: &[usize],
        dtype: DType,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        Array::full(shape, Scalar::zero(dtype), chunks, backend)
    }

    /// Ones of `dtype`.
    pub fn ones(
        shape: &[usize],
        dtype: DType,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        Array::full(shape, Scalar::one(dtype), chunks, backend)
    }

    /// Uninitialised in NumPy; here zeros (tessera never exposes uninitialised memory).
    pub fn empty(
        shape: &[usize],
        dtype: DType,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        Array::zeros(shape, dtype, chunks, backend)
    }

    /// A scalar broadcast to this array's shape and chunks, on its backend.
    pub(crate) fn const_like(&self, value: Scalar) -> Array {
        Array::new(
            Op::Const(value),
            value.dtype(),
            self.chunks().clone(),
            self.backend().clone(),
        )
    }

    fn iota(shape: &[usize], axis: usize, chunks: Chunks, b: BackendRef) -> Array {
        debug_assert!(axis < shape.len());
        Array::new(Op::Iota { axis }, DType::I64, chunks, b)
    }

    /// `start, start+step, ...` below `stop` (NumPy `arange`), of `dtype`.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// use tessera_core::DType;
    /// # fn main() -> tessera_core::Result<()> {
    /// let a = Array::arange(0.0, 10.0, 1.0, DType::I64, 4, None)?; // chunks of 4
    /// assert_eq!(a.chunks().axis(0), &[4, 4, 2]);
    /// assert_eq!(a.sum(None, false)?.compute_f64()?, 45.0);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A zero step, a dtype that cannot hold the values, a bad chunk spec, or an unknown
    /// or unavailable backend.
    pub fn arange(
        start: f64,
        stop: f64,
        step: f64,
        dtype: DType,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
            return Err(Error::invalid(
                "arange",
                format!("start={start}, stop={stop}, step={step}: need finite values and a nonzero step"),
            ));
        }
        let n = ((stop - start) / step).ceil().max(0.0) as usize;
        let b = on(backend)?;
        let chunks = resolve_chunks(&[n], dtype, chunks)?;
        let i = Array::iota(&[n], 0, chunks, b);
        if dtype == DType::Bool && n > 2 {
            // NumPy: "arange() is only supported for booleans when the result has at most
            // length 2" (there is no third boolean to step to).
            return Err(Error::invalid(
                "arange",
                format!("start={start}, stop={stop}, step={step} gives {n} values; a bool arange holds at most 2 (use arange(..) != 0 or astype(bool))"),
            ));
        }
        let all_int = dtype.is_integer() && start.fract() == 0.0 && step.fract() == 0.0;
        if dtype.is_integer() {
            // NumPy converts the first two values to the dtype and raises where one does
            // not fit (`arange(-3, 3, dtype=uint8)`: OverflowError), with integer arguments
            // and fractional ones alike.
            let first = start.trunc();
            let second = (start + step).trunc();
            let fits = |v: f64| {
                crate::dtype::int_range(dtype)
                    .is_some_and(|(lo, hi)| v >= lo as f64 && v <= hi as f64)
            };
            if n > 0 && (!fits(first) || (n > 1 && !fits(second))) {
                return Err(Error::invalid(
                    "arange",
                    format!(
                        "start={start}, step={step}: the first values {first} and {second} are out of bounds for {dtype}"
                    ),
                ));
            }
        }
        if dtype.is_integer() && !all_int {
            // NumPy's integer `arange` with fractional arguments: the first two values
            // are computed in float and truncated to the dtype, and the rest continue their
            // difference (`arange(0.5, 5, 1.5, dtype=int)` is [0, 2, 4]).
            let first = start.trunc();
            let second = (start + step).trunc();
            let delta = second as i64 - first as i64;
            let s = i.binary_scalar(BinaryOp::Mul, Scalar::I64(delta), false)?;
            let v = s.binary_scalar(BinaryOp::Add, Scalar::I64(first as i64), false)?;
            return Ok(v.astype(dtype));
        }
        let v = if all_int {
            // Exact integer arithmetic: start + i*step in int64.
            let s = i.binary_scalar(BinaryOp::Mul, Scalar::I64(step as i64), false)?;
            s.binary_scalar(BinaryOp::Add, Scalar::I64(start as i64), false)?
        } else {
            let f = i.astype(DType::F64);
            let s = f.binary_scalar(BinaryOp::Mul, Scalar::F64(step), false)?;
            s.binary_scalar(BinaryOp::Add, Scalar::F64(start), false)?
        };
        Ok(v.astype(dtype))
    }

    /// `num` evenly spaced values from `start` to `stop` (inclusive when `endpoint`).
    pub fn linspace(
        start: f64,
        stop: f64,
        num: usize,
        endpoint: bool,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        let b = on(backend)?;
        let chunks = resolve_chunks(&[num], DType::F64, chunks)?;
        let div = if endpoint { num.saturating_sub(1) } else { num };
        let step = if div > 0 {
            (stop - start) / div as f64
        } else {
            0.0
        };
        let i = Array::iota(&[num], 0, chunks, b).astype(DType::F64);
        let v = i
            .binary_scalar(BinaryOp::Mul, Scalar::F64(step), false)?
            .binary_scalar(BinaryOp::Add, Scalar::F64(start), false)?;
        if endpoint && num > 1 {
            // NumPy sets the last element to exactly `stop`.
            let last = Array::iota(&[num], 0, v.chunks().clone(), v.backend().clone())
                .binary_scalar(BinaryOp::Eq, Scalar::I64(num as i64 - 1), false)?;
            return last.where_(&v.const_like(Scalar::F64(stop)), &v);
        }
        Ok(v)
    }

    /// An `n x m` matrix with ones on diagonal `k` (NumPy `eye`).
    pub fn eye(
        n: usize,
        m: Option<usize>,
        k: i64,
        dtype: DType,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        let m = m.unwrap_or(n);
        let b = on(backend)?;
        let chunks = resolve_chunks(&[n, m], dtype, chunks)?;
        let rows = Array::iota(&[n, m], 0, chunks.clone(), b.clone());
        let cols = Array::iota(&[n, m], 1, chunks, b);
        let shifted = rows.binary_scalar(BinaryOp::Add, Scalar::I64(k), false)?;
        Ok(shifted.binary(BinaryOp::Eq, &cols)?.astype(dtype))
    }

    /// Wraps a host array, split into chunks, on a backend (data is copied per chunk
    /// lazily; call [`Array::persist`] to upload once).
    pub fn from_host(
        data: HostArray,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        let b = on(backend)?;
        b.capabilities()
            .check(b.name(), ArrayOp::FromHost, data.dtype())?;
        let data = data.into_standard_layout();
        let chunks = resolve_chunks(data.shape(), data.dtype(), chunks)?;
        let dtype = data.dtype();
        // Slice the host array into blocks and upload each.
        let mut stored = Vec::with_capacity(chunks.count());
        for block in chunks.blocks() {
            let part = host_block(&data, &chunks, &block);
            stored.push(b.from_host(&part)?.into());
        }
        Ok(Array::new(Op::Stored(Arc::new(stored)), dtype, chunks, b))
    }

    /// From a typed ndarray.
    pub fn from_ndarray<T: HostElement>(
        data: ArrayD<T>,
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        Array::from_host(T::wrap(data), chunks, backend)
    }

    /// From a flat slice and a shape (C order).
    pub fn from_slice<T: HostElement>(
        data: &[T],
        shape: &[usize],
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        let a = ArrayD::from_shape_vec(ndarray::IxDyn(shape), data.to_vec()).map_err(|_| {
            Error::shape(
                "from_slice",
                format!(
                    "{} elements do not fill shape {:?} ({} elements)",
                    data.len(),
                    shape,
                    shape.iter().product::<usize>()
                ),
            )
        })?;
        Array::from_ndarray(a, chunks, backend)
    }

    /// A 0-d array holding one value.
    pub fn scalar<T: HostElement>(value: T, backend: Option<&str>) -> Result<Array> {
        Array::from_ndarray(
            ArrayD::from_elem(ndarray::IxDyn(&[]), value),
            ChunkSpec::Auto,
            backend,
        )
    }

    /// Computes into a typed ndarray (the dtype must match; use `astype` first).
    pub fn to_ndarray<T: HostElement + Element>(&self) -> Result<ArrayD<T>> {
        self.compute()?.into_typed::<T>()
    }
}

/// Copies block `block` of `chunks` out of a host array.
pub(crate) fn host_block(data: &HostArray, chunks: &Chunks, block: &[usize]) -> HostArray {
    use ndarray::Slice;
    let ranges: Vec<(usize, usize)> = block
        .iter()
        .enumerate()
        .map(|(a, &b)| {
            let off = chunks.offsets(a);
            (off[b], off[b + 1])
        })
        .collect();
    crate::dispatch_host!(data, a => {
        let mut v = a.view();
        for (ax, &(lo, hi)) in ranges.iter().enumerate() {
            v.slice_axis_inplace(ndarray::Axis(ax), Slice::from(lo..hi));
        }
        HostArray::from(v.to_owned())
    })
}

/// A seeded source of counter-based random arrays (like `da.random.RandomState`).
///
/// Each call draws from a new stream of the same seed, so two arrays from one state are
/// independent, and the same sequence of calls always gives the same arrays — under any
/// chunking, scheduler or backend.
#[derive(Debug)]
pub struct RandomState {
    seed: u64,
    next_stream: std::sync::atomic::AtomicU64,
}

impl RandomState {
    /// A state with `seed`.
    pub fn new(seed: u64) -> RandomState {
        RandomState {
            seed,
            next_stream: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn make(
        &self,
        dist: Distribution,
        dtype: DType,
        shape: &[usize],
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        let b = on(backend)?;
        b.capabilities().check(b.name(), ArrayOp::Random, dtype)?;
        let chunks = resolve_chunks(shape, dtype, chunks)?;
        let stream = self
            .next_stream
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let spec = RandomSpec {
            seed: self.seed,
            stream,
            dist,
            dtype,
        };
        Ok(Array::new(Op::Random(spec), dtype, chunks, b))
    }

    /// Uniform on `[low, high)`, `f64`.
    pub fn uniform(
        &self,
        low: f64,
        high: f64,
        shape: &[usize],
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        self.uniform_typed(low, high, DType::F64, shape, chunks, backend)
    }

    /// Uniform on `[low, high)` of a float dtype.
    pub fn uniform_typed(
        &self,
        low: f64,
        high: f64,
        dtype: DType,
        shape: &[usize],
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        if !dtype.is_float() {
            return Err(Error::dtype(
                "uniform",
                dtype,
                "uniform draws float32 or float64; use randint for integers",
            ));
        }
        if !(low.is_finite() && high.is_finite() && low <= high) {
            return Err(Error::invalid(
                "uniform",
                format!("need finite low <= high, got low={low}, high={high}"),
            ));
        }
        self.make(
            Distribution::Uniform { low, high },
            dtype,
            shape,
            chunks,
            backend,
        )
    }

    /// Normal with `mean` and `std`, `f64`. Counter-based: any chunking, any slice, on any
    /// backend, gives the same numbers, and a slice generates only the elements it keeps.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::{Index, RandomState};
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = RandomState::new(42).normal(10.0, 1.0, &[400, 400], 100, None)?;
    /// let y = x.slice(&[Index::step(2), Index::step(2)])?.mean(None, false)?;
    /// assert!((y.compute_f64()? - 10.0).abs() < 0.05);
    /// let again = RandomState::new(42).normal(10.0, 1.0, &[400, 400], 57, None)?;
    /// assert_eq!(x.compute()?, again.compute()?); // another chunking, the same values
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A negative or non-finite `std`, a bad chunk spec, or an unknown or unavailable
    /// backend.
    pub fn normal(
        &self,
        mean: f64,
        std: f64,
        shape: &[usize],
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        self.normal_typed(mean, std, DType::F64, shape, chunks, backend)
    }

    /// Normal of a float dtype.
    pub fn normal_typed(
        &self,
        mean: f64,
        std: f64,
        dtype: DType,
        shape: &[usize],
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        if !dtype.is_float() {
            return Err(Error::dtype(
                "normal",
                dtype,
                "normal draws float32 or float64",
            ));
        }
        if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
            return Err(Error::invalid(
                "normal",
                format!("need finite mean and std >= 0, got mean={mean}, std={std}"),
            ));
        }
        self.make(
            Distribution::Normal { mean, std },
            dtype,
            shape,
            chunks,
            backend,
        )
    }

    /// Integers uniform on `[low, high)` of an integer dtype.
    pub fn randint(
        &self,
        low: i64,
        high: i64,
        dtype: DType,
        shape: &[usize],
        chunks: impl Into<ChunkSpec>,
        backend: Option<&str>,
    ) -> Result<Array> {
        if !dtype.is_integer() {
            return Err(Error::dtype(
                "randint",
                dtype,
                "randint draws an integer dtype",
            ));
        }
        if low >= high {
            return Err(Error::invalid(
                "randint",
                format!("need low < high, got low={low}, high={high}"),
            ));
        }
        let (lo, hi) = (Scalar::I64(low), Scalar::I64(high - 1));
        if lo.cast(dtype).as_i64() != low || hi.cast(dtype).as_i64() != high - 1 {
            return Err(Error::invalid(
                "randint",
                format!("[{low}, {high}) does not fit {dtype}"),
            ));
        }
        self.make(
            Distribution::RandInt { low, high },
            dtype,
            shape,
            chunks,
            backend,
        )
    }
}
