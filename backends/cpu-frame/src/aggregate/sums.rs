//! Sums and counts per group: a fold over the valid values into per-group accumulators,
//! integers summed in `i128` lanes so that a partial sum cannot overflow where the total
//! would not.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Decimal64Type, Float64Type, Int64Type, UInt64Type};
use arrow_array::{Array, ArrayRef, Decimal128Array, Float64Array, Int64Array, UInt64Array};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use tessera_core::{Error, Result};

use super::columns::cast;
use crate::keys::groups::{Groups, NO_GROUP};

/// Folds each valid value of `values` into its group's accumulator (`add(slot, x)`),
/// reading the null buffer, when there is one, alongside the values instead of asking the
/// array row by row.
pub(super) fn fold_valid<T: Copy, A>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    g: &Groups,
    acc: &mut [A],
    mut add: impl FnMut(&mut A, T),
) {
    match nulls {
        None => {
            for (&id, &x) in g.ids.iter().zip(values) {
                if id != NO_GROUP {
                    add(&mut acc[id as usize], x);
                }
            }
        }
        Some(nulls) => {
            for ((&id, &x), valid) in g.ids.iter().zip(values).zip(nulls.iter()) {
                if id != NO_GROUP && valid {
                    add(&mut acc[id as usize], x);
                }
            }
        }
    }
}

/// Accumulator lanes of [`sum_i128_in_lanes`].
pub(super) const LANES: usize = 4;

/// Groups up to which a decimal sum runs in lanes: beyond, consecutive rows seldom share
/// a group, and four copies of the accumulators would crowd the cache.
pub(super) const LANE_GROUPS: usize = 256;

/// Per-group sums of `values` (no nulls) and whether one overflowed `i128`. Consecutive
/// rows go to [`LANES`] separate copies of the accumulators, added up at the end: rows of
/// the same group one after the other (TPC-H Q1 has six groups) would otherwise each wait
/// for the previous row's sum to be stored before loading it. Integer sums are the same
/// in any order; an overflow of any partial sum is reported (with values of at most 38
/// digits, a partial sum can only pass `i128` when the sums of far fewer rows do too).
/// Each lane keeps its own overflow flag, so that the lanes share no chain of
/// dependencies; values of at most 64 bits need none (fewer than 2^64 of them cannot
/// pass `i128`).
pub(super) fn sum_i128_in_lanes<T: Copy + Into<i128>>(
    values: &[T],
    g: &Groups,
) -> (Vec<i128>, bool) {
    let n = g.len();
    let narrow = std::mem::size_of::<T>() <= 8;
    let mut acc = vec![0i128; LANES * n];
    let mut over = [false; LANES];
    let mut add = |lane: usize, id: u32, x: T| {
        if id != NO_GROUP {
            let a = &mut acc[lane * n + id as usize];
            if narrow {
                *a = a.wrapping_add(x.into());
            } else {
                let (s, o) = a.overflowing_add(x.into());
                *a = s;
                over[lane] |= o;
            }
        }
    };
    let ids = g.ids.chunks_exact(LANES);
    let xs = values.chunks_exact(LANES);
    let (id_tail, x_tail) = (ids.remainder(), xs.remainder());
    for (id, x) in ids.zip(xs) {
        for lane in 0..LANES {
            add(lane, id[lane], x[lane]);
        }
    }
    for (&id, &x) in id_tail.iter().zip(x_tail) {
        add(0, id, x);
    }
    let mut over = over.contains(&true);
    let mut sums = vec![0i128; n];
    for lane in acc.chunks_exact(n.max(1)) {
        for (s, &x) in sums.iter_mut().zip(lane) {
            let (t, o) = s.overflowing_add(x);
            *s = t;
            over |= o;
        }
    }
    (sums, over)
}

/// Per-group decimal sums of `values` (64- or 128-bit unscaled values, widened as they are
/// read) and whether one overflowed `i128`.
pub(super) fn decimal_sums<T: Copy + Into<i128>>(
    values: &[T],
    nulls: Option<&NullBuffer>,
    g: &Groups,
) -> (Vec<i128>, bool) {
    let n = g.len();
    match nulls {
        None if n <= LANE_GROUPS => sum_i128_in_lanes(values, g),
        _ => {
            let mut acc = vec![0i128; n];
            let mut overflow = false;
            fold_valid(values, nulls, g, &mut acc, |s, x| {
                match s.checked_add(x.into()) {
                    Some(y) => *s = y,
                    None => overflow = true,
                }
            });
            (acc, overflow)
        }
    }
}

/// Per-group sums of `a` (cast to `t`: Int64 wrapping, UInt64 wrapping, Float64, or
/// Decimal128 checked: a sum past its precision is an error).
pub(super) fn sum(a: &ArrayRef, g: &Groups, t: &DataType) -> Result<ArrayRef> {
    // A decimal of the sum's scale is summed as it is: its unscaled values are the same
    // whatever its precision or width (no copy to widen it).
    let a = match (a.data_type(), t) {
        (DataType::Decimal128(_, s1) | DataType::Decimal64(_, s1), DataType::Decimal128(_, s2))
            if s1 == s2 =>
        {
            a.clone()
        }
        _ => cast(a, t)?,
    };
    let n = g.len();
    let nulls = a.nulls();
    Ok(match t {
        DataType::Float64 => {
            let mut acc = vec![0.0f64; n];
            let v = a.as_primitive::<Float64Type>().values();
            fold_valid(v, nulls, g, &mut acc, |s, x| *s += x);
            Arc::new(Float64Array::from(acc))
        }
        DataType::UInt64 => {
            let mut acc = vec![0u64; n];
            let v = a.as_primitive::<UInt64Type>().values();
            fold_valid(v, nulls, g, &mut acc, |s, x| *s = s.wrapping_add(x));
            Arc::new(UInt64Array::from(acc))
        }
        DataType::Decimal128(p, scale) => {
            let (acc, overflow) = match a.data_type() {
                DataType::Decimal64(_, _) => {
                    decimal_sums(a.as_primitive::<Decimal64Type>().values(), nulls, g)
                }
                _ => decimal_sums(a.as_primitive::<Decimal128Type>().values(), nulls, g),
            };
            let out = Decimal128Array::from(acc)
                .with_precision_and_scale(*p, *scale)
                .map_err(|e| Error::arrow("sum", e))?;
            if overflow || out.validate_decimal_precision(*p).is_err() {
                return Err(Error::invalid(
                    "sum",
                    format!("a decimal sum does not fit {t}; cast the column to Float64 first"),
                ));
            }
            Arc::new(out)
        }
        _ => {
            let mut acc = vec![0i64; n];
            let v = a.as_primitive::<Int64Type>().values();
            fold_valid(v, nulls, g, &mut acc, |s, x| *s = s.wrapping_add(x));
            Arc::new(Int64Array::from(acc))
        }
    })
}

/// Per-group counts of non-null values.
pub(super) fn count(a: &ArrayRef, g: &Groups) -> ArrayRef {
    let mut acc = vec![0i64; g.len()];
    match a.logical_nulls() {
        None => {
            for &id in &g.ids {
                if id != NO_GROUP {
                    acc[id as usize] += 1;
                }
            }
        }
        Some(nulls) => {
            for (&id, valid) in g.ids.iter().zip(nulls.iter()) {
                if id != NO_GROUP && valid {
                    acc[id as usize] += 1;
                }
            }
        }
    }
    Arc::new(Int64Array::from(acc))
}
