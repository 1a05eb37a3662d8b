//! Reductions and the matrix product, as plain loops over the protocol's definitions.
//!
//! A reduction visits the input in C order and folds each element into the accumulator of
//! its output position: floats in `f64`, `uint64` in `u64`, every other integer and `bool`
//! in wrapping `i64` (NumPy's modular arithmetic); the result is cast to
//! [`ReduceOp::result_dtype`]. `min`/`max` propagate NaN; `argmin`/`argmax` give the flat
//! index over the reduced axes of the first extreme, or of the first NaN.

use ndarray::{ArrayD, IxDyn};
use tessera_core::backend::matmul_dims;
use tessera_core::chunks::{c_strides, grid_indices, numel};
use tessera_core::dispatch_host;
use tessera_core::program::{wrap_i64, ReduceOp};
use tessera_core::{DType, Element, Error, HostArray, Result, Scalar};

/// One element, widened to its accumulator type.
#[derive(Clone, Copy)]
enum Wide {
    F(f64),
    I(i64),
    U(u64),
}

/// Every element of `x` in C order, widened.
fn widen(x: &HostArray) -> Vec<Wide> {
    let float = x.dtype().is_float();
    let unsigned64 = x.dtype() == DType::U64;
    dispatch_host!(x, a => a
        .iter()
        .map(|v| {
            let s = v.to_scalar();
            if float {
                Wide::F(s.as_f64())
            } else if unsigned64 {
                Wide::U(s.as_u64())
            } else {
                Wide::I(s.as_i64())
            }
        })
        .collect())
}

/// The running state of one output element.
#[derive(Clone, Copy)]
struct Acc {
    value: Wide,
    index: i64,
    seen: bool,
}

fn init(op: ReduceOp, sample: Wide) -> Wide {
    match (op, sample) {
        (ReduceOp::Prod, Wide::F(_)) => Wide::F(1.0),
        (ReduceOp::Min, Wide::F(_)) => Wide::F(f64::INFINITY),
        (ReduceOp::Max, Wide::F(_)) => Wide::F(f64::NEG_INFINITY),
        (_, Wide::F(_)) if !matches!(op, ReduceOp::Any | ReduceOp::All | ReduceOp::Count) => {
            Wide::F(0.0)
        }
        (ReduceOp::Prod, Wide::U(_)) => Wide::U(1),
        (ReduceOp::Min, Wide::U(_)) => Wide::U(u64::MAX),
        (_, Wide::U(_)) if !matches!(op, ReduceOp::Any | ReduceOp::All | ReduceOp::Count) => {
            Wide::U(0)
        }
        (ReduceOp::Prod | ReduceOp::All, _) => Wide::I(1),
        (ReduceOp::Min, _) => Wide::I(i64::MAX),
        (ReduceOp::Max, _) => Wide::I(i64::MIN),
        _ => Wide::I(0),
    }
}

/// `true` when `v` counts as nonzero (NaN does, as in NumPy).
fn truthy(v: Wide) -> bool {
    match v {
        Wide::F(x) => x != 0.0,
        Wide::I(x) => x != 0,
        Wide::U(x) => x != 0,
    }
}

fn is_nan(v: Wide) -> bool {
    matches!(v, Wide::F(x) if x.is_nan())
}

/// `a` strictly before `b` in the order `op` looks for (smaller for argmin).
fn better(op: ReduceOp, a: Wide, b: Wide) -> bool {
    let less = match (a, b) {
        (Wide::F(x), Wide::F(y)) => (x < y, x > y),
        (Wide::I(x), Wide::I(y)) => (x < y, x > y),
        (Wide::U(x), Wide::U(y)) => (x < y, x > y),
        _ => (false, false),
    };
    if op == ReduceOp::ArgMin {
        less.0
    } else {
        less.1
    }
}

fn fold(op: ReduceOp, acc: &mut Acc, v: Wide, pos: i64) {
    use ReduceOp::*;
    match op {
        Any => acc.value = Wide::I(i64::from(truthy(acc.value) || truthy(v))),
        All => acc.value = Wide::I(i64::from(truthy(acc.value) && truthy(v))),
        Count => {
            if let Wide::I(n) = acc.value {
                acc.value = Wide::I(n + i64::from(!is_nan(v)));
            }
        }
        ArgMin | ArgMax => {
            let take = !acc.seen || (!is_nan(acc.value) && (is_nan(v) || better(op, v, acc.value)));
            if take {
                acc.seen = true;
                acc.value = v;
                acc.index = pos;
            }
        }
        _ => {
            acc.value = match (acc.value, v) {
                (Wide::F(a), Wide::F(x)) => Wide::F(match op {
                    Sum => a + x,
                    NanSum if x.is_nan() => a,
                    NanSum => a + x,
                    Prod => a * x,
                    Min | Max if a.is_nan() || x.is_nan() => f64::NAN,
                    Min if x < a => x,
                    Max if x > a => x,
                    _ => a,
                }),
                (Wide::I(a), Wide::I(x)) => Wide::I(match op {
                    Sum | NanSum => a.wrapping_add(x),
                    Prod => a.wrapping_mul(x),
                    Min => a.min(x),
                    Max => a.max(x),
                    _ => a,
                }),
                (Wide::U(a), Wide::U(x)) => Wide::U(match op {
                    Sum | NanSum => a.wrapping_add(x),
                    Prod => a.wrapping_mul(x),
                    Min => a.min(x),
                    Max => a.max(x),
                    _ => a,
                }),
                (a, _) => a,
            }
        }
    }
}

/// Reduces `x` over `axes` (kept as size-1 axes).
pub(crate) fn reduce(x: &HostArray, op: ReduceOp, axes: &[usize]) -> Result<HostArray> {
    let shape = x.shape().to_vec();
    if axes.iter().any(|&a| a >= shape.len()) {
        return Err(Error::invalid(
            op.name(),
            format!("axes {axes:?} out of range for shape {shape:?}"),
        ));
    }
    // Min, max and the arg-reductions of an empty axis have no value: every backend
    // refuses them with the same error.
    op.check_identity(&shape, axes)?;
    if !op.accepts(x.dtype()) {
        return Err(Error::dtype(
            op.name(),
            x.dtype(),
            "not defined for this dtype",
        ));
    }
    let reduced = |a: usize| axes.contains(&a);
    let out_shape: Vec<usize> = (0..shape.len())
        .map(|a| if reduced(a) { 1 } else { shape[a] })
        .collect();
    let sub_shape: Vec<usize> = (0..shape.len())
        .filter(|&a| reduced(a))
        .map(|a| shape[a])
        .collect();
    let (out_strides, sub_strides) = (c_strides(&out_shape), c_strides(&sub_shape));
    let values = widen(x);
    let sample = values.first().copied().unwrap_or(if x.dtype().is_float() {
        Wide::F(0.0)
    } else if x.dtype() == DType::U64 {
        Wide::U(0)
    } else {
        Wide::I(0)
    });
    let start = Acc {
        value: init(op, sample),
        index: 0,
        seen: false,
    };
    let mut accs = vec![start; numel(&out_shape)];
    for (index, &v) in grid_indices(shape.clone()).zip(&values) {
        let (mut t, mut pos, mut k) = (0, 0, 0);
        for (a, &i) in index.iter().enumerate() {
            if reduced(a) {
                pos += i * sub_strides[k];
                k += 1;
            } else {
                t += i * out_strides[a];
            }
        }
        fold(op, &mut accs[t], v, pos as i64);
    }
    let result = op.result_dtype(x.dtype());
    let scalars: Vec<Scalar> = accs
        .iter()
        .map(|a| match op {
            ReduceOp::ArgMin | ReduceOp::ArgMax => Scalar::I64(a.index),
            _ => match a.value {
                Wide::F(v) => Scalar::F64(v),
                Wide::I(v) => Scalar::I64(v),
                Wide::U(v) => Scalar::U64(v),
            },
        })
        .collect();
    HostArray::from_scalars(&out_shape, result, &scalars)
}

/// The product of two 2-d arrays of one numeric dtype: floats summed in their own type,
/// integers in wrapping arithmetic of their width.
pub(crate) fn matmul(a: &HostArray, b: &HostArray) -> Result<HostArray> {
    let (m, k, n) = matmul_dims((a.dtype(), a.shape()), (b.dtype(), b.shape()))?;
    // Sums in the operands' own float type, in order over the contraction axis.
    macro_rules! float {
        ($x:expr, $y:expr, $zero:expr) => {
            ArrayD::from_shape_fn(IxDyn(&[m, n]), |ix| {
                (0..k).fold($zero, |acc, l| acc + $x[[ix[0], l]] * $y[[l, ix[1]]])
            })
        };
    }
    let dtype = a.dtype();
    Ok(match (a, b) {
        (HostArray::F64(x), HostArray::F64(y)) => HostArray::F64(float!(x, y, 0.0f64)),
        (HostArray::F32(x), HostArray::F32(y)) => HostArray::F32(float!(x, y, 0.0f32)),
        (HostArray::Bool(_), _) => {
            return Err(Error::dtype(
                "matmul",
                DType::Bool,
                "cast to a numeric dtype first",
            ))
        }
        _ => {
            let (av, bv) = (widen(a), widen(b));
            let mut out = Vec::with_capacity(m * n);
            for i in 0..m {
                for j in 0..n {
                    let terms = (0..k).map(|l| (av[i * k + l], bv[l * n + j]));
                    out.push(if dtype == DType::U64 {
                        Scalar::U64(terms.fold(0u64, |s, (p, q)| match (p, q) {
                            (Wide::U(p), Wide::U(q)) => s.wrapping_add(p.wrapping_mul(q)),
                            _ => s,
                        }))
                    } else {
                        let v = terms.fold(0i64, |s, (p, q)| match (p, q) {
                            (Wide::I(p), Wide::I(q)) => s.wrapping_add(p.wrapping_mul(q)),
                            _ => s,
                        });
                        Scalar::from_i64_wrapping(wrap_i64(v, dtype), dtype)
                    });
                }
            }
            HostArray::from_scalars(&[m, n], dtype, &out)?
        }
    })
}
