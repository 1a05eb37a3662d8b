//! The `k` best values of each group (`nlargest(k)` / `nsmallest(k)` per group): each group
//! keeps its best `k` rows so far, best first, and a row enters only if it beats the last
//! of them — a bounded selection per group in one pass, with no sort of the partition.
//! Ties keep the earlier row first (pandas' `keep="first"`). Nulls and NaN take no part
//! (pandas' `nlargest` leaves them out). The combine runs the same selection over the
//! partial lists' values, partition by partition, so the order of ties is the rows' order.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, ListArray, UInt32Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, SortOptions};
use tessera_core::frame::AggFunc;
use tessera_core::{Error, Result};

use crate::keys::groups::{Groups, NO_GROUP};

/// Whether each row of `a` takes no part: null, or a NaN float.
fn missing(a: &ArrayRef) -> Vec<bool> {
    let nan = |i: usize| match a.data_type() {
        DataType::Float64 => a.as_primitive::<Float64Type>().value(i).is_nan(),
        DataType::Float32 => a.as_primitive::<Float32Type>().value(i).is_nan(),
        _ => false,
    };
    let floats = matches!(a.data_type(), DataType::Float64 | DataType::Float32);
    (0..a.len())
        .map(|i| a.is_null(i) || (floats && nan(i)))
        .collect()
}

/// The best `k` values of `a` per group of `g` (`func` is `Largest(k)` or `Smallest(k)`)
/// as a List column, best first.
///
/// # Errors
/// A type arrow cannot compare, or a failed take.
pub(crate) fn select(a: &ArrayRef, g: &Groups, func: AggFunc) -> Result<ArrayRef> {
    let (k, want) = match func {
        AggFunc::Largest(k) => (k as usize, Ordering::Greater),
        AggFunc::Smallest(k) => (k as usize, Ordering::Less),
        other => {
            return Err(Error::Internal(format!(
                "{} is not a top-values aggregation",
                other.name()
            )))
        }
    };
    let skip = missing(a);
    // Primitive values are kept beside their rows and compare as they are (floats by
    // `total_cmp`, as arrow's comparator does); any other type by its row, through
    // arrow's comparator, one dynamic call per comparison.
    macro_rules! typed {
        ($t:ty, $cmp:expr) => {{
            let v = a.as_primitive::<$t>().values();
            best_rows(g, &skip, k, want, |i| v[i], $cmp)
        }};
    }
    let (lengths, rows) = match a.data_type() {
        DataType::Int64 => typed!(Int64Type, Ord::cmp),
        DataType::Int32 => typed!(Int32Type, Ord::cmp),
        DataType::UInt64 => typed!(UInt64Type, Ord::cmp),
        DataType::UInt32 => typed!(UInt32Type, Ord::cmp),
        DataType::Float64 => typed!(Float64Type, f64::total_cmp),
        DataType::Float32 => typed!(Float32Type, f32::total_cmp),
        _ => {
            let cmp =
                arrow_ord::ord::make_comparator(a.as_ref(), a.as_ref(), SortOptions::default())
                    .map_err(|e| Error::arrow(func.name(), e))?;
            best_rows(g, &skip, k, want, |i| i, |&x: &usize, &y: &usize| cmp(x, y))
        }
    };
    let values = arrow_select::take::take(a, &UInt32Array::from(rows), None)
        .map_err(|e| Error::arrow(func.name(), e))?;
    let field = Arc::new(Field::new_list_field(a.data_type().clone(), true));
    Ok(Arc::new(
        ListArray::try_new(field, OffsetBuffer::from_lengths(lengths), values, None)
            .map_err(|e| Error::arrow(func.name(), e))?,
    ))
}

/// The rows of each group's best `k` (`want`: `Greater` for the largest), best first and
/// ties in row order: each group's kept rows and their count, and the rows flattened in
/// group order. Rows compare by `key(row)` under `cmp`; each kept row's key is kept
/// beside it, so a row is compared with its group's best without reading the column at
/// the kept rows (a read anywhere in the partition: most of `top2`'s time). The kept rows
/// live in one buffer of `k` slots per group when that is at most four slots per row (no
/// allocation per group: 100k groups of a partition took a `Vec` each), else in a `Vec`
/// per group.
fn best_rows<K: Copy + Default>(
    g: &Groups,
    skip: &[bool],
    k: usize,
    want: Ordering,
    key: impl Fn(usize) -> K,
    cmp: impl Fn(&K, &K) -> Ordering,
) -> (Vec<usize>, Vec<u32>) {
    let groups = g.len();
    // The place after every kept key at least as good (not worse): an equal value stays
    // behind the earlier rows.
    let place = |kept: &[K], x: &K| {
        kept.iter()
            .rposition(|y| cmp(y, x) != want.reverse())
            .map_or(0, |p| p + 1)
    };
    let rows_of = g
        .ids
        .iter()
        .enumerate()
        .filter(|&(i, &id)| id != NO_GROUP && !skip[i]);
    match groups
        .checked_mul(k)
        .filter(|&s| s <= 4 * g.ids.len().max(1024))
    {
        Some(slots) => {
            let mut kept = vec![0u32; slots];
            let mut keys = vec![K::default(); slots];
            // A group keeps at most `k` rows, and `k` came as a `u32`.
            let mut lengths = vec![0u32; groups];
            for (i, &id) in rows_of {
                let (base, len) = (id as usize * k, lengths[id as usize] as usize);
                let x = key(i);
                let at = place(&keys[base..base + len], &x);
                if at < k {
                    let len = (len + 1).min(k);
                    kept.copy_within(base + at..base + len - 1, base + at + 1);
                    keys.copy_within(base + at..base + len - 1, base + at + 1);
                    kept[base + at] = i as u32;
                    keys[base + at] = x;
                    lengths[id as usize] = len as u32;
                }
            }
            let mut rows = Vec::with_capacity(lengths.iter().map(|&l| l as usize).sum());
            for (group, &len) in lengths.iter().enumerate() {
                rows.extend_from_slice(&kept[group * k..group * k + len as usize]);
            }
            (lengths.into_iter().map(|l| l as usize).collect(), rows)
        }
        None => {
            let mut best: Vec<Vec<(K, u32)>> = vec![Vec::new(); groups];
            for (i, &id) in rows_of {
                let kept = &mut best[id as usize];
                let x = key(i);
                let at = kept
                    .iter()
                    .rposition(|(y, _)| cmp(y, &x) != want.reverse())
                    .map_or(0, |p| p + 1);
                if at < k {
                    kept.insert(at, (x, i as u32));
                    kept.truncate(k);
                }
            }
            let lengths = best.iter().map(Vec::len).collect();
            (
                lengths,
                best.into_iter().flatten().map(|(_, row)| row).collect(),
            )
        }
    }
}

/// Merges partial lists: the best `k` of each group's listed values (`g` assigns each list
/// row), in list order for ties.
///
/// # Errors
/// As [`select`].
pub(crate) fn merge(lists: &ArrayRef, g: &Groups, func: AggFunc) -> Result<ArrayRef> {
    let (values, items) = crate::keys::groups::list_items(lists, g);
    select(&values, &items, func)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float64Array, Int64Array};

    fn groups(ids: &[u32]) -> Groups {
        let n = ids
            .iter()
            .filter(|&&i| i != NO_GROUP)
            .max()
            .map_or(0, |&m| m + 1);
        let first_rows = (0..n)
            .map(|g| ids.iter().position(|&i| i == g).unwrap() as u32)
            .collect();
        Groups {
            ids: ids.to_vec(),
            first_rows,
        }
    }

    fn lists(a: &ArrayRef) -> Vec<Vec<Option<f64>>> {
        let l = a.as_list::<i32>();
        (0..l.len())
            .map(|r| {
                let v = arrow_cast::cast(&l.value(r), &DataType::Float64).unwrap();
                v.as_primitive::<Float64Type>().iter().collect()
            })
            .collect()
    }

    #[test]
    fn each_group_keeps_its_best_k_best_first() {
        let a: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(3.0),
            Some(9.0),
            None,
            Some(f64::NAN),
            Some(5.0),
            Some(9.0),
            Some(1.0),
            Some(7.0),
        ]));
        let g = groups(&[0, 0, 0, 0, 0, 1, 1, NO_GROUP]);
        let top = select(&a, &g, AggFunc::Largest(2)).unwrap();
        assert_eq!(
            lists(&top),
            vec![vec![Some(9.0), Some(5.0)], vec![Some(9.0), Some(1.0)]]
        );
        let low = select(&a, &g, AggFunc::Smallest(3)).unwrap();
        assert_eq!(
            lists(&low),
            vec![
                vec![Some(3.0), Some(5.0), Some(9.0)],
                vec![Some(1.0), Some(9.0)]
            ]
        );
        // Merging two partitions' lists gives the best of both.
        let merged = merge(&top, &groups(&[0, 0]), AggFunc::Largest(3)).unwrap();
        assert_eq!(lists(&merged), vec![vec![Some(9.0), Some(9.0), Some(5.0)]]);
    }

    #[test]
    fn ties_keep_the_earlier_rows() {
        // Equal values: the list holds them in row order, and a later equal value does
        // not displace an earlier one.
        let a: ArrayRef = Arc::new(Int64Array::from(vec![4, 4, 2, 4]));
        let rows_of = |func| {
            let g = groups(&[0, 0, 0, 0]);
            let l = select(&a, &g, func).unwrap();
            lists(&l)
        };
        assert_eq!(
            rows_of(AggFunc::Largest(2)),
            vec![vec![Some(4.0), Some(4.0)]]
        );
        assert_eq!(
            rows_of(AggFunc::Smallest(2)),
            vec![vec![Some(2.0), Some(4.0)]]
        );
    }

    /// A `k` past four slots per row keeps a list per group instead of one buffer: both
    /// give every row of a group smaller than `k`, best first, ties in row order, and the
    /// typed comparisons order as arrow's comparator does.
    #[test]
    fn the_slot_buffer_and_the_lists_keep_the_same_rows() {
        let values: Vec<i64> = (0..300).map(|i| (i * 37) % 11).collect();
        let ids: Vec<u32> = (0..300).map(|i| (i % 3) as u32).collect();
        let g = groups(&ids);
        let skip = vec![false; 300];
        // Keyed by the values kept beside the rows, and by the rows themselves.
        let value = |i: usize| values[i];
        let by_row = |x: &usize, y: &usize| values[*x].cmp(&values[*y]);
        let flat = best_rows(&g, &skip, 100, Ordering::Greater, value, i64::cmp);
        let lists = best_rows(&g, &skip, 5000, Ordering::Greater, value, i64::cmp);
        let rows = best_rows(&g, &skip, 100, Ordering::Greater, |i| i, by_row);
        assert_eq!(flat, lists);
        assert_eq!(flat, rows);
        assert_eq!(flat.0, [100, 100, 100]);
        let first = &flat.1[..100];
        assert!(first.windows(2).all(|w| {
            let (a, b) = (w[0] as usize, w[1] as usize);
            values[a] > values[b] || values[a] == values[b] && a < b
        }));
        let a: ArrayRef = Arc::new(Float64Array::from(vec![0.0, -0.0, 2.5, -1.0, 2.5]));
        let g = groups(&[0, 0, 0, 0, 0]);
        let typed = select(&a, &g, AggFunc::Largest(5)).unwrap();
        let cmp = arrow_ord::ord::make_comparator(a.as_ref(), a.as_ref(), SortOptions::default())
            .unwrap();
        let dynamic = best_rows(
            &g,
            &[false; 5],
            5,
            Ordering::Greater,
            |i| i,
            |x, y| cmp(*x, *y),
        );
        assert_eq!(dynamic.1, [2, 4, 0, 1, 3]);
        let got = typed.as_list::<i32>().value(0);
        let got: Vec<u64> = got
            .as_primitive::<Float64Type>()
            .values()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let want: Vec<u64> = [2.5, 2.5, 0.0, -0.0, -1.0]
            .iter()
            .map(|v: &f64| v.to_bits())
            .collect();
        assert_eq!(got, want);
    }
}
