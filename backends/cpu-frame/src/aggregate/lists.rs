//! The values of each group as a list (`collect`, distinct values for `nunique`, exact
//! quantiles): rows bucketed by group, duplicates dropped by value.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, ListArray, UInt32Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field};
use tessera_core::{Error, Result};

use crate::keys::groups::{encode_rows, Groups, NO_GROUP};

/// `(group, row)` pairs as each group's row count and the rows ordered by group (rows of
/// a group in the order given): a counting sort.
pub(super) fn by_group(
    pairs: impl Iterator<Item = (u32, u32)>,
    groups: usize,
) -> (Vec<usize>, Vec<u32>) {
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
pub(super) fn dedup_by_value(rows: &mut [u32], v: &[i64]) -> usize {
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
pub(super) fn value_lists(
    a: &ArrayRef,
    g: &Groups,
    item: &DataType,
    distinct: bool,
) -> Result<ArrayRef> {
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
