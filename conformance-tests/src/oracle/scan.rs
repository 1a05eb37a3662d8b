//! Cumulative scans from their definition: element `i` along the axis is element `i - 1`
//! of the result combined with element `i` of the input, walked in C order (so the
//! element before is always known), each combination the oracle's own scalar op in its
//! plainest form: integers wrapped to the dtype after each step, `float32` rounded once
//! per step, a NaN winning a max or min, bools or-ed for sum/max and and-ed for prod/min.

use tessera_core::program::{BinaryOp, ScanOp};
use tessera_core::{DType, HostArray};

use super::layout::{count, unravel};
use super::values::{binary, build, read, V};

fn step(op: ScanOp, acc: V, x: V, d: DType) -> V {
    if let (V::B(a), V::B(b)) = (acc, x) {
        return V::B(match op {
            ScanOp::Sum | ScanOp::Max => a || b,
            ScanOp::Prod | ScanOp::Min => a && b,
        });
    }
    let bin = match op {
        ScanOp::Sum => BinaryOp::Add,
        ScanOp::Prod => BinaryOp::Mul,
        ScanOp::Max => BinaryOp::Maximum,
        ScanOp::Min => BinaryOp::Minimum,
    };
    binary(bin, acc, x, d)
}

/// The inclusive scan `op` of `x` along `axis`, in `x`'s dtype.
pub fn scan(x: &HostArray, op: ScanOp, axis: usize) -> HostArray {
    let shape = x.shape().to_vec();
    let d = x.dtype();
    let input = read(x);
    let stride: usize = shape[axis + 1..].iter().product();
    let mut out: Vec<V> = Vec::with_capacity(input.len());
    for p in 0..count(&shape) {
        let v = if unravel(p, &shape)[axis] == 0 {
            input[p]
        } else {
            step(op, out[p - stride], input[p], d)
        };
        out.push(v);
    }
    build(&shape, d, &out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    #[test]
    fn the_definition_on_small_inputs() {
        let x =
            HostArray::U8(ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![200, 100, 60, 7]).unwrap());
        let s = scan(&x, ScanOp::Sum, 0);
        assert_eq!(
            s,
            HostArray::U8(ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![200, 100, 4, 107]).unwrap())
        );
        let f =
            HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[3]), vec![2.0, f64::NAN, 1.0]).unwrap());
        let m = scan(&f, ScanOp::Min, 0).to_f64_vec();
        assert_eq!(m[0], 2.0);
        assert!(m[1].is_nan() && m[2].is_nan());
    }
}
