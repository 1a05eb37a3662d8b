//! Reductions over axes as trees of partial results: sums, moments, extremes, counts,
//! the nan-variants.

use tessera_core::chunks::numel;
use tessera_core::program::ReduceOp;
use tessera_core::{DType, HostArray};

use super::inputs::{arr, arr_with, fam, one};
use crate::case::Family;
use crate::cases::domain::{all, numeric};
use crate::compare::{has_subnormal, max_abs, Tol};
use crate::gen::{for_product, for_sum};
use crate::oracle::api::{self as expect, Moment};
use crate::oracle::Expect;

/// A user-level reduction: one of the protocol's through `Array::reduce`, or one that
/// core composes from them.
#[derive(Clone, Copy)]
pub(super) enum Red {
    Op(ReduceOp),
    Mean,
    NanMean,
    Var,
    Std,
    NanVar,
    NanStd,
    /// `nanmax`, `nanmin`, `nanprod`.
    Nan(ReduceOp),
}

pub(super) fn reductions() -> Vec<Family> {
    let mut list: Vec<(&str, Red, Vec<DType>)> = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Min,
        ReduceOp::Max,
        ReduceOp::Any,
        ReduceOp::All,
        ReduceOp::NanSum,
    ]
    .into_iter()
    .map(|op| {
        let dtypes = if op == ReduceOp::NanSum {
            numeric()
        } else {
            all()
        };
        (op.name(), Red::Op(op), dtypes)
    })
    .collect();
    list.extend([
        ("mean", Red::Mean, numeric()),
        ("nanmean", Red::NanMean, numeric()),
        ("var", Red::Var, numeric()),
        ("std", Red::Std, numeric()),
        ("nanvar", Red::NanVar, numeric()),
        ("nanstd", Red::NanStd, numeric()),
        ("nanmax", Red::Nan(ReduceOp::Max), all()),
        ("nanmin", Red::Nan(ReduceOp::Min), all()),
        ("nanprod", Red::Nan(ReduceOp::Prod), numeric()),
    ]);
    let mut v: Vec<Family> = list
        .into_iter()
        .map(|(name, red, dtypes)| {
            fam(name, dtypes, move |s, g, d, v| {
                let shape = g.shape(0, 4);
                let tame = match red {
                    Red::Op(ReduceOp::Prod) | Red::Nan(ReduceOp::Prod) => for_product,
                    Red::Op(ReduceOp::Sum | ReduceOp::NanSum)
                    | Red::Mean
                    | Red::NanMean
                    | Red::Var
                    | Red::Std
                    | Red::NanVar
                    | Red::NanStd => for_sum,
                    _ => |h| h,
                };
                let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
                let axes = g.axes(shape.len());
                let axes_opt = if g.chance(0.25) {
                    None
                } else {
                    Some(axes.as_slice())
                };
                let keep = g.chance(0.4);
                let ddof = g.below(2);
                let n: usize = match axes_opt {
                    None => numel(&shape),
                    Some(ax) => ax.iter().map(|&i| shape[i]).product(),
                };
                let scale = max_abs(&h);
                s.expect_outcome(|| match red {
                    Red::Op(op) => expect::reduce(&h, op, axes_opt, keep)
                        .map(|r| vec![r])
                        .into(),
                    Red::Mean => {
                        Expect::Values(vec![expect::moment(&h, Moment::Mean, axes_opt, keep)])
                    }
                    Red::NanMean => {
                        Expect::Values(vec![expect::moment(&h, Moment::NanMean, axes_opt, keep)])
                    }
                    Red::Var => {
                        Expect::Values(vec![expect::moment(&h, Moment::Var(ddof), axes_opt, keep)])
                    }
                    Red::Std => {
                        Expect::Values(vec![expect::moment(&h, Moment::Std(ddof), axes_opt, keep)])
                    }
                    Red::NanVar => Expect::Values(vec![expect::moment(
                        &h,
                        Moment::NanVar(ddof),
                        axes_opt,
                        keep,
                    )]),
                    Red::NanStd => Expect::Values(vec![expect::moment(
                        &h,
                        Moment::NanStd(ddof),
                        axes_opt,
                        keep,
                    )]),
                    Red::Nan(op) => expect::nan_reduce(&h, op, axes_opt, keep)
                        .map(|r| vec![r])
                        .into(),
                });
                let r = match red {
                    Red::Op(op) => a.reduce(op, axes_opt, keep)?,
                    Red::Mean => a.mean(axes_opt, keep)?,
                    Red::NanMean => a.nanmean(axes_opt, keep)?,
                    Red::Var => a.var(axes_opt, ddof, keep)?,
                    Red::Std => a.std(axes_opt, ddof, keep)?,
                    Red::NanVar => a.nanvar(axes_opt, ddof, keep)?,
                    Red::NanStd => a.nanstd(axes_opt, ddof, keep)?,
                    Red::Nan(ReduceOp::Max) => a.nanmax(axes_opt, keep)?,
                    Red::Nan(ReduceOp::Min) => a.nanmin(axes_opt, keep)?,
                    Red::Nan(_) => a.nanprod(axes_opt, keep)?,
                };
                let od = r.dtype();
                let tol = match red {
                    Red::Op(ReduceOp::Sum | ReduceOp::NanSum) | Red::Mean | Red::NanMean => {
                        Tol::reduction(od, n, scale)
                    }
                    Red::Op(ReduceOp::Prod) | Red::Nan(ReduceOp::Prod) => {
                        Tol::product(od, n, has_subnormal(&h))
                    }
                    Red::Var | Red::NanVar => Tol::reduction(od, n, scale * scale),
                    Red::Std | Red::NanStd => Tol::reduction(od, n, scale),
                    _ => Tol::EXACT,
                };
                one(
                    r,
                    tol,
                    format!("{desc}, axes {axes_opt:?}, keepdims {keep}, ddof {ddof}"),
                )
            })
        })
        .collect();
    // argmin/argmax take one axis (or none: the flat position).
    for max in [false, true] {
        v.push(fam(
            if max { "argmax" } else { "argmin" },
            all(),
            move |s, g, d, v| {
                let shape = g.shape(0, 4);
                let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
                let axis = if shape.is_empty() || g.chance(0.3) {
                    None
                } else {
                    Some(g.below(shape.len()))
                };
                let keep = g.chance(0.4);
                let empty = match axis {
                    None => numel(&shape) == 0,
                    Some(a) => shape[a] == 0,
                };
                let op = if max {
                    ReduceOp::ArgMax
                } else {
                    ReduceOp::ArgMin
                };
                s.expect_outcome(|| {
                    let r = expect::arg_reduce(&h, op, axis, keep).map(|r| vec![r]);
                    debug_assert_eq!(r.is_err(), empty);
                    r.into()
                });
                let r = if max {
                    a.argmax(axis, keep)?
                } else {
                    a.argmin(axis, keep)?
                };
                one(
                    r,
                    Tol::EXACT,
                    format!("{desc}, axis {axis:?}, keepdims {keep}"),
                )
            },
        ));
    }
    // nanargmin/nanargmax: NaN as the op's identity, an error for a lane of NaN only.
    for max in [false, true] {
        v.push(fam(
            if max { "nanargmax" } else { "nanargmin" },
            all(),
            move |s, g, d, v| {
                /// Every element NaN (a float array): every lane has no answer.
                fn all_nan(h: HostArray) -> HostArray {
                    match h {
                        HostArray::F64(a) => HostArray::F64(a.mapv(|_| f64::NAN)),
                        HostArray::F32(a) => HostArray::F32(a.mapv(|_| f32::NAN)),
                        other => other,
                    }
                }
                let shape = g.shape(0, 3);
                let tame = if g.chance(0.2) { all_nan } else { |h| h };
                let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
                let axis = if shape.is_empty() || g.chance(0.3) {
                    None
                } else {
                    Some(g.below(shape.len()))
                };
                let keep = g.chance(0.4);
                s.expect_outcome(|| expect::nan_arg_reduce(&h, max, axis, keep));
                let r = if max {
                    a.nanargmax(axis, keep)?
                } else {
                    a.nanargmin(axis, keep)?
                };
                one(
                    r,
                    Tol::EXACT,
                    format!("{desc}, axis {axis:?}, keepdims {keep}"),
                )
            },
        ));
    }
    v
}
