//! Structural ops: reshape, transpose, concatenate, stack, rechunk, pad, and the like.

use tessera_array::Array;
use tessera_core::chunks::numel;
use tessera_core::DType;

use super::inputs::{arr, fam, one};
use crate::case::Family;
use crate::cases::domain::all;
use crate::compare::Tol;
use crate::oracle::api::{self as expect};
use crate::oracle::{self};

pub(super) fn structure() -> Vec<Family> {
    vec![
        fam("permute_dims", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let perm = g.permutation(shape.len());
            s.expect(|| vec![oracle::transpose(&h, &perm)]);
            one(
                a.permute_dims(&perm)?,
                Tol::EXACT,
                format!("{desc}, perm {perm:?}"),
            )
        }),
        fam("reshape", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let n = numel(&shape);
            let mut to: Vec<i64> = if n == 0 {
                vec![0, g.below(3) as i64]
            } else {
                let k = g.pick(&(1..=n).filter(|k| n.is_multiple_of(*k)).collect::<Vec<_>>());
                vec![k as i64, (n / k) as i64]
            };
            if n > 0 && g.chance(0.4) {
                to[g.below(2)] = -1;
            }
            if g.chance(0.3) {
                to.insert(g.below(3), 1);
            }
            s.expect(|| {
                // One -1 is the size the others leave.
                let known: usize = to
                    .iter()
                    .filter(|&&k| k >= 0)
                    .map(|&k| k as usize)
                    .product();
                let dims: Vec<usize> = to
                    .iter()
                    .map(|&k| if k < 0 { n / known.max(1) } else { k as usize })
                    .collect();
                vec![oracle::reshape(&h, &dims)]
            });
            one(a.reshape(&to)?, Tol::EXACT, format!("{desc}, to {to:?}"))
        }),
        fam("broadcast_to", all(), |s, g, d, v| {
            let to = g.shape(0, 4);
            let drop = g.below(to.len() + 1);
            let shape: Vec<usize> = to[drop..]
                .iter()
                .map(|&n| if g.chance(0.5) { 1 } else { n })
                .collect();
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![expect::stretch(&h, d, &to)]);
            one(
                a.broadcast_to(&to)?,
                Tol::EXACT,
                format!("{desc}, to {to:?}"),
            )
        }),
        fam("concatenate", all(), |s, g, d, v| {
            let base = g.shape(1, 4);
            let axis = g.below(base.len());
            let mut parts = Vec::new();
            let mut hosts = Vec::new();
            let mut words = Vec::new();
            for i in 0..1 + g.below(3) {
                let mut sh = base.clone();
                sh[axis] = g.dim();
                let e = if v == 1 { g.pick(&DType::ALL) } else { d };
                let (h, a, desc) = arr(s, g, &format!("part {i}"), &sh, e, v)?;
                parts.push(a);
                hosts.push(h);
                words.push(desc);
            }
            s.expect(|| vec![expect::concatenate(&hosts, axis)]);
            let refs: Vec<&Array> = parts.iter().collect();
            one(
                Array::concatenate(&refs, axis)?,
                Tol::EXACT,
                format!("{}; axis {axis}", words.join("; ")),
            )
        }),
        fam("stack", all(), |s, g, d, v| {
            let shape = g.shape(0, 3);
            let axis = g.below(shape.len() + 1);
            let mut parts = Vec::new();
            let mut hosts = Vec::new();
            let mut words = Vec::new();
            for i in 0..1 + g.below(3) {
                let (h, a, desc) = arr(s, g, &format!("part {i}"), &shape, d, v)?;
                parts.push(a);
                hosts.push(h);
                words.push(desc);
            }
            s.expect(|| vec![expect::stack(&hosts, axis)]);
            let refs: Vec<&Array> = parts.iter().collect();
            one(
                Array::stack(&refs, axis)?,
                Tol::EXACT,
                format!("{}; axis {axis}", words.join("; ")),
            )
        }),
        fam("rechunk", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            s.expect(|| vec![h.clone()]);
            let to = g.chunks(&shape);
            let r = a.rechunk(to.clone())?;
            if r.chunks() != &to {
                return Err(tessera_core::Error::Internal(format!(
                    "rechunk to {:?} produced chunks {:?}",
                    to.sizes(),
                    r.chunks().sizes()
                )));
            }
            one(r, Tol::EXACT, format!("{desc}, to {:?}", to.sizes()))
        }),
        fam("squeeze", all(), |s, g, d, v| {
            let shape: Vec<usize> = g
                .shape(0, 4)
                .into_iter()
                .map(|n| if g.chance(0.5) { 1 } else { n })
                .collect();
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let ones: Vec<usize> = (0..shape.len())
                .filter(|&i| shape[i] == 1 && g.chance(0.6))
                .collect();
            let axes = if g.chance(0.3) {
                None
            } else {
                Some(ones.as_slice())
            };
            s.expect(|| {
                let keep: Vec<usize> = (0..shape.len())
                    .filter(|i| match axes {
                        None => shape[*i] != 1,
                        Some(ax) => !ax.contains(i),
                    })
                    .map(|i| shape[i])
                    .collect();
                vec![oracle::reshape(&h, &keep)]
            });
            one(
                a.squeeze(axes)?,
                Tol::EXACT,
                format!("{desc}, axes {axes:?}"),
            )
        }),
        fam("expand_dims", all(), |s, g, d, v| {
            let shape = g.shape(0, 3);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = g.below(shape.len() + 1);
            s.expect(|| {
                let mut to = shape.clone();
                to.insert(axis, 1);
                vec![oracle::reshape(&h, &to)]
            });
            one(
                a.expand_dims(axis)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}"),
            )
        }),
    ]
}
