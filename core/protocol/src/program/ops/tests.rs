//! The scalar definitions at the edges of their domains, against NumPy 2.

use super::binary::*;
use super::unary::*;
use super::*;
use crate::dtype::DType;

/// The inverse hyperbolic functions where textbook formulas fail, against values
/// NumPy 2 (glibc) gives: past `f64::MAX / 2`, next to ±1, and at both zeros.
#[test]
fn inverse_hyperbolic_functions_hold_at_the_edges_of_their_domains() {
    let close = |got: f64, want: f64| {
        assert!(
            (got - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
            "{got} vs {want}"
        );
    };
    close(asinh_f64(1e308), 709.889355822726);
    close(asinh_f64(-f64::MAX), -710.4758600739439);
    close(acosh_f64(1e308), 709.889355822726);
    close(atanh_f64(0.999999), 7.254328619247669);
    close(atanh_f64(-0.999999), -7.254328619247669);
    close(atanh_f64(1e-5), 1.0000000000333335e-05);
    close(acosh_f64(1.0 + f64::EPSILON), 2.1073424255447017e-08);
    assert_eq!(atanh_f64(-1.0), f64::NEG_INFINITY);
    assert!(atanh_f64(1.5).is_nan() && acosh_f64(0.5).is_nan());
    for f in [asinh_f64, atanh_f64] {
        assert!(f(-0.0).is_sign_negative() && f(-0.0) == 0.0);
    }
    assert!(sign_f64(-0.0).is_sign_positive());
    assert!(sign_f64(f64::NAN).is_nan());
}

#[test]
fn integer_division_and_modulo_follow_python() {
    assert_eq!(BinaryOp::Div.apply_i64(7, 2), 3);
    assert_eq!(BinaryOp::Div.apply_i64(-7, 2), -4);
    assert_eq!(BinaryOp::Div.apply_i64(7, -2), -4);
    assert_eq!(BinaryOp::Div.apply_i64(7, 0), 0);
    assert_eq!(BinaryOp::Rem.apply_i64(-7, 3), 2);
    assert_eq!(BinaryOp::Rem.apply_i64(7, -3), -2);
    assert_eq!(BinaryOp::Rem.apply_i64(7, 0), 0);
    assert_eq!(BinaryOp::Div.apply_i64(i64::MIN, -1), i64::MIN);
    assert_eq!(BinaryOp::Rem.apply_i64(i64::MIN, -1), 0);
    assert_eq!(py_fmod_f64(-7.0, 3.0), 2.0);
    assert_eq!(py_fmod_f64(7.5, -2.0), -0.5);
    assert!(py_fmod_f64(1.0, 0.0).is_nan());
    // NumPy 2: np.floor_divide, np.remainder.
    assert_eq!(py_floor_div_f64(1.0, 0.1), 9.0);
    assert_eq!(py_fmod_f64(1.0, 0.1), 0.09999999999999995);
    assert_eq!(py_floor_div_f64(6.0, f64::NEG_INFINITY), -1.0);
    assert!(py_floor_div_f64(f64::INFINITY, 3.0).is_nan());
    assert_eq!(py_floor_div_f64(-7.0, 2.0), -4.0);
    assert_eq!(py_floor_div_f64(7.0, -2.0), -4.0);
    assert_eq!(py_floor_div_f64(1.0, 0.0), f64::INFINITY);
    assert!(py_floor_div_f64(0.0, 0.0).is_nan());
    let z = py_floor_div_f64(-0.0, 5.0);
    assert!(z == 0.0 && z.is_sign_negative());
    let z = py_floor_div_f64(0.0, -5.0);
    assert!(z == 0.0 && z.is_sign_negative());
    assert_eq!(py_floor_div_f32(1.0, 0.1), 9.0);
    assert!(py_floor_div_f32(f32::INFINITY, 3.0).is_nan());
}

#[test]
fn powers_wrap_and_handle_negative_exponents() {
    assert_eq!(ipow_i64(3, 4), 81);
    assert_eq!(wrap_i64(ipow_i64(2, 7), DType::I8), -128);
    assert_eq!(ipow_i64(2, -1), 0);
    assert_eq!(ipow_i64(-1, -3), -1);
    assert_eq!(BinaryOp::Pow.apply_u64(2, 63), 1 << 63);
}

#[test]
fn nan_semantics() {
    assert!(BinaryOp::Maximum.apply_f64(f64::NAN, 1.0).is_nan());
    assert_eq!(BinaryOp::Lt.apply_f64(f64::NAN, 1.0), 0.0);
    assert_eq!(BinaryOp::Ne.apply_f64(f64::NAN, f64::NAN), 1.0);
    assert_eq!(UnaryOp::Round.apply_f64(2.5), 2.0);
    assert_eq!(UnaryOp::Round.apply_f64(-0.5), -0.0);
    assert_eq!(UnaryOp::Round.apply_f64(3.5), 4.0);
}

#[test]
fn dtype_rules() {
    assert_eq!(UnaryOp::Sqrt.operand_dtype(DType::I8), Some(DType::F32));
    assert_eq!(UnaryOp::Sqrt.operand_dtype(DType::I32), Some(DType::F64));
    assert_eq!(UnaryOp::Neg.operand_dtype(DType::Bool), None);
    assert_eq!(ReduceOp::Sum.result_dtype(DType::U8), DType::U64);
    assert_eq!(ReduceOp::Sum.result_dtype(DType::Bool), DType::I64);
    assert_eq!(ReduceOp::Max.result_dtype(DType::I8), DType::I8);
}

/// NumPy 2's `floor_divide` and `remainder`, from `tests/scripts/numpy_divmod_golden.py`,
/// compared bit for bit (NaN with NaN, zeros by sign), in float64 and through the
/// float32 definition where the values are exact in float32.
#[test]
fn floor_division_matches_numpy_goldens() {
    let same = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
    let cases: &[(f64, f64, f64, f64)] = &[
        (1.0, 0.1, 9.0, 0.09999999999999995),
        (6.0, f64::NEG_INFINITY, -1.0, f64::NEG_INFINITY),
        (f64::INFINITY, 3.0, f64::NAN, f64::NAN),
        (-7.0, 2.0, -4.0, 1.0),
        (7.0, -2.0, -4.0, -1.0),
        (-0.0, 5.0, -0.0, 0.0),
        (0.0, -5.0, -0.0, -0.0),
        (1.0, 0.0, f64::INFINITY, f64::NAN),
        (0.0, 0.0, f64::NAN, f64::NAN),
        (-6.0, f64::INFINITY, -1.0, f64::INFINITY),
        (6.0, f64::INFINITY, 0.0, 6.0),
        (5.5, -0.5, -11.0, -0.0),
        (-5.5, 0.25, -22.0, 0.0),
        (1e+308, 1e-308, f64::INFINITY, 3.498445546245627e-309),
        (-1e-308, 3.0, -1.0, 3.0),
        (0.7, 0.1, 6.0, 0.09999999999999992),
        (-3.0, f64::NEG_INFINITY, 0.0, -3.0),
        (f64::NAN, 2.0, f64::NAN, f64::NAN),
        (2.0, f64::NAN, f64::NAN, f64::NAN),
        (f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NAN, f64::NAN),
        (123456789.0, 0.001, 123456788999.0, 0.0009999974300393183),
    ];
    for &(a, b, q, r) in cases {
        let (gq, gr) = (
            BinaryOp::FloorDiv.apply_f64(a, b),
            BinaryOp::Rem.apply_f64(a, b),
        );
        assert!(same(gq, q), "{a} // {b}: got {gq}, NumPy {q}");
        assert!(same(gr, r), "{a} % {b}: got {gr}, NumPy {r}");
    }
}

/// `a == (a // b) * b + a % b` up to rounding, the remainder has the sign of `b` and is
/// smaller than `|b|`, and the quotient is integral, on random finite pairs of every
/// magnitude; integers satisfy the identity exactly.
#[test]
fn floor_division_and_remainder_satisfy_the_divmod_identity() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..20_000 {
        let mag = |w: u64| ((w % 2001) as f64 / 100.0 - 10.0).exp2() * 37.0;
        let sign = |w: u64| if w & 1 == 0 { 1.0 } else { -1.0 };
        let (wa, wb) = (next(), next());
        let a = sign(wa) * mag(wa >> 1) * ((wa >> 20) % 1000) as f64 / 997.0;
        let b = sign(wb) * mag(wb >> 1);
        let (q, r) = (py_floor_div_f64(a, b), py_fmod_f64(a, b));
        assert_eq!(q, q.floor(), "{a} // {b} = {q} is not integral");
        assert!(r == 0.0 || (r < 0.0) == (b < 0.0), "{a} % {b} = {r}");
        assert!(r.abs() <= b.abs(), "{a} % {b} = {r}");
        let back = q * b + r;
        assert!(
            (back - a).abs() <= 4.0 * f64::EPSILON * a.abs().max(r.abs()).max(f64::MIN_POSITIVE),
            "{a} != ({a} // {b}) * {b} + {a} % {b} = {back}"
        );
        let (ia, ib) = (
            next() as i64 >> (next() % 60),
            (next() as i64 >> (next() % 62)) | 1,
        );
        let (iq, ir) = (
            BinaryOp::FloorDiv.apply_i64(ia, ib),
            BinaryOp::Rem.apply_i64(ia, ib),
        );
        assert_eq!(iq.wrapping_mul(ib).wrapping_add(ir), ia, "{ia} divmod {ib}");
    }
}

/// The values NumPy 2 gives for the edges of each two-operand float function
/// (`np.logaddexp`, `np.nextafter`, `np.hypot`, `np.copysign`, `np.arctan2`).
#[test]
fn float_functions_match_numpy_at_their_edges() {
    let same = |x: f64, y: f64| (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits();
    let inf = f64::INFINITY;
    let cases: &[(BinaryOp, f64, f64, f64)] = &[
        (BinaryOp::Logaddexp, inf, inf, inf),
        (BinaryOp::Logaddexp, -inf, -inf, -inf),
        (BinaryOp::Logaddexp, inf, -inf, inf),
        (BinaryOp::Logaddexp, 0.0, 0.0, std::f64::consts::LN_2),
        (BinaryOp::Logaddexp, 1000.0, 0.0, 1000.0),
        (BinaryOp::Logaddexp, f64::NAN, 1.0, f64::NAN),
        (BinaryOp::Nextafter, 0.0, -0.0, -0.0),
        (BinaryOp::Nextafter, 0.0, 1.0, 5e-324),
        (BinaryOp::Nextafter, -0.0, -1.0, -5e-324),
        (BinaryOp::Nextafter, 1.0, 2.0, 1.0000000000000002),
        (BinaryOp::Nextafter, 1.0, 0.0, 0.9999999999999999),
        (BinaryOp::Nextafter, f64::MAX, inf, inf),
        (BinaryOp::Nextafter, inf, 0.0, f64::MAX),
        (BinaryOp::Nextafter, 1.0, f64::NAN, f64::NAN),
        (BinaryOp::Hypot, inf, f64::NAN, inf),
        (BinaryOp::Hypot, 1e300, 1e300, 1.4142135623730952e300),
        (BinaryOp::Hypot, 3.0, -4.0, 5.0),
        (BinaryOp::Copysign, 2.0, -0.0, -2.0),
        (BinaryOp::Copysign, f64::NAN, -1.0, -f64::NAN),
        (BinaryOp::Atan2, 0.0, -0.0, std::f64::consts::PI),
        (BinaryOp::Atan2, -0.0, -0.0, -std::f64::consts::PI),
        (BinaryOp::Atan2, -0.0, 1.0, -0.0),
        (BinaryOp::Atan2, inf, inf, std::f64::consts::FRAC_PI_4),
    ];
    for &(op, a, b, want) in cases {
        let got = op.apply_f64(a, b);
        assert!(
            same(got, want),
            "{}({a}, {b}) = {got}, NumPy {want}",
            op.name()
        );
        let got32 = op.apply_f32(a as f32, b as f32);
        let want32 = want as f32;
        // float32 at the same edges, where they are edges there too.
        if a.abs() < 1e30 && b.abs() < 1e30 && want.abs() < 1e30 && op != BinaryOp::Nextafter {
            assert!(
                (got32.is_nan() && want32.is_nan())
                    || (got32 - want32).abs() <= 1e-6 * want32.abs(),
                "{}({a}, {b}) in f32 = {got32}, want {want32}",
                op.name()
            );
        }
    }
    assert_eq!(BinaryOp::Nextafter.apply_f32(1.0, 2.0), 1.0000001);
    assert_eq!(
        BinaryOp::Nextafter.apply_f32(0.0, -1.0).to_bits(),
        (-1e-45f32).to_bits()
    );
}

/// Shifts as NumPy's `npy_lshift`/`npy_rshift` on int64/uint64: counts outside the
/// width shift every bit out (0, or -1 for a negative value shifted right).
#[test]
fn shifts_past_the_width_shift_every_bit_out() {
    assert_eq!(BinaryOp::LeftShift.apply_i64(1, 63), i64::MIN);
    assert_eq!(BinaryOp::LeftShift.apply_i64(1, 64), 0);
    assert_eq!(BinaryOp::LeftShift.apply_i64(5, -1), 0);
    assert_eq!(BinaryOp::RightShift.apply_i64(-8, 1), -4);
    assert_eq!(BinaryOp::RightShift.apply_i64(-8, 64), -1);
    assert_eq!(BinaryOp::RightShift.apply_i64(-8, -3), -1);
    assert_eq!(BinaryOp::RightShift.apply_i64(8, 99), 0);
    assert_eq!(BinaryOp::LeftShift.apply_u64(1, 63), 1 << 63);
    assert_eq!(BinaryOp::LeftShift.apply_u64(1, 64), 0);
    assert_eq!(BinaryOp::RightShift.apply_u64(u64::MAX, 70), 0);
    // Narrow dtypes compute in 64 bits and wrap: int8 1 << 8 is 0, -128 >> 9 is -1.
    assert_eq!(wrap_i64(BinaryOp::LeftShift.apply_i64(1, 8), DType::I8), 0);
    assert_eq!(
        wrap_i64(BinaryOp::LeftShift.apply_i64(-1, 7), DType::I8),
        -128
    );
    assert_eq!(
        wrap_i64(BinaryOp::RightShift.apply_i64(-128, 9), DType::I8),
        -1
    );
    assert_eq!(wrap_i64(UnaryOp::Invert.apply_i64(200), DType::U8), 55);
    assert_eq!(UnaryOp::Invert.apply_i64(0), -1);
}

#[test]
fn binary_dtype_rules() {
    use crate::program::ProgramBuilder;
    let mut pb = ProgramBuilder::new(&[]);
    let dtype_of = |pb: &mut ProgramBuilder, op: BinaryOp, d: DType| {
        let x = pb.constant(crate::Scalar::zero(d));
        pb.binary(op, x, x).map(|n| pb.dtype(n))
    };
    assert_eq!(
        dtype_of(&mut pb, BinaryOp::Atan2, DType::I8).unwrap(),
        DType::F32
    );
    assert_eq!(
        dtype_of(&mut pb, BinaryOp::Hypot, DType::I32).unwrap(),
        DType::F64
    );
    assert_eq!(
        dtype_of(&mut pb, BinaryOp::Logaddexp, DType::F32).unwrap(),
        DType::F32
    );
    assert_eq!(
        dtype_of(&mut pb, BinaryOp::BitAnd, DType::Bool).unwrap(),
        DType::Bool
    );
    assert_eq!(
        dtype_of(&mut pb, BinaryOp::BitXor, DType::U16).unwrap(),
        DType::U16
    );
    assert_eq!(
        dtype_of(&mut pb, BinaryOp::LeftShift, DType::Bool).unwrap(),
        DType::I8
    );
    let err = dtype_of(&mut pb, BinaryOp::BitOr, DType::F64)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bitwise_or") && err.contains("integer"),
        "{err}"
    );
    let x = pb.constant(crate::Scalar::F32(1.0));
    let err = pb.unary(UnaryOp::Invert, x).unwrap_err().to_string();
    assert!(err.contains("invert") && err.contains("integer"), "{err}");
    let b = pb.constant(crate::Scalar::Bool(true));
    let n = pb.unary(UnaryOp::Invert, b).unwrap();
    assert_eq!(pb.dtype(n), DType::Bool);
}
