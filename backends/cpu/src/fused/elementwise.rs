//! Elementwise kernels over whole tiles: casts, unary and binary ops (with the scalar
//! forms for a constant operand) and `where`, one tight loop per op with the op's `match`
//! outside the loop. Narrow integers compute in `i64` and are wrapped back to their width
//! after every op, which reproduces NumPy's modular arithmetic exactly.

use tessera_core::program::{wrap_i64, BinaryOp, UnaryOp};
use tessera_core::{DType, Error, Result, Scalar};

use super::tile::Buf;

pub(crate) fn cast(x: &Buf, to: DType) -> Buf {
    macro_rules! each {
        ($f:expr) => {
            match x {
                Buf::B(v) => v
                    .iter()
                    .map(|&b| $f(b as i64 as f64, b as i64, b as u64))
                    .collect(),
                Buf::I(v) => v.iter().map(|&i| $f(i as f64, i, i as u64)).collect(),
                Buf::U(v) => v.iter().map(|&u| $f(u as f64, u as i64, u)).collect(),
                Buf::F32(v) => v
                    .iter()
                    .map(|&f| $f(f as f64, f64_to_i64(f as f64), f64_to_u64(f as f64)))
                    .collect(),
                Buf::F64(v) => v
                    .iter()
                    .map(|&f| $f(f, f64_to_i64(f), f64_to_u64(f)))
                    .collect(),
            }
        };
    }
    match to {
        DType::Bool => Buf::B(match x {
            Buf::B(v) => v.clone(),
            Buf::I(v) => v.iter().map(|&i| i != 0).collect(),
            Buf::U(v) => v.iter().map(|&u| u != 0).collect(),
            Buf::F32(v) => v.iter().map(|&f| f != 0.0).collect(),
            Buf::F64(v) => v.iter().map(|&f| f != 0.0).collect(),
        }),
        DType::U64 => Buf::U(each!(|_f: f64, _i: i64, u: u64| u)),
        DType::F64 => Buf::F64(match x {
            Buf::F32(v) => v.iter().map(|&f| f as f64).collect(),
            _ => each!(|f: f64, _i: i64, _u: u64| f),
        }),
        DType::F32 => Buf::F32(match x {
            Buf::F64(v) => v.iter().map(|&f| f as f32).collect(),
            Buf::F32(v) => v.clone(),
            Buf::I(v) => v.iter().map(|&i| i as f32).collect(),
            Buf::U(v) => v.iter().map(|&u| u as f32).collect(),
            Buf::B(v) => v.iter().map(|&b| b as u8 as f32).collect(),
        }),
        d => Buf::I(each!(|_f: f64, i: i64, _u: u64| wrap_i64(i, d))),
    }
}

/// NumPy-on-x86 style float -> int: truncate toward zero, saturating at the i64 range.
#[inline]
pub(crate) fn f64_to_i64(f: f64) -> i64 {
    f as i64
}

/// Float -> u64: negatives go through i64 and wrap (as NumPy on x86-64 does).
#[inline]
pub(crate) fn f64_to_u64(f: f64) -> u64 {
    if f < 0.0 {
        (f as i64) as u64
    } else {
        f as u64
    }
}

pub(crate) fn unary(op: UnaryOp, x: &Buf, dtype: DType) -> Buf {
    if op.is_predicate() {
        return Buf::B(match x {
            Buf::F64(v) => v.iter().map(|&f| op.apply_f64(f) != 0.0).collect(),
            Buf::F32(v) => v.iter().map(|&f| op.apply_f32(f) != 0.0).collect(),
            Buf::I(v) => v.iter().map(|&i| op.apply_i64(i) != 0).collect(),
            Buf::U(v) => v.iter().map(|&u| op.apply_u64(u) != 0).collect(),
            Buf::B(v) => v
                .iter()
                .map(|&b| match op {
                    UnaryOp::Not => !b,
                    UnaryOp::IsNan | UnaryOp::Signbit => false,
                    _ => true,
                })
                .collect(),
        });
    }
    match x {
        Buf::F64(v) => Buf::F64(match op {
            UnaryOp::Neg => v.iter().map(|&f| -f).collect(),
            UnaryOp::Abs => v.iter().map(|&f| f.abs()).collect(),
            UnaryOp::Sqrt => v.iter().map(|&f| f.sqrt()).collect(),
            _ => v.iter().map(|&f| op.apply_f64(f)).collect(),
        }),
        Buf::F32(v) => Buf::F32(v.iter().map(|&f| op.apply_f32(f)).collect()),
        Buf::I(v) => Buf::I(
            v.iter()
                .map(|&i| wrap_i64(op.apply_i64(i), dtype))
                .collect(),
        ),
        Buf::U(v) => Buf::U(v.iter().map(|&u| op.apply_u64(u)).collect()),
        Buf::B(v) => Buf::B(v.clone()),
    }
}

pub(crate) fn binary(op: BinaryOp, a: &Buf, b: &Buf, dtype: DType) -> Result<Buf> {
    macro_rules! zip {
        ($x:expr, $y:expr, $f:expr) => {
            $x.iter().zip($y.iter()).map(|(&p, &q)| $f(p, q)).collect()
        };
    }
    let cmp = op.is_comparison() || op.is_logical();
    Ok(match (a, b) {
        (Buf::F64(x), Buf::F64(y)) if cmp => Buf::B(zip!(x, y, |p, q| op.apply_f64(p, q) != 0.0)),
        (Buf::F32(x), Buf::F32(y)) if cmp => Buf::B(zip!(x, y, |p: f32, q: f32| op
            .apply_f64(p as f64, q as f64)
            != 0.0)),
        (Buf::I(x), Buf::I(y)) if cmp => Buf::B(zip!(x, y, |p, q| op.apply_i64(p, q) != 0)),
        (Buf::U(x), Buf::U(y)) if cmp => Buf::B(zip!(x, y, |p, q| op.apply_u64(p, q) != 0)),
        (Buf::B(x), Buf::B(y)) => {
            let f = |p: bool, q: bool| op.apply_i64(p as i64, q as i64) != 0;
            Buf::B(zip!(x, y, f))
        }
        (Buf::F64(x), Buf::F64(y)) => Buf::F64(match op {
            BinaryOp::Add => zip!(x, y, |p, q| p + q),
            BinaryOp::Sub => zip!(x, y, |p, q| p - q),
            BinaryOp::Mul => zip!(x, y, |p, q| p * q),
            BinaryOp::Div => zip!(x, y, |p, q| p / q),
            _ => zip!(x, y, |p, q| op.apply_f64(p, q)),
        }),
        (Buf::F32(x), Buf::F32(y)) => Buf::F32(match op {
            BinaryOp::Add => zip!(x, y, |p, q| p + q),
            BinaryOp::Sub => zip!(x, y, |p, q| p - q),
            BinaryOp::Mul => zip!(x, y, |p, q| p * q),
            BinaryOp::Div => zip!(x, y, |p, q| p / q),
            _ => zip!(x, y, |p, q| op.apply_f32(p, q)),
        }),
        (Buf::I(x), Buf::I(y)) => Buf::I(zip!(x, y, |p, q| wrap_i64(op.apply_i64(p, q), dtype))),
        (Buf::U(x), Buf::U(y)) => Buf::U(zip!(x, y, |p, q| op.apply_u64(p, q))),
        _ => {
            return Err(Error::Internal(format!(
                "{}: operands of different compute types",
                op.name()
            )))
        }
    })
}

/// `x op c` (or `c op x` when `scalar_left`) for float arithmetic with a constant: the
/// same values as [`binary`] on a filled tile, without the tile.
pub(crate) fn binary_scalar(
    op: BinaryOp,
    x: &Buf,
    c: Scalar,
    scalar_left: bool,
    dtype: DType,
) -> Result<Buf> {
    macro_rules! arith {
        ($v:expr, $c:expr) => {{
            let c = $c;
            match (op, scalar_left) {
                (BinaryOp::Add, false) => $v.iter().map(|&p| p + c).collect(),
                (BinaryOp::Add, true) => $v.iter().map(|&p| c + p).collect(),
                (BinaryOp::Sub, false) => $v.iter().map(|&p| p - c).collect(),
                (BinaryOp::Sub, true) => $v.iter().map(|&p| c - p).collect(),
                (BinaryOp::Mul, false) => $v.iter().map(|&p| p * c).collect(),
                (BinaryOp::Mul, true) => $v.iter().map(|&p| c * p).collect(),
                (BinaryOp::Div, false) => $v.iter().map(|&p| p / c).collect(),
                (BinaryOp::Div, true) => $v.iter().map(|&p| c / p).collect(),
                _ => {
                    return Err(Error::Internal(format!(
                        "{}: not a scalar arithmetic op",
                        op.name()
                    )))
                }
            }
        }};
    }
    // `scalar_constants` marks only float constants beside a tile of their dtype.
    Ok(match (x, dtype) {
        (Buf::F64(v), DType::F64) => Buf::F64(arith!(v, c.as_f64())),
        (Buf::F32(v), DType::F32) => Buf::F32(arith!(v, c.as_f64() as f32)),
        _ => {
            return Err(Error::Internal(format!(
                "{}: a scalar {dtype} constant beside a tile of another type",
                op.name()
            )))
        }
    })
}

pub(crate) fn select(c: &Buf, a: &Buf, b: &Buf) -> Result<Buf> {
    let Buf::B(c) = c else {
        return Err(Error::Internal("where: condition is not bool".into()));
    };
    macro_rules! sel {
        ($v:ident, $x:expr, $y:expr) => {
            Buf::$v(
                c.iter()
                    .zip($x.iter().zip($y.iter()))
                    .map(|(&k, (&p, &q))| if k { p } else { q })
                    .collect(),
            )
        };
    }
    Ok(match (a, b) {
        (Buf::B(x), Buf::B(y)) => sel!(B, x, y),
        (Buf::I(x), Buf::I(y)) => sel!(I, x, y),
        (Buf::U(x), Buf::U(y)) => sel!(U, x, y),
        (Buf::F32(x), Buf::F32(y)) => sel!(F32, x, y),
        (Buf::F64(x), Buf::F64(y)) => sel!(F64, x, y),
        _ => {
            return Err(Error::Internal(
                "where: branches of different compute types".into(),
            ))
        }
    })
}
