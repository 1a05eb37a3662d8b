//! An oracle for the reference: what every protocol op must return, from its definition.
//!
//! The suite compares each backend with the CPU reference, so the reference itself needs
//! a check that does not share its code, or `--backend cpu` could never fail. This module
//! is that check. Every protocol op is written again here in its plainest form — values
//! held as `bool`, `i128` or `f64` ([`values`]), integers wrapped to their dtype on
//! purpose, `float32` results computed in `f64` and rounded once (exact for `+ - * /` and
//! `sqrt`; within the transcendental tolerance for `exp`, `sin`, ...), reductions with
//! compensated sums ([`mod@reduce`]), data movement element by element from the index
//! definitions ([`layout`]), Philox from the paper ([`mod@random`]) and fused programs
//! interpreted node by node ([`program`]), singular values by one-sided Jacobi
//! ([`linalg`]), and what the user-level API composes from them ([`api`]: indexing,
//! broadcasting, reductions with `keepdims`, moments, creation). None of it calls a backend, the protocol's
//! scalar `apply_*` functions or its casts.
//!
//! A protocol case states what it expects through [`Side::expect`](crate::Side::expect)
//! and [`Side::expect_error`](crate::Side::expect_error); the runner checks the
//! reference's result against that statement before it compares the backend with the
//! reference. Elementary functions of `f64` come from the platform's math library,
//! independent of tessera's kernels; `tests/golden` checks them against NumPy.

pub mod api;
pub mod layout;
pub mod linalg;
pub mod program;
pub mod quantile;
pub mod random;
pub mod reduce;
pub mod scan;
pub mod search;
pub mod sort;
pub mod take;
pub mod values;

use tessera_core::program::{BinaryOp, IndexMap, ReduceOp, UnaryOp};
use tessera_core::random::RandomSpec;
use tessera_core::{AxisSlice, DType, Error, HostArray, Scalar};

use layout::{count, map_coords, ravel, unravel};
use values::{build, read, V};

pub use linalg::singular_values;
pub use reduce::NoIdentity;

/// The kind of error a case expects (the variant of [`Error`], without its message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// [`Error::Shape`].
    Shape,
    /// [`Error::DType`].
    DType,
    /// [`Error::Invalid`].
    Invalid,
    /// [`Error::MemoryLimit`].
    MemoryLimit,
}

impl ErrorKind {
    /// Whether `e` is of this kind.
    pub fn matches(self, e: &Error) -> bool {
        matches!(
            (self, e),
            (ErrorKind::Shape, Error::Shape { .. })
                | (ErrorKind::DType, Error::DType { .. })
                | (ErrorKind::Invalid, Error::Invalid { .. })
                | (ErrorKind::MemoryLimit, Error::MemoryLimit { .. })
        )
    }

    /// The variant's name, e.g. `Invalid`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Shape => "Shape",
            ErrorKind::DType => "DType",
            ErrorKind::Invalid => "Invalid",
            ErrorKind::MemoryLimit => "MemoryLimit",
        }
    }
}

/// What a case expects of the reference.
#[derive(Debug, Clone)]
pub enum Expect {
    /// These results, under the case's tolerance.
    Values(Vec<HostArray>),
    /// An error of this kind.
    Error(ErrorKind),
}

impl From<Result<Vec<HostArray>, ErrorKind>> for Expect {
    fn from(r: Result<Vec<HostArray>, ErrorKind>) -> Expect {
        match r {
            Ok(v) => Expect::Values(v),
            Err(kind) => Expect::Error(kind),
        }
    }
}

impl From<Result<Vec<HostArray>, NoIdentity>> for Expect {
    fn from(r: Result<Vec<HostArray>, NoIdentity>) -> Expect {
        match r {
            Ok(v) => Expect::Values(v),
            Err(NoIdentity) => Expect::Error(ErrorKind::Invalid),
        }
    }
}

/// `shape` filled with `value`.
pub fn full(shape: &[usize], value: Scalar) -> HostArray {
    build(shape, value.dtype(), &vec![V::of(value); count(shape)])
}

/// `astype(to)`.
pub fn cast(x: &HostArray, to: DType) -> HostArray {
    let v: Vec<V> = read(x).into_iter().map(|v| values::cast(v, to)).collect();
    build(x.shape(), to, &v)
}

/// A unary op (`x` already of the op's operand dtype).
pub fn unary(op: UnaryOp, x: &HostArray) -> HostArray {
    let d = x.dtype();
    let v: Vec<V> = read(x)
        .into_iter()
        .map(|v| values::unary(op, v, d))
        .collect();
    build(x.shape(), op.result_dtype(d), &v)
}

/// A binary op on two arrays of one shape and dtype.
pub fn binary(op: BinaryOp, a: &HostArray, b: &HostArray) -> HostArray {
    let d = a.dtype();
    let v: Vec<V> = read(a)
        .into_iter()
        .zip(read(b))
        .map(|(x, y)| values::binary(op, x, y, d))
        .collect();
    build(a.shape(), op.result_dtype(d), &v)
}

/// `where(cond, a, b)`.
pub fn where_(cond: &HostArray, a: &HostArray, b: &HostArray) -> HostArray {
    let v: Vec<V> = read(cond)
        .into_iter()
        .zip(read(a).into_iter().zip(read(b)))
        .map(|(c, (x, y))| if c.truthy() { x } else { y })
        .collect();
    build(a.shape(), a.dtype(), &v)
}

/// `x[slices]`.
pub fn slice(x: &HostArray, slices: &[AxisSlice]) -> HostArray {
    let (v, s) = layout::slice(&read(x), x.shape(), slices);
    build(&s, x.dtype(), &v)
}

/// Axes permuted: output axis `i` is input axis `perm[i]`.
pub fn transpose(x: &HostArray, perm: &[usize]) -> HostArray {
    let (v, s) = layout::transpose(&read(x), x.shape(), perm);
    build(&s, x.dtype(), &v)
}

/// The same C-order values under another shape.
pub fn reshape(x: &HostArray, to: &[usize]) -> HostArray {
    build(to, x.dtype(), &read(x))
}

/// Size-1 axes repeated to `to`.
pub fn broadcast_to(x: &HostArray, to: &[usize]) -> HostArray {
    build(to, x.dtype(), &layout::broadcast(&read(x), x.shape(), to))
}

/// Parts joined along `axis`.
pub fn concatenate(parts: &[HostArray], axis: usize) -> HostArray {
    let vals: Vec<Vec<V>> = parts.iter().map(read).collect();
    let shapes: Vec<Vec<usize>> = parts.iter().map(|p| p.shape().to_vec()).collect();
    let (v, s) = layout::concatenate(&vals, &shapes, axis);
    build(&s, parts[0].dtype(), &v)
}

/// `a @ b` of 2-d arrays of one dtype.
pub fn matmul(a: &HostArray, b: &HostArray) -> HostArray {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let d = a.dtype();
    build(&[m, n], d, &reduce::matmul(&read(a), &read(b), m, k, n, d))
}

/// `op` over `axes`, kept as size-1 axes.
///
/// # Errors
/// [`NoIdentity`] for min, max and the arg-reductions of an empty group.
pub fn reduce(x: &HostArray, op: ReduceOp, axes: &[usize]) -> Result<HostArray, NoIdentity> {
    let d = x.dtype();
    let (v, s) = reduce::reduce(&read(x), x.shape(), d, op, axes)?;
    Ok(build(&s, op.result_dtype(d), &v))
}

/// `spec` sampled at the flat index of `map(out)` in `map.src_shape`; `None` for the
/// normal distribution.
pub fn random(spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Option<HostArray> {
    let v = (0..count(shape))
        .map(|p| {
            let src = map_coords(map, &unravel(p, shape));
            random::sample(spec, ravel(&src, &map.src_shape) as u64)
        })
        .collect::<Option<Vec<V>>>()?;
    Some(build(shape, spec.dtype, &v))
}

/// The `int64` coordinate along source axis `axis` of `map(out)`.
pub fn iota(map: &IndexMap, axis: usize, shape: &[usize]) -> HostArray {
    let v: Vec<V> = (0..count(shape))
        .map(|p| V::I(map_coords(map, &unravel(p, shape))[axis] as i128))
        .collect();
    build(shape, DType::I64, &v)
}
