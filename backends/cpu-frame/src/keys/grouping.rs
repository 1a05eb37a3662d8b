//! Rows to group ids: the choice among the ways of numbering keys.
//!
//! One integer-like key takes the fast path of [`super::groups`] (a dense table over a small
//! range, else a hash map on the value); several keys or string keys are numbered column by
//! column ([`super::codes`]); any other key set is encoded by `arrow-row` and hashed as
//! bytes ([`super::groups::encode_rows`]).

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::ArrayRef;
use arrow_buffer::NullBuffer;
use tessera_core::Result;

use super::codes::group_by_codes;
use super::groups::{
    dense_limit, encode_rows, groups_of, hashed_groups, int_key, key_nulls, valid_range, Groups,
    NO_GROUP,
};

/// Assigns every row of `rows` rows to a group by its keys; no keys = one group of
/// everything (present even with no rows).
pub(crate) fn group_rows(keys: &[ArrayRef], rows: usize) -> Result<Groups> {
    group_selected_rows(keys, rows, None)
}

/// [`group_rows`] of the rows `selected` marks valid (all when `None`): the others get
/// [`NO_GROUP`], and a key seen only on them makes no group.
pub(crate) fn group_selected_rows(
    keys: &[ArrayRef],
    rows: usize,
    selected: Option<&NullBuffer>,
) -> Result<Groups> {
    if keys.is_empty() {
        let ids = match selected {
            Some(s) => (0..rows)
                .map(|i| if s.is_valid(i) { 0 } else { NO_GROUP })
                .collect(),
            None => vec![0; rows],
        };
        return Ok(Groups {
            ids,
            first_rows: vec![0],
        });
    }
    let nulls = NullBuffer::union(key_nulls(keys).as_ref(), selected);
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    if let Some(k) = int_key(keys)? {
        let v = k.as_primitive::<Int64Type>().values();
        // The offset from the minimum: a bijection of i64s (wrapping), small when the
        // range is.
        return Ok(match valid_range(v, nulls.as_ref()) {
            Some((lo, span)) if span < dense_limit(rows) => groups_of(
                rows,
                |i| v[i].wrapping_sub(lo) as u64,
                Some(span + 1),
                valid,
            ),
            _ => groups_of(rows, |i| v[i] as u64, None, valid),
        });
    }
    if let Some(g) = group_by_codes(keys, rows, valid)? {
        return Ok(g);
    }
    let encoded = encode_rows(keys)?;
    Ok(hashed_groups(rows, |i| encoded.row(i).data(), valid))
}
