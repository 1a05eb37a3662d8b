//! A filter evaluated one conjunct at a time, dropping rows as soon as the conjuncts so
//! far have ruled out most of them.
//!
//! `a & b & c` evaluated whole computes every term on every row. Evaluated a term at a
//! time, the columns the remaining terms read are filtered as soon as the terms so far
//! keep at most a third of the rows, and the next term only sees the rows still in (the
//! other columns are taken once, at the rows the last term keeps, by their positions):
//! TPC-H Q19's line items go through the ship mode test (two modes of seven), then the
//! shipping instruction only on those (one of four), then the three quantity ranges on the
//! 7% left, and only the 2% kept have their price, discount and part key copied. (Copying
//! all six columns at the first filter was a tenth of the query.) While the terms keep more
//! than a third of the rows their masks are and-ed instead, so a filter whose terms are
//! not selective is filtered once, at the end, as before: copying the kept rows of every
//! column costs more than a cheap term on all rows (Q14's `l_shipdate >= '1995-09-01'`,
//! which keeps 45% of the line items, was 14% slower filtered at once than and-ed with
//! the next term, `< '1995-10-01'`). For the same reason the rows are only filtered
//! early for terms that cost more than that: comparisons of strings, sets, disjunctions,
//! arithmetic — not a comparison of two date columns (Q12 was 4% slower when its ship mode
//! test filtered the rows before its three date comparisons).
//!
//! A row is kept exactly when every term is true (a null term drops it, as `filter`
//! does), which is the conjunction's answer. The one difference is that a term is not
//! evaluated on rows an earlier term dropped, so an error that only such a row would
//! raise (an overflow in a term's arithmetic) is not raised, as in SQL engines that
//! evaluate conjunctions this way.

use std::collections::BTreeSet;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, BooleanArray, RecordBatch, UInt32Array};
use arrow_schema::DataType;
use tessera_core::frame::expr::binary_types;
use tessera_core::frame::Expr;
use tessera_core::{Error, Result};

/// The rows of `batch` for which `predicate` is true; with `keep`, only the columns named
/// there (in `batch`'s order), when the step after the filter reads no others: TPC-H Q4's
/// line items are filtered on two dates to give their order keys alone.
pub(crate) fn filter(
    batch: &RecordBatch,
    predicate: &Expr,
    keep: Option<&BTreeSet<String>>,
) -> Result<RecordBatch> {
    let terms = predicate.conjuncts();
    let kept_columns = || -> Result<RecordBatch> {
        let Some(keep) = keep else {
            return Ok(batch.clone());
        };
        let schema = batch.schema();
        let columns: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| keep.contains(schema.field(i).name()))
            .collect();
        batch
            .project(&columns)
            .map_err(|e| Error::arrow("filter", e))
    };
    // The rows the terms are evaluated on: `batch` until a filter is applied early, then
    // only the columns the remaining terms read, at the rows still in, whose positions in
    // `batch` are `positions`.
    let mut cur = batch.clone();
    let mut positions: Option<UInt32Array> = None;
    // The and of the terms evaluated on `cur` since it was last filtered.
    let mut pending: Option<BooleanArray> = None;
    for (k, term) in terms.iter().enumerate() {
        let mask = as_mask(
            crate::eval::eval(term, &cur)?.into_array(cur.num_rows())?,
            term,
        )?;
        let mask = match pending.take() {
            Some(before) => {
                arrow_arith::boolean::and(&before, &mask).map_err(|e| Error::arrow("filter", e))?
            }
            None => mask,
        };
        let rest = &terms[k + 1..];
        if rest.is_empty() {
            let out = match positions {
                None => filter_batch(&kept_columns()?, &mask)?,
                Some(p) => {
                    let p = arrow_select::filter::filter(&p, &mask)
                        .map_err(|e| Error::arrow("filter", e))?;
                    take_batch(&kept_columns()?, p.as_primitive::<UInt32Type>())?
                }
            };
            return crate::views::compact_batch(out);
        }
        if kept(&mask) * 3 <= mask.len() && rest.iter().any(|t| !fixed_width_comparison(t, &cur)) {
            let mut read = BTreeSet::new();
            for t in rest {
                t.columns_into(&mut read);
            }
            let schema = cur.schema();
            let columns: Vec<usize> = (0..schema.fields().len())
                .filter(|&i| read.contains(schema.field(i).name()))
                .collect();
            let narrowed = cur
                .project(&columns)
                .map_err(|e| Error::arrow("filter", e))?;
            let here = UInt32Array::from_iter_values(mask.values().set_indices().map(|i| i as u32));
            positions = Some(match positions {
                None => here,
                Some(p) => arrow_select::take::take(&p, &here, None)
                    .map_err(|e| Error::arrow("filter", e))?
                    .as_primitive::<UInt32Type>()
                    .clone(),
            });
            cur = filter_batch(&narrowed, &mask)?;
        } else {
            pending = Some(mask);
        }
    }
    // No terms (a conjunction has at least one): every row.
    kept_columns()
}

/// `batch` filtered by `mask`. A batch without columns (a count, or a step after the
/// filter that reads none) keeps its row count, which Arrow's filter cannot give it.
fn filter_batch(batch: &RecordBatch, mask: &BooleanArray) -> Result<RecordBatch> {
    if batch.num_columns() == 0 {
        return rows_only(batch, kept(mask));
    }
    arrow_select::filter::filter_record_batch(batch, mask).map_err(|e| Error::arrow("filter", e))
}

/// The rows of `batch` at `positions`; a batch without columns keeps the count.
fn take_batch(batch: &RecordBatch, positions: &UInt32Array) -> Result<RecordBatch> {
    if batch.num_columns() == 0 {
        return rows_only(batch, positions.len());
    }
    arrow_select::take::take_record_batch(batch, positions).map_err(|e| Error::arrow("filter", e))
}

/// A batch of `batch`'s (empty) schema with `rows` rows.
fn rows_only(batch: &RecordBatch, rows: usize) -> Result<RecordBatch> {
    RecordBatch::try_new_with_options(
        batch.schema(),
        vec![],
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| Error::arrow("filter", e))
}

/// True when `term` compares columns or literals of fixed-width types (numbers, dates,
/// timestamps, decimals, booleans): a few cycles a row, less than copying the row's
/// columns would cost, so filtering early never pays for it.
fn fixed_width_comparison(term: &Expr, batch: &RecordBatch) -> bool {
    let Expr::Binary { op, left, right } = term else {
        return false;
    };
    let schema = batch.schema();
    let leaf = |e: &Expr| matches!(e, Expr::Column(_) | Expr::Literal(_));
    if !op.is_comparison() || !leaf(left) || !leaf(right) {
        return false;
    }
    // The type both sides are compared in (a date literal written as a string is parsed
    // to the date column's type).
    let (Ok(lt), Ok(rt)) = (left.data_type(&schema), right.data_type(&schema)) else {
        return false;
    };
    binary_types(*op, left, &lt, right, &rt)
        .is_ok_and(|(operand, _)| operand.is_primitive() || operand == DataType::Boolean)
}

/// `values` as a filter mask: null entries are false.
fn as_mask(values: arrow_array::ArrayRef, term: &Expr) -> Result<BooleanArray> {
    let mask = values
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| Error::invalid("filter", format!("{term} is not Boolean")))?;
    Ok(match mask.nulls() {
        Some(n) if n.null_count() > 0 => BooleanArray::new(mask.values() & n.inner(), None),
        _ => BooleanArray::new(mask.values().clone(), None),
    })
}

/// The number of rows `mask` keeps.
fn kept(mask: &BooleanArray) -> usize {
    mask.values().count_set_bits()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringViewArray};
    use arrow_schema::{DataType, Field, Schema};
    use tessera_core::frame::{col, lit};

    use super::*;

    /// 1,000 rows: `a` counts up, `b` is `a % 7` with every tenth row null, `s` cycles
    /// through four strings, one of them longer than a string view's inline 12 bytes.
    fn batch() -> RecordBatch {
        let n = 1000i64;
        let a: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        let b: ArrayRef = Arc::new(Int64Array::from_iter(
            (0..n).map(|i| (i % 10 != 0).then_some(i % 7)),
        ));
        let names = ["AIR", "DELIVER IN PERSON", "RAIL", "TAKE BACK RETURN"];
        let s: ArrayRef = Arc::new(StringViewArray::from_iter_values(
            (0..n).map(|i| names[(i % 4) as usize]),
        ));
        RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("a", DataType::Int64, false),
                Field::new("b", DataType::Int64, true),
                Field::new("s", DataType::Utf8View, false),
            ])),
            vec![a, b, s],
        )
        .unwrap()
    }

    /// The rows the whole predicate keeps, evaluated at once.
    fn at_once(batch: &RecordBatch, e: &Expr) -> RecordBatch {
        let mask = crate::eval::eval(e, batch)
            .unwrap()
            .into_array(batch.num_rows())
            .unwrap();
        arrow_select::filter::filter_record_batch(batch, mask.as_any().downcast_ref().unwrap())
            .unwrap()
    }

    fn a_values(b: &RecordBatch) -> Vec<i64> {
        b.column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .values()
            .to_vec()
    }

    #[test]
    fn terms_at_a_time_keep_the_rows_the_whole_conjunction_keeps() {
        let b = batch();
        let cases = [
            // Selective first term: filtered after it.
            col("s")
                .eq(lit("DELIVER IN PERSON"))
                .and(col("b").gt(lit(2)))
                .and(col("a").lt(lit(900))),
            // Unselective terms first: masks and-ed, one filter at the end.
            col("a")
                .gt(lit(10))
                .and(col("a").lt(lit(990)))
                .and(col("s").eq(lit("AIR"))),
            // A null term drops the row, as the whole conjunction's null does.
            col("b").gt(lit(-1)).and(col("a").gt_eq(lit(0))),
            // One term, and a term nothing passes.
            col("b").eq(lit(3)),
            col("a").lt(lit(0)).and(col("b").eq(lit(3))),
            // A disjunction is one term.
            col("s").eq(lit("RAIL")).or(col("b").is_null()),
            // Filtered early twice (each term keeps a quarter, and disjunctions follow):
            // the later terms see only the columns they read, the rows' positions are
            // composed, and the output is taken from the whole batch.
            col("s")
                .eq(lit("DELIVER IN PERSON"))
                .and(col("b").eq(lit(3)).or(col("b").eq(lit(4))))
                .and(col("a").lt(lit(900)).or(col("s").eq(lit("AIR")))),
            // Filtered early, then nothing left.
            col("s")
                .eq(lit("AIR"))
                .and(col("b").eq(lit(100)).or(col("b").eq(lit(101))))
                .and(col("s").eq(lit("AIR")).or(col("a").gt(lit(0)))),
        ];
        for e in &cases {
            let got = filter(&b, e, None).unwrap();
            let want = at_once(&b, e);
            assert_eq!(a_values(&got), a_values(&want), "{e}");
            assert_eq!(got.schema(), b.schema());
        }
        // Hand-counted: `s` is the long string on rows 1 mod 4; `b = a % 7 > 2` on those
        // with `a % 10 != 0`, below 900.
        let e = &cases[0];
        let want: Vec<i64> = (0..900)
            .filter(|a| a % 4 == 1 && a % 10 != 0 && a % 7 > 2)
            .collect();
        assert_eq!(a_values(&filter(&b, e, None).unwrap()), want);
        // And the twice-filtered case: rows 1 mod 4, `b` 3 or 4, below 900.
        let want: Vec<i64> = (0..900)
            .filter(|a| a % 4 == 1 && a % 10 != 0 && matches!(a % 7, 3 | 4))
            .collect();
        let got = filter(&b, &cases[6], None).unwrap();
        assert_eq!(a_values(&got), want);
        let s = got.column(2).as_string_view();
        assert!(s.iter().all(|v| v == Some("DELIVER IN PERSON")));
        assert_eq!(filter(&b, &cases[7], None).unwrap().num_rows(), 0);
    }

    #[test]
    fn only_the_columns_the_next_step_reads_are_kept() {
        let b = batch();
        let keep: BTreeSet<String> = ["a".to_string(), "s".to_string()].into();
        // Filtered once at the end, and filtered early then taken by positions.
        for e in [
            col("a").gt(lit(10)).and(col("b").lt(lit(5))),
            col("s")
                .eq(lit("DELIVER IN PERSON"))
                .and(col("b").eq(lit(3)).or(col("b").eq(lit(4)))),
        ] {
            let got = filter(&b, &e, Some(&keep)).unwrap();
            let names: Vec<String> = got
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            assert_eq!(names, ["a", "s"], "{e}");
            assert_eq!(a_values(&got), a_values(&at_once(&b, &e)), "{e}");
        }
    }

    #[test]
    fn a_step_that_reads_no_column_gets_the_kept_row_count() {
        let b = batch();
        let none = BTreeSet::new();
        for (e, want) in [
            // Filtered once at the end.
            (col("a").lt(lit(100)), 100),
            // Filtered early (the later terms read `b` and `s` only), then taken.
            (
                col("s")
                    .eq(lit("DELIVER IN PERSON"))
                    .and(col("b").eq(lit(3)).or(col("b").eq(lit(4)))),
                (0..1000)
                    .filter(|a| a % 4 == 1 && a % 10 != 0 && matches!(a % 7, 3 | 4))
                    .count(),
            ),
        ] {
            let got = filter(&b, &e, Some(&none)).unwrap();
            assert_eq!((got.num_columns(), got.num_rows()), (0, want), "{e}");
        }
        // Terms that read no column, on a batch without columns.
        let empty = b.project(&[]).unwrap();
        let always = lit(1).lt(lit(2)).and(lit(true).or(lit(false)));
        assert_eq!(filter(&empty, &always, None).unwrap().num_rows(), 1000);
    }

    #[test]
    fn a_term_that_is_not_boolean_is_an_error_naming_it() {
        let err = filter(&batch(), &col("a").gt(lit(1)).and(col("b")), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not Boolean"), "{err}");
    }
}
