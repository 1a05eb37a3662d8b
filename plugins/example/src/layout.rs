//! Reading through index maps: generators (`random`, `iota`) and the structural ops
//! (`slice`, `transpose`, `broadcast_to`), each one element at a time in C order of the
//! output; `reshape` and `concatenate` on host arrays.
//!
//! Every one of them is the protocol's [`IndexMap`] applied literally: output element
//! `out` reads source coordinate `start + step * out[out_axis]` along each source axis.

use ndarray::{ArrayD, Axis, IxDyn};
use tessera_core::chunks::{c_strides, numel};
use tessera_core::dispatch_host;
use tessera_core::program::{AxisMap, IndexMap};
use tessera_core::random::{Distribution, RandomSpec};
use tessera_core::{DType, Error, HostArray, HostElement, Result, Scalar};

/// The source coordinates `map` reads for every output element of `shape`, in C order.
fn coords<'a>(map: &'a IndexMap, shape: &'a [usize]) -> impl Iterator<Item = Vec<i64>> + 'a {
    let n = numel(shape);
    let strides = c_strides(shape);
    (0..n).map(move |flat| {
        let out: Vec<usize> = strides
            .iter()
            .zip(shape)
            .map(|(&s, &len)| if len == 0 { 0 } else { flat / s % len })
            .collect();
        map.axes
            .iter()
            .map(|a| a.start + a.out_axis.map_or(0, |o| a.step * out[o] as i64))
            .collect()
    })
}

/// The flat C-order index of `coord` in `shape`.
fn flat_index(coord: &[i64], strides: &[usize]) -> usize {
    coord
        .iter()
        .zip(strides)
        .map(|(&c, &s)| c as usize * s)
        .sum()
}

/// Checks `map` against the output `shape`, naming `op`.
fn check(op: &str, map: &IndexMap, shape: &[usize]) -> Result<()> {
    map.check(shape).map_err(|e| Error::invalid(op, e))
}

/// Element `out` of the result is `x` at `map(out)`.
pub(crate) fn gather(
    op: &str,
    x: &HostArray,
    map: &IndexMap,
    shape: &[usize],
) -> Result<HostArray> {
    if map.src_shape != x.shape() {
        return Err(Error::shape(
            op,
            format!("a map over {:?} read from {:?}", map.src_shape, x.shape()),
        ));
    }
    check(op, map, shape)?;
    fn go<T: HostElement>(a: &ArrayD<T>, map: &IndexMap, shape: &[usize]) -> HostArray {
        let src = a.as_standard_layout();
        let data = src.as_slice().expect("standard layout");
        let strides = c_strides(&map.src_shape);
        let v: Vec<T> = coords(map, shape)
            .map(|c| data[flat_index(&c, &strides)])
            .collect();
        T::wrap(ArrayD::from_shape_vec(IxDyn(shape), v).expect("one value per element"))
    }
    Ok(dispatch_host!(x, a => go(a, map, shape)))
}

/// `spec` sampled at the flat index of `map(out)` in the generator's shape.
pub(crate) fn random(spec: &RandomSpec, map: &IndexMap, shape: &[usize]) -> Result<HostArray> {
    check("random", map, shape)?;
    let strides = c_strides(&map.src_shape);
    let values: Vec<Scalar> = coords(map, shape)
        .map(|c| {
            let i = flat_index(&c, &strides) as u64;
            match spec.dist {
                Distribution::RandInt { .. } => {
                    Scalar::from_i64_wrapping(spec.sample_i64(i), spec.dtype)
                }
                _ => Scalar::F64(spec.sample_f64(i)).cast(spec.dtype),
            }
        })
        .collect();
    Ok(from_scalars(shape, spec.dtype, &values))
}

/// The `int64` coordinate along source axis `axis` of `map(out)`.
pub(crate) fn iota(map: &IndexMap, axis: usize, shape: &[usize]) -> Result<HostArray> {
    check("iota", map, shape)?;
    if axis >= map.axes.len() {
        return Err(Error::invalid(
            "iota",
            format!("axis {axis} of a {}-d source", map.axes.len()),
        ));
    }
    let v: Vec<i64> = coords(map, shape).map(|c| c[axis]).collect();
    Ok(HostArray::I64(
        ArrayD::from_shape_vec(IxDyn(shape), v).expect("one value per element"),
    ))
}

/// Output axis `i` is input axis `perm[i]`.
pub(crate) fn transpose(x: &HostArray, perm: &[usize]) -> Result<HostArray> {
    let n = x.shape().len();
    if perm.len() != n || (0..n).any(|i| !perm.contains(&i)) {
        return Err(Error::invalid(
            "transpose",
            format!("{perm:?} is not a permutation of {n} axes"),
        ));
    }
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    let mut axes = vec![
        AxisMap {
            start: 0,
            step: 1,
            out_axis: None,
        };
        n
    ];
    for (i, &p) in perm.iter().enumerate() {
        axes[p].out_axis = Some(i);
    }
    let map = IndexMap {
        src_shape: x.shape().to_vec(),
        axes,
    };
    gather("transpose", x, &map, &shape)
}

/// Size-1 axes repeated to `shape` (same number of dimensions).
pub(crate) fn broadcast_to(x: &HostArray, shape: &[usize]) -> Result<HostArray> {
    let own = x.shape();
    if own.len() != shape.len() || own.iter().zip(shape).any(|(&a, &b)| a != b && a != 1) {
        return Err(Error::shape(
            "broadcast_to",
            format!("cannot broadcast {own:?} to {shape:?}"),
        ));
    }
    let map = IndexMap {
        src_shape: own.to_vec(),
        axes: own
            .iter()
            .enumerate()
            .map(|(a, &n)| AxisMap {
                start: 0,
                step: if n == 1 { 0 } else { 1 },
                out_axis: Some(a),
            })
            .collect(),
    };
    gather("broadcast_to", x, &map, shape)
}

/// The same elements in C order, in `shape`.
pub(crate) fn reshape(x: &HostArray, shape: &[usize]) -> Result<HostArray> {
    if x.len() != numel(shape) {
        return Err(Error::shape(
            "reshape",
            format!("cannot reshape {:?} into {:?}", x.shape(), shape),
        ));
    }
    fn go<T: HostElement>(a: &ArrayD<T>, shape: &[usize]) -> HostArray {
        let v: Vec<T> = a.iter().copied().collect();
        T::wrap(ArrayD::from_shape_vec(IxDyn(shape), v).expect("length checked"))
    }
    Ok(dispatch_host!(x, a => go(a, shape)))
}

/// Joins arrays of one dtype along `axis`.
pub(crate) fn concatenate(parts: &[HostArray], axis: usize) -> Result<HostArray> {
    let first = parts
        .first()
        .ok_or_else(|| Error::invalid("concatenate", "no chunks to join"))?;
    for p in parts {
        if p.dtype() != first.dtype() {
            return Err(Error::dtype(
                "concatenate",
                p.dtype(),
                format!("all chunks must be {}", first.dtype()),
            ));
        }
        let other_axes_differ = p
            .shape()
            .iter()
            .zip(first.shape())
            .enumerate()
            .any(|(a, (x, y))| a != axis && x != y);
        if p.shape().len() != first.shape().len() || axis >= p.shape().len() || other_axes_differ {
            return Err(Error::shape(
                "concatenate",
                format!(
                    "chunks {:?} and {:?} along axis {axis}",
                    first.shape(),
                    p.shape()
                ),
            ));
        }
    }
    fn go<T: HostElement>(parts: &[HostArray], axis: usize) -> Result<HostArray> {
        let views = parts
            .iter()
            .map(|p| p.view_typed::<T>())
            .collect::<Result<Vec<_>>>()?;
        let out = ndarray::concatenate(Axis(axis), &views)
            .map_err(|e| Error::shape("concatenate", e.to_string()))?;
        Ok(T::wrap(out))
    }
    match first.dtype() {
        DType::Bool => go::<bool>(parts, axis),
        DType::I8 => go::<i8>(parts, axis),
        DType::I16 => go::<i16>(parts, axis),
        DType::I32 => go::<i32>(parts, axis),
        DType::I64 => go::<i64>(parts, axis),
        DType::U8 => go::<u8>(parts, axis),
        DType::U16 => go::<u16>(parts, axis),
        DType::U32 => go::<u32>(parts, axis),
        DType::U64 => go::<u64>(parts, axis),
        DType::F32 => go::<f32>(parts, axis),
        DType::F64 => go::<f64>(parts, axis),
    }
}

/// A host array of `dtype` and `shape` from one scalar per element (cast to `dtype`).
pub(crate) fn from_scalars(shape: &[usize], dtype: DType, values: &[Scalar]) -> HostArray {
    fn go<T: HostElement>(shape: &[usize], values: &[Scalar]) -> HostArray {
        let v: Vec<T> = values.iter().map(|&s| T::from_scalar(s)).collect();
        T::wrap(ArrayD::from_shape_vec(IxDyn(shape), v).expect("one value per element"))
    }
    match dtype {
        DType::Bool => go::<bool>(shape, values),
        DType::I8 => go::<i8>(shape, values),
        DType::I16 => go::<i16>(shape, values),
        DType::I32 => go::<i32>(shape, values),
        DType::I64 => go::<i64>(shape, values),
        DType::U8 => go::<u8>(shape, values),
        DType::U16 => go::<u16>(shape, values),
        DType::U32 => go::<u32>(shape, values),
        DType::U64 => go::<u64>(shape, values),
        DType::F32 => go::<f32>(shape, values),
        DType::F64 => go::<f64>(shape, values),
    }
}
