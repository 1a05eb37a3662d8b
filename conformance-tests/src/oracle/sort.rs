//! Sorting from its definition: each lane along the axis ordered by value with a stable
//! comparison sort — bools false before true, integers by value, floats by value with
//! the two zeros equal and every NaN after every number — then reversed for descending.
//! `argsort` is the same stable sort of the positions; descending is the Array API's
//! definition read off the reversed lane, so equal elements keep their order.

use std::cmp::Ordering;

use tessera_core::HostArray;

use super::layout::lanes;
use super::values::{build, read, V};

/// NumPy's sort order of two values of one dtype: NaN last, the two zeros equal.
pub fn order(a: &V, b: &V) -> Ordering {
    match (a, b) {
        (V::B(x), V::B(y)) => x.cmp(y),
        (V::I(x), V::I(y)) => x.cmp(y),
        (V::F(x), V::F(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        },
        _ => Ordering::Equal,
    }
}

/// `x` sorted along `axis` (ascending, NaN last; `descending`: reversed).
pub fn sort(x: &HostArray, axis: usize, descending: bool) -> HostArray {
    let shape = x.shape().to_vec();
    let input = read(x);
    let mut out = input.clone();
    for positions in lanes(&shape, axis) {
        let mut lane: Vec<V> = positions.iter().map(|&q| input[q]).collect();
        lane.sort_by(order);
        if descending {
            lane.reverse();
        }
        for (&q, v) in positions.iter().zip(lane) {
            out[q] = v;
        }
    }
    build(&shape, x.dtype(), &out)
}

/// The positions that sort `x` along `axis` (stable), as `int64`: ascending (NaN last),
/// or `descending` (NaN first, equal elements in their order).
pub fn argsort(x: &HostArray, axis: usize, descending: bool) -> HostArray {
    let shape = x.shape().to_vec();
    let input = read(x);
    let mut out = vec![V::I(0); input.len()];
    let n = shape[axis];
    for positions in lanes(&shape, axis) {
        let mut order: Vec<usize> = (0..n).collect();
        if descending {
            // Sort the reversed lane ascending, stably; read it back from the end.
            order.sort_by(|&a, &b| order_of(&input, &positions, n - 1 - a, n - 1 - b));
            order = order.into_iter().rev().map(|i| n - 1 - i).collect();
        } else {
            order.sort_by(|&a, &b| order_of(&input, &positions, a, b));
        }
        for (&q, i) in positions.iter().zip(order) {
            out[q] = V::I(i as i128);
        }
    }
    build(&shape, tessera_core::DType::I64, &out)
}

fn order_of(input: &[V], positions: &[usize], a: usize, b: usize) -> Ordering {
    order(&input[positions[a]], &input[positions[b]])
}
