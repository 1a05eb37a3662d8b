//! Data movement from its index definitions, one output element at a time.
//!
//! Every function walks the output's C-order positions, computes the source position
//! from the op's definition (a slice's `start + step * i`, a permutation, a size-1 axis
//! read at 0, an affine map's `start + step * out[axis]`) and copies the value. Slow and
//! plain on purpose: nothing here shares the strided views and runs the executors use.

use tessera_core::program::IndexMap;
use tessera_core::AxisSlice;

use super::values::V;

/// The multi-index of C-order position `flat` in `shape`.
pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for a in (0..shape.len()).rev() {
        let n = shape[a].max(1);
        idx[a] = flat % n;
        flat /= n;
    }
    idx
}

/// The C-order position of `idx` in `shape`.
pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// The number of elements of `shape`.
pub fn count(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The source coordinates `map(out)`: per source axis `start + step * out[out_axis]`, or
/// `start` for an axis no output axis drives.
pub fn map_coords(map: &IndexMap, out: &[usize]) -> Vec<usize> {
    map.axes
        .iter()
        .map(|a| {
            let i = a.out_axis.map_or(0, |o| out[o] as i64);
            (a.start + a.step * i) as usize
        })
        .collect()
}

/// `x[slices]` for `x` of `shape`.
pub fn slice(x: &[V], shape: &[usize], slices: &[AxisSlice]) -> (Vec<V>, Vec<usize>) {
    let out_shape: Vec<usize> = slices.iter().map(|s| s.len).collect();
    let vals = (0..count(&out_shape))
        .map(|p| {
            let o = unravel(p, &out_shape);
            let src: Vec<usize> = o
                .iter()
                .zip(slices)
                .map(|(&i, s)| (s.start as isize + s.step * i as isize) as usize)
                .collect();
            x[ravel(&src, shape)]
        })
        .collect();
    (vals, out_shape)
}

/// Output axis `i` is input axis `perm[i]`.
pub fn transpose(x: &[V], shape: &[usize], perm: &[usize]) -> (Vec<V>, Vec<usize>) {
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let vals = (0..count(&out_shape))
        .map(|p| {
            let o = unravel(p, &out_shape);
            let mut src = vec![0; shape.len()];
            for (i, &a) in perm.iter().enumerate() {
                src[a] = o[i];
            }
            x[ravel(&src, shape)]
        })
        .collect();
    (vals, out_shape)
}

/// Size-1 axes of `shape` repeated to `to` (same rank).
pub fn broadcast(x: &[V], shape: &[usize], to: &[usize]) -> Vec<V> {
    (0..count(to))
        .map(|p| {
            let o = unravel(p, to);
            let src: Vec<usize> = o
                .iter()
                .zip(shape)
                .map(|(&i, &n)| if n == 1 { 0 } else { i })
                .collect();
            x[ravel(&src, shape)]
        })
        .collect()
}

/// Parts of shapes `shapes` joined along `axis`.
pub fn concatenate(parts: &[Vec<V>], shapes: &[Vec<usize>], axis: usize) -> (Vec<V>, Vec<usize>) {
    let mut out_shape = shapes[0].clone();
    out_shape[axis] = shapes.iter().map(|s| s[axis]).sum();
    let vals = (0..count(&out_shape))
        .map(|p| {
            let mut o = unravel(p, &out_shape);
            let mut part = 0;
            while o[axis] >= shapes[part][axis] {
                o[axis] -= shapes[part][axis];
                part += 1;
            }
            parts[part][ravel(&o, &shapes[part])]
        })
        .collect();
    (vals, out_shape)
}

/// The flat C-order positions of every lane along `axis` of `shape`: one list per
/// position of the other axes (in C order), each running along `axis`.
pub fn lanes(shape: &[usize], axis: usize) -> Vec<Vec<usize>> {
    let mut reduced = shape.to_vec();
    reduced[axis] = 1;
    (0..count(&reduced))
        .map(|p| {
            let at = unravel(p, &reduced);
            (0..shape[axis])
                .map(|i| {
                    let mut c = at.clone();
                    c[axis] = i;
                    ravel(&c, shape)
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(n: i128) -> Vec<V> {
        (0..n).map(V::I).collect()
    }

    #[test]
    fn positions_round_trip() {
        let shape = [2, 3, 4];
        for p in 0..24 {
            assert_eq!(ravel(&unravel(p, &shape), &shape), p);
        }
        assert_eq!(unravel(23, &shape), vec![1, 2, 3]);
    }

    #[test]
    fn hand_computed_layouts() {
        // [[0 1 2] [3 4 5]]
        let x = ints(6);
        let (t, s) = transpose(&x, &[2, 3], &[1, 0]);
        assert_eq!(s, vec![3, 2]);
        assert_eq!(
            t,
            vec![V::I(0), V::I(3), V::I(1), V::I(4), V::I(2), V::I(5)]
        );
        let sl = [
            AxisSlice {
                start: 1,
                step: -1,
                len: 2,
            },
            AxisSlice {
                start: 0,
                step: 2,
                len: 2,
            },
        ];
        let (v, s) = slice(&x, &[2, 3], &sl);
        assert_eq!(s, vec![2, 2]);
        assert_eq!(v, vec![V::I(3), V::I(5), V::I(0), V::I(2)]);
        assert_eq!(
            broadcast(&ints(3), &[1, 3], &[2, 3]),
            vec![V::I(0), V::I(1), V::I(2), V::I(0), V::I(1), V::I(2)]
        );
        let (c, s) = concatenate(&[ints(2), ints(4)], &[vec![2, 1], vec![2, 2]], 1);
        assert_eq!(s, vec![2, 3]);
        assert_eq!(
            c,
            vec![V::I(0), V::I(0), V::I(1), V::I(1), V::I(2), V::I(3)]
        );
    }
}
