//! Array creation: ranges, fills, random arrays, from host data.

use tessera_array::{Array, Index, RandomState};
use tessera_core::DType;

use super::inputs::{arr, fam, one, spec};
use crate::case::{Family, Produced};
use crate::cases::domain::{all, describe, floats, integers, numeric};
use crate::compare::Tol;
use crate::gen::{Gen, Values};
use crate::oracle::api::{self as expect};
use crate::oracle::{self};

pub(super) fn creation() -> Vec<Family> {
    vec![
        fam("full", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let value = g.scalar(d, Values::of_variant(v));
            let c = spec(s, g, &shape);
            s.expect(|| vec![oracle::full(&shape, value)]);
            one(
                Array::full(&shape, value, c, Some(s.name()))?,
                Tol::EXACT,
                format!("shape {shape:?}, value {value}"),
            )
        }),
        fam("arange", numeric(), |s, g, d, _v| {
            let n = g.dim() * 3;
            let (start, step) = if d.is_float() {
                (g.unit() * 10.0 - 5.0, g.pick(&[0.5, 0.25, -0.75, 1.5, 3.0]))
            } else if d.kind() == tessera_core::dtype::DTypeKind::UInt {
                (g.below(10) as f64, g.pick(&[1.0, 2.0, 3.0]))
            } else {
                (g.below(21) as f64 - 10.0, g.pick(&[1.0, 2.0, -1.0, -3.0]))
            };
            let stop = start + step * n as f64;
            let c = g.below(n.max(1)) + 1;
            let c = if s.reference { n.max(1) } else { c };
            s.expect(|| vec![expect::arange(start, stop, step, d)]);
            one(
                Array::arange(start, stop, step, d, c, Some(s.name()))?,
                Tol::arithmetic(d),
                format!("arange({start}, {stop}, {step}, {d})"),
            )
        }),
        fam("linspace", vec![DType::F64], |s, g, _d, _v| {
            let num = g.dim() * 3;
            let (start, stop) = (g.unit() * 20.0 - 10.0, g.unit() * 20.0 - 10.0);
            let endpoint = g.chance(0.7);
            let c = spec(s, g, &[num]);
            s.expect(|| vec![expect::linspace(start, stop, num, endpoint)]);
            one(
                Array::linspace(start, stop, num, endpoint, c, Some(s.name()))?,
                Tol::arithmetic(DType::F64),
                format!("linspace({start}, {stop}, {num}, endpoint={endpoint})"),
            )
        }),
        fam("eye", all(), |s, g, d, _v| {
            let n = g.dim();
            let m = if g.chance(0.5) { Some(g.dim()) } else { None };
            let k = g.below(7) as i64 - 3;
            let c = spec(s, g, &[n, m.unwrap_or(n)]);
            s.expect(|| vec![expect::eye(n, m, k, d)]);
            one(
                Array::eye(n, m, k, d, c, Some(s.name()))?,
                Tol::EXACT,
                format!("eye({n}, {m:?}, k={k}, {d})"),
            )
        }),
        fam("random", [floats(), integers()].concat(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let rs = RandomState::new(g.next_u64());
            let c = spec(s, g, &shape);
            let (x, tol) = if d.is_float() {
                if v == 1 {
                    (
                        rs.normal_typed(1.0, 2.0, d, &shape, c, Some(s.name()))?,
                        Tol::transcendental(d),
                    )
                } else {
                    (
                        rs.uniform_typed(-3.0, 5.0, d, &shape, c, Some(s.name()))?,
                        Tol::EXACT,
                    )
                }
            } else {
                let (lo, hi) = Gen::int_range(d);
                let (low, high) = if v == 2 {
                    (
                        lo.max(i64::MIN as i128) as i64,
                        hi.min(i64::MAX as i128) as i64,
                    )
                } else {
                    (
                        lo.max(-20) as i64,
                        lo.max(-20) as i64 + 1 + g.below(40) as i64,
                    )
                };
                (
                    rs.randint(low, high, d, &shape, c, Some(s.name()))?,
                    Tol::EXACT,
                )
            };
            // A strided slice of a random array generates only the kept elements.
            let idx: Vec<Index> = shape
                .iter()
                .map(|_| Index::step(g.pick(&[1, 2, -1, -3])))
                .collect();
            let y = x.slice(&idx)?;
            Ok(Produced {
                out: vec![x.compute()?, y.compute()?],
                tol,
                inputs: format!("{d}{shape:?}, then sliced {idx:?}"),
            })
        }),
        fam("from_host", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![h]);
            one(a, Tol::EXACT, desc)
        }),
        fam("to_backend", all(), |s, g, d, v| {
            // Into the backend from the reference, and back out.
            let shape = g.shape(0, 4);
            let h = g.host(&shape, d, Values::of_variant(v));
            let c = spec(s, g, &shape);
            s.expect(|| vec![h.clone(), h.clone()]);
            let on_ref = Array::from_host(h.clone(), c.clone(), Some("cpu"))?;
            let there = on_ref.to_backend(s.name())?.persist()?;
            let back = Array::from_host(h, c, Some(s.name()))?.to_backend("cpu")?;
            Ok(Produced {
                out: vec![there.compute()?, back.compute()?],
                tol: Tol::EXACT,
                inputs: describe("x", d, &shape, None),
            })
        }),
        fam("persist", all(), |s, g, d, v| {
            let shape = g.shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![expect::index(&h, &[Index::step(-1)]).expect("a full slice")]);
            let p = a.persist()?;
            one(p.slice(&[Index::step(-1)])?, Tol::EXACT, desc)
        }),
    ]
}
