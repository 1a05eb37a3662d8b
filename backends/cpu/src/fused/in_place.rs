//! Float arithmetic into an operand's own tile buffer, for operands no later node reads.
//!
//! The executor evaluates a program node by node over a tile; a node that made a fresh
//! buffer for every result allocated, and the allocator zeroed, one tile per node per
//! tile. Where an operand dies at a `+ - * /` (the generated `x` in `x + 1`, one side of
//! `x + x.T`), the result overwrites it instead: the same values, no allocation, one
//! stream over memory instead of two. The ops here give the same bits as the out-of-place
//! ones in `exec` (the same IEEE operation on the same operands, in the same order).

use tessera_core::program::{BinaryOp, Program};

use super::tile::Buf;

/// For each node, the last node that reads it; `usize::MAX` for a program output (read
/// after the tile), and the node itself for a node nothing reads.
pub(crate) fn last_uses(program: &Program) -> Vec<usize> {
    let mut last: Vec<usize> = (0..program.nodes.len()).collect();
    for (i, node) in program.nodes.iter().enumerate() {
        for k in node.operands() {
            last[k] = i;
        }
    }
    for o in &program.outputs {
        last[o.node] = usize::MAX;
    }
    last
}

/// `x op y` into `x` (`x` is the left operand), for float tiles of one type and the four
/// arithmetic ops; gives `x` back unchanged when there is no in-place form.
pub(crate) fn binary(op: BinaryOp, x: Buf, y: &Buf) -> Result<Buf, Buf> {
    macro_rules! go {
        ($x:ident, $y:ident) => {{
            let pairs = $x.iter_mut().zip($y.iter());
            match op {
                BinaryOp::Add => pairs.for_each(|(p, &q)| *p += q),
                BinaryOp::Sub => pairs.for_each(|(p, &q)| *p -= q),
                BinaryOp::Mul => pairs.for_each(|(p, &q)| *p *= q),
                BinaryOp::Div => pairs.for_each(|(p, &q)| *p /= q),
                _ => unreachable!("checked arithmetic"),
            }
        }};
    }
    if !is_arithmetic(op) {
        return Err(x);
    }
    match (x, y) {
        (Buf::F64(mut x), Buf::F64(y)) if x.len() == y.len() => {
            go!(x, y);
            Ok(Buf::F64(x))
        }
        (Buf::F32(mut x), Buf::F32(y)) if x.len() == y.len() => {
            go!(x, y);
            Ok(Buf::F32(x))
        }
        (x, _) => Err(x),
    }
}

/// `x op c` (or `c op x` when `scalar_left`) into `x`, for a float tile and a constant
/// already in its type; gives `x` back when there is no in-place form.
pub(crate) fn scalar(op: BinaryOp, x: Buf, c: f64, scalar_left: bool) -> Result<Buf, Buf> {
    macro_rules! go {
        ($x:ident, $c:expr) => {{
            let c = $c;
            let v = $x.iter_mut();
            match (op, scalar_left) {
                (BinaryOp::Add, false) => v.for_each(|p| *p += c),
                (BinaryOp::Add, true) => v.for_each(|p| *p += c), // commutative: the same bits
                (BinaryOp::Sub, false) => v.for_each(|p| *p -= c),
                (BinaryOp::Sub, true) => v.for_each(|p| *p = c - *p),
                (BinaryOp::Mul, false) => v.for_each(|p| *p *= c),
                (BinaryOp::Mul, true) => v.for_each(|p| *p *= c),
                (BinaryOp::Div, false) => v.for_each(|p| *p /= c),
                (BinaryOp::Div, true) => v.for_each(|p| *p = c / *p),
                _ => unreachable!("checked arithmetic"),
            }
        }};
    }
    if !is_arithmetic(op) {
        return Err(x);
    }
    match x {
        Buf::F64(mut x) => {
            go!(x, c);
            Ok(Buf::F64(x))
        }
        Buf::F32(mut x) => {
            go!(x, c as f32);
            Ok(Buf::F32(x))
        }
        x => Err(x),
    }
}

fn is_arithmetic(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
    )
}

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, IxDyn};
    use tessera_core::program::{IndexMap, ProgramBuilder};
    use tessera_core::{DType, HostArray, Scalar};

    use super::*;
    use crate::fused::run;

    /// Results of a chain whose tiles die at different nodes match the element-wise
    /// definition bit for bit, and a tile read again later is not overwritten early.
    #[test]
    fn dying_tiles_take_results_and_live_ones_do_not() {
        let n = 5000;
        let xs: Vec<f64> = (0..n)
            .map(|i| (i as f64 * 0.37).sin() * 3.0 + 0.5)
            .collect();
        for dtype in [DType::F64, DType::F32] {
            let mut pb = ProgramBuilder::new(&[n]);
            let x = pb.input(0, dtype, IndexMap::identity(&[n]));
            let c = pb.constant(Scalar::F64(1.5).cast(dtype));
            let a = pb.binary(BinaryOp::Add, x, c).unwrap(); // x lives on
            let b = pb.binary(BinaryOp::Mul, a, x).unwrap(); // x dies; a lives on
            let d = pb.binary(BinaryOp::Sub, c, b).unwrap(); // b dies (scalar left)
            let e = pb.binary(BinaryOp::Div, d, a).unwrap(); // d dies; a is an output
            let program = pb.finish(vec![(e, None), (a, None)]).unwrap();
            assert_eq!(
                last_uses(&program),
                vec![3, 4, usize::MAX, 4, 5, usize::MAX]
            );
            let host = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[n]), xs.clone()).unwrap())
                .cast(dtype);
            let out = run(&program, &[&host]).unwrap();
            let (got_e, got_a) = (out[0].to_f64_vec(), out[1].to_f64_vec());
            for (i, &x) in host.to_f64_vec().iter().enumerate() {
                let (want_e, want_a) = if dtype == DType::F64 {
                    let a = x + 1.5;
                    ((1.5 - a * x) / a, a)
                } else {
                    let (x, c) = (x as f32, 1.5f32);
                    let a = x + c;
                    (((c - a * x) / a) as f64, a as f64)
                };
                assert_eq!(got_e[i].to_bits(), want_e.to_bits(), "{dtype} e[{i}]");
                assert_eq!(got_a[i].to_bits(), want_a.to_bits(), "{dtype} a[{i}]");
            }
        }
    }

    /// Ops without an in-place form give the tile back untouched.
    #[test]
    fn other_ops_give_the_tile_back() {
        let x = Buf::F64(vec![1.0, 2.0]);
        let y = Buf::F64(vec![3.0, 4.0]);
        let back = binary(BinaryOp::Maximum, x, &y).unwrap_err();
        assert!(matches!(back, Buf::F64(v) if v == vec![1.0, 2.0]));
        let back = scalar(BinaryOp::Pow, Buf::F32(vec![2.0]), 3.0, false).unwrap_err();
        assert!(matches!(back, Buf::F32(v) if v == vec![2.0]));
        let back = binary(BinaryOp::Add, Buf::I(vec![1]), &Buf::I(vec![2])).unwrap_err();
        assert!(matches!(back, Buf::I(v) if v == vec![1]));
    }
}
