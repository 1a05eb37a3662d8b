//! What the user-level `Array` API composes from the protocol's ops, written from NumPy's
//! definitions on top of this oracle's own pieces: basic indexing with Python's slice
//! rules, broadcasting, promotion and casts before an elementwise op, reductions over
//! `axis=None` or a tuple with `keepdims`, the moments (`mean`, `nanmean`, `var`, `std`
//! with `ddof`), `arange`/`linspace`/`eye`, stacking, `clip` and the products built from
//! `matmul`. Dtype rules come from the protocol's definitions (`promote`, each op's
//! `result_dtype`), as for the protocol cases; values never touch a kernel.

use tessera_array::Index;
use tessera_core::dtype::{promote, DTypeKind};
use tessera_core::program::{BinaryOp, ReduceOp};
use tessera_core::{AxisSlice, DType, HostArray};

use super::layout::{count, lanes};
use super::reduce::{float_sum, group_by_output, NoIdentity};
use super::values::{self, build, read, V};
use super::{ErrorKind, Expect};

/// `x[idx]` with NumPy's basic indexing: slices with Python's rules, integers (negative
/// from the end) dropping their axis, `None` adding one, `...` standing for the full
/// slices needed; missing trailing indices are full slices. `None` when an integer is out
/// of range.
pub fn index(x: &HostArray, idx: &[Index]) -> Option<HostArray> {
    let shape = x.shape();
    let real = idx
        .iter()
        .filter(|i| matches!(i, Index::Slice { .. } | Index::At(_)))
        .count();
    let fill = shape.len().checked_sub(real)?;
    let mut expanded: Vec<Index> = Vec::new();
    let mut saw_ellipsis = false;
    for i in idx {
        if matches!(i, Index::Ellipsis) {
            if !saw_ellipsis {
                expanded.extend(std::iter::repeat_n(Index::FULL, fill));
            }
            saw_ellipsis = true;
        } else {
            expanded.push(*i);
        }
    }
    if !saw_ellipsis {
        expanded.extend(std::iter::repeat_n(Index::FULL, fill));
    }
    let (mut slices, mut out_shape) = (Vec::new(), Vec::new());
    let mut axis = 0;
    for i in &expanded {
        match *i {
            Index::NewAxis => out_shape.push(1),
            Index::At(k) => {
                let n = shape[axis] as i64;
                let k = if k < 0 { k + n } else { k };
                if !(0..n).contains(&k) {
                    return None;
                }
                slices.push(AxisSlice {
                    start: k as usize,
                    step: 1,
                    len: 1,
                });
                axis += 1;
            }
            Index::Slice { start, stop, step } => {
                let s = python_slice(start, stop, step, shape[axis]);
                out_shape.push(s.len);
                slices.push(s);
                axis += 1;
            }
            Index::Ellipsis => {}
        }
    }
    let sliced = super::slice(x, &slices);
    // Dropping integer-indexed axes and adding new ones moves no value in C order.
    Some(super::reshape(&sliced, &out_shape))
}

/// Python's `start:stop:step` on an axis of length `n`.
pub fn python_slice(start: Option<i64>, stop: Option<i64>, step: i64, n: usize) -> AxisSlice {
    let n = n as i64;
    let norm = |b: i64, lo: i64, hi: i64| {
        let b = if b < 0 { b + n } else { b };
        b.clamp(lo, hi)
    };
    let (first, len) = if step > 0 {
        let a = start.map_or(0, |b| norm(b, 0, n));
        let z = stop.map_or(n, |b| norm(b, 0, n));
        (a, if z > a { (z - a + step - 1) / step } else { 0 })
    } else {
        let a = start.map_or(n - 1, |b| norm(b, -1, n - 1));
        let z = stop.map_or(-1, |b| norm(b, -1, n - 1));
        (a, if a > z { (a - z - step - 1) / -step } else { 0 })
    };
    AxisSlice {
        start: if len == 0 { 0 } else { first as usize },
        step: step as isize,
        len: len as usize,
    }
}

/// The shape two shapes broadcast to (trailing alignment), `None` when they do not.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() < n {
            1
        } else {
            s[i + s.len() - n]
        }
    };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// `x` (cast to `d`) broadcast to `to`.
pub fn stretch(x: &HostArray, d: DType, to: &[usize]) -> HostArray {
    let mut shape = vec![1; to.len() - x.shape().len()];
    shape.extend_from_slice(x.shape());
    let x = super::reshape(&super::cast(x, d), &shape);
    super::broadcast_to(&x, to)
}

/// `a op b` as the API computes it: both operands promoted together (Bool for the
/// logical ops, float64 for the true division of integers) and broadcast, then the op.
///
/// # Errors
/// [`ErrorKind::DType`] for arithmetic on two booleans; [`ErrorKind::Shape`] for shapes
/// that do not broadcast.
pub fn binary(op: BinaryOp, a: &HostArray, b: &HostArray) -> Result<HostArray, ErrorKind> {
    let to = broadcast_shapes(a.shape(), b.shape()).ok_or(ErrorKind::Shape)?;
    let d = if op.is_logical() {
        DType::Bool
    } else {
        promote(a.dtype(), b.dtype())
    };
    if op.is_arithmetic() && d == DType::Bool {
        return Err(ErrorKind::DType);
    }
    // Bitwise ops take integers and bools, never floats; two bools shift as int8.
    if op.is_bitwise() && d.is_float() {
        return Err(ErrorKind::DType);
    }
    let d = if op.is_shift() && d == DType::Bool {
        DType::I8
    } else {
        d
    };
    // True division of integers is float64 division (NumPy's `true_divide`); the float-only
    // functions compute small integers and bools in float32 (NumPy's float16, a dtype
    // tessera lacks), wider ones in float64.
    let d = if op == BinaryOp::Div && !d.is_float() {
        DType::F64
    } else if op.is_float_only() {
        match d {
            DType::F32 | DType::Bool | DType::I8 | DType::U8 | DType::I16 | DType::U16 => {
                DType::F32
            }
            _ => DType::F64,
        }
    } else {
        d
    };
    Ok(super::binary(op, &stretch(a, d, &to), &stretch(b, d, &to)))
}

/// `where(cond, a, b)` with broadcasting, `a` and `b` promoted together.
///
/// # Errors
/// [`ErrorKind::Shape`] for shapes that do not broadcast.
pub fn where_(cond: &HostArray, a: &HostArray, b: &HostArray) -> Result<HostArray, ErrorKind> {
    let to = broadcast_shapes(cond.shape(), a.shape())
        .and_then(|s| broadcast_shapes(&s, b.shape()))
        .ok_or(ErrorKind::Shape)?;
    let d = promote(a.dtype(), b.dtype());
    Ok(super::where_(
        &stretch(cond, DType::Bool, &to),
        &stretch(a, d, &to),
        &stretch(b, d, &to),
    ))
}

/// The axes a reduction takes: all for `None`.
fn axes_of(x: &HostArray, axes: Option<&[usize]>) -> Vec<usize> {
    axes.map_or_else(|| (0..x.shape().len()).collect(), <[usize]>::to_vec)
}

/// `r` (reduced over `axes`, kept as size-1 axes) without those axes unless `keep`.
fn keepdims(r: HostArray, axes: &[usize], keep: bool) -> HostArray {
    if keep {
        return r;
    }
    let shape: Vec<usize> = r
        .shape()
        .iter()
        .enumerate()
        .filter(|(a, _)| !axes.contains(a))
        .map(|(_, &n)| n)
        .collect();
    super::reshape(&r, &shape)
}

/// `x.reduce(op, axes, keepdims)`.
///
/// # Errors
/// [`NoIdentity`] for min, max and the arg-reductions of an empty group.
pub fn reduce(
    x: &HostArray,
    op: ReduceOp,
    axes: Option<&[usize]>,
    keep: bool,
) -> Result<HostArray, NoIdentity> {
    let axes = axes_of(x, axes);
    Ok(keepdims(super::reduce(x, op, &axes)?, &axes, keep))
}

/// `argmin`/`argmax` over one axis, or over the flattened array for `None`.
///
/// # Errors
/// [`NoIdentity`] over an empty axis.
pub fn arg_reduce(
    x: &HostArray,
    op: ReduceOp,
    axis: Option<usize>,
    keep: bool,
) -> Result<HostArray, NoIdentity> {
    match axis {
        Some(a) => Ok(keepdims(super::reduce(x, op, &[a])?, &[a], keep)),
        None => {
            let flat = super::reshape(x, &[count(x.shape())]);
            let r = super::reduce(&flat, op, &[0])?;
            Ok(super::reshape(
                &r,
                &vec![1; if keep { x.shape().len() } else { 0 }],
            ))
        }
    }
}

/// `nanargmax`/`nanargmin` (`max` picks which) as NumPy defines them: each NaN replaced
/// by the op's identity (`-inf` for max, `+inf` for min), then [`arg_reduce`]; a lane of
/// NaN only (or an empty one) is an error.
pub fn nan_arg_reduce(x: &HostArray, max: bool, axis: Option<usize>, keep: bool) -> Expect {
    let op = if max {
        ReduceOp::ArgMax
    } else {
        ReduceOp::ArgMin
    };
    let vals = read(x);
    let shape = x.shape().to_vec();
    let lane_all_nan = |positions: Vec<usize>| {
        !positions.is_empty()
            && positions
                .iter()
                .all(|&p| matches!(vals[p], V::F(f) if f.is_nan()))
    };
    let all_nan = match axis {
        None => lane_all_nan((0..vals.len()).collect()),
        Some(a) => lanes(&shape, a).into_iter().any(lane_all_nan),
    };
    if all_nan {
        return Expect::Error(ErrorKind::Invalid);
    }
    let fill = if max {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let filled: Vec<V> = vals
        .iter()
        .map(|v| match v {
            V::F(f) if f.is_nan() => V::F(fill),
            other => *other,
        })
        .collect();
    let filled = build(&shape, x.dtype(), &filled);
    arg_reduce(&filled, op, axis, keep).map(|r| vec![r]).into()
}

/// A moment of the groups of `x` over `axes`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Moment {
    /// `mean`.
    Mean,
    /// `nanmean`: NaN left out.
    NanMean,
    /// `var` with this `ddof`.
    Var(usize),
    /// `std` with this `ddof`.
    Std(usize),
    /// `nanvar`: NaN left out; NaN when no more than `ddof` elements are left.
    NanVar(usize),
    /// `nanstd`, likewise.
    NanStd(usize),
}

/// `mean`/`nanmean`/`var`/`std` over `axes` (all for `None`): float64 for integers and
/// booleans, the float dtype otherwise; a compensated sum, then one division (NumPy gives
/// NaN for an empty group and for `n <= ddof`).
pub fn moment(x: &HostArray, m: Moment, axes: Option<&[usize]>, keep: bool) -> HostArray {
    let d = x.dtype();
    let out_d = if d.is_float() { d } else { DType::F64 };
    let axes = axes_of(x, axes);
    let (groups, out_shape) = group_by_output(&read(x), x.shape(), &axes);
    let vals: Vec<V> = groups
        .iter()
        .map(|g| {
            let g: Vec<f64> = g
                .iter()
                .map(|v| v.num())
                .filter(|x| {
                    !matches!(m, Moment::NanMean | Moment::NanVar(_) | Moment::NanStd(_))
                        || !x.is_nan()
                })
                .collect();
            let n = g.len() as f64;
            let mean = float_sum(g.iter().copied()) / n;
            let r = match m {
                Moment::Mean | Moment::NanMean => mean,
                Moment::NanVar(ddof) | Moment::NanStd(ddof) if n <= ddof as f64 => f64::NAN,
                Moment::Var(ddof)
                | Moment::Std(ddof)
                | Moment::NanVar(ddof)
                | Moment::NanStd(ddof) => {
                    let ss = float_sum(g.iter().map(|x| (x - mean) * (x - mean)));
                    let var = ss / (n - ddof as f64).max(0.0);
                    if matches!(m, Moment::Std(_) | Moment::NanStd(_)) {
                        var.sqrt()
                    } else {
                        var
                    }
                }
            };
            V::F(values::round_to(out_d, r))
        })
        .collect();
    keepdims(build(&out_shape, out_d, &vals), &axes, keep)
}

/// `arange(start, stop, step, d)`: `ceil((stop - start) / step)` values `start + i step`
/// computed in float64 and cast to `d`.
pub fn arange(start: f64, stop: f64, step: f64, d: DType) -> HostArray {
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    let vals: Vec<V> = (0..n)
        .map(|i| values::cast(V::F(start + i as f64 * step), d))
        .collect();
    build(&[n], d, &vals)
}

/// `linspace(start, stop, num, endpoint)`: `start + i (stop - start) / div`, the last value
/// `stop` exactly when the endpoint is included.
pub fn linspace(start: f64, stop: f64, num: usize, endpoint: bool) -> HostArray {
    let div = if endpoint { num.saturating_sub(1) } else { num };
    let step = if div > 0 {
        (stop - start) / div as f64
    } else {
        f64::NAN
    };
    let mut vals: Vec<V> = (0..num)
        .map(|i| {
            V::F(if div > 0 {
                i as f64 * step + start
            } else {
                start
            })
        })
        .collect();
    if endpoint && num > 1 {
        vals[num - 1] = V::F(stop);
    }
    build(&[num], DType::F64, &vals)
}

/// `eye(n, m, k, d)`: ones where the column is the row plus `k`.
pub fn eye(n: usize, m: Option<usize>, k: i64, d: DType) -> HostArray {
    let m = m.unwrap_or(n);
    let vals: Vec<V> = (0..n * m)
        .map(|p| {
            let (i, j) = ((p / m.max(1)) as i64, (p % m.max(1)) as i64);
            values::cast(V::I(i128::from(j - i == k)), d)
        })
        .collect();
    build(&[n, m], d, &vals)
}

/// `stack(parts, axis)`: each part given a size-1 axis at `axis`, then joined along it.
pub fn stack(parts: &[HostArray], axis: usize) -> HostArray {
    let grown: Vec<HostArray> = parts
        .iter()
        .map(|p| {
            let mut s = p.shape().to_vec();
            s.insert(axis, 1);
            super::reshape(p, &s)
        })
        .collect();
    super::concatenate(&grown, axis)
}

/// `concatenate(parts, axis)` of parts of any dtypes: promoted together first.
pub fn concatenate(parts: &[HostArray], axis: usize) -> HostArray {
    let d = parts
        .iter()
        .map(HostArray::dtype)
        .reduce(promote)
        .unwrap_or(DType::F64);
    let cast: Vec<HostArray> = parts.iter().map(|p| super::cast(p, d)).collect();
    super::concatenate(&cast, axis)
}

/// `clip(x, lo, hi)` with integer bounds: the dtype stays (NumPy 2 treats Python ints as
/// weak), a lower bound below an unsigned dtype's range is ignored, NaN stays.
pub fn clip(x: &HostArray, lo: Option<i64>, hi: Option<i64>) -> HostArray {
    let d = x.dtype();
    let unsigned = d.kind() == DTypeKind::UInt;
    let lo = lo.filter(|&l| !(unsigned && l < 0));
    let vals: Vec<V> = read(x)
        .into_iter()
        .map(|v| {
            let mut v = v;
            if let Some(l) = lo {
                if v.num() < l as f64 {
                    v = values::cast(V::I(l.into()), d);
                }
            }
            if let Some(h) = hi {
                if v.num() > h as f64 {
                    v = values::cast(V::I(h.into()), d);
                }
            }
            v
        })
        .collect();
    build(x.shape(), d, &vals)
}

/// `a` (`[p, k, q]`) and `b` (`[r, k]`) contracted over their `k` axes: `[p, q, r]`.
pub fn tensordot_middle(a: &HostArray, b: &HostArray) -> HostArray {
    let (p, k, q) = (a.shape()[0], a.shape()[1], a.shape()[2]);
    let r = b.shape()[0];
    let a2 = super::reshape(&super::transpose(a, &[0, 2, 1]), &[p * q, k]);
    let b2 = super::transpose(b, &[1, 0]);
    super::reshape(&super::matmul(&a2, &b2), &[p, q, r])
}

/// `2 x - 1` in float64 (the suite's `map_blocks` function).
pub fn twice_minus_one(x: &HostArray) -> HostArray {
    let vals: Vec<V> = read(&super::cast(x, DType::F64))
        .into_iter()
        .map(|v| V::F(2.0 * v.num() - 1.0))
        .collect();
    build(x.shape(), DType::F64, &vals)
}

/// The dtype NumPy's `cumsum`/`cumprod` accumulate in, written out here (not taken from
/// the protocol's `ScanOp::result_dtype`): `int64` for bool and signed integers, `uint64`
/// for unsigned ones, floats as they are; a running max or min keeps the input's dtype.
pub fn scan_dtype(op: tessera_core::program::ScanOp, d: DType) -> DType {
    use tessera_core::program::ScanOp;
    match (op, d) {
        (ScanOp::Max | ScanOp::Min, d) => d,
        (_, DType::Bool | DType::I8 | DType::I16 | DType::I32 | DType::I64) => DType::I64,
        (_, DType::U8 | DType::U16 | DType::U32 | DType::U64) => DType::U64,
        (_, d) => d,
    }
}

/// `Array::cumulative(op, axis, None, include_initial)`: `x` in the accumulation dtype,
/// scanned, with the empty scan (0 for sums, 1 for products) first when `include_initial`.
pub fn cumulative(
    x: &HostArray,
    op: tessera_core::program::ScanOp,
    axis: usize,
    include_initial: bool,
) -> HostArray {
    let d = scan_dtype(op, x.dtype());
    let scanned = super::scan::scan(&super::cast(x, d), op, axis);
    if !include_initial {
        return scanned;
    }
    let mut shape = x.shape().to_vec();
    shape[axis] = 1;
    let empty = match op {
        tessera_core::program::ScanOp::Sum => V::I(0),
        _ => V::I(1),
    };
    let first = build(&shape, d, &vec![empty; count(&shape)]);
    concatenate(&[first, scanned], axis)
}

/// `nanmax`, `nanmin` (`op` `Max`/`Min`) or `nanprod` (`Prod`) over `axes`: the NaNs of a
/// float array left out of each group (an all-NaN group is NaN for max and min, 1 for the
/// product); on integers and bools the plain reduction.
///
/// # Errors
/// [`NoIdentity`] for max and min of an empty group.
pub fn nan_reduce(
    x: &HostArray,
    op: ReduceOp,
    axes: Option<&[usize]>,
    keep: bool,
) -> Result<HostArray, NoIdentity> {
    let d = x.dtype();
    if !d.is_float() {
        return reduce(x, op, axes, keep);
    }
    let axes = axes_of(x, axes);
    let (groups, out_shape) = group_by_output(&read(x), x.shape(), &axes);
    let mut vals = Vec::with_capacity(groups.len());
    for g in &groups {
        if g.is_empty() && op != ReduceOp::Prod {
            return Err(NoIdentity);
        }
        let kept: Vec<f64> = g.iter().map(|v| v.num()).filter(|v| !v.is_nan()).collect();
        let r = match op {
            ReduceOp::Prod => kept.iter().product(),
            _ if kept.is_empty() => f64::NAN,
            ReduceOp::Max => kept.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            _ => kept.iter().copied().fold(f64::INFINITY, f64::min),
        };
        vals.push(V::F(values::round_to(d, r)));
    }
    Ok(keepdims(build(&out_shape, d, &vals), &axes, keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_slices() {
        let s = |a, b, c, n| {
            let x = python_slice(a, b, c, n);
            (x.start, x.step, x.len)
        };
        assert_eq!(s(None, None, 1, 5), (0, 1, 5));
        assert_eq!(s(None, None, -1, 5), (4, -1, 5));
        assert_eq!(s(Some(-2), None, 1, 5), (3, 1, 2));
        assert_eq!(s(Some(1), Some(-1), 2, 5), (1, 2, 2));
        assert_eq!(s(Some(10), Some(-10), -3, 5), (4, -3, 2));
        assert_eq!(s(Some(3), Some(3), 1, 5).2, 0);
        assert_eq!(s(None, None, 1, 0).2, 0);
    }

    #[test]
    fn broadcasting_and_linspace() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]), Some(vec![3, 4]));
        assert_eq!(broadcast_shapes(&[2], &[3]), None);
        let l = read(&linspace(0.0, 1.0, 5, true));
        assert_eq!(l[1], V::F(0.25));
        assert_eq!(l[4], V::F(1.0));
    }
}
