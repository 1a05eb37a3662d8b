//! Partial, combine and finalize aggregation over Arrow batches, in the state layout core
//! defines ([`AggFunc::state_fields`]).
//!
//! Rows are mapped to dense group ids first ([`group_rows`]); every aggregation is then a
//! tight loop over `(group id, value)` into per-group accumulators. Order-based functions
//! (min, max, first, last) pick a row index per group and `take` it, so they work for any
//! orderable type without a kernel per type. Variance states merge with Chan et al.'s
//! pairwise formula, which stays accurate where a sum of squares would cancel.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Decimal64Type, Float64Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, Decimal128Array, Float64Array,
    Int64Array, ListArray, RecordBatch, UInt32Array, UInt64Array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema, SortOptions};
use tessera_core::frame::digest::Digest;
use tessera_core::frame::{AggFunc, AggSpec};
use tessera_core::{Error, Result};

use crate::keys::grouping::{group_rows, group_selected_rows};
use crate::keys::groups::{encode_rows, Groups, NO_GROUP};

fn column(batch: &RecordBatch, name: &str, op: &'static str) -> Result<ArrayRef> {
    batch
        .column_by_name(name)
        .cloned()
        .ok_or_else(|| Error::invalid(op, format!("no column '{name}' in the partition")))
}

fn cast(a: &ArrayRef, t: &DataType) -> Result<ArrayRef> {
    if a.data_type() == t {
        Ok(a.clone())
    } else {
        arrow_cast::cast(a, t).map_err(|e| Error::arrow("aggregate", e))
    }
}

/// Folds each valid value of `values` into its group's accumulator (`add(slot, x)`),
/// reading the null buffer, when there is one, alongside the values instead of asking the
/// array row by row.
fn fold_valid<T: Copy, A>(
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
const LANES: usize = 4;

/// Groups up to which a decimal sum runs in lanes: beyond, consecutive rows seldom share
/// a group, and four copies of the accumulators would crowd the cache.
const LANE_GROUPS: usize = 256;

/// Per-group sums of `values` (no nulls) and whether one overflowed `i128`. Consecutive
/// rows go to [`LANES`] separate copies of the accumulators, added up at the end: rows of
/// the same group one after the other (TPC-H Q1 has six groups) would otherwise each wait
/// for the previous row's sum to be stored before loading it. Integer sums are the same
/// in any order; an overflow of any partial sum is reported (with values of at most 38
/// digits, a partial sum can only pass `i128` when the sums of far fewer rows do too).
/// Each lane keeps its own overflow flag, so that the lanes share no chain of
/// dependencies; values of at most 64 bits need none (fewer than 2^64 of them cannot
/// pass `i128`).
fn sum_i128_in_lanes<T: Copy + Into<i128>>(values: &[T], g: &Groups) -> (Vec<i128>, bool) {
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
fn decimal_sums<T: Copy + Into<i128>>(
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
fn sum(a: &ArrayRef, g: &Groups, t: &DataType) -> Result<ArrayRef> {
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
fn count(a: &ArrayRef, g: &Groups) -> ArrayRef {
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

/// Per-group `(count, mean, m2)` by Welford's update.
fn moments(a: &ArrayRef, g: &Groups) -> Result<Vec<ArrayRef>> {
    let a = cast(a, &DataType::Float64)?;
    let v = a.as_primitive::<Float64Type>().values();
    let n = g.len();
    let (mut c, mut mean, mut m2) = (vec![0i64; n], vec![0.0f64; n], vec![0.0f64; n]);
    for (i, (&id, &x)) in g.ids.iter().zip(v.iter()).enumerate() {
        if id == NO_GROUP || a.is_null(i) {
            continue;
        }
        let k = id as usize;
        c[k] += 1;
        let d = x - mean[k];
        mean[k] += d / c[k] as f64;
        m2[k] += d * (x - mean[k]);
    }
    Ok(vec![
        Arc::new(Int64Array::from(c)),
        Arc::new(Float64Array::from(mean)),
        Arc::new(Float64Array::from(m2)),
    ])
}

/// Merges `(count, mean, m2)` states per group (Chan et al.).
fn merge_moments(c: &ArrayRef, mean: &ArrayRef, m2: &ArrayRef, g: &Groups) -> Vec<ArrayRef> {
    let (cv, mv, m2v) = (
        c.as_primitive::<Int64Type>().values(),
        mean.as_primitive::<Float64Type>().values(),
        m2.as_primitive::<Float64Type>().values(),
    );
    let n = g.len();
    let (mut oc, mut om, mut om2) = (vec![0i64; n], vec![0.0f64; n], vec![0.0f64; n]);
    for (i, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || cv[i] == 0 {
            continue;
        }
        let k = id as usize;
        let (na, nb) = (oc[k] as f64, cv[i] as f64);
        let total = na + nb;
        let d = mv[i] - om[k];
        om[k] += d * nb / total;
        om2[k] += m2v[i] + d * d * na * nb / total;
        oc[k] += cv[i];
    }
    vec![
        Arc::new(Int64Array::from(oc)),
        Arc::new(Float64Array::from(om)),
        Arc::new(Float64Array::from(om2)),
    ]
}

/// `(count, mean, m2, m3, m4)` per group: the central sums `Mk = Σ (x − mean)^k`, updated
/// value by value (Pébay 2008, the one-value case of [`merge_higher_moments`]'s update).
fn higher_moments(a: &ArrayRef, g: &Groups) -> Result<Vec<ArrayRef>> {
    let a = cast(a, &DataType::Float64)?;
    let v = a.as_primitive::<Float64Type>().values();
    let mut acc = vec![Moments4::default(); g.len()];
    for (i, (&id, &x)) in g.ids.iter().zip(v.iter()).enumerate() {
        if id == NO_GROUP || a.is_null(i) {
            continue;
        }
        acc[id as usize].push(x);
    }
    Ok(Moments4::columns(&acc))
}

/// Merges `(count, mean, m2, m3, m4)` states per group (Pébay's pairwise update).
fn merge_higher_moments(state: &[&ArrayRef], g: &Groups) -> Vec<ArrayRef> {
    let c = state[0].as_primitive::<Int64Type>().values();
    let f = |k: usize| state[k].as_primitive::<Float64Type>().values();
    let (mean, m2, m3, m4) = (f(1), f(2), f(3), f(4));
    let mut acc = vec![Moments4::default(); g.len()];
    for (i, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || c[i] == 0 {
            continue;
        }
        let other = Moments4 {
            n: c[i],
            mean: mean[i],
            m2: m2[i],
            m3: m3[i],
            m4: m4[i],
        };
        acc[id as usize].merge(&other);
    }
    Moments4::columns(&acc)
}

/// A group's count, mean and central sums of powers 2 to 4.
#[derive(Clone, Copy, Default)]
struct Moments4 {
    n: i64,
    mean: f64,
    m2: f64,
    m3: f64,
    m4: f64,
}

impl Moments4 {
    /// Adds one value.
    fn push(&mut self, x: f64) {
        let n1 = self.n as f64;
        self.n += 1;
        let n = self.n as f64;
        let d = x - self.mean;
        let dn = d / n;
        let dn2 = dn * dn;
        let t = d * dn * n1;
        self.mean += dn;
        self.m4 += t * dn2 * (n * n - 3.0 * n + 3.0) + 6.0 * dn2 * self.m2 - 4.0 * dn * self.m3;
        self.m3 += t * dn * (n - 2.0) - 3.0 * dn * self.m2;
        self.m2 += t;
    }

    /// Merges another group's moments into these.
    fn merge(&mut self, o: &Moments4) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let (na, nb) = (self.n as f64, o.n as f64);
        let n = na + nb;
        let d = o.mean - self.mean;
        let (d2, d3, d4) = (d * d, d * d * d, d * d * d * d);
        let m4 = self.m4
            + o.m4
            + d4 * na * nb * (na * na - na * nb + nb * nb) / (n * n * n)
            + 6.0 * d2 * (na * na * o.m2 + nb * nb * self.m2) / (n * n)
            + 4.0 * d * (na * o.m3 - nb * self.m3) / n;
        let m3 = self.m3
            + o.m3
            + d3 * na * nb * (na - nb) / (n * n)
            + 3.0 * d * (na * o.m2 - nb * self.m2) / n;
        self.m2 += o.m2 + d2 * na * nb / n;
        self.m3 = m3;
        self.m4 = m4;
        self.mean += d * nb / n;
        self.n += o.n;
    }

    /// The five state columns of `groups`.
    fn columns(groups: &[Moments4]) -> Vec<ArrayRef> {
        vec![
            Arc::new(Int64Array::from_iter_values(groups.iter().map(|m| m.n))),
            Arc::new(Float64Array::from_iter_values(
                groups.iter().map(|m| m.mean),
            )),
            Arc::new(Float64Array::from_iter_values(groups.iter().map(|m| m.m2))),
            Arc::new(Float64Array::from_iter_values(groups.iter().map(|m| m.m3))),
            Arc::new(Float64Array::from_iter_values(groups.iter().map(|m| m.m4))),
        ]
    }
}

/// Skewness from a group's count and central sums, as pandas' `skew()`: null below 3
/// values or when `m2` is 0 (all values equal: 0/0), as DuckDB; pandas gives NaN for both.
fn skewness(n: i64, m2: f64, m3: f64) -> Option<f64> {
    if n < 3 {
        return None;
    }
    if m2 == 0.0 {
        return None;
    }
    let n = n as f64;
    Some(n * (n - 1.0).sqrt() / (n - 2.0) * (m3 / m2.powf(1.5)))
}

/// Excess kurtosis from a group's count and central sums, as pandas' `kurt()`: null below
/// 4 values or when `m2` is 0.
fn kurtosis(n: i64, m2: f64, m4: f64) -> Option<f64> {
    if n < 4 {
        return None;
    }
    if m2 == 0.0 {
        return None;
    }
    let n = n as f64;
    let num = n * (n + 1.0) * (n - 1.0) * m4;
    let den = (n - 2.0) * (n - 3.0) * m2 * m2;
    Some(num / den - 3.0 * (n - 1.0) * (n - 1.0) / ((n - 2.0) * (n - 3.0)))
}

/// The value per group picked by `func` (min, max, first, last non-null).
fn pick(a: &ArrayRef, g: &Groups, func: AggFunc) -> Result<ArrayRef> {
    let n = g.len();
    let mut best: Vec<Option<u32>> = vec![None; n];
    match func {
        AggFunc::First | AggFunc::Last => {
            for (i, &id) in g.ids.iter().enumerate() {
                if id == NO_GROUP || a.is_null(i) {
                    continue;
                }
                let slot = &mut best[id as usize];
                if func == AggFunc::Last || slot.is_none() {
                    *slot = Some(i as u32);
                }
            }
        }
        _ => {
            use arrow_array::types::*;
            use arrow_schema::TimeUnit;
            let min = func == AggFunc::Min;
            let b = &mut best;
            match a.data_type() {
                DataType::Int8 => pick_primitive::<Int8Type>(a, g, min, b),
                DataType::Int16 => pick_primitive::<Int16Type>(a, g, min, b),
                DataType::Int32 => pick_primitive::<Int32Type>(a, g, min, b),
                DataType::Int64 => pick_primitive::<Int64Type>(a, g, min, b),
                DataType::UInt8 => pick_primitive::<UInt8Type>(a, g, min, b),
                DataType::UInt16 => pick_primitive::<UInt16Type>(a, g, min, b),
                DataType::UInt32 => pick_primitive::<UInt32Type>(a, g, min, b),
                DataType::UInt64 => pick_primitive::<UInt64Type>(a, g, min, b),
                DataType::Float32 => pick_primitive::<Float32Type>(a, g, min, b),
                DataType::Float64 => pick_primitive::<Float64Type>(a, g, min, b),
                DataType::Date32 => pick_primitive::<Date32Type>(a, g, min, b),
                DataType::Date64 => pick_primitive::<Date64Type>(a, g, min, b),
                DataType::Timestamp(TimeUnit::Second, _) => {
                    pick_primitive::<TimestampSecondType>(a, g, min, b)
                }
                DataType::Timestamp(TimeUnit::Millisecond, _) => {
                    pick_primitive::<TimestampMillisecondType>(a, g, min, b)
                }
                DataType::Timestamp(TimeUnit::Microsecond, _) => {
                    pick_primitive::<TimestampMicrosecondType>(a, g, min, b)
                }
                DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                    pick_primitive::<TimestampNanosecondType>(a, g, min, b)
                }
                _ => pick_dyn(a, g, func, b)?,
            }
        }
    }
    let idx = UInt32Array::from(best);
    arrow_select::take::take(a, &idx, None).map_err(|e| Error::arrow(func.name(), e))
}

/// Min/max row per group for a primitive type, with a typed comparison (total order for
/// floats, as arrow's comparator).
fn pick_primitive<T: ArrowPrimitiveType>(
    a: &ArrayRef,
    g: &Groups,
    min: bool,
    best: &mut [Option<u32>],
) {
    let arr = a.as_primitive::<T>();
    let v = arr.values();
    let want = if min {
        std::cmp::Ordering::Less
    } else {
        std::cmp::Ordering::Greater
    };
    // Each group's best value is kept beside its row, so a comparison reads the small
    // per-group array instead of the column at a random row.
    let mut values: Vec<T::Native> = vec![T::Native::default(); best.len()];
    let nulls = arr.nulls();
    for (i, (&id, &x)) in g.ids.iter().zip(v.iter()).enumerate() {
        if id == NO_GROUP || nulls.is_some_and(|n| n.is_null(i)) {
            continue;
        }
        let k = id as usize;
        let better = match best[k] {
            None => true,
            Some(_) => x.compare(values[k]) == want,
        };
        if better {
            best[k] = Some(i as u32);
            values[k] = x;
        }
    }
}

/// Min/max row per group through arrow's dynamic comparator (strings, booleans, ...).
fn pick_dyn(a: &ArrayRef, g: &Groups, func: AggFunc, best: &mut [Option<u32>]) -> Result<()> {
    {
        {
            let cmp =
                arrow_ord::ord::make_comparator(a.as_ref(), a.as_ref(), SortOptions::default())
                    .map_err(|e| Error::arrow(func.name(), e))?;
            let want = if func == AggFunc::Min {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            };
            for (i, &id) in g.ids.iter().enumerate() {
                if id == NO_GROUP || a.is_null(i) {
                    continue;
                }
                let slot = &mut best[id as usize];
                match slot {
                    None => *slot = Some(i as u32),
                    Some(b) if cmp(i, *b as usize) == want => *slot = Some(i as u32),
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// `(group, row)` pairs as each group's row count and the rows ordered by group (rows of
/// a group in the order given): a counting sort.
fn by_group(pairs: impl Iterator<Item = (u32, u32)>, groups: usize) -> (Vec<usize>, Vec<u32>) {
    let pairs: Vec<(u32, u32)> = pairs.collect();
    let mut lengths = vec![0usize; groups];
    for &(id, _) in &pairs {
        lengths[id as usize] += 1;
    }
    let mut next: Vec<usize> = lengths
        .iter()
        .scan(0usize, |at, &len| {
            let start = *at;
            *at += len;
            Some(start)
        })
        .collect();
    let mut rows = vec![0u32; pairs.len()];
    for (id, i) in pairs {
        let slot = &mut next[id as usize];
        rows[*slot] = i;
        *slot += 1;
    }
    (lengths, rows)
}

/// Moves one row of each distinct value of `v` among `rows` to the front of `rows` and
/// returns how many there are. A few rows are compared pairwise; more are sorted by value.
fn dedup_by_value(rows: &mut [u32], v: &[i64]) -> usize {
    if rows.len() <= 16 {
        let mut kept = 0;
        for k in 0..rows.len() {
            let x = v[rows[k] as usize];
            if !rows[..kept].iter().any(|&r| v[r as usize] == x) {
                rows[kept] = rows[k];
                kept += 1;
            }
        }
        return kept;
    }
    rows.sort_unstable_by_key(|&r| v[r as usize]);
    let mut kept = 0;
    for k in 0..rows.len() {
        if kept == 0 || v[rows[k] as usize] != v[rows[kept - 1] as usize] {
            rows[kept] = rows[k];
            kept += 1;
        }
    }
    kept
}

/// Non-null values per group as a List column: each distinct value once (`distinct`), or
/// every value. `g` assigns each element of `a`.
fn value_lists(a: &ArrayRef, g: &Groups, item: &DataType, distinct: bool) -> Result<ArrayRef> {
    // The kept rows bucketed by group (a counting sort): one flat buffer, where a list per
    // group cost an allocation per group (1.5 million for TPC-H Q21's orders).
    let nulls = a.logical_nulls();
    let rows = g
        .ids
        .iter()
        .enumerate()
        .filter(|&(i, &id)| id != NO_GROUP && nulls.as_ref().is_none_or(|b| b.is_valid(i)))
        .map(|(i, &id)| (id, i as u32));
    let (lengths, rows) = if !distinct {
        by_group(rows, g.len())
    } else if let Some(ints) = crate::keys::groups::int_key(std::slice::from_ref(a))? {
        // Integers are told apart by value, without a hash set: each group's rows are
        // deduplicated in place. Groups are usually small (an order's suppliers), so this
        // stays in cache, where a set of (group, value) pairs sized for every row did not.
        let v = ints.as_primitive::<Int64Type>().values();
        let (mut lengths, mut rows) = by_group(rows, g.len());
        let (mut at, mut kept) = (0, 0);
        for len in lengths.iter_mut() {
            let group = &mut rows[at..at + *len];
            at += *len;
            let distinct = dedup_by_value(group, v);
            // Compact: this group's distinct rows follow the previous group's.
            let from = at - group.len();
            rows.copy_within(from..from + distinct, kept);
            kept += distinct;
            *len = distinct;
        }
        rows.truncate(kept);
        (lengths, rows)
    } else {
        let encoded = encode_rows(std::slice::from_ref(a))?;
        let mut seen: HashSet<(u32, &[u8]), ahash::RandomState> =
            HashSet::with_hasher(ahash::RandomState::new());
        let first = rows.filter(|&(id, i)| seen.insert((id, encoded.row(i as usize).data())));
        by_group(first, g.len())
    };
    let offsets = OffsetBuffer::<i32>::from_lengths(lengths);
    let flat = UInt32Array::from(rows);
    let values =
        arrow_select::take::take(a, &flat, None).map_err(|e| Error::arrow("nunique", e))?;
    let field = Arc::new(Field::new_list_field(item.clone(), true));
    Ok(Arc::new(
        ListArray::try_new(field, offsets, values, None).map_err(|e| Error::arrow("nunique", e))?,
    ))
}

/// State columns computed once per partition and shared by the specs that need the same
/// one: `sum(x)` and `mean(x)` both sum `x`, and every count of a column without nulls is
/// the group sizes (TPC-H Q1 asks for four sums of three columns, three means and a
/// count: five sums and one count instead of seven and four).
#[derive(Default)]
struct Shared {
    /// Sums by column and sum type.
    sums: Vec<(String, DataType, ArrayRef)>,
    /// Counts by column; `None` for the group sizes (a column without nulls).
    counts: Vec<(Option<String>, ArrayRef)>,
}

impl Shared {
    /// [`sum`] of column `name` (`a`) as `t`, computed at most once.
    fn sum(&mut self, name: &str, a: &ArrayRef, g: &Groups, t: &DataType) -> Result<ArrayRef> {
        if let Some((_, _, s)) = self.sums.iter().find(|(n, st, _)| n == name && st == t) {
            return Ok(s.clone());
        }
        let s = sum(a, g, t)?;
        self.sums.push((name.to_string(), t.clone(), s.clone()));
        Ok(s)
    }

    /// [`count`] of column `name` (`a`), computed at most once.
    fn count(&mut self, name: &str, a: &ArrayRef, g: &Groups) -> ArrayRef {
        let key = a.logical_nulls().is_some().then(|| name.to_string());
        if let Some((_, c)) = self.counts.iter().find(|(k, _)| *k == key) {
            return c.clone();
        }
        let c = count(a, g);
        self.counts.push((key, c.clone()));
        c
    }
}

/// One spec's state columns for one partition.
fn partial_state(
    (a, with): (&ArrayRef, Option<&ArrayRef>),
    g: &Groups,
    spec: &AggSpec,
    shared: &mut Shared,
) -> Result<Vec<ArrayRef>> {
    let t = a.data_type().clone();
    let sum_t = spec.func.output_type(&t);
    Ok(match spec.func {
        AggFunc::Sum => vec![shared.sum(&spec.column, a, g, &sum_t)?],
        AggFunc::Count => vec![shared.count(&spec.column, a, g)],
        AggFunc::Mean => {
            // The running sum's type is the state layout's (exact for a decimal).
            let fields = spec.func.state_fields(&spec.output, &t);
            vec![
                shared.sum(&spec.column, a, g, fields[0].data_type())?,
                shared.count(&spec.column, a, g),
            ]
        }
        AggFunc::Std | AggFunc::Var => moments(a, g)?,
        AggFunc::Skew | AggFunc::Kurt => higher_moments(a, g)?,
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => {
            vec![pick(a, g, spec.func)?]
        }
        AggFunc::NUnique => vec![value_lists(a, g, &t, true)?],
        AggFunc::Median | AggFunc::Quantile(_) => {
            let f = cast(a, &DataType::Float64)?;
            vec![value_lists(&f, g, &DataType::Float64, false)?]
        }
        AggFunc::ApproxQuantile(_) => vec![digests(a, g)?],
        AggFunc::Largest(_) | AggFunc::Smallest(_) => {
            vec![super::top_values::select(a, g, spec.func)?]
        }
        AggFunc::Cov | AggFunc::Corr => {
            let y = with.ok_or_else(|| {
                Error::invalid(
                    spec.func.name(),
                    "a pair aggregation without its second column",
                )
            })?;
            super::comoments::partial(a, y, g)?
        }
    })
}

/// Per-group t-digests of `a` (as Float64; nulls and NaN skipped) in core's layout.
fn digests(a: &ArrayRef, g: &Groups) -> Result<ArrayRef> {
    let f = cast(a, &DataType::Float64)?;
    let v = f.as_primitive::<Float64Type>();
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); g.len()];
    for (i, &id) in g.ids.iter().enumerate() {
        if id != NO_GROUP && v.is_valid(i) {
            per[id as usize].push(v.value(i));
        }
    }
    digest_list(per.into_iter().map(|mut xs| Digest::from_values(&mut xs)))
}

/// A List column of digests (an empty list where there is none).
fn digest_list(digests: impl Iterator<Item = Option<Digest>>) -> Result<ArrayRef> {
    let mut flat = Vec::new();
    let mut lengths = Vec::new();
    for d in digests {
        let before = flat.len();
        if let Some(d) = d {
            d.encode(&mut flat);
        }
        lengths.push(flat.len() - before);
    }
    let field = Arc::new(Field::new_list_field(DataType::Float64, true));
    Ok(Arc::new(
        ListArray::try_new(
            field,
            OffsetBuffer::<i32>::from_lengths(lengths),
            Arc::new(Float64Array::from(flat)),
            None,
        )
        .map_err(|e| Error::arrow("approx_quantile", e))?,
    ))
}

/// The digests of a List column (one per row) merged per group of `g`.
fn merge_digests(list: &ArrayRef, g: &Groups) -> Result<ArrayRef> {
    let list = list.as_list::<i32>();
    let mut per: Vec<Vec<Digest>> = vec![Vec::new(); g.len()];
    for (row, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || list.is_null(row) {
            continue;
        }
        let v = list.value(row);
        if let Some(d) = Digest::decode(v.as_primitive::<Float64Type>().values())? {
            per[id as usize].push(d);
        }
    }
    digest_list(per.into_iter().map(Digest::merge))
}

fn keyed_output(
    batch: &RecordBatch,
    keys: &[String],
    g: &Groups,
    mut fields: Vec<Field>,
    mut columns: Vec<ArrayRef>,
) -> Result<RecordBatch> {
    let first = UInt32Array::from(g.first_rows.clone());
    let mut key_fields = Vec::new();
    let mut key_cols = Vec::new();
    for k in keys {
        let c = column(batch, k, "groupby")?;
        key_fields.push(Field::new(k, c.data_type().clone(), true));
        key_cols.push(
            arrow_select::take::take(&c, &first, None).map_err(|e| Error::arrow("groupby", e))?,
        );
    }
    key_fields.append(&mut fields);
    key_cols.append(&mut columns);
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(key_fields)),
        key_cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(g.len())),
    )
    .map_err(|e| Error::arrow("groupby", e))
}

fn key_columns(batch: &RecordBatch, keys: &[String]) -> Result<Vec<ArrayRef>> {
    keys.iter().map(|k| column(batch, k, "groupby")).collect()
}

/// Partial aggregation of one batch.
pub(crate) fn partial(
    batch: &RecordBatch,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    partial_of_selected(batch, None, keys, aggs)
}

/// [`partial`] of the rows of `batch` that `selected` marks valid (all when `None`), as if
/// the others had been filtered out.
pub(crate) fn partial_of_selected(
    batch: &RecordBatch,
    selected: Option<&NullBuffer>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    let g = group_selected_rows(&key_columns(batch, keys)?, batch.num_rows(), selected)?;
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    let mut shared = Shared::default();
    for spec in aggs {
        spec.check_arity()?;
        let a = column(batch, &spec.column, spec.func.name())?;
        let with = match &spec.with {
            Some(w) => Some(column(batch, w, spec.func.name())?),
            None => None,
        };
        fields.extend(spec.func.state_fields(&spec.output, a.data_type()));
        columns.extend(partial_state((&a, with.as_ref()), &g, spec, &mut shared)?);
    }
    keyed_output(batch, keys, &g, fields, columns)
}

/// The state columns of `spec` in a state batch.
fn state_columns(batch: &RecordBatch, spec: &AggSpec) -> Result<Vec<(Field, ArrayRef)>> {
    let schema = batch.schema();
    let prefix = format!("{}#", spec.output);
    let out: Vec<(Field, ArrayRef)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name().starts_with(&prefix))
        .map(|(i, f)| ((**f).clone(), batch.column(i).clone()))
        .collect();
    if out.is_empty() {
        return Err(Error::Internal(format!(
            "state of {} has no columns",
            spec.output
        )));
    }
    Ok(out)
}

/// Merges state batches (already concatenated, in partition order).
pub(crate) fn combine(
    state: &RecordBatch,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    let g = group_rows(&key_columns(state, keys)?, state.num_rows())?;
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for spec in aggs {
        let cols = state_columns(state, spec)?;
        fields.extend(cols.iter().map(|(f, _)| f.clone()));
        let arrays: Vec<&ArrayRef> = cols.iter().map(|(_, a)| a).collect();
        match spec.func {
            AggFunc::Sum | AggFunc::Count | AggFunc::Mean => {
                for a in arrays {
                    let t = a.data_type().clone();
                    columns.push(sum(a, &g, &t)?);
                }
            }
            AggFunc::Std | AggFunc::Var => {
                columns.extend(merge_moments(arrays[0], arrays[1], arrays[2], &g))
            }
            AggFunc::Skew | AggFunc::Kurt => columns.extend(merge_higher_moments(&arrays, &g)),
            AggFunc::Cov | AggFunc::Corr => columns.extend(super::comoments::merge(&arrays, &g)),
            AggFunc::Largest(_) | AggFunc::Smallest(_) => {
                columns.push(super::top_values::merge(arrays[0], &g, spec.func)?)
            }
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => {
                columns.push(pick(arrays[0], &g, spec.func)?)
            }
            AggFunc::ApproxQuantile(_) => columns.push(merge_digests(arrays[0], &g)?),
            AggFunc::NUnique | AggFunc::Median | AggFunc::Quantile(_) => {
                let (values, vg) = crate::keys::groups::list_items(arrays[0], &g);
                let item = values.data_type().clone();
                let distinct = spec.func == AggFunc::NUnique;
                columns.push(value_lists(&values, &vg, &item, distinct)?)
            }
        }
    }
    keyed_output(state, keys, &g, fields, columns)
}

/// The median of `xs` (reordered): the middle value, or the mean of the two middle values
/// of an even count; `None` when empty.
fn median(xs: &mut [f64]) -> Option<f64> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let (_, hi, _) = xs.select_nth_unstable_by(n / 2, f64::total_cmp);
    let hi = *hi;
    if n % 2 == 1 {
        return Some(hi);
    }
    // The largest of the lower half.
    let lo = xs[..n / 2]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    Some((lo + hi) / 2.0)
}

/// The `q` quantile of `xs` (reordered), interpolated linearly between the values at
/// ranks `floor(q(n-1))` and `ceil(q(n-1))` as NumPy's and pandas' default; `None` when
/// empty.
fn quantile(xs: &mut [f64], q: f64) -> Option<f64> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let pos = q * (n - 1) as f64;
    let lo = (pos.floor() as usize).min(n - 1);
    let (_, at, above) = xs.select_nth_unstable_by(lo, f64::total_cmp);
    let lo_v = *at;
    let frac = pos - lo as f64;
    if frac == 0.0 || above.is_empty() {
        return Some(lo_v);
    }
    let hi_v = above.iter().copied().fold(f64::INFINITY, f64::min);
    // NumPy's lerp: exact at both ends.
    Some(if frac < 0.5 {
        lo_v + (hi_v - lo_v) * frac
    } else {
        hi_v - (hi_v - lo_v) * (1.0 - frac)
    })
}

/// Turns a combined state into results, sorted by the keys.
pub(crate) fn finalize(
    state: &RecordBatch,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for k in keys {
        let c = column(state, k, "groupby")?;
        fields.push(Field::new(k, c.data_type().clone(), true));
        columns.push(c);
    }
    for spec in aggs {
        let cols = state_columns(state, spec)?;
        let a: Vec<&ArrayRef> = cols.iter().map(|(_, a)| a).collect();
        let out: ArrayRef = match spec.func {
            AggFunc::Sum | AggFunc::Count => a[0].clone(),
            AggFunc::Mean => {
                let s = cast(a[0], &DataType::Float64)?;
                let s = s.as_primitive::<Float64Type>().values();
                let c = a[1].as_primitive::<Int64Type>().values();
                Arc::new(Float64Array::from_iter(
                    s.iter()
                        .zip(c.iter())
                        .map(|(&s, &c)| (c > 0).then(|| s / c as f64)),
                ))
            }
            AggFunc::Skew | AggFunc::Kurt => {
                let c = a[0].as_primitive::<Int64Type>().values();
                let f = |k: usize| a[k].as_primitive::<Float64Type>().values();
                let (m2, m3, m4) = (f(2), f(3), f(4));
                let skew = spec.func == AggFunc::Skew;
                Arc::new(Float64Array::from_iter((0..c.len()).map(|i| {
                    if skew {
                        skewness(c[i], m2[i], m3[i])
                    } else {
                        kurtosis(c[i], m2[i], m4[i])
                    }
                })))
            }
            AggFunc::Var | AggFunc::Std => {
                let c = a[0].as_primitive::<Int64Type>().values();
                let m2 = a[2].as_primitive::<Float64Type>().values();
                let std = spec.func == AggFunc::Std;
                Arc::new(Float64Array::from_iter(c.iter().zip(m2.iter()).map(
                    |(&c, &m2)| {
                        (c > 1).then(|| {
                            // Rounding can leave m2 a hair below zero; clamp that, but
                            // keep NaN (an infinite value in the group): `f64::max`
                            // would turn NaN into 0.
                            let v = m2 / (c - 1) as f64;
                            let v = if v < 0.0 { 0.0 } else { v };
                            if std {
                                v.sqrt()
                            } else {
                                v
                            }
                        })
                    },
                )))
            }
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => a[0].clone(),
            AggFunc::Cov | AggFunc::Corr => super::comoments::finish(&a, spec.func),
            AggFunc::Largest(_) | AggFunc::Smallest(_) => a[0].clone(),
            AggFunc::NUnique => {
                let list = a[0].as_list::<i32>();
                let lens: Vec<i64> = list
                    .offsets()
                    .windows(2)
                    .map(|w| i64::from(w[1] - w[0]))
                    .collect();
                Arc::new(Int64Array::new(ScalarBuffer::from(lens), None))
            }
            AggFunc::Median | AggFunc::Quantile(_) => {
                let list = a[0].as_list::<i32>();
                Arc::new(Float64Array::from_iter((0..list.len()).map(|r| {
                    let v = list.value(r);
                    let mut xs: Vec<f64> = v
                        .as_primitive::<Float64Type>()
                        .iter()
                        .flatten()
                        .filter(|x| !x.is_nan())
                        .collect();
                    match spec.func {
                        AggFunc::Quantile(q) => quantile(&mut xs, q.value()),
                        _ => median(&mut xs),
                    }
                })))
            }
            AggFunc::ApproxQuantile(q) => {
                let list = a[0].as_list::<i32>();
                let mut out = Vec::with_capacity(list.len());
                for r in 0..list.len() {
                    let v = list.value(r);
                    let d = Digest::decode(v.as_primitive::<Float64Type>().values())?;
                    out.push(d.map(|d| d.quantile(q.value())));
                }
                Arc::new(Float64Array::from(out))
            }
        };
        fields.push(Field::new(&spec.output, out.data_type().clone(), true));
        columns.push(out);
    }
    let out = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(state.num_rows())),
    )
    .map_err(|e| Error::arrow("groupby", e))?;
    if keys.is_empty() || out.num_rows() <= 1 {
        return Ok(out);
    }
    let by: Vec<tessera_core::frame::SortKey> = keys
        .iter()
        .map(|k| tessera_core::frame::SortKey {
            column: k.clone(),
            descending: false,
        })
        .collect();
    super::sort::sort_batch(&out, &by)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, StringArray};

    /// Skewness and kurtosis against pandas 3.1.1's `groupby(..).skew()` / `.kurt()`
    /// (`k` 0: [1, 2, 3, 4, 10]; 1: [2.5, -1, 7.25, 3, 3, 0.5]; 2: a constant; 3: two
    /// values), from one partial and from states merged across every split of the rows.
    #[test]
    fn skew_and_kurt_match_pandas_whole_and_merged() {
        let rows: Vec<(i64, f64)> = [1.0, 2.0, 3.0, 4.0, 10.0]
            .map(|v| (0, v))
            .into_iter()
            .chain([2.5, -1.0, 7.25, 3.0, 3.0, 0.5].map(|v| (1, v)))
            .chain([5.0; 4].map(|v| (2, v)))
            .chain([1.0, 2.0].map(|v| (3, v)))
            .collect();
        let aggs = [
            AggSpec::new("v", AggFunc::Skew, "s"),
            AggSpec::new("v", AggFunc::Kurt, "q"),
        ];
        let keys = ["k".to_string()];
        let batch = |rows: &[(i64, f64)]| {
            let k: ArrayRef = Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0)));
            let v: ArrayRef = Arc::new(Float64Array::from_iter_values(rows.iter().map(|r| r.1)));
            RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap()
        };
        let pandas = [
            (Some(1.697056274847714), Some(3.1519999999999984)),
            (Some(0.7028877695631479), Some(1.2980866394216881)),
            (None, None),
            (None, None),
        ];
        for cut in 0..=rows.len() {
            let states: Vec<RecordBatch> = [&rows[..cut], &rows[cut..]]
                .into_iter()
                .filter(|r| !r.is_empty())
                .map(|r| partial(&batch(r), &keys, &aggs).unwrap())
                .collect();
            let state = arrow_select::concat::concat_batches(&states[0].schema(), &states).unwrap();
            let out = finalize(&combine(&state, &keys, &aggs).unwrap(), &keys, &aggs).unwrap();
            let k = out.column(0).as_primitive::<Int64Type>();
            for (col, pick) in [(1, 0), (2, 1)] {
                let got = out.column(col).as_primitive::<Float64Type>();
                for row in 0..out.num_rows() {
                    let group = k.value(row) as usize;
                    let want = if pick == 0 {
                        pandas[group].0
                    } else {
                        pandas[group].1
                    };
                    let got = got.is_valid(row).then(|| got.value(row));
                    match (got, want) {
                        (Some(g), Some(w)) => assert!(
                            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                            "cut {cut}, group {group}, column {col}: {g} vs pandas {w}"
                        ),
                        (g, w) => assert_eq!(g, w, "cut {cut}, group {group}, column {col}"),
                    }
                }
            }
        }
    }

    /// Sums and means of a Decimal64 column (the 64-bit form a scan may hand over) equal
    /// those of its Decimal128 cast, in the same state types: with few groups (summed in
    /// lanes) and many, with and without nulls.
    #[test]
    fn decimal64_sums_equal_their_decimal128_casts() {
        let aggs = [
            AggSpec::new("v", AggFunc::Sum, "s"),
            AggSpec::new("v", AggFunc::Mean, "m"),
            AggSpec::new("v", AggFunc::Count, "c"),
        ];
        for (groups, nulls) in [(3, false), (3, true), (1000, false), (1000, true)] {
            let n = 5000i64;
            let k: ArrayRef = Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| (i * 7919) % groups),
            ));
            let v: arrow_array::Decimal64Array = (0..n)
                .map(|i| (!nulls || i % 5 != 2).then(|| (i - 2500) * 999_999_999_937))
                .collect();
            let v: ArrayRef = Arc::new(v.with_precision_and_scale(18, 3).unwrap());
            let wide = arrow_cast::cast(&v, &DataType::Decimal128(18, 3)).unwrap();
            let keys = ["k".to_string()];
            let got = partial(
                &RecordBatch::try_from_iter([("k", k.clone()), ("v", v)]).unwrap(),
                &keys,
                &aggs,
            )
            .unwrap();
            let want = partial(
                &RecordBatch::try_from_iter([("k", k), ("v", wide)]).unwrap(),
                &keys,
                &aggs,
            )
            .unwrap();
            assert_eq!(got, want, "{groups} groups, nulls {nulls}");
            assert_eq!(
                got.schema().field(1).data_type(),
                &DataType::Decimal128(38, 3)
            );
        }
    }

    /// A group holding an infinity has variance and standard deviation NaN (as NumPy and
    /// pandas): the clamp of a rounding error below zero must not turn NaN into 0.
    #[test]
    fn an_infinite_value_gives_a_nan_variance_not_zero() {
        let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 1, 1, 2, 2]));
        let v: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
            f64::NEG_INFINITY,
            11.0,
            -0.25,
            1.0,
            2.0,
        ]));
        let keys = ["k".to_string()];
        let aggs = [
            AggSpec::new("v", AggFunc::Var, "var"),
            AggSpec::new("v", AggFunc::Std, "std"),
        ];
        let batch = RecordBatch::try_from_iter([("k", k), ("v", v)]).unwrap();
        let state = partial(&batch, &keys, &aggs).unwrap();
        let out = finalize(&state, &keys, &aggs).unwrap();
        for c in 1..3 {
            let got = out.column(c).as_primitive::<Float64Type>();
            assert!(got.value(0).is_nan(), "column {c}: {:?}", got);
            assert!((got.value(1) - [0.5, 0.5f64.sqrt()][c - 1]).abs() < 1e-15);
        }
    }

    /// Each group's list as a sorted vector of its values.
    fn lists(a: &ArrayRef) -> Vec<Vec<String>> {
        let l = a.as_list::<i32>();
        (0..l.len())
            .map(|i| {
                let list = l.value(i);
                let v = arrow_cast::display::ArrayFormatter::try_new(
                    list.as_ref(),
                    &Default::default(),
                )
                .unwrap();
                let mut out: Vec<String> =
                    (0..list.len()).map(|j| v.value(j).to_string()).collect();
                out.sort();
                out
            })
            .collect()
    }

    #[test]
    fn lane_sums_match_a_row_by_row_fold_and_find_overflows() {
        // Lengths around the lane count, rows without a group, negative values.
        for rows in [0usize, 1, 3, 4, 5, 8, 13, 1001] {
            let ids: Vec<u32> = (0..rows)
                .map(|i| {
                    if i % 11 == 5 {
                        NO_GROUP
                    } else {
                        (i * 7 % 3) as u32
                    }
                })
                .collect();
            let values: Vec<i128> = (0..rows)
                .map(|i| (i as i128 - 400) * 1_000_000_000_000_000_007)
                .collect();
            let g = Groups {
                ids: ids.clone(),
                first_rows: vec![0; 3],
            };
            let mut want = vec![0i128; 3];
            for (&id, &x) in ids.iter().zip(&values) {
                if id != NO_GROUP {
                    want[id as usize] += x;
                }
            }
            assert_eq!(sum_i128_in_lanes(&values, &g), (want, false), "{rows} rows");
        }
        // Two maxima in one group pass i128, in the same lane or in two.
        for gap in [1usize, 4] {
            let mut values = vec![1i128; 8];
            values[0] = i128::MAX;
            values[gap] = i128::MAX;
            let g = Groups {
                ids: vec![0; 8],
                first_rows: vec![0],
            };
            assert!(sum_i128_in_lanes(&values, &g).1, "gap {gap}");
        }
    }

    #[test]
    fn shared_sums_and_counts_keep_each_columns_own_nulls() {
        // x has no nulls, y has two; the groups are k.
        let batch = RecordBatch::try_from_iter(vec![
            (
                "k",
                Arc::new(Int64Array::from(vec![1, 1, 2, 2, 2])) as ArrayRef,
            ),
            (
                "x",
                Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5])) as ArrayRef,
            ),
            (
                "y",
                Arc::new(Int64Array::from(vec![
                    Some(10),
                    None,
                    None,
                    Some(7),
                    Some(1),
                ])) as ArrayRef,
            ),
        ])
        .unwrap();
        let specs = [
            AggSpec::new("x", AggFunc::Sum, "sx"),
            AggSpec::new("x", AggFunc::Mean, "mx"),
            AggSpec::new("x", AggFunc::Count, "cx"),
            AggSpec::new("y", AggFunc::Count, "cy"),
            AggSpec::new("y", AggFunc::Mean, "my"),
            AggSpec::new("y", AggFunc::Sum, "sy"),
        ];
        let state = partial(&batch, &["k".to_string()], &specs).unwrap();
        let out = finalize(&state, &["k".to_string()], &specs).unwrap();
        let ints = |name: &str| -> Vec<i64> {
            let c = out.column_by_name(name).unwrap();
            let c = arrow_cast::cast(c, &DataType::Int64).unwrap();
            c.as_primitive::<Int64Type>().values().to_vec()
        };
        let floats = |name: &str| -> Vec<f64> {
            let c = out.column_by_name(name).unwrap();
            let c = arrow_cast::cast(c, &DataType::Float64).unwrap();
            c.as_primitive::<Float64Type>().values().to_vec()
        };
        assert_eq!(ints("sx"), vec![3, 12]);
        assert_eq!(floats("mx"), vec![1.5, 4.0]);
        assert_eq!(ints("cx"), vec![2, 3]);
        assert_eq!(ints("cy"), vec![1, 2]);
        assert_eq!(floats("my"), vec![10.0, 4.0]);
        assert_eq!(ints("sy"), vec![10, 8]);
    }

    #[test]
    fn distinct_value_lists_hold_each_value_once_per_group() {
        // Group 0 is large (sorted path), group 1 small (pairwise path), group 2 all null,
        // and rows of no group are left out.
        let n = 100;
        let ids: Vec<u32> = (0..n)
            .map(|i| match i % 10 {
                0..=6 => 0,
                7 | 8 => 1,
                _ if i < 50 => 2,
                _ => NO_GROUP,
            })
            .collect();
        let values: Vec<Option<i32>> = (0..n)
            .map(|i| match i % 10 {
                7 | 8 => Some(i % 3),
                9 => None,
                _ => Some((i * 7) % 13),
            })
            .collect();
        let g = Groups {
            ids: ids.clone(),
            first_rows: vec![0, 7, 9],
        };
        let ints: ArrayRef = Arc::new(Int32Array::from(values.clone()));
        let text: ArrayRef = Arc::new(StringArray::from_iter(
            values.iter().map(|v| v.map(|x| format!("v{x}"))),
        ));
        let mut want: Vec<std::collections::BTreeSet<i32>> = vec![Default::default(); 3];
        for (id, v) in ids.iter().zip(&values) {
            if let (true, Some(v)) = (*id != NO_GROUP, v) {
                want[*id as usize].insert(*v);
            }
        }
        let as_text = |prefix: &str| -> Vec<Vec<String>> {
            want.iter()
                .map(|s| {
                    let mut v: Vec<String> = s.iter().map(|x| format!("{prefix}{x}")).collect();
                    v.sort();
                    v
                })
                .collect()
        };
        let got = value_lists(&ints, &g, &DataType::Int32, true).unwrap();
        assert_eq!(lists(&got), as_text(""));
        assert!(
            want[0].len() > 1 && want[0].len() < 70,
            "group 0 has repeats"
        );
        let got = value_lists(&text, &g, &DataType::Utf8, true).unwrap();
        assert_eq!(lists(&got), as_text("v"));
        // Without `distinct`, every non-null value is kept.
        let all = value_lists(&ints, &g, &DataType::Int32, false).unwrap();
        let sizes: Vec<usize> = lists(&all).iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![70, 20, 0]);
    }
}
