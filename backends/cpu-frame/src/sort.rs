//! Sorting and range partitioning through the `arrow-row` format: the sort keys of a row
//! become bytes whose order is the sort order (descending and nulls-last folded in), so
//! one stable byte-wise sort handles any number of keys of any orderable types. Floats are
//! ordered as values compare (`-0.0` ties with `0.0`; NaN above every number).

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::SortOptions;
use tessera_core::frame::SortKey;
use tessera_core::{Error, Result};

/// The sort keys' columns of `batch`, encoded in sort order.
fn sort_rows(batch: &RecordBatch, by: &[SortKey], conv: &RowConverter) -> Result<Rows> {
    let cols: Vec<ArrayRef> = by
        .iter()
        .map(|k| {
            batch
                .column_by_name(&k.column)
                .cloned()
                // `-0.0` ties with `0.0` (a stable sort keeps their order), as values
                // compare: the row format alone would put `-0.0` first.
                .map(super::keys::canonical_floats)
                .ok_or_else(|| Error::invalid("sort", format!("no column '{}'", k.column)))
        })
        .collect::<Result<_>>()?;
    conv.convert_columns(&cols)
        .map_err(|e| Error::arrow("sort", e))
}

fn converter(batch: &RecordBatch, by: &[SortKey]) -> Result<RowConverter> {
    let schema = batch.schema();
    let fields = by
        .iter()
        .map(|k| {
            let f = schema
                .field_with_name(&k.column)
                .map_err(|_| Error::invalid("sort", format!("no column '{}'", k.column)))?;
            Ok(SortField::new_with_options(
                f.data_type().clone(),
                SortOptions {
                    descending: k.descending,
                    nulls_first: false,
                },
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    RowConverter::new(fields).map_err(|e| Error::arrow("sort", e))
}

/// A stable sort of `batch` by `by` (nulls last).
pub(crate) fn sort_batch(batch: &RecordBatch, by: &[SortKey]) -> Result<RecordBatch> {
    let idx = match integer_order(batch, by)? {
        Some(idx) => idx,
        None => {
            let conv = converter(batch, by)?;
            let rows = sort_rows(batch, by, &conv)?;
            let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
            idx.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
            idx
        }
    };
    arrow_select::take::take_record_batch(batch, &UInt32Array::from(idx))
        .map_err(|e| Error::arrow("sort", e))
}

/// The first `n` rows of [`sort_batch`]'s order, without ordering the others: the `n`
/// smallest row keys are selected (ties broken by row, which is the stable order), then
/// only they are sorted and taken. A `sort + head(20)` of 38,000 groups with their
/// customers' strings (TPC-H Q10) takes 20 rows instead of all of them.
pub(crate) fn sort_limit_batch(
    batch: &RecordBatch,
    by: &[SortKey],
    n: usize,
) -> Result<RecordBatch> {
    let rows = batch.num_rows();
    let idx = match integer_order(batch, by)? {
        Some(mut idx) => {
            idx.truncate(n);
            idx
        }
        None => {
            let conv = converter(batch, by)?;
            let keys = sort_rows(batch, by, &conv)?;
            let order = |a: &u32, b: &u32| {
                keys.row(*a as usize)
                    .cmp(&keys.row(*b as usize))
                    .then(a.cmp(b))
            };
            let mut idx: Vec<u32> = (0..rows as u32).collect();
            if n == 0 {
                idx.clear();
            } else if n < rows {
                idx.select_nth_unstable_by(n - 1, order);
                idx.truncate(n);
            }
            idx.sort_unstable_by(order);
            idx
        }
    };
    arrow_select::take::take_record_batch(batch, &UInt32Array::from(idx))
        .map_err(|e| Error::arrow("sort", e))
}

/// The sorted order of up to three integer-like keys without nulls (the keys of most
/// groupby results): tuples of `i64`s (a descending key complemented, which reverses its
/// order without overflow) and the row, sorted unstably — the row breaks ties, so the
/// order is the stable one. `None` for other keys.
fn integer_order(batch: &RecordBatch, by: &[SortKey]) -> Result<Option<Vec<u32>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    if by.is_empty() || by.len() > 3 {
        return Ok(None);
    }
    let mut keys = Vec::with_capacity(by.len());
    for k in by {
        let Some(c) = batch.column_by_name(&k.column) else {
            return Ok(None);
        };
        if c.null_count() > 0 {
            return Ok(None);
        }
        let Some(ints) = super::keys::int_key(std::slice::from_ref(c))? else {
            return Ok(None);
        };
        keys.push((ints, k.descending));
    }
    let values: Vec<(&[i64], bool)> = keys
        .iter()
        .map(|(a, d)| (a.as_primitive::<Int64Type>().values().as_ref(), *d))
        .collect();
    let at = |j: usize, r: usize| {
        values
            .get(j)
            .map_or(0, |(v, descending)| if *descending { !v[r] } else { v[r] })
    };
    let mut order: Vec<(i64, i64, i64, u32)> = (0..batch.num_rows())
        .map(|r| (at(0, r), at(1, r), at(2, r), r as u32))
        .collect();
    order.sort_unstable();
    Ok(Some(order.into_iter().map(|t| t.3).collect()))
}

/// Output index per row: the number of bounds strictly below the row's key, so a key equal
/// to bound `i` lands in range `i`.
pub(crate) fn range_ids(
    batch: &RecordBatch,
    by: &[SortKey],
    bounds: &RecordBatch,
) -> Result<Vec<u32>> {
    let conv = converter(batch, by)?;
    let rows = sort_rows(batch, by, &conv)?;
    // The bounds' columns are named like the keys and must have the same types.
    let b = sort_rows(bounds, by, &conv)?;
    let bound_rows: Vec<_> = (0..bounds.num_rows()).map(|i| b.row(i)).collect();
    Ok((0..batch.num_rows())
        .map(|i| {
            let r = rows.row(i);
            bound_rows.partition_point(|x| *x < r) as u32
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int32Array, Int64Array};
    use std::sync::Arc;

    /// The row-format order, the general path.
    fn by_rows(batch: &RecordBatch, by: &[SortKey]) -> Vec<u32> {
        let conv = converter(batch, by).unwrap();
        let rows = sort_rows(batch, by, &conv).unwrap();
        let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
        idx.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
        idx
    }

    #[test]
    fn negative_zero_ties_with_zero_in_sorts_and_ranges() {
        let v: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![0.0, -0.0, 1.0, -0.0]));
        let b = RecordBatch::try_from_iter([("v", v.clone())]).unwrap();
        let by = [SortKey {
            column: "v".into(),
            descending: false,
        }];
        let sorted = sort_batch(&b, &by).unwrap();
        let got: Vec<u64> = sorted
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::Float64Array>()
            .unwrap()
            .values()
            .iter()
            .map(|x| x.to_bits())
            .collect();
        // Stable: the zeros keep their input order.
        let want: Vec<u64> = [0.0, -0.0, -0.0, 1.0f64]
            .iter()
            .map(|x| x.to_bits())
            .collect();
        assert_eq!(got, want);
        let bounds = RecordBatch::try_from_iter([(
            "v",
            Arc::new(arrow_array::Float64Array::from(vec![-0.0])) as ArrayRef,
        )])
        .unwrap();
        assert_eq!(range_ids(&b, &by, &bounds).unwrap(), vec![0, 0, 1, 0]);
    }

    #[test]
    fn a_top_k_is_the_head_of_the_stable_sort() {
        use arrow_array::{Decimal128Array, StringArray};
        let mut x = 99u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (x >> 33) % m
        };
        let n = 500;
        // Few distinct values (many ties), nulls, a decimal and a string key, and a row
        // number to tell tied rows apart.
        let dec: ArrayRef = Arc::new(
            Decimal128Array::from_iter(
                (0..n).map(|_| (next(5) > 0).then(|| next(20) as i128 * 25)),
            )
            .with_precision_and_scale(15, 2)
            .unwrap(),
        );
        let text: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|_| ["b", "a", "c"][next(3) as usize]),
        ));
        let row: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
        let batch = RecordBatch::try_from_iter([("d", dec), ("t", text), ("row", row)]).unwrap();
        let key = |c: &str, descending: bool| SortKey {
            column: c.into(),
            descending,
        };
        for by in [
            vec![key("d", true)],
            vec![key("t", false), key("d", false)],
            vec![key("row", true)],
        ] {
            let full = sort_batch(&batch, &by).unwrap();
            for k in [0, 1, 7, 100, 499, 500, 900] {
                let top = sort_limit_batch(&batch, &by, k).unwrap();
                assert_eq!(top, full.slice(0, k.min(n)), "{by:?}, k = {k}");
            }
        }
    }

    #[test]
    fn integer_keys_sort_as_the_row_format_does() {
        let mut x = 12345u64;
        let mut next = |m: i64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            (x >> 33) as i64 % m - m / 2
        };
        let a: Vec<i64> = (0..500).map(|_| next(7)).collect();
        let b: Vec<i32> = (0..500).map(|_| next(5) as i32).collect();
        let a = [a, vec![i64::MIN, i64::MAX, 0]].concat();
        let b = [b, vec![0, 0, i32::MIN]].concat();
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Int64Array::from(a)) as ArrayRef),
            ("b", Arc::new(Int32Array::from(b)) as ArrayRef),
        ])
        .unwrap();
        let key = |c: &str, descending| SortKey {
            column: c.into(),
            descending,
        };
        for by in [
            vec![key("a", false)],
            vec![key("a", true)],
            vec![key("a", false), key("b", true)],
            vec![key("b", true), key("a", true)],
        ] {
            let fast = integer_order(&batch, &by).unwrap().unwrap();
            assert_eq!(fast, by_rows(&batch, &by), "{by:?}");
        }
    }
}
