//! Every dtype against the conformance oracle: elementwise ops and reductions computed by
//! the CPU backend on random shapes and irregular chunkings, compared with
//! `tessera_conformance::oracle`, which restates each op from its definition (integers
//! in `i128` wrapped on purpose, float32 computed in f64 and rounded once) and shares no
//! code with the executor — integers of every width, float32 and bool, not only float64
//! (which `arrays.rs` covers against ndarray).

use tessera::program::{BinaryOp, ReduceOp, UnaryOp};
use tessera::{Array, DType, HostArray, Scalar};
use tessera_conformance::compare::{compare, Tol};
use tessera_conformance::oracle;
use tessera_conformance::r#gen::{Gen, Values};

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
            // The pairs each op takes without a cast or an error: the float-only ops on
            // floats, the bitwise ops on integers (and/or/xor also on bool).
            let valid = if op.is_logical() {
                d == DType::Bool
            } else if op.is_float_only() {
                d.is_float()
            } else if op.is_bitwise() {
                !(d.is_float() || (op.is_shift() && d == DType::Bool))
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
                let want = oracle::binary(op, &ha, &hb);
                let t = tol(op.is_transcendental(), d);
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
                let want = oracle::unary(op, &oracle::cast(&h, operand));
                if let Err(m) = compare(&got, &want, tol(op.is_transcendental(), operand)) {
                    panic!("{} on {d}{shape:?} (variant {v}): {m}", op.name());
                }
            }
        }
    }
}

#[test]
fn integer_and_bool_reductions_match_the_oracle() {
    let mut g = Gen::new(23);
    for d in DType::ALL.into_iter().filter(|d| !d.is_float()) {
        for v in 0..3 {
            let shape = g.shape(1, 3);
            let h = g.host(&shape, d, Values::of_variant(v));
            let a = Array::from_host(h.clone(), g.chunks(&shape), Some("cpu")).unwrap();
            let all: Vec<usize> = (0..shape.len()).collect();
            for op in [
                ReduceOp::Sum,
                ReduceOp::Prod,
                ReduceOp::Min,
                ReduceOp::Max,
                ReduceOp::Any,
                ReduceOp::All,
            ] {
                let Ok(want) = oracle::reduce(&h, op, &all) else {
                    // No identity: the API refuses it (checked in `arrays.rs`).
                    continue;
                };
                let want = want.get_flat(0).expect("one value");
                let got = a.reduce(op, None, false).unwrap().compute_scalar().unwrap();
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

/// NEP 50 / NumPy 2 for integer scalars of every magnitude against every integer dtype:
/// comparisons are mathematically exact, true division uses the exact value, logical ops
/// the scalar's truth, arithmetic wraps within the dtype when the scalar fits and is an
/// error when it does not (NumPy 2 raises OverflowError). The rule table is in
/// `tessera::dtype::weak_int_out_of_range`.
#[test]
fn integer_scalars_follow_numpy_2_at_every_magnitude() {
    use tessera::dtype::{int_range, int_value};
    let ints: Vec<DType> = DType::ALL.into_iter().filter(|d| d.is_integer()).collect();
    let mut g = Gen::new(50);
    let mut scalars: Vec<Scalar> = vec![Scalar::U64(u64::MAX), Scalar::I64(i64::MIN)];
    for &d in &ints {
        let (lo, hi) = int_range(d).unwrap();
        for v in [lo - 1, lo, hi, hi + 1, 0, -1] {
            if let Ok(v) = i64::try_from(v) {
                scalars.push(Scalar::I64(v));
            } else if let Ok(v) = u64::try_from(v) {
                scalars.push(Scalar::U64(v));
            }
        }
    }
    for _ in 0..40 {
        let shift = g.below(64) as u32;
        let v = (g.next_u64() as i64) >> shift;
        scalars.push(Scalar::I64(v));
    }
    for &d in &ints {
        let (lo, hi) = int_range(d).unwrap();
        let xs: Vec<i128> = vec![lo, lo + 1, 0, 1, hi - 1, hi];
        let x = Array::from_host(
            HostArray::I64(
                ndarray::ArrayD::from_shape_vec(
                    ndarray::IxDyn(&[xs.len()]),
                    xs.iter().map(|&v| v as i64).collect(),
                )
                .unwrap(),
            )
            .cast(d),
            2,
            Some("cpu"),
        )
        .unwrap();
        // The elements as the dtype holds them (u64::MAX is -1 in the i64 above).
        let held: Vec<i128> = (0..xs.len())
            .map(|i| int_value(&x.compute().unwrap().get_flat(i).unwrap()).unwrap())
            .collect();
        for &s in &scalars {
            let v = int_value(&s).unwrap();
            let fits = (lo..=hi).contains(&v);
            let ctx = format!("{d} with scalar {s}");
            for (op, f) in [
                (BinaryOp::Lt, (|a, b| a < b) as fn(i128, i128) -> bool),
                (BinaryOp::Le, |a, b| a <= b),
                (BinaryOp::Gt, |a, b| a > b),
                (BinaryOp::Ge, |a, b| a >= b),
                (BinaryOp::Eq, |a, b| a == b),
                (BinaryOp::Ne, |a, b| a != b),
            ] {
                for left in [false, true] {
                    let got = x.binary_scalar(op, s, left).unwrap().compute().unwrap();
                    let want: Vec<f64> = held
                        .iter()
                        .map(|&e| f64::from(u8::from(if left { f(v, e) } else { f(e, v) })))
                        .collect();
                    assert_eq!(got.to_f64_vec(), want, "{ctx}: {op:?} left={left}");
                }
            }
            let q = x.binary_scalar(BinaryOp::Div, s, false).unwrap();
            assert_eq!(q.dtype(), DType::F64, "{ctx}");
            let want: Vec<f64> = held.iter().map(|&e| e as f64 / v as f64).collect();
            let got = q.compute().unwrap().to_f64_vec();
            for (a, b) in got.iter().zip(&want) {
                assert!(
                    a == b || (a.is_nan() && b.is_nan()),
                    "{ctx}: / gives {got:?}, want {want:?}"
                );
            }
            let and = x
                .binary_scalar(BinaryOp::And, s, false)
                .unwrap()
                .compute()
                .unwrap();
            let want: Vec<f64> = held
                .iter()
                .map(|&e| f64::from(u8::from(e != 0 && v != 0)))
                .collect();
            assert_eq!(and.to_f64_vec(), want, "{ctx}: logical_and");
            let add = x.binary_scalar(BinaryOp::Add, s, false);
            if fits {
                let got = add.unwrap();
                assert_eq!(got.dtype(), d, "{ctx}");
                let span = hi - lo + 1;
                let want: Vec<f64> = held
                    .iter()
                    .map(|&e| ((e + v - lo).rem_euclid(span) + lo) as f64)
                    .collect();
                assert_eq!(got.compute().unwrap().to_f64_vec(), want, "{ctx}: + wraps");
            } else {
                let e = add.unwrap_err().to_string();
                assert!(
                    e.contains("out of bounds") && e.contains(d.name()),
                    "{ctx}: {e}"
                );
            }
        }
    }
}

#[test]
fn clip_bounds_beyond_the_dtype_follow_numpy_2() {
    let x = Array::arange(0.0, 6.0, 1.0, DType::U8, 4, Some("cpu")).unwrap();
    let all = x.compute().unwrap();
    let c = x
        .clip(Some(Scalar::I64(-5)), Some(Scalar::I64(300)))
        .unwrap();
    assert_eq!(c.compute().unwrap(), all);
    assert_eq!(c.dtype(), DType::U8);
    let c = x
        .clip(Some(Scalar::I64(2)), Some(Scalar::I64(300)))
        .unwrap();
    assert_eq!(
        c.compute().unwrap().to_f64_vec(),
        [2.0, 2.0, 2.0, 3.0, 4.0, 5.0]
    );
    assert!(x.clip(Some(Scalar::I64(300)), None).is_err());
    assert!(x.clip(None, Some(Scalar::I64(-1))).is_err());
}

/// NumPy 2 on integer `arange` with fractional arguments, and bool `nansum` and `matmul`
/// (values from NumPy 2.4).
#[test]
fn arange_nansum_and_matmul_follow_numpy_on_these_dtypes() {
    let cases: [(f64, f64, f64, &[f64]); 5] = [
        (0.5, 5.0, 1.5, &[0.0, 2.0, 4.0]),
        (0.3, 3.2, 0.7, &[0.0, 1.0, 2.0, 3.0, 4.0]),
        (-1.5, 2.0, 0.5, &[-1.0; 7]),
        (2.7, -1.0, -0.6, &[2.0; 7]),
        (0.0, 10.0, 3.0, &[0.0, 3.0, 6.0, 9.0]),
    ];
    for (start, stop, step, want) in cases {
        for d in [DType::I64, DType::I8] {
            let a = Array::arange(start, stop, step, d, 3, Some("cpu")).unwrap();
            assert_eq!(a.dtype(), d);
            assert_eq!(
                a.compute().unwrap().to_f64_vec(),
                want,
                "arange({start}, {stop}, {step}, {d})"
            );
        }
    }
    assert!(Array::arange(-1.5, 2.0, 0.5, DType::U8, 3, Some("cpu")).is_err());
    let b = Array::arange(0.0, 3.0, 1.0, DType::I64, 2, Some("cpu"))
        .unwrap()
        .binary_scalar(BinaryOp::Ne, Scalar::I64(1), false)
        .unwrap(); // [true, false, true]
    let s = b.reduce(ReduceOp::NanSum, None, false).unwrap();
    assert_eq!(s.dtype(), DType::I64);
    assert_eq!(s.compute_f64().unwrap(), 2.0);
    let m = b.reshape(&[3, 1]).unwrap();
    let p = m.matmul(&m.transpose().unwrap()).unwrap();
    assert_eq!(p.dtype(), DType::Bool);
    assert_eq!(
        p.compute().unwrap().to_f64_vec(),
        [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    );
}
