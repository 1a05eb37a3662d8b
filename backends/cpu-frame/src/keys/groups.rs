//! Key columns → group ids and partition hashes.
//!
//! One integer-like key (the common `groupby("passenger_count")` or join on an id) takes
//! a fast path: a dense lookup table when the key range is small, else a hash map on the
//! `i64` value. Several keys, or string keys, are numbered column by column and the codes
//! combined (`super::codes`). Any other key set goes through `arrow-row`, which encodes the keys of a
//! row as comparable bytes, and a hash map on those bytes. `super::grouping` picks among
//! them; this file holds the pieces.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType, SortOptions};
use tessera_core::{Error, Result};

/// Marks a row whose key has a null (dropped by groupbys, never matched by joins).
pub(crate) const NO_GROUP: u32 = u32::MAX;

/// Rows assigned to groups.
pub(crate) struct Groups {
    /// Group of each row, or [`NO_GROUP`].
    pub ids: Vec<u32>,
    /// The first row of each group (its representative for the key columns).
    pub first_rows: Vec<u32>,
}

impl Groups {
    /// Number of groups.
    pub fn len(&self) -> usize {
        self.first_rows.len()
    }
}

/// The keys as an `i64` column when there is one key of an integer-like type that fits.
pub(crate) fn int_key(keys: &[ArrayRef]) -> Result<Option<ArrayRef>> {
    if keys.len() != 1 {
        return Ok(None);
    }
    let k = &keys[0];
    Ok(match k.data_type() {
        DataType::Int64 => Some(k.clone()),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(_, _) => {
            Some(arrow_cast::cast(k, &DataType::Int64).map_err(|e| Error::arrow("keys", e))?)
        }
        _ => None,
    })
}

/// The smallest valid value of `v` (valid where `nulls` says, or everywhere) and the
/// distance to the largest, or `None` when no value is valid (or the distance passes
/// `u64`, which it cannot for `i64`s). Without nulls it is a plain min/max the compiler
/// vectorizes: a join's build side of millions of keys is ranged on one thread.
pub(crate) fn valid_range(v: &[i64], nulls: Option<&NullBuffer>) -> Option<(i64, u64)> {
    let (lo, hi) = match nulls.filter(|n| n.null_count() > 0) {
        None => v
            .iter()
            .fold((i64::MAX, i64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x))),
        Some(n) => v
            .iter()
            .zip(n.iter())
            .filter(|(_, ok)| *ok)
            .fold((i64::MAX, i64::MIN), |(lo, hi), (&x, _)| {
                (lo.min(x), hi.max(x))
            }),
    };
    let span = i128::from(hi) - i128::from(lo);
    Some((lo, u64::try_from(span).ok()?))
}

/// The largest key range numbered by its offset from the minimum (a dense table) rather
/// than hashed, for `rows` rows: small next to the rows, or tiny.
pub(crate) fn dense_limit(rows: usize) -> u64 {
    (1u64 << 16).max(rows.min(1 << 24) as u64)
}

/// The validity of a row's key set: valid only where every key is.
pub(crate) fn key_nulls(keys: &[ArrayRef]) -> Option<NullBuffer> {
    keys.iter().fold(None, |acc: Option<NullBuffer>, k| {
        NullBuffer::union(acc.as_ref(), k.logical_nulls().as_ref())
    })
}

/// Floats with `-0.0` made `0.0` and every NaN the same NaN, so that values equal as keys
/// (as pandas, Polars and DuckDB group, join and count them) have equal bytes in the row
/// format; any other column as it is. A float column with neither (the usual case: a scan,
/// no copy) is returned as it is too, since comparisons and keys sit on hot paths.
pub(crate) fn canonical_floats(a: ArrayRef) -> ArrayRef {
    use arrow_array::types::{Float32Type, Float64Type};
    macro_rules! canonical {
        ($t:ty, $nan:expr) => {{
            let p = a.as_primitive::<$t>();
            // Only a -0.0 or a NaN of another bit pattern than the canonical one changes.
            let changes = p.values().iter().any(|v| {
                (*v == 0.0 && v.is_sign_negative()) || (v.is_nan() && v.to_bits() != $nan.to_bits())
            });
            if !changes {
                return a;
            }
            Arc::new(p.unary::<_, $t>(|v| if v.is_nan() { $nan } else { v + 0.0 }))
        }};
    }
    match a.data_type() {
        DataType::Float64 => canonical!(Float64Type, f64::NAN),
        DataType::Float32 => canonical!(Float32Type, f32::NAN),
        _ => a,
    }
}

/// The bits a float key is told apart by: `-0.0` as `0.0`, every NaN as one NaN.
pub(crate) fn key_bits(x: f64) -> u64 {
    if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        (x + 0.0).to_bits()
    }
}

/// Row-format encoding of the keys (ascending, nulls last): equal keys give equal bytes
/// and byte order is key order. Floats are compared as keys ([`canonical_floats`]).
pub(crate) fn encode_rows(keys: &[ArrayRef]) -> Result<Rows> {
    let keys: Vec<ArrayRef> = keys.iter().cloned().map(canonical_floats).collect();
    let keys = keys.as_slice();
    let fields = keys
        .iter()
        .map(|k| {
            SortField::new_with_options(
                k.data_type().clone(),
                SortOptions {
                    descending: false,
                    nulls_first: false,
                },
            )
        })
        .collect();
    let conv = RowConverter::new(fields).map_err(|e| Error::arrow("keys", e))?;
    conv.convert_columns(keys)
        .map_err(|e| Error::arrow("keys", e))
}

/// Rows grouped by an integer code per row (`code(i)`), group ids in order of first
/// appearance: a table indexed by the code when all codes are below `dense` (the common
/// small key range), else a hash map. Rows where `valid` is false get [`NO_GROUP`].
pub(crate) fn groups_of(
    rows: usize,
    code: impl Fn(usize) -> u64,
    dense: Option<u64>,
    valid: impl Fn(usize) -> bool,
) -> Groups {
    let Some(n) = dense else {
        return hashed_groups(rows, code, valid);
    };
    let mut ids = vec![NO_GROUP; rows];
    let mut first_rows = Vec::new();
    let mut table = vec![NO_GROUP; n as usize];
    for (i, id) in ids.iter_mut().enumerate() {
        if !valid(i) {
            continue;
        }
        let slot = &mut table[code(i) as usize];
        if *slot == NO_GROUP {
            *slot = first_rows.len() as u32;
            first_rows.push(i as u32);
        }
        *id = *slot;
    }
    Groups { ids, first_rows }
}

/// Up to this many rows, [`hashed_groups`] makes room for a group per row at once: such
/// a table stays in the caches however few groups it holds.
const GROUPS_SIZED: usize = 1 << 17;

/// Rows grouped by a hashable key per row (`key(i)`), ids in order of first appearance;
/// rows where `valid` is false get [`NO_GROUP`].
pub(crate) fn hashed_groups<K: std::hash::Hash + Eq>(
    rows: usize,
    key: impl Fn(usize) -> K,
    valid: impl Fn(usize) -> bool,
) -> Groups {
    let mut ids = vec![NO_GROUP; rows];
    let mut first_rows = Vec::new();
    // Growing a table of as many groups as rows by doubling rehashes every key about
    // twice (a tenth of a groupby of 1M rows into 1M groups): room for a group per row is
    // made at once for a partition of at most `GROUPS_SIZED` rows, and for a larger one
    // when 19 of 20 of its first rows (a quarter, at most 64 Ki) were new groups. Fewer
    // groups keep a compact table that grows as it needs: spread over room for every row
    // their look-ups would leave the caches (625k rows into 50k random groups: 10.3 ms
    // grown, 18.6 ms sized; into 625k: 45 ms grown, 20 ms sized, 23 ms after the trial).
    let sized = rows <= GROUPS_SIZED;
    let trial = (rows / 4).min(1 << 16);
    let mut map: HashMap<K, u32, ahash::RandomState> = HashMap::with_capacity_and_hasher(
        if sized { rows } else { trial },
        ahash::RandomState::new(),
    );
    for (i, id) in ids.iter_mut().enumerate() {
        if !sized && i == trial && map.len() * 20 > trial * 19 {
            map.reserve(rows - map.len());
        }
        if !valid(i) {
            continue;
        }
        let next = first_rows.len() as u32;
        *id = *map.entry(key(i)).or_insert_with(|| {
            first_rows.push(i as u32);
            next
        });
    }
    Groups { ids, first_rows }
}

/// A hash of every row's keys, the same for equal keys of the same types in any batch.
pub(crate) fn hash_rows(keys: &[ArrayRef], rows: usize) -> Result<Vec<u64>> {
    let state = ahash::RandomState::with_seeds(0x7e55, 0xe7a, 0x5eed, 0xc0ffee);
    if let Some(k) = int_key(keys)? {
        let v = k.as_primitive::<Int64Type>().values();
        return Ok(v.iter().map(|x| state.hash_one(x)).collect());
    }
    if keys.is_empty() {
        return Ok(vec![0; rows]);
    }
    if let Some(hashes) = hash_int_columns(keys, rows, &state)? {
        return Ok(hashes);
    }
    if let Some(hashes) = hash_strings(keys, &state) {
        return Ok(hashes);
    }
    let encoded = encode_rows(keys)?;
    Ok((0..rows)
        .map(|i| state.hash_one(encoded.row(i).data()))
        .collect())
}

/// [`hash_rows`] of one string key (any layout, or a dictionary of strings): its bytes
/// hashed where they lie, alike in every layout, instead of encoded with `arrow-row`
/// first; a null hashes as a marker. `None` for other keys, whether or not a batch has
/// nulls: every batch of a key type must take the same path, or equal keys would land in
/// different buckets.
fn hash_strings(keys: &[ArrayRef], state: &ahash::RandomState) -> Option<Vec<u64>> {
    let strings = super::strings::probe_strings(keys)?;
    let values = super::strings::StrValues::of(&strings)?;
    let null = state.hash_one(NULL_KEY);
    Some(
        (0..strings.len())
            .map(|i| {
                if strings.is_valid(i) {
                    state.hash_one(values.get(i))
                } else {
                    null
                }
            })
            .collect(),
    )
}

/// What a null key is hashed as by [`hash_strings`] and [`hash_int_columns`]: equal rows
/// must hash alike, and a collision with a value only shares a bucket.
const NULL_KEY: &str = "null key";

/// [`hash_rows`] of several integer-like keys, a column at a time: each row's hash so far
/// hashed with its next key, or with a marker where that key is null (no row encoding,
/// no bytes per row: six keys of ten million rows route to buckets in a fifth of the row
/// format's time). `None` for other keys, whether or not a batch has nulls (see
/// [`hash_strings`]).
fn hash_int_columns(
    keys: &[ArrayRef],
    rows: usize,
    state: &ahash::RandomState,
) -> Result<Option<Vec<u64>>> {
    let mut columns = Vec::with_capacity(keys.len());
    for k in keys {
        match int_key(std::slice::from_ref(k))? {
            Some(ints) => columns.push(ints),
            None => return Ok(None),
        }
    }
    let mut hashes = vec![0u64; rows];
    for (j, c) in columns.iter().enumerate() {
        let v = c.as_primitive::<Int64Type>().values();
        let hash = |h: u64, x: &i64| {
            if j == 0 {
                state.hash_one(x)
            } else {
                state.hash_one((h, x))
            }
        };
        match c.nulls().filter(|n| n.null_count() > 0) {
            None => hashes.iter_mut().zip(v).for_each(|(h, x)| *h = hash(*h, x)),
            Some(nulls) => {
                for ((h, x), valid) in hashes.iter_mut().zip(v).zip(nulls.iter()) {
                    *h = if valid {
                        hash(*h, x)
                    } else {
                        state.hash_one((*h, NULL_KEY))
                    };
                }
            }
        }
    }
    Ok(Some(hashes))
}

/// The items of a (possibly sliced) List state column, flattened, and the group of each
/// (its list row's group under `g`).
pub(crate) fn list_items(
    lists: &arrow_array::ArrayRef,
    g: &Groups,
) -> (arrow_array::ArrayRef, Groups) {
    let list = arrow_array::cast::AsArray::as_list::<i32>(lists.as_ref());
    let offsets = list.offsets();
    let (lo, hi) = (offsets[0] as usize, offsets[list.len()] as usize);
    let values = list.values().slice(lo, hi - lo);
    let mut ids = Vec::with_capacity(values.len());
    for (row, w) in offsets.windows(2).enumerate() {
        ids.extend(std::iter::repeat_n(g.ids[row], (w[1] - w[0]) as usize));
    }
    let items = Groups {
        ids,
        first_rows: g.first_rows.clone(),
    };
    (values, items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};

    /// Groups as a plain scan defines them: ids in order of first appearance.
    fn scanned(keys: &[u64], valid: impl Fn(usize) -> bool) -> Groups {
        let mut seen = HashMap::new();
        let mut first_rows = Vec::new();
        let ids = (0..keys.len())
            .map(|i| {
                if !valid(i) {
                    return NO_GROUP;
                }
                *seen.entry(keys[i]).or_insert_with(|| {
                    first_rows.push(i as u32);
                    first_rows.len() as u32 - 1
                })
            })
            .collect();
        Groups { ids, first_rows }
    }

    /// Small and large partitions, few groups and a group per row (where the table makes
    /// room for every row after its trial), with null rows: the same groups either way.
    #[test]
    fn hashed_groups_number_in_order_of_first_appearance_at_every_size() {
        let mix = |i: u64| (i ^ (i >> 7)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 13;
        for rows in [1000usize, GROUPS_SIZED + 1, 300_000] {
            for groups in [7u64, 5000, u64::MAX] {
                let keys: Vec<u64> = (0..rows as u64).map(|i| mix(i) % groups).collect();
                let valid = |i: usize| i % 97 != 5;
                let got = hashed_groups(rows, |i| keys[i], valid);
                let want = scanned(&keys, valid);
                assert_eq!(got.ids, want.ids, "{rows} rows, {groups} groups");
                assert_eq!(
                    got.first_rows, want.first_rows,
                    "{rows} rows, {groups} groups"
                );
                let n = want.first_rows.len();
                assert!(n <= groups as usize && (groups > rows as u64 || n == groups as usize));
            }
        }
    }

    /// `-0.0` and `0.0` are one key, and so is every NaN, through both the row encoding
    /// and the hashes that route rows to partitions (as pandas, Polars and DuckDB group).
    #[test]
    fn negative_zero_and_every_nan_are_one_key_each() {
        let nan2 = f64::from_bits(f64::NAN.to_bits() ^ 1);
        let k: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
            0.0,
            -0.0,
            f64::NAN,
            nan2,
            1.5,
        ]));
        let g = crate::keys::grouping::group_rows(std::slice::from_ref(&k), 5).unwrap();
        assert_eq!(g.ids[0], g.ids[1]);
        assert_eq!(g.ids[2], g.ids[3]);
        assert_eq!(g.first_rows.len(), 3);
        let h = hash_rows(&[k], 5).unwrap();
        assert_eq!((h[0], h[2]), (h[1], h[3]));
        // A column with nothing to change is the same array, not a copy.
        let clean: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![0.0, f64::NAN, 2.5]));
        assert!(Arc::ptr_eq(&canonical_floats(clean.clone()), &clean));
        let negative_nan: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![-f64::NAN]));
        let fixed = canonical_floats(negative_nan);
        assert_eq!(
            fixed
                .as_primitive::<arrow_array::types::Float64Type>()
                .value(0)
                .to_bits(),
            f64::NAN.to_bits()
        );
    }

    /// Groups as sets of rows, independent of group numbering.
    fn partition_of(g: &Groups) -> Vec<Vec<usize>> {
        let mut by: Vec<Vec<usize>> = vec![Vec::new(); g.len()];
        for (i, &id) in g.ids.iter().enumerate() {
            if id != NO_GROUP {
                by[id as usize].push(i);
            }
        }
        by.sort();
        by
    }

    #[test]
    fn dense_hash_and_row_paths_group_alike() {
        let small: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(3),
            None,
            Some(5),
            Some(3),
            Some(5),
            Some(4),
        ]));
        // The same grouping with a huge key range forces the hash path.
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(3 << 40),
            None,
            Some(5),
            Some(3 << 40),
            Some(5),
            Some(-4),
        ]));
        // And as strings, through arrow-row.
        let text: ArrayRef = Arc::new(StringArray::from(vec![
            Some("c"),
            None,
            Some("e"),
            Some("c"),
            Some("e"),
            Some("d"),
        ]));
        let want = vec![vec![0, 3], vec![2, 4], vec![5]];
        for keys in [small, wide, text] {
            let g = crate::keys::grouping::group_rows(std::slice::from_ref(&keys), 6).unwrap();
            assert_eq!(g.ids[1], NO_GROUP, "a null key is dropped");
            let mut got = partition_of(&g);
            got.sort();
            assert_eq!(got, want);
            assert_eq!(g.first_rows.len(), 3);
        }
        let none = crate::keys::grouping::group_rows(&[], 4).unwrap();
        assert_eq!((none.len(), none.ids), (1, vec![0; 4]));
    }

    #[test]
    fn equal_keys_hash_alike_across_batches() {
        let a: ArrayRef = Arc::new(Int64Array::from(vec![7, 8, 9]));
        let b: ArrayRef = Arc::new(Int64Array::from(vec![9, 7]));
        let (ha, hb) = (hash_rows(&[a], 3).unwrap(), hash_rows(&[b], 2).unwrap());
        assert_eq!(ha[2], hb[0]);
        assert_eq!(ha[0], hb[1]);
        assert_ne!(ha[0], ha[1]);
    }

    /// Several integer keys are hashed a column at a time, and keys with a null through the
    /// row format: either way equal rows hash alike in any batch, and the order of the
    /// keys within a row matters.
    #[test]
    fn equal_key_rows_hash_alike_across_batches() {
        let int = |v: Vec<Option<i64>>| Arc::new(Int64Array::from(v)) as ArrayRef;
        let small = |v: Vec<i32>| Arc::new(arrow_array::Int32Array::from(v)) as ArrayRef;
        let a = [int(vec![Some(1), Some(2), Some(2)]), small(vec![5, 6, 5])];
        let b = [int(vec![Some(2), Some(1)]), small(vec![5, 5])];
        let (ha, hb) = (hash_rows(&a, 3).unwrap(), hash_rows(&b, 2).unwrap());
        assert_eq!((ha[2], ha[0]), (hb[0], hb[1]));
        assert_ne!(ha[1], ha[2]);
        let swapped = hash_rows(&[small(vec![5, 6]), int(vec![Some(1), Some(2)])], 2).unwrap();
        assert_ne!(swapped[0], ha[0], "(5, 1) is not (1, 5)");
        // One string key, in any layout or as a dictionary, hashes as its bytes.
        let text = |t: &DataType| {
            let a: ArrayRef = Arc::new(StringArray::from(vec!["ab", "c", "ab"]));
            arrow_cast::cast(&a, t).unwrap()
        };
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let hashes: Vec<Vec<u64>> = [
            DataType::Utf8,
            DataType::Utf8View,
            DataType::LargeUtf8,
            dict,
        ]
        .iter()
        .map(|t| hash_rows(&[text(t)], 3).unwrap())
        .collect();
        assert!(hashes.iter().all(|h| h == &hashes[0]), "{hashes:?}");
        assert_eq!(hashes[0][0], hashes[0][2]);
        assert_ne!(hashes[0][0], hashes[0][1]);
        // A batch with nulls hashes its other rows as a batch without any does (both
        // sides of a shuffle must agree), and its null rows alike.
        let nulls = [
            int(vec![Some(2), None, Some(1), None]),
            small(vec![5, 5, 5, 5]),
        ];
        let hn = hash_rows(&nulls, 4).unwrap();
        assert_eq!((hn[0], hn[2]), (ha[2], ha[0]));
        assert_eq!(hn[1], hn[3]);
        assert_ne!(hn[0], hn[1]);
        let with_null = |t: &DataType| {
            let a: ArrayRef = Arc::new(StringArray::from(vec![Some("ab"), None, Some("c")]));
            arrow_cast::cast(&a, t).unwrap()
        };
        let hs = hash_rows(&[with_null(&DataType::Utf8View)], 3).unwrap();
        assert_eq!((hs[0], hs[2]), (hashes[0][0], hashes[0][1]));
        assert_ne!(hs[1], hs[0]);
    }
}
