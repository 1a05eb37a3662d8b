//! The `k` best values of each group (`nlargest(k)` / `nsmallest(k)` per group): each group
//! keeps its best `k` rows so far, best first, and a row enters only if it beats the last
//! of them — a bounded selection per group in one pass, with no sort of the partition.
//! Ties keep the earlier row first (pandas' `keep="first"`). Nulls and NaN take no part
//! (pandas' `nlargest` leaves them out). The combine runs the same selection over the
//! partial lists' values, partition by partition, so the order of ties is the rows' order.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, ListArray, UInt32Array};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, SortOptions};
use tessera_core::frame::AggFunc;
use tessera_core::{Error, Result};

use super::keys::{Groups, NO_GROUP};

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
    let cmp = arrow_ord::ord::make_comparator(a.as_ref(), a.as_ref(), SortOptions::default())
        .map_err(|e| Error::arrow(func.name(), e))?;
    let skip = missing(a);
    let mut best: Vec<Vec<u32>> = vec![Vec::new(); g.len()];
    for (i, &id) in g.ids.iter().enumerate() {
        if id == NO_GROUP || skip[i] {
            continue;
        }
        let kept = &mut best[id as usize];
        // The place after every kept row at least as good (not worse): an equal value
        // stays behind the earlier rows.
        let at = kept
            .iter()
            .rposition(|&j| cmp(j as usize, i) != want.reverse())
            .map_or(0, |p| p + 1);
        if at < k {
            kept.insert(at, i as u32);
            kept.truncate(k);
        }
    }
    let lengths: Vec<usize> = best.iter().map(Vec::len).collect();
    let rows: Vec<u32> = best.into_iter().flatten().collect();
    let values = arrow_select::take::take(a, &UInt32Array::from(rows), None)
        .map_err(|e| Error::arrow(func.name(), e))?;
    let field = Arc::new(Field::new_list_field(a.data_type().clone(), true));
    Ok(Arc::new(
        ListArray::try_new(field, OffsetBuffer::from_lengths(lengths), values, None)
            .map_err(|e| Error::arrow(func.name(), e))?,
    ))
}

/// Merges partial lists: the best `k` of each group's listed values (`g` assigns each list
/// row), in list order for ties.
///
/// # Errors
/// As [`select`].
pub(crate) fn merge(lists: &ArrayRef, g: &Groups, func: AggFunc) -> Result<ArrayRef> {
    let (values, items) = super::keys::list_items(lists, g);
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
}
