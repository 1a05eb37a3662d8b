//! Reading through index maps: generators (`random`, `iota`) and the structural ops
//! (`slice`, `transpose`, `broadcast_to`), each one element at a time in C order of the
//! output; `reshape` and `concatenate` on host arrays.
//!
//! Every one of them is the protocol's [`IndexMap`] applied literally: output element
//! `out` reads source coordinate `start + step * out[out_axis]` along each source axis.

use ndarray::{ArrayD, Axis, IxDyn};
use tessera_core::backend::concat_shape;
use tessera_core::chunks::{c_strides, grid_indices};
use tessera_core::program::IndexMap;
use tessera_core::random::{Distribution, RandomSpec};
use tessera_core::{dispatch_dtype, dispatch_host};
use tessera_core::{DType, Error, HostArray, HostElement, Result, Scalar};

/// The source coordinates `map` reads for every output element of `shape`, in C order.
fn coords<'a>(map: &'a IndexMap, shape: &[usize]) -> impl Iterator<Item = Vec<i64>> + 'a {
    grid_indices(shape.to_vec()).map(move |out| {
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
    HostArray::from_scalars(shape, spec.dtype, &values)
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
    let (map, shape) = IndexMap::permuted(x.shape(), perm)?;
    gather("transpose", x, &map, &shape)
}

/// Size-1 axes repeated to `shape` (same number of dimensions).
pub(crate) fn broadcast_to(x: &HostArray, shape: &[usize]) -> Result<HostArray> {
    let map = IndexMap::broadcast(x.shape(), shape)?;
    gather("broadcast_to", x, &map, shape)
}

/// Joins arrays of one dtype along `axis`.
pub(crate) fn concatenate(parts: &[HostArray], axis: usize) -> Result<HostArray> {
    let shapes: Vec<(DType, &[usize])> = parts.iter().map(|p| (p.dtype(), p.shape())).collect();
    concat_shape(&shapes, axis)?;
    dispatch_dtype!(parts[0].dtype(), T => {
        let views = parts
            .iter()
            .map(|p| p.view_typed::<T>())
            .collect::<Result<Vec<_>>>()?;
        let out = ndarray::concatenate(Axis(axis), &views)
            .map_err(|e| Error::shape("concatenate", e.to_string()))?;
        Ok(T::wrap(out))
    })
}
