//! Grouping by several keys, or by strings, without encoding rows.
//!
//! Each key column is first turned into small integer codes on its own: an integer column
//! whose range is small is its offset from the minimum (no hashing at all); any other
//! integer column, and any string column whose strings fit in 15 bytes (packed into a
//! `u128`), is numbered by a [`CodeTable`] that fetches the slots of the keys ahead of
//! the one it looks up; longer strings by a hash map over their bytes; and a string view
//! column whose strings all fit in the view (12 bytes or fewer: flags, status codes, ship
//! modes) by the 16-byte view itself, never touching string bytes. Fixed-width values are
//! looked up in a small direct-mapped cache before the table, so a column of a few
//! distinct values costs one well-predicted comparison per row. A
//! dictionary of strings (a Parquet scan's keys, see
//! `StoredForms::dictionary_keys`) is numbered through its keys: its values
//! once, then each row by its key. A row's codes then combine into one integer (mixed
//! radix) as the rows are grouped: a dense table when the combined range is small (TPC-H
//! Q1's return flag and line status: 3 x 2), else a hash map on a `u64` (Q20's part and
//! supplier keys).
//!
//! This replaces `arrow-row`'s encoding of every row into bytes and the hash map over those
//! bytes, which costs a copy of each key and a byte-slice hash and comparison per row.
//! When the combinations of the keys so far would pass a `u64`, the combined codes are
//! renumbered densely (there are at most as many as rows) before the next key joins them,
//! so any number of keys takes this path. A key that is the same on every row of each of
//! the first key's values (a customer's name after its key) is not numbered at all: it
//! adds no groups. Key types it does not cover (nested types, Decimal256, dictionaries
//! with other key or value types) return `None` and take the row-encoding path.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, GenericStringArray, OffsetSizeTrait};
use arrow_schema::DataType;
use tessera_core::Result;

use super::code_table::{CodeKey, CodeTable, BLOCK};
use super::groups::{dense_limit, groups_of, valid_range, Groups};
use super::strings::{packed, StrValues, PACKED};

/// A key column as codes in `0..cardinality` (a null row's code is arbitrary).
struct Codes {
    codes: Vec<u32>,
    cardinality: u64,
    /// When the codes were given in order of first appearance (by a numbering, not by a
    /// value's offset), the first row of each: a single key's codes are then its groups
    /// as they stand.
    first_rows: Option<Vec<u32>>,
}

/// Distinct keys a column may have for [`number`] to find them by scanning a list.
const FEW: usize = 8;

/// Numbers the values `keys` yields in order of first appearance. A column of a few
/// distinct values (flags, statuses, modes: TPC-H Q1 groups by two of them) is numbered
/// by a scan of the values seen so far, which costs less than hashing every row; from the
/// `FEW + 1`-th distinct value on, a hash map takes over.
fn number<K: std::hash::Hash + Eq + Copy>(keys: impl Iterator<Item = K>, rows: usize) -> Codes {
    let mut codes = Vec::with_capacity(rows);
    let mut first_rows = Vec::new();
    let mut few: Vec<K> = Vec::with_capacity(FEW);
    let mut keys = keys.enumerate();
    while let Some((i, k)) = keys.next() {
        if let Some(c) = few.iter().position(|s| *s == k) {
            codes.push(c as u32);
            continue;
        }
        if few.len() < FEW {
            codes.push(few.len() as u32);
            first_rows.push(i as u32);
            few.push(k);
            continue;
        }
        let mut map: HashMap<K, u32, ahash::RandomState> =
            HashMap::with_hasher(ahash::RandomState::new());
        map.extend(few.iter().enumerate().map(|(c, &s)| (s, c as u32)));
        for (i, k) in std::iter::once((i, k)).chain(keys) {
            let next = map.len() as u32;
            codes.push(*map.entry(k).or_insert_with(|| {
                first_rows.push(i as u32);
                next
            }));
        }
        return Codes {
            codes,
            cardinality: map.len() as u64,
            first_rows: Some(first_rows),
        };
    }
    Codes {
        codes,
        cardinality: few.len() as u64,
        first_rows: Some(first_rows),
    }
}

/// Slots in [`number_cached`]'s cache, as a power of two.
const CACHE_BITS: u32 = 8;

/// `k`'s slot in [`number_cached`]'s cache: the top bits of its hash under a fixed seed
/// (two keys sharing a slot only cost a look-up in the table).
fn cache_slot<K: CodeKey>(k: K) -> usize {
    (k.mix([0x2545_f491_4f6c_dd1d, 0x9e37_79b9_7f4a_7c15]) >> (64 - CACHE_BITS)) as usize
}

/// Rows [`number_cached`] looks at before it judges its cache.
const CACHE_TRIAL: usize = 4096;

/// [`number`] for fixed-width keys: codes in order of first appearance, found through a
/// direct-mapped cache of the last key seen in each of 256 slots before a [`CodeTable`].
/// A column of a few distinct values (TPC-H Q1's return flag and line status, as 16-byte
/// string views) then costs one well-predicted comparison per row; a scan of the values
/// seen so far mispredicts its exit on most rows when they come in no order. When the
/// cache misses on more than half of the first [`CACHE_TRIAL`] rows (many distinct keys),
/// the rest go straight to the table a block at a time, which fetches their slots ahead
/// and makes room once for the distinct keys its first rows predict
/// ([`CodeTable::for_rows`]).
fn number_cached<K: CodeKey>(keys: impl Iterator<Item = K>, rows: usize) -> Codes {
    let mut codes = Vec::with_capacity(rows);
    let mut first_rows = Vec::new();
    let mut table = CodeTable::for_rows(rows);
    let mut cache: Vec<Option<(K, u32)>> = vec![None; 1 << CACHE_BITS];
    let mut misses = 0usize;
    let mut keys = keys.enumerate();
    let mut cached = true;
    for (i, k) in keys.by_ref() {
        let slot = &mut cache[cache_slot(k)];
        match *slot {
            Some((seen, code)) if seen == k => codes.push(code),
            _ => {
                misses += 1;
                table.number(&[k], &mut codes, |_| first_rows.push(i as u32));
                *slot = codes.last().map(|&code| (k, code));
            }
        }
        if i + 1 == CACHE_TRIAL && misses * 2 > CACHE_TRIAL {
            cached = false;
            break;
        }
    }
    if !cached {
        let mut block = [K::ZERO; BLOCK];
        loop {
            let start = codes.len();
            let mut m = 0;
            for (slot, (_, k)) in block.iter_mut().zip(keys.by_ref()) {
                *slot = k;
                m += 1;
            }
            if m == 0 {
                break;
            }
            table.number(&block[..m], &mut codes, |j| {
                first_rows.push((start + j) as u32)
            });
        }
    }
    Codes {
        codes,
        cardinality: table.len() as u64,
        first_rows: Some(first_rows),
    }
}

/// A string key as [`number`] compares it: short ones as [`packed`] integers (two
/// comparisons, no call to `memcmp`), long ones by their bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum StrKey<'a> {
    Short(u128),
    Long(&'a [u8]),
}

/// Codes of a `Utf8`/`LargeUtf8` column (a null slot's offsets are valid, so its bytes,
/// usually none, are read like any other). A column of strings of at most 15 bytes (codes,
/// names, identifiers) is numbered as [`packed`] integers through [`number_cached`]; a
/// column with longer strings as [`StrKey`]s. Comparing byte slices called `memcmp` for
/// every probe: a third of a groupby on 100k distinct 10-byte strings.
fn strings<O: OffsetSizeTrait>(a: &GenericStringArray<O>) -> Codes {
    let offsets = a.value_offsets();
    let data = a.value_data();
    let span = |i: usize| {
        let start = offsets[i].as_usize();
        (start, offsets[i + 1].as_usize() - start)
    };
    let rows = a.len();
    if (0..rows).all(|i| span(i).1 <= PACKED) {
        return number_cached(
            (0..rows).map(|i| {
                let (start, len) = span(i);
                packed(data, start, len)
            }),
            rows,
        );
    }
    number(
        (0..rows).map(|i| {
            let (start, len) = span(i);
            if len <= PACKED {
                StrKey::Short(packed(data, start, len))
            } else {
                StrKey::Long(&data[start..start + len])
            }
        }),
        rows,
    )
}

/// The codes of one key column, or `None` for a type this path does not take.
fn column_codes(k: &ArrayRef) -> Result<Option<Codes>> {
    let rows = k.len();
    Ok(Some(match k.data_type() {
        DataType::Utf8View => {
            let a = k.as_string_view();
            let views = a.views();
            // A view of a string of at most 12 bytes holds its length and all its bytes
            // (zero-padded), so equal views are equal strings.
            // A null slot's view is unspecified: it reads as the empty string.
            match a.nulls() {
                None if views.iter().all(|&v| (v as u32) <= 12) => {
                    number_cached(views.iter().copied(), rows)
                }
                Some(n) if (0..rows).all(|i| n.is_null(i) || (views[i] as u32) <= 12) => {
                    number_cached(
                        n.iter().zip(views).map(|(ok, &v)| if ok { v } else { 0 }),
                        rows,
                    )
                }
                // Longer strings among them: short ones as packed integers, the others
                // by their bytes.
                _ => {
                    let values = StrValues::View(a);
                    number(
                        (0..rows).map(|i| {
                            if !a.is_valid(i) {
                                StrKey::Short(0)
                            } else if let Some(p) = values.packed(i) {
                                StrKey::Short(p)
                            } else {
                                StrKey::Long(a.value(i).as_bytes())
                            }
                        }),
                        rows,
                    )
                }
            }
        }
        DataType::Utf8 => strings(k.as_string::<i32>()),
        DataType::LargeUtf8 => strings(k.as_string::<i64>()),
        // A dictionary's keys, through the codes of its values (a value may repeat in a
        // dictionary; equal values get one code). A null row's key is arbitrary.
        DataType::Dictionary(key, _) if **key == DataType::Int32 => {
            let d = k.as_dictionary::<Int32Type>();
            let Some(values) = column_codes(d.values())? else {
                return Ok(None);
            };
            Codes {
                codes: d
                    .keys()
                    .values()
                    .iter()
                    .map(|&key| {
                        usize::try_from(key)
                            .ok()
                            .and_then(|key| values.codes.get(key).copied())
                            .unwrap_or(0)
                    })
                    .collect(),
                cardinality: values.cardinality,
                first_rows: None,
            }
        }
        DataType::Binary => {
            let a = k.as_binary::<i32>();
            number((0..rows).map(|i| a.value(i)), rows)
        }
        DataType::LargeBinary => {
            let a = k.as_binary::<i64>();
            number((0..rows).map(|i| a.value(i)), rows)
        }
        DataType::Decimal128(_, _) => number_cached(
            k.as_primitive::<Decimal128Type>().values().iter().copied(),
            rows,
        ),
        // By the bits floats are told apart by as keys (`key_bits`): -0.0 is 0.0 and
        // every NaN one NaN, as the row encoding sees them.
        DataType::Float64 => number_cached(
            k.as_primitive::<Float64Type>()
                .values()
                .iter()
                .map(|&x| super::groups::key_bits(x)),
            rows,
        ),
        DataType::Float32 => number_cached(
            k.as_primitive::<Float32Type>()
                .values()
                .iter()
                .map(|&x| super::groups::key_bits(f64::from(x))),
            rows,
        ),
        DataType::Boolean => {
            let a = k.as_boolean();
            Codes {
                codes: (0..rows).map(|i| u32::from(a.value(i))).collect(),
                cardinality: 2,
                first_rows: None,
            }
        }
        t if t.is_integer()
            || matches!(
                t,
                DataType::Date32 | DataType::Date64 | DataType::Timestamp(..)
            ) =>
        {
            let Some(wide) = super::groups::int_key(std::slice::from_ref(k))? else {
                return Ok(None);
            };
            let v = wide.as_primitive::<Int64Type>();
            let valid = |i: usize| v.is_valid(i);
            match valid_range(v.values(), v.nulls()) {
                Some((lo, span)) if span < dense_limit(rows) => Codes {
                    codes: v
                        .values()
                        .iter()
                        .enumerate()
                        .map(|(i, &x)| if valid(i) { (x - lo) as u32 } else { 0 })
                        .collect(),
                    cardinality: span + 1,
                    first_rows: None,
                },
                // All null (no range) or a wide range: number the values.
                _ => number_cached(v.values().iter().copied(), rows),
            }
        }
        _ => return Ok(None),
    }))
}

/// True when `k` has the same value (or is null) on every row of each code of `codes`,
/// `rep[code]` being the code's first row (built from `codes` on the first check that
/// needs it, and kept for the next key): grouping by the codes and `k` then gives the
/// groups of the codes alone. TPC-H Q10 groups by a customer's key and six of its
/// attributes (name, address, comment...): checking that each row's attributes are its
/// key's first row's (the same view, after a join's take) costs less than numbering long
/// strings by a hash map. Types not handled here answer `false` and are numbered.
fn determined(k: &ArrayRef, codes: &[u32], rep: &mut Option<Vec<u32>>) -> bool {
    let mut same = |eq: &dyn Fn(usize, usize) -> bool| {
        let rep = rep.get_or_insert_with(|| first_rows(codes));
        let nulls = k.logical_nulls();
        codes.iter().enumerate().all(|(i, &c)| {
            let j = rep[c as usize] as usize;
            match &nulls {
                Some(n) if n.is_null(i) || n.is_null(j) => n.is_null(i) == n.is_null(j),
                _ => eq(i, j),
            }
        })
    };
    match k.data_type() {
        DataType::Utf8View => {
            let a = k.as_string_view();
            let views = a.views();
            same(&|i, j| {
                let (v, w) = (views[i], views[j]);
                // Equal views are equal strings (short ones inline, long ones the same
                // bytes); a long string elsewhere is compared by its bytes.
                v == w || (v as u64 == w as u64 && v as u32 > 12 && a.value(i) == a.value(j))
            })
        }
        DataType::Utf8 => {
            let a = k.as_string::<i32>();
            same(&|i, j| a.value(i) == a.value(j))
        }
        DataType::Int64 => {
            let v = k.as_primitive::<Int64Type>().values();
            same(&|i, j| v[i] == v[j])
        }
        DataType::Decimal128(_, _) => {
            let v = k.as_primitive::<Decimal128Type>().values();
            same(&|i, j| v[i] == v[j])
        }
        DataType::Float64 => {
            // By the bits the codes tell floats apart by.
            let v = k.as_primitive::<Float64Type>().values();
            same(&|i, j| super::groups::key_bits(v[i]) == super::groups::key_bits(v[j]))
        }
        _ => false,
    }
}

/// Groups rows by `keys` through per-column codes, or `None` when a key's type, or the
/// number of combinations, is outside this path. `valid(i)` says whether row `i` has no
/// null key. Group ids are in order of first appearance, as the other paths give them.
pub(crate) fn group_by_codes(
    keys: &[ArrayRef],
    rows: usize,
    valid: impl Fn(usize) -> bool,
) -> Result<Option<Groups>> {
    // Row i's combined code: ((c0 * n1) + c1) * n2 + c2 ..., computed as the rows are
    // grouped (no combined column is written); when the next product would pass a u64,
    // the keys so far are renumbered densely into one (at most one code per row) first,
    // so any number of keys fits.
    let mut numbered: Vec<Codes> = Vec::new();
    let mut combinations: u64 = 1;
    // The first key's first row of each code: a later key that is the same on every row
    // of a code is a function of the first key and adds no groups.
    let mut rep: Option<Vec<u32>> = None;
    // Whether `numbered[0]` is still the first key's codes (not a renumbering).
    let mut first_key = true;
    for k in keys {
        if let (true, Some(c0)) = (first_key, numbered.first()) {
            if determined(k, &c0.codes, &mut rep) {
                continue;
            }
        }
        let Some(c) = column_codes(k)? else {
            return Ok(None);
        };
        let n = c.cardinality.max(1);
        match combinations.checked_mul(n) {
            Some(m) => combinations = m,
            None => {
                let dense = number_cached((0..rows).map(|i| combined(&numbered, i)), rows);
                combinations = dense.cardinality.max(1) * n;
                // The first key is no longer its own column of codes: later keys are
                // numbered (`determined` compares against the first key's codes).
                first_key = false;
                numbered = vec![dense];
            }
        }
        numbered.push(c);
    }
    // One key numbered in order of first appearance: its codes are the groups, unless a
    // null row took a code (the groups number only rows with keys).
    if let [Codes {
        first_rows: Some(_),
        ..
    }] = numbered.as_slice()
    {
        if (0..rows).all(&valid) {
            if let Some(Codes {
                codes,
                first_rows: Some(first_rows),
                ..
            }) = numbered.pop()
            {
                return Ok(Some(Groups {
                    ids: codes,
                    first_rows,
                }));
            }
        }
    }
    let dense = (combinations <= dense_limit(rows)).then_some(combinations);
    Ok(Some(match numbered.as_slice() {
        [] => groups_of(rows, |_| 0, dense, valid),
        [a] => groups_of(rows, |i| u64::from(a.codes[i]), dense, valid),
        [a, b] => {
            let nb = b.cardinality.max(1);
            groups_of(
                rows,
                |i| u64::from(a.codes[i]) * nb + u64::from(b.codes[i]),
                dense,
                valid,
            )
        }
        more => groups_of(rows, |i| combined(more, i), dense, valid),
    }))
}

/// Row `i`'s combined code over `keys`: ((c0 * n1) + c1) * n2 + c2 ...
fn combined(keys: &[Codes], i: usize) -> u64 {
    keys.iter()
        .fold(0, |x, c| x * c.cardinality.max(1) + u64::from(c.codes[i]))
}

/// The first row of each code of `codes`.
fn first_rows(codes: &[u32]) -> Vec<u32> {
    let size = codes.iter().max().map_or(0, |&m| m as usize + 1);
    let mut rep = vec![u32::MAX; size];
    for (i, &code) in codes.iter().enumerate().rev() {
        rep[code as usize] = i as u32;
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::groups::NO_GROUP;
    use arrow_array::{BooleanArray, Int32Array, Int64Array, StringArray, StringViewArray};
    use std::sync::Arc;

    #[test]
    fn number_gives_first_appearance_codes_below_and_past_the_short_list() {
        // 3, FEW, FEW + 1 and 50 distinct values, in a repeating but shuffled order.
        for distinct in [3u64, FEW as u64, FEW as u64 + 1, 50] {
            let keys: Vec<u64> = (0..1000u64)
                .map(|i| (i * 7919 + i / 3) % distinct)
                .collect();
            let got = number(keys.iter().copied(), keys.len());
            let mut seen: HashMap<u64, u32> = HashMap::new();
            let want: Vec<u32> = keys
                .iter()
                .map(|k| {
                    let next = seen.len() as u32;
                    *seen.entry(*k).or_insert(next)
                })
                .collect();
            assert_eq!(got.codes, want, "{distinct} distinct");
            assert_eq!(got.first_rows, Some(first_rows(&want)));
            assert_eq!(got.cardinality, distinct, "{distinct} distinct");
        }
    }

    /// The cached numbering agrees with a plain map (codes in order of first appearance,
    /// so each code's first row is where the map first saw its key; cardinality), for few
    /// keys, keys that share cache slots, and more distinct keys than the trial lets
    /// through the cache.
    #[test]
    fn cached_numbering_matches_a_map_in_order_of_first_appearance() {
        // Keys 256 * j share slot patterns less than distinct ones; the hash is
        // multiplicative, so find two keys with the same slot to be sure.
        let a = 1u64;
        let b = (2..u64::MAX)
            .find(|&k| cache_slot(k) == cache_slot(a))
            .unwrap();
        let cases: Vec<Vec<u64>> = vec![
            (0..5000u64)
                .map(|i| [a, b, 7][(i * 7919 % 3) as usize])
                .collect(),
            (0..1000u64).map(|i| (i * 7919 + i / 3) % 50).collect(),
            (0..20_000u64).map(|i| i * 2_654_435_761 % 9_973).collect(),
            // Past `ESTIMATE_ROWS` into a table past the cache (its slots fetched
            // ahead), and as many keys as rows (the estimate says so at once).
            (0..300_000u64)
                .map(|i| i * 2_654_435_761 % 100_003)
                .collect(),
            (0..70_000u64).map(|i| i * 7 + (i >> 3)).collect(),
            Vec::new(),
        ];
        for keys in cases {
            let got = number_cached(keys.iter().copied(), keys.len());
            let mut seen: HashMap<u64, u32> = HashMap::new();
            let mut first = Vec::new();
            let want: Vec<u32> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| {
                    let next = seen.len() as u32;
                    *seen.entry(*k).or_insert_with(|| {
                        first.push(i as u32);
                        next
                    })
                })
                .collect();
            assert_eq!(got.codes, want);
            assert_eq!(got.cardinality, seen.len() as u64);
            assert_eq!(first_rows(&got.codes), first);
            assert_eq!(got.first_rows, Some(first));
        }
    }

    /// Groups as sets of rows, independent of numbering.
    fn sets(ids: &[u32]) -> Vec<Vec<usize>> {
        let mut by: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
        for (i, &g) in ids.iter().enumerate() {
            if g != NO_GROUP {
                by.entry(g).or_default().push(i);
            }
        }
        let mut v: Vec<_> = by.into_values().collect();
        v.sort();
        v
    }

    /// The grouping `arrow-row` gives: rows with equal encoded keys.
    fn by_rows(keys: &[ArrayRef], valid: &dyn Fn(usize) -> bool) -> Vec<Vec<usize>> {
        let rows = super::super::groups::encode_rows(keys).unwrap();
        let mut by: std::collections::BTreeMap<Vec<u8>, Vec<usize>> = Default::default();
        for i in 0..rows.num_rows() {
            if valid(i) {
                by.entry(rows.row(i).data().to_vec()).or_default().push(i);
            }
        }
        let mut v: Vec<_> = by.into_values().collect();
        v.sort();
        v
    }

    #[test]
    fn attributes_of_the_first_key_add_no_groups_and_others_still_split() {
        // A customer table (key, long comment, name, balance with a null) taken by an
        // order column, as a join's output is: each attribute is a function of the key.
        let customers = 40u32;
        let key: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..customers as i64).map(|c| 1000 + 7 * c),
        ));
        let comment: ArrayRef = Arc::new(StringViewArray::from_iter_values(
            (0..customers).map(|c| format!("customer {c}'s comment, longer than a view")),
        ));
        let name: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..customers).map(|c| format!("C{c}")),
        ));
        let balance: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..customers).map(|c| (c != 3).then_some(i64::from(c % 5))),
        ));
        let mut s: u64 = 0x2545_f491;
        let picks: arrow_array::UInt32Array = (0..3000)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % u64::from(customers)) as u32
            })
            .collect();
        let take = |a: &ArrayRef| arrow_select::take::take(a, &picks, None).unwrap();
        let n = picks.len();
        let (key, comment, name, balance) =
            (take(&key), take(&comment), take(&name), take(&balance));
        let codes = column_codes(&key).unwrap().unwrap();
        // Built by the first check, kept for the others.
        let mut rep = None;
        for attribute in [&comment, &name, &balance] {
            assert!(determined(attribute, &codes.codes, &mut rep));
        }
        // The same comment strings stored once per row (other views, same bytes).
        let copied: ArrayRef =
            Arc::new(StringViewArray::from_iter(comment.as_string_view().iter()));
        assert!(determined(&copied, &codes.codes, &mut rep));
        // One row of customer 5 with another comment, or another balance: not determined.
        let row = picks.values().iter().position(|&c| c == 5).unwrap();
        let mut texts: Vec<Option<String>> = comment
            .as_string_view()
            .iter()
            .map(|v| v.map(String::from))
            .collect();
        texts[row] = Some("customer 5's other comment, longer than a view".into());
        let changed: ArrayRef = Arc::new(StringViewArray::from_iter(
            texts.iter().map(|t| t.as_deref()),
        ));
        assert!(!determined(&changed, &codes.codes, &mut rep));
        let mut b: Vec<Option<i64>> = balance.as_primitive::<Int64Type>().iter().collect();
        b[row] = None;
        let nulled: ArrayRef = Arc::new(Int64Array::from(b));
        assert!(!determined(&nulled, &codes.codes, &mut rep));
        // Grouped: the rows of each customer, and the changed row apart from its customer.
        for keys in [
            vec![key.clone(), comment.clone(), name.clone(), balance.clone()],
            vec![key.clone(), changed.clone(), name.clone()],
            vec![key.clone(), name.clone(), nulled.clone()],
            vec![name.clone(), key.clone(), copied.clone()],
        ] {
            let nulls = super::super::groups::key_nulls(&keys);
            let valid = |i: usize| nulls.as_ref().is_none_or(|m| m.is_valid(i));
            let g = group_by_codes(&keys, n, valid)
                .unwrap()
                .expect("codes path");
            assert_eq!(sets(&g.ids), by_rows(&keys, &valid));
        }
    }

    #[test]
    fn codes_group_as_row_encoding_does() {
        let mut s: u64 = 0x9e37_79b9;
        let mut next = |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        let n = 5_000;
        let words = [
            "AIR",
            "RAIL",
            "TRUCK",
            "a string longer than twelve",
            "",
            "MAIL",
        ];
        let flag: ArrayRef = Arc::new(StringViewArray::from_iter(
            (0..n).map(|_| (next(9) > 0).then(|| words[next(3) as usize])),
        ));
        let long: ArrayRef = Arc::new(StringViewArray::from_iter(
            (0..n).map(|_| Some(words[next(6) as usize])),
        ));
        let utf8: ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|_| (next(7) > 0).then(|| words[next(6) as usize])),
        ));
        let small: ArrayRef = Arc::new(Int32Array::from_iter(
            (0..n).map(|_| (next(11) > 0).then(|| next(5) as i32 - 2)),
        ));
        let wide: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..n).map(|_| (next(40) as i64) << 40),
        ));
        let flags: ArrayRef = Arc::new(BooleanArray::from_iter(
            (0..n).map(|_| (next(5) > 0).then(|| next(2) == 1)),
        ));
        let sets_of_keys: Vec<Vec<ArrayRef>> = vec![
            vec![flag.clone()],
            vec![long.clone()],
            vec![utf8.clone()],
            vec![flag.clone(), small.clone()],
            vec![long, wide.clone(), flags.clone()],
            vec![utf8, flag, small, wide, flags],
        ];
        for keys in sets_of_keys {
            let nulls = super::super::groups::key_nulls(&keys);
            let valid = |i: usize| nulls.as_ref().is_none_or(|m| m.is_valid(i));
            let g = group_by_codes(&keys, n, valid)
                .unwrap()
                .expect("codes path");
            assert_eq!(sets(&g.ids), by_rows(&keys, &valid), "{} keys", keys.len());
            // Ids count up in order of first appearance, and each group's first row is it.
            let mut seen = 0u32;
            for (i, &id) in g.ids.iter().enumerate() {
                if id != NO_GROUP && id == seen {
                    assert_eq!(g.first_rows[id as usize] as usize, i);
                    seen += 1;
                }
                assert!(id == NO_GROUP || id < seen, "id {id} before {seen}");
            }
            assert_eq!(seen as usize, g.first_rows.len());
        }
    }

    #[test]
    fn many_wide_keys_floats_decimals_and_bytes_group_as_row_encoding_does() {
        // Five columns of 2^16 distinct values each: past a u64 of combinations, so the
        // codes are renumbered on the way.
        let n = 1usize << 16;
        let wide: Vec<ArrayRef> = (0..5i64)
            .map(|k| {
                Arc::new(Int64Array::from_iter_values(
                    (0..n as i64).map(|i| ((i * (2 * k + 1)) % n as i64) * 1_000_003),
                )) as ArrayRef
            })
            .collect();
        let floats: ArrayRef = Arc::new(arrow_array::Float64Array::from_iter((0..n).map(
            |i| match i % 6 {
                0 => Some(0.0),
                1 => Some(-0.0),
                2 => Some(f64::NAN),
                3 => None,
                _ => Some((i % 4) as f64 / 3.0),
            },
        )));
        let decimals: ArrayRef = Arc::new(
            arrow_array::Decimal128Array::from_iter(
                (0..n).map(|i| (i % 9 != 0).then_some((i as i128 % 7) * 10i128.pow(30))),
            )
            .with_precision_and_scale(38, 2)
            .unwrap(),
        );
        let bytes: ArrayRef = Arc::new(arrow_array::BinaryArray::from_iter(
            (0..n).map(|i| (i % 5 != 0).then(|| vec![0u8; i % 3])),
        ));
        let mut many = wide.clone();
        many.push(floats.clone());
        for keys in [
            many,
            vec![floats, decimals.clone(), bytes.clone()],
            vec![wide[0].clone(), decimals, wide[1].clone(), bytes],
        ] {
            let nulls = super::super::groups::key_nulls(&keys);
            let valid = |i: usize| nulls.as_ref().is_none_or(|m| m.is_valid(i));
            let g = group_by_codes(&keys, n, valid)
                .unwrap()
                .expect("codes path");
            assert_eq!(sets(&g.ids), by_rows(&keys, &valid), "{} keys", keys.len());
        }
    }

    #[test]
    fn short_and_long_strings_share_one_numbering() {
        let long = "a string longer than fifteen bytes";
        let a = StringArray::from(vec!["x", long, "", "x", long, "fifteen bytes!!", "", "y"]);
        let c = strings(&a);
        assert_eq!(c.codes, [0, 1, 2, 0, 1, 3, 2, 4]);
        assert_eq!(c.cardinality, 5);
        let short = StringArray::from(vec!["b", "a", "b", "", "a"]);
        let c = strings(&short);
        assert_eq!(c.codes, [0, 1, 0, 2, 1]);
        assert_eq!(c.cardinality, 3);
    }

    #[test]
    fn keys_outside_the_path_say_so() {
        let dict: ArrayRef = Arc::new(
            vec!["a", "b", "a"]
                .into_iter()
                .collect::<arrow_array::DictionaryArray<arrow_array::types::Int8Type>>(),
        );
        assert!(group_by_codes(&[dict], 3, |_| true).unwrap().is_none());
    }

    /// Int32 dictionaries of strings (a Parquet scan's group keys) group as their strings
    /// do, with a value repeated in the dictionary, null keys, and next to a second key.
    #[test]
    fn string_dictionaries_group_as_their_strings() {
        use arrow_array::types::Int32Type;
        use arrow_array::{DictionaryArray, Int32Array};
        let values: ArrayRef = Arc::new(StringArray::from(vec!["x", "y", "x", "zz"]));
        let keys = Int32Array::from(
            (0..60)
                .map(|i: i32| (i % 7 != 3).then_some(i * 5 % 4))
                .collect::<Vec<_>>(),
        );
        let dict: ArrayRef = Arc::new(DictionaryArray::<Int32Type>::try_new(keys, values).unwrap());
        let other: ArrayRef = Arc::new(Int64Array::from_iter_values((0..60).map(|i| i % 2)));
        for ks in [
            vec![dict.clone()],
            vec![dict.clone(), other.clone()],
            vec![other, dict],
        ] {
            let nulls = super::super::groups::key_nulls(&ks);
            let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
            let g = group_by_codes(&ks, 60, valid).unwrap().unwrap();
            assert_eq!(sets(&g.ids), by_rows(&ks, &valid));
        }
    }
}
