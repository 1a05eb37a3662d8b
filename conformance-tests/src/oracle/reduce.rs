//! Reductions and matrix products from their definitions.
//!
//! Integer sums and products are exact in `i128` (wrapping at 128 bits keeps every
//! residue modulo `2^64`) and wrapped to the result dtype once; float sums are
//! compensated (Neumaier), so the oracle's error is far below any tolerance a backend is
//! held to; a float32 sum is rounded once at the end. Arg-reductions return the first
//! C-order position, and a NaN wins, as NumPy's do.

use tessera_core::program::ReduceOp;
use tessera_core::DType;

use super::layout::{count, ravel, unravel};
use super::values::{round_to, wrap, V};

/// Why a reduction has no value: a group is empty and the op has no identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoIdentity;

/// A compensated sum (Neumaier), with IEEE's rules for NaN and infinities.
pub fn float_sum(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    let (mut pos_inf, mut neg_inf, mut nan) = (false, false, false);
    for x in xs {
        if x.is_nan() {
            nan = true;
        } else if x == f64::INFINITY {
            pos_inf = true;
        } else if x == f64::NEG_INFINITY {
            neg_inf = true;
        } else {
            let t = s + x;
            c += if s.abs() >= x.abs() {
                (s - t) + x
            } else {
                (x - t) + s
            };
            s = t;
        }
    }
    match (nan || (pos_inf && neg_inf), pos_inf, neg_inf) {
        (true, _, _) => f64::NAN,
        (_, true, _) => f64::INFINITY,
        (_, _, true) => f64::NEG_INFINITY,
        _ => s + c,
    }
}

/// One group's reduction; `d` is the operand dtype.
fn fold(op: ReduceOp, xs: &[V], d: DType) -> Result<V, NoIdentity> {
    let rd = op.result_dtype(d);
    let is_nan = |v: &V| matches!(v, V::F(x) if x.is_nan());
    Ok(match op {
        ReduceOp::Any => V::B(xs.iter().any(|v| v.truthy())),
        ReduceOp::All => V::B(xs.iter().all(|v| v.truthy())),
        ReduceOp::Count => V::I(xs.iter().filter(|v| !is_nan(v)).count() as i128),
        ReduceOp::Sum | ReduceOp::NanSum if d.is_float() => V::F(round_to(
            rd,
            float_sum(
                xs.iter()
                    .filter(|v| op == ReduceOp::Sum || !is_nan(v))
                    .map(|v| v.num()),
            ),
        )),
        ReduceOp::Sum | ReduceOp::NanSum => V::I(wrap(
            xs.iter().fold(0i128, |a, v| a.wrapping_add(int_of(*v))),
            rd,
        )),
        ReduceOp::Prod if d.is_float() => {
            V::F(round_to(rd, xs.iter().fold(1.0, |a, v| a * v.num())))
        }
        ReduceOp::Prod => V::I(wrap(
            xs.iter().fold(1i128, |a, v| a.wrapping_mul(int_of(*v))),
            rd,
        )),
        ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax => {
            if xs.is_empty() {
                return Err(NoIdentity);
            }
            let want_max = matches!(op, ReduceOp::Max | ReduceOp::ArgMax);
            let mut best = 0;
            for (i, v) in xs.iter().enumerate() {
                if is_nan(&xs[best]) {
                    break;
                }
                let better = if is_nan(v) {
                    true
                } else if want_max {
                    key(*v) > key(xs[best])
                } else {
                    key(*v) < key(xs[best])
                };
                if better {
                    best = i;
                }
            }
            match op {
                ReduceOp::ArgMin | ReduceOp::ArgMax => V::I(best as i128),
                _ => xs[best],
            }
        }
    })
}

fn int_of(v: V) -> i128 {
    match v {
        V::B(b) => i128::from(b),
        V::I(x) => x,
        V::F(x) => x as i128,
    }
}

/// An order key: ints exactly (as `i128` cast to a comparable pair), floats by value.
fn key(v: V) -> (f64, i128) {
    match v {
        V::F(x) => (x, 0),
        other => (0.0, int_of(other)),
    }
}

/// `op` over `axes` of `x` (of `shape` and dtype `d`), keeping them as size-1 axes.
///
/// # Errors
/// [`NoIdentity`] when a reduced axis is empty and the op is min, max or an
/// arg-reduction.
pub fn reduce(
    x: &[V],
    shape: &[usize],
    d: DType,
    op: ReduceOp,
    axes: &[usize],
) -> Result<(Vec<V>, Vec<usize>), NoIdentity> {
    let no_identity = matches!(
        op,
        ReduceOp::Min | ReduceOp::Max | ReduceOp::ArgMin | ReduceOp::ArgMax
    );
    if no_identity && axes.iter().any(|&a| shape[a] == 0) {
        // NumPy raises even when the result is empty (`np.empty((0, 0)).min(axis=1)`).
        return Err(NoIdentity);
    }
    let (groups, out_shape) = group_by_output(x, shape, axes);
    let vals = groups
        .iter()
        .map(|g| fold(op, g, d))
        .collect::<Result<Vec<V>, NoIdentity>>()?;
    Ok((vals, out_shape))
}

/// The values of `x` (of `shape`) grouped by the output position they reduce into over
/// `axes` (kept as size-1 axes), and that output shape. C order over the whole input visits
/// each group's elements in C order over the reduced axes, so the groups hold them in the
/// order NumPy's arg-reductions count positions in.
pub fn group_by_output(x: &[V], shape: &[usize], axes: &[usize]) -> (Vec<Vec<V>>, Vec<usize>) {
    let out_shape: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(a, &n)| if axes.contains(&a) { 1 } else { n })
        .collect();
    let mut groups: Vec<Vec<V>> = vec![Vec::new(); count(&out_shape)];
    for (p, &v) in x.iter().enumerate() {
        let mut idx = unravel(p, shape);
        for &a in axes {
            idx[a] = 0;
        }
        groups[ravel(&idx, &out_shape)].push(v);
    }
    (groups, out_shape)
}

/// `a @ b` for 2-d operands of dtype `d`: integers exact then wrapped, floats with a
/// compensated sum rounded once.
pub fn matmul(a: &[V], b: &[V], m: usize, k: usize, n: usize, d: DType) -> Vec<V> {
    (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            if d.is_float() {
                V::F(round_to(
                    d,
                    float_sum((0..k).map(|p| a[i * k + p].num() * b[p * n + j].num())),
                ))
            } else {
                V::I(wrap(
                    (0..k).fold(0i128, |s, p| {
                        s.wrapping_add(int_of(a[i * k + p]).wrapping_mul(int_of(b[p * n + j])))
                    }),
                    d,
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensated_sums_are_exact_where_naive_ones_are_not() {
        let xs = [1e16, 1.0, -1e16];
        assert_eq!(xs.iter().sum::<f64>(), 0.0);
        assert_eq!(float_sum(xs.into_iter()), 1.0);
        assert!(float_sum([f64::INFINITY, f64::NEG_INFINITY].into_iter()).is_nan());
        assert_eq!(float_sum([f64::INFINITY, 1.0].into_iter()), f64::INFINITY);
    }

    #[test]
    fn hand_computed_reductions() {
        // [[3 1 2] [0 5 5]] as int8
        let x: Vec<V> = [3, 1, 2, 0, 5, 5].into_iter().map(V::I).collect();
        let r = |op, axes: &[usize]| reduce(&x, &[2, 3], DType::I8, op, axes).unwrap();
        assert_eq!(r(ReduceOp::Sum, &[1]).0, vec![V::I(6), V::I(10)]);
        assert_eq!(r(ReduceOp::ArgMax, &[0, 1]).0, vec![V::I(4)]);
        assert_eq!(r(ReduceOp::ArgMin, &[0]).0, vec![V::I(1), V::I(0), V::I(0)]);
        assert_eq!(r(ReduceOp::Prod, &[0]).1, vec![1, 3]);
        let e: Vec<V> = Vec::new();
        assert_eq!(
            reduce(&e, &[0], DType::F64, ReduceOp::Min, &[0]),
            Err(NoIdentity)
        );
        assert_eq!(
            reduce(&e, &[0], DType::F64, ReduceOp::Sum, &[0]).unwrap().0,
            vec![V::F(0.0)]
        );
        let f = [V::F(1.0), V::F(f64::NAN), V::F(-3.0), V::F(f64::NAN)];
        assert_eq!(
            reduce(&f, &[4], DType::F64, ReduceOp::ArgMin, &[0])
                .unwrap()
                .0,
            vec![V::I(1)]
        );
        assert_eq!(
            reduce(&f, &[4], DType::F64, ReduceOp::Count, &[0])
                .unwrap()
                .0,
            vec![V::I(2)]
        );
        assert_eq!(
            reduce(&f, &[4], DType::F64, ReduceOp::NanSum, &[0])
                .unwrap()
                .0,
            vec![V::F(-2.0)]
        );
    }

    #[test]
    fn integer_matmul_wraps_once() {
        let a = [V::I(100), V::I(100)];
        let b = [V::I(2), V::I(1)];
        // 200 + 100 = 300, wrapped to int8 only at the end: 44.
        assert_eq!(matmul(&a, &b, 1, 2, 1, DType::I8), vec![V::I(44)]);
    }
}
