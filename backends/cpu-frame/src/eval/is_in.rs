//! `is_in`: membership in a literal set, by a hash set of the operand type, a direct
//! test for a few values, or a set of string views.

use std::sync::Arc;

use super::{cast_to, is_text, literal_array};
use crate::keys::groups::canonical_floats;
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType;
use tessera_core::frame::expr::Literal;
use tessera_core::{Error, Result};

/// `a is_in values`, comparing in `operand`: the values go into a hash set of their
/// row-format bytes (any Arrow type, exact), each row is one lookup. A value that does not
/// fit the operand type (300 for a `UInt8` column) matches nothing.
pub(crate) fn is_in(a: &ArrayRef, operand: &DataType, values: &[Literal]) -> Result<ArrayRef> {
    use arrow_row::{RowConverter, SortField};
    if let Some(out) = is_in_direct(a, values)? {
        return Ok(out);
    }
    let x = canonical_floats(cast_to(a, operand)?);
    let wanted = values
        .iter()
        .filter(|v| **v != Literal::Null)
        .map(|v| cast_to(&literal_array(v), operand))
        .collect::<Result<Vec<ArrayRef>>>()?;
    let wanted: ArrayRef = if wanted.is_empty() {
        arrow_array::new_empty_array(operand)
    } else {
        let refs: Vec<&dyn Array> = wanted.iter().map(|w| w.as_ref()).collect();
        arrow_select::concat::concat(&refs).map_err(|e| Error::arrow("is_in", e))?
    };
    let wanted = canonical_floats(wanted);
    let conv = RowConverter::new(vec![SortField::new(operand.clone())])
        .map_err(|e| Error::arrow("is_in", e))?;
    let set_rows = conv
        .convert_columns(std::slice::from_ref(&wanted))
        .map_err(|e| Error::arrow("is_in", e))?;
    let set: std::collections::HashSet<&[u8]> = (0..set_rows.num_rows())
        .filter(|&i| wanted.is_valid(i))
        .map(|i| set_rows.row(i).data())
        .collect();
    let rows = conv
        .convert_columns(std::slice::from_ref(&x))
        .map_err(|e| Error::arrow("is_in", e))?;
    let null_matches = values.contains(&Literal::Null);
    let out: BooleanArray = (0..x.len())
        .map(|i| {
            Some(if x.is_null(i) {
                null_matches
            } else {
                set.contains(rows.row(i).data())
            })
        })
        .collect();
    Ok(Arc::new(out))
}

/// Membership in a set of `T`: a scan of a few values, or a hash set of many.
enum Wanted<T> {
    Few(Vec<T>),
    Many(std::collections::HashSet<T, ahash::RandomState>),
}

impl<T: PartialEq + Eq + std::hash::Hash> Wanted<T> {
    fn new(values: Vec<T>) -> Wanted<T> {
        if values.len() <= 8 {
            Wanted::Few(values)
        } else {
            let mut set = std::collections::HashSet::with_hasher(ahash::RandomState::new());
            set.extend(values);
            Wanted::Many(set)
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Wanted::Few(all) => all.is_empty(),
            Wanted::Many(set) => set.is_empty(),
        }
    }

    fn contains(&self, v: &T) -> bool {
        match self {
            // Without an early exit: a branch per value mispredicts on mixed columns.
            Wanted::Few(all) => all.iter().fold(false, |hit, w| hit | (w == v)),
            Wanted::Many(set) => set.contains(v),
        }
    }
}

/// `is_in` without encoding rows, for the common cases: a string column (any string type,
/// dictionaries by their values) with string values, or an integer column with integer
/// values. `None` for anything else (the general path handles it).
fn is_in_direct(a: &ArrayRef, values: &[Literal]) -> Result<Option<ArrayRef>> {
    use arrow_array::cast::AsArray;
    let null_matches = values.contains(&Literal::Null);
    let given = values.iter().filter(|v| **v != Literal::Null);
    let out: BooleanArray = match a.data_type() {
        DataType::Dictionary(_, inner) if is_text(inner) => {
            let dict = a.as_any_dictionary();
            let Some(hits) = is_in_direct(dict.values(), values)? else {
                return Ok(None);
            };
            let hits = hits.as_boolean();
            let keys = dict.normalized_keys();
            let key_nulls = dict.keys().logical_nulls();
            (0..a.len())
                .map(|i| {
                    let valid = key_nulls.as_ref().is_none_or(|n| n.is_valid(i));
                    Some(if valid {
                        hits.value(keys[i])
                    } else {
                        null_matches
                    })
                })
                .collect()
        }
        t if is_text(t) => {
            let Some(wanted) = given
                .map(|v| match v {
                    Literal::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<Option<Vec<&str>>>()
            else {
                return Ok(None);
            };
            if *t == DataType::Utf8View {
                return Ok(Some(Arc::new(view_is_in(
                    a.as_string_view(),
                    &wanted,
                    null_matches,
                ))));
            }
            let wanted = Wanted::new(wanted);
            let test = |v: Option<&str>| Some(v.map_or(null_matches, |v| wanted.contains(&v)));
            match t {
                DataType::Utf8 => a.as_string::<i32>().iter().map(test).collect(),
                _ => a.as_string::<i64>().iter().map(test).collect(),
            }
        }
        t if t.is_integer() => {
            let Some(wanted) = given
                .map(|v| match v {
                    Literal::Int(i) => Some(*i),
                    _ => None,
                })
                .collect::<Option<Vec<i64>>>()
            else {
                return Ok(None);
            };
            if *t == DataType::UInt64 {
                return Ok(None);
            }
            let wanted = Wanted::new(wanted);
            let x = cast_to(a, &DataType::Int64)?;
            x.as_primitive::<arrow_array::types::Int64Type>()
                .iter()
                .map(|v| Some(v.map_or(null_matches, |v| wanted.contains(&v))))
                .collect()
        }
        _ => return Ok(None),
    };
    Ok(Some(Arc::new(out)))
}

/// Strings looked for in a string view column, matched by the columns' views: a string of
/// at most 12 bytes is all in its 16-byte view (length, bytes, zero padding), so it
/// matches exactly when the view equals a wanted string's view; a longer one is compared
/// byte by byte only when its length and 4-byte prefix (the view's first 8 bytes) are a
/// wanted string's, and not again when its view is the one just compared: a column
/// decoded from a Parquet dictionary repeats the same view (same buffer and offset) for
/// every row of a value.
pub(crate) struct ViewSet<'a> {
    short: Wanted<u128>,
    heads: Wanted<u64>,
    long: Wanted<&'a str>,
}

impl<'a> ViewSet<'a> {
    pub(crate) fn new(wanted: &[&'a str]) -> ViewSet<'a> {
        let view_of = |s: &str| {
            let b = s.as_bytes();
            let mut v = [0u8; 16];
            v[..4].copy_from_slice(&(b.len() as u32).to_le_bytes());
            let n = b.len().min(12);
            v[4..4 + n].copy_from_slice(&b[..n]);
            u128::from_le_bytes(v)
        };
        let (short, long): (Vec<&str>, Vec<&str>) = wanted.iter().partition(|s| s.len() <= 12);
        ViewSet {
            short: Wanted::new(short.iter().map(|s| view_of(s)).collect()),
            heads: Wanted::new(long.iter().map(|s| view_of(s) as u64).collect()),
            long: Wanted::new(long),
        }
    }

    /// Per row of `a`, whether its string is wanted; a null row gets `null_matches`.
    pub(crate) fn hits(
        &self,
        a: &arrow_array::StringViewArray,
        null_matches: bool,
    ) -> BooleanBuffer {
        let views = a.views();
        let nulls = a.nulls().filter(|n| n.null_count() > 0);
        let found = if self.long.is_empty() {
            // Every wanted string is in its view: one comparison of 16 bytes per wanted
            // string and row, whatever the row's length (a null row is fixed below).
            BooleanBuffer::collect_bool(a.len(), |i| self.short.contains(&views[i]))
        } else {
            // The last long view compared byte by byte (never 0: its length is over 12),
            // and whether it matched.
            let mut last = (0u128, false);
            BooleanBuffer::collect_bool(a.len(), |i| {
                let v = views[i];
                if (v as u32) <= 12 {
                    self.short.contains(&v)
                } else if !self.heads.contains(&(v as u64)) || nulls.is_some_and(|n| n.is_null(i)) {
                    // A null row's view is unspecified: its bytes are not read.
                    false
                } else if v == last.0 {
                    last.1
                } else {
                    let hit = self.long.contains(&a.value(i));
                    last = (v, hit);
                    hit
                }
            })
        };
        match nulls {
            Some(n) if null_matches => &found | &!n.inner(),
            Some(n) => &found & n.inner(),
            None => found,
        }
    }
}

/// `is_in` over a string view column, by its views ([`ViewSet`]); no nulls in the answer.
pub(crate) fn view_is_in(
    a: &arrow_array::StringViewArray,
    wanted: &[&str],
    null_matches: bool,
) -> BooleanArray {
    BooleanArray::new(ViewSet::new(wanted).hits(a, null_matches), None)
}
