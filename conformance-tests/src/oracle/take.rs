//! Integer-array indexing from its definition, element by element: `take` copies, for
//! each index, the slab at that position along the axis; `take_along_axis` reads, for
//! each output element, its lane at the index there. Negative indices count from the
//! end; an index out of range is an error, as in NumPy.

use tessera_core::HostArray;

use super::layout::{count, ravel, unravel};
use super::values::{build, read, V};

/// `idx` as positions along an axis of length `n`, or `None` if one is out of range.
fn positions(idx: &HostArray, n: usize) -> Option<Vec<usize>> {
    read(idx)
        .into_iter()
        .map(|v| {
            let V::I(i) = v else { return None };
            let p = if i < 0 { i + n as i128 } else { i };
            (0..n as i128).contains(&p).then_some(p as usize)
        })
        .collect()
}

/// `np.take(x, idx, axis)` for a 1-d `idx`, or `None` for an index out of range.
pub fn take(x: &HostArray, idx: &HostArray, axis: usize) -> Option<HostArray> {
    let shape = x.shape();
    let picks = positions(idx, shape[axis])?;
    let input = read(x);
    let mut out_shape = shape.to_vec();
    out_shape[axis] = picks.len();
    let out: Vec<V> = (0..count(&out_shape))
        .map(|o| {
            let mut at = unravel(o, &out_shape);
            at[axis] = picks[at[axis]];
            input[ravel(&at, shape)]
        })
        .collect();
    Some(build(&out_shape, x.dtype(), &out))
}

/// `np.take_along_axis(x, idx, axis)` for `idx` of `x`'s rank, the other axes
/// broadcast, or `None` for an index out of range.
pub fn take_along_axis(x: &HostArray, idx: &HostArray, axis: usize) -> Option<HostArray> {
    let (xs, is) = (x.shape(), idx.shape());
    let out_shape: Vec<usize> = (0..xs.len())
        .map(|d| if d == axis { is[d] } else { xs[d].max(is[d]) })
        .collect();
    let picks = positions(idx, xs[axis])?;
    let input = read(x);
    let pick_at = |at: &[usize]| -> usize {
        let c: Vec<usize> = at
            .iter()
            .zip(is)
            .map(|(&a, &n)| if n == 1 { 0 } else { a })
            .collect();
        picks[ravel(&c, is)]
    };
    let out: Vec<V> = (0..count(&out_shape))
        .map(|o| {
            let at = unravel(o, &out_shape);
            let mut src: Vec<usize> = at
                .iter()
                .zip(xs)
                .map(|(&a, &n)| if n == 1 { 0 } else { a })
                .collect();
            src[axis] = pick_at(&at);
            input[ravel(&src, xs)]
        })
        .collect();
    Some(build(&out_shape, x.dtype(), &out))
}
