//! Slicing and gathers: basic indexing, `take`, `take_along_axis`, fancy and boolean
//! indices reading only the chunks they touch.

use tessera_array::Index;
use tessera_core::chunks::numel;

use super::inputs::{arr, arr_with, fam, index_array, index_values, one, random_slice};
use crate::case::{Family, Produced};
use crate::cases::domain::all;
use crate::compare::Tol;
use crate::oracle::api::{self as expect};
use crate::oracle::{ErrorKind, Expect};

pub(super) fn indexing() -> Vec<Family> {
    vec![
        fam("slice", all(), |s, g, d, v| {
            let shape = g.shape(0, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let idx: Vec<Index> = shape.iter().map(|&n| random_slice(g, n)).collect();
            let first = a.slice(&idx)?;
            // A slice of a slice composes into one view.
            let idx2: Vec<Index> = first.shape().iter().map(|&n| random_slice(g, n)).collect();
            s.expect(|| {
                let once = expect::index(&h, &idx).expect("slices never fail");
                let twice = expect::index(&once, &idx2).expect("slices never fail");
                vec![once, twice]
            });
            Ok(Produced {
                out: vec![first.compute()?, first.slice(&idx2)?.compute()?],
                tol: Tol::EXACT,
                inputs: format!("{desc}, x{idx:?}, then {idx2:?}"),
            })
        }),
        fam("index", all(), |s, g, d, v| {
            let shape = g.nonempty_shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let mut idx = Vec::new();
            for &n in &shape {
                if g.chance(0.3) {
                    idx.push(Index::NewAxis);
                }
                idx.push(if g.chance(0.5) {
                    let i = g.below(n) as i64;
                    Index::At(if g.chance(0.5) { i - n as i64 } else { i })
                } else {
                    random_slice(g, n)
                });
            }
            if g.chance(0.3) {
                let at = g.below(idx.len() + 1);
                idx.truncate(at);
                idx.push(Index::Ellipsis);
            }
            s.expect(|| vec![expect::index(&h, &idx).expect("in-range positions")]);
            one(a.slice(&idx)?, Tol::EXACT, format!("{desc}, x{idx:?}"))
        }),
    ]
}

/// `argsort`, `take` and `take_along_axis` over irregular chunks: per-block argsorts
/// merged with their indices, and gathers that read the blocks of a lane the indices
/// touch, against one chunk on the reference and the oracle's definitions.
pub(super) fn gathers() -> Vec<Family> {
    vec![
        fam("argsort", all(), |s, g, d, v| {
            let shape = g.shape(1, 4);
            let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, |h| h)?;
            let axis = g.below(shape.len());
            let descending = g.chance(0.4);
            s.expect(|| vec![crate::oracle::sort::argsort(&h, axis, descending)]);
            one(
                a.argsort(axis, descending)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}, descending {descending}"),
            )
        }),
        fam("take", all(), |s, g, d, v| {
            let shape = g.nonempty_shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = g.below(shape.len());
            let m = g.below(2 * shape[axis] + 2);
            let stray = g.chance(0.1);
            let (values, dt) = index_values(g, shape[axis], m, stray);
            let lazy = g.chance(0.5);
            let (ih, idx) = index_array(s, g, &values, &[m], dt, lazy)?;
            s.expect_outcome(|| match crate::oracle::take::take(&h, &ih, axis) {
                Some(out) => Expect::Values(vec![out]),
                None => Expect::Error(ErrorKind::Invalid),
            });
            one(
                a.take(&idx, axis)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}, {dt} indices {values:?} (lazy {lazy})"),
            )
        }),
        fam("take_along_axis", all(), |s, g, d, v| {
            let shape = g.nonempty_shape(1, 4);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = g.below(shape.len());
            let n = shape[axis];
            // The indices' shape: their own length along the axis, and the array's
            // lengths elsewhere or 1 (broadcast).
            let ishape: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(i, &len)| {
                    if i == axis {
                        g.below(2 * n + 1)
                    } else if g.chance(0.25) {
                        1
                    } else {
                        len
                    }
                })
                .collect();
            let stray = g.chance(0.1);
            let (values, dt) = index_values(g, n, numel(&ishape), stray);
            let lazy = g.chance(0.5);
            let (ih, idx) = index_array(s, g, &values, &ishape, dt, lazy)?;
            s.expect_outcome(
                || match crate::oracle::take::take_along_axis(&h, &ih, axis) {
                    Some(out) => Expect::Values(vec![out]),
                    None => Expect::Error(ErrorKind::Invalid),
                },
            );
            one(
                a.take_along_axis(&idx, axis)?,
                Tol::EXACT,
                format!("{desc}, axis {axis}, {dt} indices of shape {ishape:?} (lazy {lazy})"),
            )
        }),
    ]
}
