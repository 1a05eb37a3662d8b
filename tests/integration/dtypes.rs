//! Every dtype against a naive reference: elementwise ops and reductions computed by the
//! CPU backend on random shapes and irregular chunkings, compared with a loop over the
//! scalar definitions (`apply_*`, wrapping casts) — integers of every width, float32 and
//! bool, not only float64 (which `arrays.rs` covers against ndarray).

use tessera::dtype::DTypeKind;
use tessera::program::{wrap_i64, BinaryOp, ReduceOp, UnaryOp};
use tessera::{Array, DType, HostArray, Scalar};
use tessera_conformance::compare::{compare, Tol};
use tessera_conformance::gen::{Gen, Values};

/// `op` on two scalars of dtype `d` by its definition.
fn naive_binary(op: BinaryOp, d: DType, a: Scalar, b: Scalar) -> Scalar {
    let out = op.result_dtype(d);
    match d.kind() {
        DTypeKind::Float if d == DType::F32 => {
            Scalar::F32(op.apply_f32(a.as_f64() as f32, b.as_f64() as f32)).cast(out)
        }
        DTypeKind::Float => Scalar::F64(op.apply_f64(a.as_f64(), b.as_f64())).cast(out),
        DTypeKind::UInt => Scalar::U64(op.apply_u64(a.as_u64(), b.as_u64())).cast(out),
        DTypeKind::Int | DTypeKind::Bool => {
            let v = op.apply_i64(a.as_i64(), b.as_i64());
            if out == DType::Bool {
                Scalar::Bool(v != 0)
            } else {
                Scalar::from_i64_wrapping(wrap_i64(v, d), d)
            }
        }
    }
}

/// `op` on one scalar already of its operand dtype `d`.
fn naive_unary(op: UnaryOp, d: DType, x: Scalar) -> Scalar {
    let out = op.result_dtype(d);
    match d.kind() {
        DTypeKind::Float if d == DType::F32 => {
            Scalar::F32(op.apply_f32(x.as_f64() as f32)).cast(out)
        }
        DTypeKind::Float => Scalar::F64(op.apply_f64(x.as_f64())).cast(out),
        DTypeKind::UInt => Scalar::U64(op.apply_u64(x.as_u64())).cast(out),
        DTypeKind::Int | DTypeKind::Bool => {
            let v = op.apply_i64(x.as_i64());
            if out == DType::Bool {
                Scalar::Bool(v != 0)
            } else {
                Scalar::from_i64_wrapping(wrap_i64(v, d), d)
            }
        }
    }
}

/// A host array of `dtype` and `shape` from scalars.
fn host_from(shape: &[usize], dtype: DType, vals: &[Scalar]) -> HostArray {
    let mut h = HostArray::full(shape, Scalar::zero(dtype), dtype);
    tessera::dispatch_host!(&mut h, a => {
        for (slot, v) in a.iter_mut().zip(vals) {
            *slot = tessera::Element::from_scalar(*v);
        }
    });
    h
}

fn scalars(h: &HostArray) -> Vec<Scalar> {
    (0..h.len()).map(|i| h.get_flat(i).unwrap()).collect()
}

fn tol(op_is_transcendental: bool, d: DType) -> Tol {
    if op_is_transcendental {
        Tol::transcendental(d)
    } else {
        Tol::EXACT
    }
}

#[test]
fn binary_ops_match_their_definition_for_every_dtype() {
    let mut g = Gen::new(21);
    for d in DType::ALL {
        for op in BinaryOp::ALL {
            let valid = if op.is_logical() {
                d == DType::Bool
            } else {
                !(op.is_arithmetic() && d == DType::Bool)
            };
            if !valid {
                continue;
            }
            for v in 0..3 {
                let shape = g.shape(0, 3);
                let values = Values::of_variant(v);
                let (ha, hb) = (g.host(&shape, d, values), g.host(&shape, d, values));
                let a = Array::from_host(ha.clone(), g.chunks(&shape), Some("cpu")).unwrap();
                let b = Array::from_host(hb.clone(), g.chunks(&shape), Some("cpu")).unwrap();
                // `/` on integers is true division; the integer `divide` op is `//`.
                let got = if op == BinaryOp::Div && !d.is_float() {
                    a.floor_div(&b)
                } else {
                    a.binary(op, &b)
                }
                .unwrap()
                .compute()
                .unwrap();
                let want: Vec<Scalar> = scalars(&ha)
                    .into_iter()
                    .zip(scalars(&hb))
                    .map(|(x, y)| naive_binary(op, d, x, y))
                    .collect();
                let want = host_from(&shape, op.result_dtype(d), &want);
                let t = tol(op == BinaryOp::Pow, d);
                if let Err(m) = compare(&got, &want, t) {
                    panic!("{} on {d}{shape:?} (variant {v}): {m}", op.name());
                }
            }
        }
    }
}

#[test]
fn unary_ops_match_their_definition_for_every_dtype() {
    let mut g = Gen::new(22);
    for d in DType::ALL {
        for op in UnaryOp::ALL {
            let Some(operand) = op.operand_dtype(d) else {
                continue;
            };
            for v in 0..3 {
                let shape = g.shape(0, 3);
                let h = g.host(&shape, d, Values::of_variant(v));
                let a = Array::from_host(h.clone(), g.chunks(&shape), Some("cpu")).unwrap();
                let got = a.unary(op).unwrap().compute().unwrap();
                let want: Vec<Scalar> = scalars(&h)
                    .into_iter()
                    .map(|x| naive_unary(op, operand, x.cast(operand)))
                    .collect();
                let want = host_from(&shape, op.result_dtype(operand), &want);
                if let Err(m) = compare(&got, &want, tol(op.is_transcendental(), operand)) {
                    panic!("{} on {d}{shape:?} (variant {v}): {m}", op.name());
                }
            }
        }
    }
}

#[test]
fn integer_and_bool_reductions_match_a_wrapping_loop() {
    let mut g = Gen::new(23);
    for d in DType::ALL.into_iter().filter(|d| !d.is_float()) {
        for v in 0..3 {
            let shape = g.shape(1, 3);
            let h = g.host(&shape, d, Values::of_variant(v));
            let a = Array::from_host(h.clone(), g.chunks(&shape), Some("cpu")).unwrap();
            let xs = scalars(&h);
            for op in [
                ReduceOp::Sum,
                ReduceOp::Prod,
                ReduceOp::Min,
                ReduceOp::Max,
                ReduceOp::Any,
                ReduceOp::All,
            ] {
                if xs.is_empty() && !op.has_identity() {
                    continue;
                }
                let rd = op.result_dtype(d);
                let got = a.reduce(op, None, false).unwrap().compute_scalar().unwrap();
                let fold = |f: fn(BinaryOp, DType, Scalar, Scalar) -> Scalar, bop, init: Scalar| {
                    xs.iter().fold(init, |acc, x| f(bop, rd, acc, x.cast(rd)))
                };
                let want = match op {
                    ReduceOp::Sum => fold(naive_binary, BinaryOp::Add, Scalar::zero(rd)),
                    ReduceOp::Prod => fold(naive_binary, BinaryOp::Mul, Scalar::one(rd)),
                    ReduceOp::Min => xs
                        .iter()
                        .skip(1)
                        .fold(xs[0], |m, x| naive_binary(BinaryOp::Minimum, d, m, *x)),
                    ReduceOp::Max => xs
                        .iter()
                        .skip(1)
                        .fold(xs[0], |m, x| naive_binary(BinaryOp::Maximum, d, m, *x)),
                    ReduceOp::Any => Scalar::Bool(xs.iter().any(|x| x.as_bool())),
                    _ => Scalar::Bool(xs.iter().all(|x| x.as_bool())),
                };
                assert_eq!(got, want, "{} of {d}{shape:?} (variant {v})", op.name());
            }
        }
    }
}

/// NumPy 2: `floor`, `ceil` and `trunc` of integer and bool arrays keep the dtype (an
/// integer is its own floor), `abs` of bool is bool; `-bool` and `round(bool)` (float16
/// in NumPy, a dtype tessera lacks) are refused.
#[test]
fn floor_ceil_trunc_keep_integer_and_bool_dtypes_as_numpy_2() {
    let ints = Array::arange(-3.0, 4.0, 1.0, DType::I8, 3, Some("cpu")).unwrap();
    let floats = ints
        .astype(DType::F64)
        .binary_scalar(BinaryOp::Div, Scalar::F64(2.0), false)
        .unwrap();
    let bools = ints
        .binary_scalar(BinaryOp::Gt, Scalar::I64(0), false)
        .unwrap();
    for op in [UnaryOp::Floor, UnaryOp::Ceil, UnaryOp::Trunc] {
        for backend in ["cpu", "sparse"] {
            let x = ints.to_backend(backend).unwrap().unary(op).unwrap();
            assert_eq!(x.dtype(), DType::I8, "{op:?} {backend}");
            assert_eq!(
                x.compute().unwrap(),
                ints.compute().unwrap(),
                "{op:?} {backend}"
            );
            let b = bools.to_backend(backend).unwrap().unary(op).unwrap();
            assert_eq!(b.dtype(), DType::Bool, "{op:?} {backend}");
            assert_eq!(
                b.compute().unwrap(),
                bools.compute().unwrap(),
                "{op:?} {backend}"
            );
        }
    }
    // On -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5.
    let f = |op| floats.unary(op).unwrap().compute().unwrap().to_f64_vec();
    assert_eq!(f(UnaryOp::Floor), [-2.0, -1.0, -1.0, 0.0, 0.0, 1.0, 1.0]);
    assert_eq!(f(UnaryOp::Ceil), [-1.0, -1.0, -0.0, 0.0, 1.0, 1.0, 2.0]);
    assert_eq!(f(UnaryOp::Trunc), [-1.0, -1.0, -0.0, 0.0, 0.0, 1.0, 1.0]);
    let a = bools.unary(UnaryOp::Abs).unwrap();
    assert_eq!(a.dtype(), DType::Bool);
    assert_eq!(a.compute().unwrap(), bools.compute().unwrap());
    assert!(bools.unary(UnaryOp::Neg).is_err());
    assert!(bools.unary(UnaryOp::Round).is_err());
}
