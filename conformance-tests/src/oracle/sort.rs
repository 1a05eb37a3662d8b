//! Sorting from its definition: each lane along the axis ordered by value with a stable
//! comparison sort — bools false before true, integers by value, floats by value with
//! the two zeros equal and every NaN after every number — then reversed for descending.

use std::cmp::Ordering;

use tessera_core::HostArray;

use super::layout::{count, ravel, unravel};
use super::values::{build, read, V};

fn order(a: &V, b: &V) -> Ordering {
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
    let n = shape[axis];
    for p in 0..count(&shape) {
        let at = unravel(p, &shape);
        if at[axis] != 0 {
            continue;
        }
        let positions: Vec<usize> = (0..n)
            .map(|i| {
                let mut c = at.clone();
                c[axis] = i;
                ravel(&c, &shape)
            })
            .collect();
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
