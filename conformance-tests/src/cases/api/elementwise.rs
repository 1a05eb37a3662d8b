//! Elementwise ops on differently chunked operands: alignment, broadcasting, promotion.

use tessera_core::program::{BinaryOp, UnaryOp};
use tessera_core::{DType, Result, Scalar};

use super::inputs::{arr, broadcast_pair, fam, negative_int, one, tol_for_binary, unsigned};
use crate::case::{Family, Produced};
use crate::cases::domain::{all, numeric};
use crate::compare::Tol;
use crate::oracle::api::{self as expect};
use crate::oracle::{self, ErrorKind};

pub(super) fn elementwise() -> Vec<Family> {
    let mut v = Vec::new();
    for op in BinaryOp::ALL {
        let dtypes = if op.is_arithmetic() { numeric() } else { all() };
        let name = if op == BinaryOp::Div {
            "true_divide"
        } else {
            op.name()
        };
        v.push(fam(name, dtypes, move |s, g, d, v| {
            let (sa, sb) = broadcast_pair(g);
            let (ha, a, da) = arr(s, g, "a", &sa, d, v)?;
            let r = match v {
                0 | 1 => {
                    let e = if v == 1 { g.pick(&DType::ALL) } else { d };
                    let (hb, b, db) = arr(s, g, "b", &sb, e, v)?;
                    s.expect_outcome(|| expect::binary(op, &ha, &hb).map(|r| vec![r]).into());
                    (a.binary(op, &b)?, format!("{da}; {db}"))
                }
                _ => {
                    let k = if g.chance(0.5) {
                        Scalar::F64(g.unit() * 8.0 - 4.0)
                    } else {
                        Scalar::I64(g.below(9) as i64 - 4)
                    };
                    let left = g.chance(0.5);
                    // NumPy 2 (NEP 50): a negative Python int meeting an unsigned array
                    // raises where the op would have to convert it.
                    let folds = op.is_comparison() || op.is_logical() || op == BinaryOp::Div;
                    if negative_int(k) && unsigned(d) && !folds {
                        s.expect_error(ErrorKind::DType);
                    }
                    // A float array, or a float scalar (which makes the result float),
                    // meets a bitwise op: NumPy's TypeError.
                    if op.is_bitwise() && (d.is_float() || matches!(k, Scalar::F64(_))) {
                        s.expect_error(ErrorKind::DType);
                    }
                    (
                        a.binary_scalar(op, k, left)?,
                        format!(
                            "{da}; scalar {k} on the {}",
                            if left { "left" } else { "right" }
                        ),
                    )
                }
            };
            let tol = tol_for_binary(op, r.0.dtype());
            one(r.0, tol, r.1)
        }));
    }
    for op in UnaryOp::ALL {
        let dtypes: Vec<DType> = DType::ALL
            .iter()
            .copied()
            .filter(|&d| op.operand_dtype(d).is_some())
            .collect();
        v.push(fam(op.name(), dtypes, move |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            if let Some(od) = op.operand_dtype(d) {
                s.expect(|| vec![oracle::unary(op, &oracle::cast(&h, od))]);
            }
            let r = a.unary(op)?;
            let tol = match op {
                UnaryOp::Sqrt => Tol::arithmetic(r.dtype()),
                o if o.is_transcendental() => Tol::transcendental(r.dtype()),
                _ => Tol::EXACT,
            };
            one(r, tol, desc)
        }));
    }
    v.push(fam("astype", all(), |s, g, d, v| {
        let shape = g.shape(0, 3);
        let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
        s.expect(|| DType::ALL.iter().map(|&t| oracle::cast(&h, t)).collect());
        let out = DType::ALL
            .iter()
            .map(|&t| a.astype(t).compute())
            .collect::<Result<Vec<_>>>()?;
        Ok(Produced {
            out,
            tol: Tol::EXACT,
            inputs: format!("{desc} to every dtype"),
        })
    }));
    v.push(fam("where", all(), |s, g, d, v| {
        let (sa, sb) = broadcast_pair(g);
        let e = if v == 1 { g.pick(&DType::ALL) } else { d };
        let (hc, c, dc) = arr(s, g, "cond", &sa, DType::Bool, v)?;
        let (ha, a, da) = arr(s, g, "a", &sb, d, v)?;
        let (hb, b, db) = arr(s, g, "b", &sa, e, v)?;
        s.expect_outcome(|| expect::where_(&hc, &ha, &hb).map(|r| vec![r]).into());
        one(c.where_(&a, &b)?, Tol::EXACT, format!("{dc}; {da}; {db}"))
    }));
    v.push(fam("clip", numeric(), |s, g, d, v| {
        let shape = g.shape(0, 4);
        let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
        let lo = g.below(10) as i64 - 5;
        let hi = lo + g.below(10) as i64;
        let (lo, hi) = (
            g.chance(0.8).then_some(Scalar::I64(lo)),
            g.chance(0.8).then_some(Scalar::I64(hi)),
        );
        // NumPy 2 ignores a lower bound below an unsigned dtype's range, and raises
        // for an upper bound below it (`np.clip(uint8, None, -1)`: OverflowError).
        if unsigned(d) && hi.is_some_and(negative_int) {
            s.expect_error(ErrorKind::DType);
        } else {
            let int = |k: Option<Scalar>| match k {
                Some(Scalar::I64(x)) => Some(x),
                _ => None,
            };
            s.expect(|| vec![expect::clip(&h, int(lo), int(hi))]);
        }
        one(
            a.clip(lo, hi)?,
            Tol::EXACT,
            format!("{desc}, clip({lo:?}, {hi:?})"),
        )
    }));
    v
}
