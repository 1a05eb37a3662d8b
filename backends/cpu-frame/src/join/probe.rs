//! The probe (left) side run through a [`BuildTable`]: pairs of matching rows for inner,
//! left, right and outer joins, and for semi and anti joins whether each row matches.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::ArrayRef;
use tessera_core::frame::JoinType;
use tessera_core::{Error, Result};

use super::build::{BuildTable, HAS_NEXT, ROW};
use super::pairs::{Pairs, MISSING};
use crate::keys::groups::{encode_rows, int_key, key_nulls};
use crate::keys::strings::{probe_strings, PassHash, StrValues};

/// The chain head of `key` in a dense table starting at `lo`, if the key is there.
pub(super) fn dense_head(lo: i64, head: &[u32], key: i64) -> Option<u32> {
    key.checked_sub(lo)
        .and_then(|d| usize::try_from(d).ok())
        .and_then(|d| head.get(d))
        .copied()
        .filter(|&v| v != MISSING)
}

/// Whether `key` is in a [`BuildTable::DenseSet`] starting at `lo`.
pub(super) fn dense_bit(lo: i64, bits: &[u64], key: i64) -> bool {
    key.checked_sub(lo)
        .and_then(|d| usize::try_from(d).ok())
        .and_then(|d| bits.get(d / 64).map(|w| w >> (d % 64) & 1 == 1))
        .unwrap_or(false)
}

/// The right rows whose encoded keys equal `row`, in chain order: the rows of `row`'s
/// hash chain, checked for equality (hashes collide).
pub(super) fn encoded_matches<'a>(
    rows: &'a arrow_row::Rows,
    head: &HashMap<u64, u32, ahash::RandomState>,
    next: &'a [u32],
    state: &ahash::RandomState,
    row: arrow_row::Row<'a>,
) -> impl Iterator<Item = u32> + 'a {
    let mut r = head.get(&state.hash_one(row.data())).copied();
    std::iter::from_fn(move || {
        while let Some(v) = r {
            let j = v & ROW;
            r = (v & HAS_NEXT != 0).then(|| next[j as usize]);
            if rows.row(j as usize) == row {
                return Some(j);
            }
        }
        None
    })
}

/// The right rows whose string key equals `key`, in chain order: the rows of its hash
/// chain, checked for equality (hashes collide).
pub(super) fn string_matches<'a>(
    right: &'a StrValues<'a>,
    head: &HashMap<u64, u32, PassHash>,
    next: &'a [u32],
    state: &ahash::RandomState,
    left: &'a StrValues<'a>,
    i: usize,
) -> impl Iterator<Item = u32> + 'a {
    let mut r = head.get(&left.hash(state, i)).copied();
    std::iter::from_fn(move || {
        while let Some(v) = r {
            let j = v & ROW;
            r = (v & HAS_NEXT != 0).then(|| next[j as usize]);
            if left.eq(i, right, j as usize) {
                return Some(j);
            }
        }
        None
    })
}

/// Every match of each valid left row (`matches(i)`, in chain order) as a pair, or the
/// row alone for a left/outer join; marks the matched right rows when `matched` is kept
/// (right and outer joins).
pub(super) fn probe_each<I: Iterator<Item = u32>>(
    ln: usize,
    lvalid: &dyn Fn(usize) -> bool,
    keep_left: bool,
    matched: &mut [bool],
    pairs: &mut Pairs,
    matches: impl Fn(usize) -> I,
) {
    let keep_right = !matched.is_empty();
    for i in 0..ln {
        let mut hit = false;
        if lvalid(i) {
            for j in matches(i) {
                pairs.left.push(i as u32);
                pairs.right.push(j);
                if keep_right {
                    matched[j as usize] = true;
                }
                hit = true;
            }
        }
        if !hit && keep_left {
            pairs.push(Some(i as u32), None);
        }
    }
}

/// The probe side's single string key, for a [`BuildTable::Strings`].
pub(super) fn probe_key(lk: &[ArrayRef]) -> Result<ArrayRef> {
    probe_strings(lk).ok_or_else(|| {
        Error::invalid(
            "merge",
            "the right key is a string column and the left one is not: cast one side so both keys are strings",
        )
    })
}

/// Probes an integer-keyed table (`lookup` gives a key's chain head): every match of
/// each valid left row in chain order, or the row alone for a left/outer join; marks the
/// matched right rows when `matched` is kept (right and outer joins).
pub(super) fn probe_ints(
    lk: &[ArrayRef],
    lookup: impl Fn(i64) -> Option<u32>,
    next: &[u32],
    lvalid: &dyn Fn(usize) -> bool,
    keep_left: bool,
    matched: &mut [bool],
    pairs: &mut Pairs,
) -> Result<()> {
    let l = int_key(lk)?.ok_or_else(|| {
        Error::Internal("join: integer build table for non-integer probe keys".into())
    })?;
    let values = l.as_primitive::<Int64Type>().values();
    let heads = (0..values.len()).map(|i| if lvalid(i) { lookup(values[i]) } else { None });
    probe_heads(heads, next, keep_left, matched, pairs);
    Ok(())
}

/// Walks the chain of each left row's head (`None`: no match, or a null key), in left
/// order: every match as a pair, or the row alone for a left/outer join; marks the
/// matched right rows when `matched` is kept (right and outer joins).
pub(super) fn probe_heads(
    heads: impl Iterator<Item = Option<u32>>,
    next: &[u32],
    keep_left: bool,
    matched: &mut [bool],
    pairs: &mut Pairs,
) {
    let keep_right = !matched.is_empty();
    for (i, mut r) in heads.enumerate() {
        let hit = r.is_some();
        while let Some(v) = r {
            let j = v & ROW;
            pairs.left.push(i as u32);
            pairs.right.push(j);
            if keep_right {
                matched[j as usize] = true;
            }
            r = (v & HAS_NEXT != 0).then(|| next[j as usize]);
        }
        if !hit && keep_left {
            pairs.push(Some(i as u32), None);
        }
    }
}

/// A string key column read as bytes (the probe side's, or the table's).
pub(super) fn string_values(keys: &ArrayRef) -> Result<StrValues<'_>> {
    StrValues::of(keys).ok_or_else(|| Error::Internal("join: string keys that read as none".into()))
}

/// Row `i`'s chain head in a [`BuildTable::ShortStrings`]: `None` for a string too long to
/// be in the table, or one that is not.
pub(super) fn short_head(
    head: &HashMap<u128, u32, ahash::RandomState>,
    left: &StrValues<'_>,
    i: usize,
) -> Option<u32> {
    head.get(&left.packed(i)?).copied()
}

/// Hash join pairs, in left order (then unmatched right rows).
pub(super) fn hash_pairs(
    lk: &[ArrayRef],
    table: &BuildTable,
    ln: usize,
    rn: usize,
    how: JoinType,
) -> Result<Pairs> {
    let lnull = key_nulls(lk);
    let lvalid = |i: usize| lnull.as_ref().is_none_or(|n| n.is_valid(i));
    let keep_left = matches!(how, JoinType::Left | JoinType::Outer);
    let keep_right = matches!(how, JoinType::Right | JoinType::Outer);
    let mut matched = if keep_right {
        vec![false; rn]
    } else {
        Vec::new()
    };
    if let BuildTable::Packed { packing, table } = table {
        return hash_pairs(&[packing.pack(lk)?], table, ln, rn, how);
    }
    let mut pairs = Pairs::with_capacity(ln);
    match table {
        BuildTable::DenseSet { .. } => {
            return Err(Error::Internal(
                "join: a semi/anti join's key set cannot give row pairs".into(),
            ))
        }
        BuildTable::Dense { lo, head, next } => {
            let lookup = |key: i64| dense_head(*lo, head, key);
            probe_ints(
                lk,
                lookup,
                next,
                &lvalid,
                keep_left,
                &mut matched,
                &mut pairs,
            )?;
        }
        BuildTable::Packed { .. } => {
            return Err(Error::Internal(
                "join: packed keys reached the probe of unpacked ones".into(),
            ))
        }
        BuildTable::Int {
            head,
            next,
            present,
        } => {
            let lookup = |key: i64| {
                if present
                    .as_ref()
                    .is_some_and(|(lo, bits)| !dense_bit(*lo, bits, key))
                {
                    return None;
                }
                head.get(&key).copied()
            };
            probe_ints(
                lk,
                lookup,
                next,
                &lvalid,
                keep_left,
                &mut matched,
                &mut pairs,
            )?;
        }
        BuildTable::ShortStrings { head, next } => {
            let probe = probe_key(lk)?;
            let left = string_values(&probe)?;
            let heads = (0..ln).map(|i| lvalid(i).then(|| short_head(head, &left, i)).flatten());
            probe_heads(heads, next, keep_left, &mut matched, &mut pairs);
        }
        BuildTable::Strings {
            keys,
            head,
            next,
            state,
        } => {
            let probe = probe_key(lk)?;
            let (left, right) = (string_values(&probe)?, string_values(keys)?);
            let each = |i: usize| string_matches(&right, head, next, state, &left, i);
            probe_each(ln, &lvalid, keep_left, &mut matched, &mut pairs, each);
        }
        BuildTable::Rows {
            rows,
            head,
            next,
            state,
        } => {
            let lr = encode_rows(lk)?;
            let each = |i: usize| encoded_matches(rows, head, next, state, lr.row(i));
            probe_each(ln, &lvalid, keep_left, &mut matched, &mut pairs, each);
        }
    }
    if keep_right {
        for (j, m) in matched.iter().enumerate() {
            if !m {
                pairs.push(None, Some(j as u32));
            }
        }
    }
    Ok(pairs)
}

/// Whether each left row's key occurs in `table` (a null key never does).
pub(super) fn has_match(lk: &[ArrayRef], table: &BuildTable, ln: usize) -> Result<Vec<bool>> {
    if let BuildTable::Packed { packing, table } = table {
        return has_match(&[packing.pack(lk)?], table, ln);
    }
    let lnull = key_nulls(lk);
    let lvalid = |i: usize| lnull.as_ref().is_none_or(|n| n.is_valid(i));
    let ints = || -> Result<ArrayRef> {
        int_key(lk)?.ok_or_else(|| {
            Error::Internal("join: integer build table for non-integer probe keys".into())
        })
    };
    Ok(match table {
        BuildTable::Dense { lo, head, .. } => {
            let l = ints()?;
            l.as_primitive::<Int64Type>()
                .values()
                .iter()
                .enumerate()
                .map(|(i, &key)| lvalid(i) && dense_head(*lo, head, key).is_some())
                .collect()
        }
        BuildTable::DenseSet { lo, bits } => {
            let l = ints()?;
            l.as_primitive::<Int64Type>()
                .values()
                .iter()
                .enumerate()
                .map(|(i, &key)| lvalid(i) && dense_bit(*lo, bits, key))
                .collect()
        }
        BuildTable::Int { head, present, .. } => {
            let l = ints()?;
            l.as_primitive::<Int64Type>()
                .values()
                .iter()
                .enumerate()
                .map(|(i, key)| {
                    lvalid(i)
                        && present
                            .as_ref()
                            .is_none_or(|(lo, bits)| dense_bit(*lo, bits, *key))
                        && head.contains_key(key)
                })
                .collect()
        }
        BuildTable::Packed { .. } => {
            return Err(Error::Internal(
                "join: packed keys reached the probe of unpacked ones".into(),
            ))
        }
        BuildTable::ShortStrings { head, .. } => {
            let probe = probe_key(lk)?;
            let left = string_values(&probe)?;
            (0..ln)
                .map(|i| lvalid(i) && short_head(head, &left, i).is_some())
                .collect()
        }
        BuildTable::Strings {
            keys,
            head,
            next,
            state,
        } => {
            let probe = probe_key(lk)?;
            let (left, right) = (string_values(&probe)?, string_values(keys)?);
            (0..ln)
                .map(|i| {
                    lvalid(i)
                        && string_matches(&right, head, next, state, &left, i)
                            .next()
                            .is_some()
                })
                .collect()
        }
        BuildTable::Rows {
            rows,
            head,
            next,
            state,
        } => {
            let lr = encode_rows(lk)?;
            (0..ln)
                .map(|i| {
                    lvalid(i)
                        && encoded_matches(rows, head, next, state, lr.row(i))
                            .next()
                            .is_some()
                })
                .collect()
        }
    })
}
