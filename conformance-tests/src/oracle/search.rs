//! `searchsorted` and `isin` from their definitions, value by value over the whole
//! sorted array: the insertion position is the count of elements ordered before the
//! value (left) or not after it (right) in NumPy's sort order; membership is `==` with
//! some element, both sides cast to their common dtype first.

use std::cmp::Ordering;

use tessera_core::dtype::promote;
use tessera_core::{DType, HostArray};

use super::sort::order;
use super::values::{build, cast, read, V};

fn common(a: &HostArray, b: &HostArray) -> (Vec<V>, Vec<V>, DType) {
    let d = promote(a.dtype(), b.dtype());
    let conv = |h: &HostArray| read(h).into_iter().map(|v| cast(v, d)).collect::<Vec<V>>();
    (conv(a), conv(b), d)
}

/// `np.searchsorted(sorted, values, side)` with `right` for `side="right"`.
pub fn searchsorted(sorted: &HostArray, values: &HostArray, right: bool) -> HostArray {
    let (s, v, _) = common(sorted, values);
    let out: Vec<V> = v
        .iter()
        .map(|x| {
            let n = s
                .iter()
                .filter(|e| match order(e, x) {
                    Ordering::Less => true,
                    Ordering::Equal => right,
                    Ordering::Greater => false,
                })
                .count();
            V::I(n as i128)
        })
        .collect();
    build(values.shape(), DType::I64, &out)
}

/// `np.isin(x, test, invert=invert)`.
pub fn isin(x: &HostArray, test: &HostArray, invert: bool) -> HostArray {
    let (xs, ts, _) = common(x, test);
    let out: Vec<V> = xs
        .iter()
        .map(|a| V::B(ts.iter().any(|b| a == b) != invert))
        .collect();
    build(x.shape(), DType::Bool, &out)
}
