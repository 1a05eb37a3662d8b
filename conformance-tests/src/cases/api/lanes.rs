//! Ops along one axis that carry state across chunks: scans, sorts, quantiles, searches.

use tessera_array::Array;
use tessera_core::program::ScanOp;
use tessera_core::{DType, HostArray, Scalar};

use super::inputs::{arr, arr_with, fam, one, spec};
use crate::case::Family;
use crate::cases::domain::{all, numeric};
use crate::compare::{has_subnormal, max_abs, Tol};
use crate::gen::{for_product, for_sum, Gen, Values};
use crate::oracle::api::{self as expect};

/// `cumulative` over irregular chunks: each block scanned, the carries of the blocks
/// before it combined in, against one chunk on the reference and the oracle's scan.
pub(super) fn scans() -> Vec<Family> {
    ScanOp::ALL
        .into_iter()
        .map(|op| {
            fam(op.name(), all(), move |s, g, d, v| {
                let shape = g.shape(1, 4);
                let tame = match op {
                    ScanOp::Prod => for_product,
                    ScanOp::Sum => for_sum,
                    _ => |h| h,
                };
                let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
                let axis = g.below(shape.len());
                let initial = matches!(op, ScanOp::Sum | ScanOp::Prod) && g.chance(0.3);
                let rd = expect::scan_dtype(op, d);
                s.expect(|| vec![expect::cumulative(&h, op, axis, initial)]);
                let n = shape[axis];
                let tol = match op {
                    ScanOp::Sum => Tol::reduction(rd, n, max_abs(&h)),
                    ScanOp::Prod => Tol::product(rd, n, has_subnormal(&h)),
                    _ => Tol::EXACT,
                };
                one(
                    a.cumulative(op, axis, None, initial)?,
                    tol,
                    format!("{desc}, axis {axis}, include_initial {initial}"),
                )
            })
        })
        .collect()
}

/// `sort` over irregular chunks: each block sorted, each output block merged from its
/// lane's sorted blocks, against one chunk on the reference and the oracle's sort.
pub(super) fn sorting() -> Family {
    fam("sort", all(), |s, g, d, v| {
        let shape = g.shape(1, 4);
        let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, |h| h)?;
        let axis = g.below(shape.len());
        let descending = g.chance(0.3);
        s.expect(|| vec![crate::oracle::sort::sort(&h, axis, descending)]);
        one(
            a.sort(axis, descending)?,
            Tol::EXACT,
            format!("{desc}, axis {axis}, descending {descending}"),
        )
    })
}

/// `quantile`, `nanquantile`, `median` and `nanmedian` over irregular chunks: the lane
/// sorted chunk by chunk and only the needed order statistics read (lazily, by each
/// lane's count of numbers, for the NaN-skipping forms), against one chunk on the
/// reference and the oracle's NumPy arithmetic.
pub(super) fn quantiles() -> Vec<Family> {
    use crate::oracle::quantile::{select, Select};
    [
        ("quantile", false, false),
        ("nanquantile", false, true),
        ("median", true, false),
        ("nanmedian", true, true),
    ]
    .into_iter()
    .map(|(name, median, skip_nan)| {
        fam(name, numeric(), move |s, g, d, v| {
            let shape = g.nonempty_shape(1, 3);
            let (h, a, desc) = arr(s, g, "x", &shape, d, v)?;
            let axis = if g.chance(0.25) {
                None
            } else {
                Some(g.below(shape.len()))
            };
            let keepdims = g.chance(0.3);
            if median {
                let dtype = if d == DType::F32 {
                    DType::F32
                } else {
                    DType::F64
                };
                s.expect(|| {
                    vec![select(
                        &h,
                        &[Select::Median],
                        axis,
                        keepdims,
                        skip_nan,
                        dtype,
                        false,
                    )]
                });
                return one(
                    a.median(axis, keepdims, skip_nan)?,
                    Tol::EXACT,
                    format!("{desc}, axis {axis:?}, keepdims {keepdims}"),
                );
            }
            let k = 1 + g.below(3);
            let q: Vec<f64> = (0..k)
                .map(|_| match g.below(5) {
                    0 => 0.0,
                    1 => 1.0,
                    2 => 0.5,
                    _ => g.unit(),
                })
                .collect();
            let dtype = if d == DType::F32 && g.chance(0.5) {
                DType::F32
            } else {
                DType::F64
            };
            let sels: Vec<Select> = q.iter().map(|&v| Select::Quantile(v)).collect();
            s.expect(|| vec![select(&h, &sels, axis, keepdims, skip_nan, dtype, true)]);
            one(
                a.quantile(&q, axis, keepdims, skip_nan, dtype)?,
                Tol::EXACT,
                format!("{desc}, q {q:?} in {dtype}, axis {axis:?}, keepdims {keepdims}"),
            )
        })
    })
    .collect()
}

/// `searchsorted` and `isin` over irregular chunks on both sides: every sorted block
/// searched for each value block, against one chunk on the reference and the oracle's
/// counts and comparisons; the other side sometimes of another dtype (compared in the
/// common dtype).
pub(super) fn searches() -> Vec<Family> {
    fn other_dtype(g: &mut Gen, d: DType) -> DType {
        if g.chance(0.3) {
            g.pick(&[DType::I64, DType::F64, DType::F32, DType::U8])
        } else {
            d
        }
    }
    vec![
        fam("searchsorted", all(), |s, g, d, v| {
            let n = g.dim() * 2;
            let raw = g.host(&[n], d, Values::of_variant(v));
            let sorted = crate::oracle::sort::sort(&raw, 0, false);
            let a = Array::from_host(sorted.clone(), spec(s, g, &[n]), Some(s.name()))?;
            let vshape = g.shape(0, 3);
            let vd = other_dtype(g, d);
            let (vh, va, vdesc) = arr(s, g, "values", &vshape, vd, v)?;
            let right = g.chance(0.5);
            s.expect(|| vec![crate::oracle::search::searchsorted(&sorted, &vh, right)]);
            one(
                a.searchsorted(&va, right)?,
                Tol::EXACT,
                format!(
                    "sorted {d}[{n}] {:?}, {vdesc}, right {right}",
                    sorted.to_f64_vec()
                ),
            )
        }),
        fam("isin", all(), |s, g, d, v| {
            /// A NaN first, for a float array: NaN in both `x` and the set must still
            /// not be a member.
            fn first_nan(h: HostArray) -> HostArray {
                match h {
                    HostArray::F64(mut a) if !a.is_empty() => {
                        a.as_slice_mut().expect("generated arrays are contiguous")[0] = f64::NAN;
                        HostArray::F64(a)
                    }
                    HostArray::F32(mut a) if !a.is_empty() => {
                        a.as_slice_mut().expect("generated arrays are contiguous")[0] = f32::NAN;
                        HostArray::F32(a)
                    }
                    other => other,
                }
            }
            let shape = g.shape(0, 3);
            let tame = if g.chance(0.5) { first_nan } else { |h| h };
            let (h, a, desc) = arr_with(s, g, "x", &shape, d, v, tame)?;
            // The set: drawn values, and about half of them picked from `x` (NaN, the
            // zeros and the extremes included when `x` has them).
            let tlen = g.below(9);
            let td = other_dtype(g, d);
            let drawn = g.host(&[tlen], td, Values::of_variant(v));
            let picks: Vec<Scalar> = (0..tlen)
                .map(|i| match h.len() {
                    0 => drawn.get_flat(i),
                    _ if i == 0 => h.get_flat(0),
                    n if g.chance(0.5) => h.get_flat(g.below(n)),
                    _ => drawn.get_flat(i),
                })
                .collect::<Option<_>>()
                .ok_or_else(|| tessera_core::Error::Internal("a flat index past the end".into()))?;
            let th = HostArray::from_scalars(&[tlen], td, &picks)?;
            let ta = Array::from_host(th.clone(), spec(s, g, &[tlen]), Some(s.name()))?;
            let tdesc = format!("test {td} {:?}", th.to_f64_vec());
            let invert = g.chance(0.3);
            s.expect(|| vec![crate::oracle::search::isin(&h, &th, invert)]);
            one(
                a.isin(&ta, invert)?,
                Tol::EXACT,
                format!("{desc}, {tdesc}, invert {invert}"),
            )
        }),
    ]
}
