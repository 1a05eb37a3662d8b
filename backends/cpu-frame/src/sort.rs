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
                .map(crate::keys::groups::canonical_floats)
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

/// The sorted order of integer-like keys without nulls (the keys of most groupby
/// results), or `None` for other keys.
///
/// Each key becomes its offset from its minimum (a descending key: from its maximum),
/// and the offsets are packed, most significant key first, into one integer whose order
/// is the keys' order: six keys of 100 x 100 x 100 x 10 x 10 x 10 values take 30 bits.
/// When the row number fits below them in a `u64`, the packed keys and the row are one
/// `u64` each; else a `u64` or `u128` with the row beside it. Sorted unstably, the row
/// breaks ties, so the order is the stable one. Keys whose ranges need more than 128 bits
/// together are compared as tuples of `i64`s when there are at most three of them (a
/// descending key complemented, which reverses its order without overflow).
fn integer_order(batch: &RecordBatch, by: &[SortKey]) -> Result<Option<Vec<u32>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    if by.is_empty() {
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
        let Some(ints) = crate::keys::groups::int_key(std::slice::from_ref(c))? else {
            return Ok(None);
        };
        keys.push((ints, k.descending));
    }
    let rows = batch.num_rows();
    let values: Vec<(&[i64], bool)> = keys
        .iter()
        .map(|(a, d)| (a.as_primitive::<Int64Type>().values().as_ref(), *d))
        .collect();
    let packed: Vec<Packed> = values
        .iter()
        .map(|&(v, descending)| Packed::of(v, descending))
        .collect();
    let bits: u32 = packed.iter().map(|p| p.bits).sum();
    let row_bits = usize::BITS - rows.leading_zeros();
    if bits + row_bits <= 64 {
        let mut order: Vec<u64> = (0..rows)
            .map(|r| pack::<u64>(&packed, r) << row_bits | r as u64)
            .collect();
        order.sort_unstable();
        let mask = (1u64 << row_bits) - 1;
        return Ok(Some(order.into_iter().map(|t| (t & mask) as u32).collect()));
    }
    if bits <= 64 {
        return Ok(Some(sorted_rows(rows, |r| pack::<u64>(&packed, r))));
    }
    if bits <= 128 {
        return Ok(Some(sorted_rows(rows, |r| pack::<u128>(&packed, r))));
    }
    if by.len() > 3 {
        return Ok(None);
    }
    let at = |j: usize, r: usize| {
        values
            .get(j)
            .map_or(0, |(v, descending)| if *descending { !v[r] } else { v[r] })
    };
    Ok(Some(sorted_rows(rows, |r| (at(0, r), at(1, r), at(2, r)))))
}

/// Rows sorted by `key(row)`, ties in row order.
fn sorted_rows<K: Ord>(rows: usize, key: impl Fn(usize) -> K) -> Vec<u32> {
    let mut order: Vec<(K, u32)> = (0..rows).map(|r| (key(r), r as u32)).collect();
    order.sort_unstable();
    order.into_iter().map(|t| t.1).collect()
}

/// One key's place in [`integer_order`]'s packed integer.
struct Packed<'a> {
    /// The key's values.
    values: &'a [i64],
    /// Its minimum (ascending) or maximum (descending).
    base: i64,
    /// Bits its range needs.
    bits: u32,
    descending: bool,
}

impl<'a> Packed<'a> {
    fn of(values: &'a [i64], descending: bool) -> Packed<'a> {
        // No nulls here (`integer_order` takes none); no values: a range of one.
        let (lo, span) = crate::keys::groups::valid_range(values, None).unwrap_or((0, 0));
        Packed {
            values,
            base: if descending {
                lo.wrapping_add(span as i64)
            } else {
                lo
            },
            bits: u64::BITS - span.leading_zeros(),
            descending,
        }
    }

    /// The value's offset from the base, in the direction of the order.
    fn offset(&self, x: i64) -> u64 {
        if self.descending {
            self.base.wrapping_sub(x) as u64
        } else {
            x.wrapping_sub(self.base) as u64
        }
    }
}

/// An unsigned integer keys are packed into.
trait PackInto: Default {
    /// `self` shifted up by `bits` with `v` below: a shift by the full width leaves only
    /// `v` (what was there had no bits; the caller checked that the keys fit).
    fn push(self, bits: u32, v: u64) -> Self;
}

impl PackInto for u64 {
    fn push(self, bits: u32, v: u64) -> u64 {
        self.checked_shl(bits).unwrap_or(0) | v
    }
}

impl PackInto for u128 {
    fn push(self, bits: u32, v: u64) -> u128 {
        self.checked_shl(bits).unwrap_or(0) | u128::from(v)
    }
}

/// Row `r`'s keys packed into one integer (their bits fit it: checked by the caller).
fn pack<T: PackInto>(packed: &[Packed], r: usize) -> T {
    packed.iter().fold(T::default(), |acc, p| {
        acc.push(p.bits, p.offset(p.values[r]))
    })
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
        let c: Vec<i64> = a.iter().map(|x| x.rem_euclid(7)).collect();
        let d: Vec<i32> = b.iter().map(|x| x.rem_euclid(5)).collect();
        let a = [a, vec![i64::MIN, i64::MAX, 0]].concat();
        let b = [b, vec![0, 0, i32::MIN]].concat();
        let c = [c, vec![3, 3, 3]].concat();
        let d = [d, vec![0, 4, 0]].concat();
        let batch = RecordBatch::try_from_iter([
            ("a", Arc::new(Int64Array::from(a)) as ArrayRef),
            ("b", Arc::new(Int32Array::from(b)) as ArrayRef),
            ("c", Arc::new(Int64Array::from(c)) as ArrayRef),
            ("d", Arc::new(Int32Array::from(d)) as ArrayRef),
        ])
        .unwrap();
        let key = |c: &str, descending| SortKey {
            column: c.into(),
            descending,
        };
        // One key of the full i64 range (a u64 beside the row), two keys over 64 bits
        // (a u128), small keys with the row in one u64, and four wide keys (over 128 bits:
        // not taken).
        for by in [
            vec![key("a", false)],
            vec![key("a", true)],
            vec![key("a", false), key("b", true)],
            vec![key("b", true), key("a", true)],
            vec![
                key("c", false),
                key("d", true),
                key("c", true),
                key("d", false),
            ],
            vec![key("d", true), key("b", false), key("c", false)],
            vec![key("a", true), key("c", false), key("d", false)],
            vec![
                key("a", true),
                key("a", false),
                key("b", false),
                key("c", false),
            ],
        ] {
            match integer_order(&batch, &by).unwrap() {
                Some(fast) => assert_eq!(fast, by_rows(&batch, &by), "{by:?}"),
                None => assert!(by.len() > 3, "{by:?} not taken"),
            }
        }
    }
}
