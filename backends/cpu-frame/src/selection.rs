//! Partial aggregation of a fused program's output, its last filter kept as a selection.
//!
//! A groupby over `filter(p).select(...)` would otherwise copy every column the filter
//! keeps into new buffers, only for the aggregation to read them once (TPC-H Q1 keeps 98%
//! of `lineitem` and spent a seventh of its time in that copy). When the last filter of the
//! program keeps most rows, the steps after it run on the unfiltered rows instead, and the
//! aggregation skips the rows the filter drops: they get no group, and a key seen only on
//! them makes none. The answer is the same as filtering first.
//!
//! When the filter keeps few rows, filtering first is cheaper (the steps after it and the
//! aggregation then see only the kept rows), so that is what runs. It is also what runs
//! when a step after the filter fails on the unfiltered rows — an expression that is only
//! defined on the rows the filter keeps (a decimal product that overflows on a dropped
//! row) — so an error is only ever the one filtering first gives.

use arrow_array::{Array, BooleanArray, RecordBatch};
use arrow_buffer::NullBuffer;
use tessera_core::frame::{AggSpec, FrameProgram, FrameStep};
use tessera_core::{Error, Result};

use crate::program::run_program;

/// The share of rows the last filter must keep for the steps after it to run on every row:
/// at least `KEEP_NUM / KEEP_DEN`.
const KEEP_NUM: usize = 3;
const KEEP_DEN: usize = 4;

/// [`crate::aggregate::partial`] of `program` run on `batch`.
pub(crate) fn partial_of(
    batch: &RecordBatch,
    program: &FrameProgram,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    let exact = || crate::aggregate::partial(&run_program(batch, program)?, keys, aggs);
    let Some((last, predicate)) =
        program
            .steps
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, s)| match s {
                FrameStep::Filter(e) => Some((i, e)),
                FrameStep::Project(_) => None,
            })
    else {
        return exact();
    };
    let before = FrameProgram {
        steps: program.steps[..last].to_vec(),
    };
    let after = FrameProgram {
        steps: program.steps[last + 1..].to_vec(),
    };
    let cur = run_program(batch, &before)?;
    let rows = cur.num_rows();
    let mask = crate::eval::eval(predicate, &cur)?.into_array(rows)?;
    let mask = mask
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| Error::invalid("filter", format!("{predicate} is not Boolean")))?;
    // A null predicate drops the row, as `filter` does.
    let selected = selection(mask);
    let kept = rows - selected.null_count();
    // Filtering first, with the mask already computed.
    let filtered = || {
        let kept = arrow_select::filter::filter_record_batch(&cur, mask)
            .map_err(|e| Error::arrow("filter", e))?;
        let kept = crate::views::compact_batch(kept)?;
        crate::aggregate::partial(&run_program(&kept, &after)?, keys, aggs)
    };
    if !on_selection(kept, rows) {
        return filtered();
    }
    match run_program(&cur, &after) {
        Ok(projected) => {
            crate::aggregate::partial_of_selected(&projected, Some(&selected), keys, aggs)
        }
        Err(_) => filtered(),
    }
}

/// True when a filter keeping `kept` of `rows` rows is applied as a selection.
fn on_selection(kept: usize, rows: usize) -> bool {
    kept.saturating_mul(KEEP_DEN) >= rows.saturating_mul(KEEP_NUM)
}

/// The rows `mask` keeps (true, not null) as a validity buffer.
fn selection(mask: &BooleanArray) -> NullBuffer {
    let values = mask.values().clone();
    NullBuffer::new(match mask.nulls() {
        Some(n) => &values & n.inner(),
        None => values,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Decimal128Array, Float64Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use tessera_core::frame::{col, lit, AggFunc, Expr};

    use super::*;

    /// 1,000 rows: a key of 7 values (key 6 only where `x < 0`), a float with nulls, a
    /// decimal that overflows when multiplied where `x < 0`.
    fn batch() -> RecordBatch {
        let n = 1000i64;
        let key: Vec<Option<&str>> = (0..n)
            .map(|i| match i % 13 {
                0 => None,
                _ if i % 11 == 0 => Some("only-dropped"),
                k => Some(["a", "b", "c", "d", "e", "f"][(k % 6) as usize]),
            })
            .collect();
        let x: Vec<i64> = (0..n)
            .map(|i| if i % 11 == 0 { -1 } else { i % 97 })
            .collect();
        let y: Vec<Option<f64>> = (0..n)
            .map(|i| (i % 17 != 0).then_some(i as f64 * 0.5))
            .collect();
        let d: Vec<i128> = (0..n)
            .map(|i| {
                if i % 11 == 0 {
                    10i128.pow(37)
                } else {
                    i as i128 * 100
                }
            })
            .collect();
        let schema = Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("x", DataType::Int64, false),
            Field::new("y", DataType::Float64, true),
            Field::new("d", DataType::Decimal128(38, 2), false),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(key)),
                Arc::new(Int64Array::from(x)),
                Arc::new(Float64Array::from(y)),
                Arc::new(
                    Decimal128Array::from(d)
                        .with_precision_and_scale(38, 2)
                        .unwrap(),
                ),
            ],
        )
        .unwrap()
    }

    fn aggs() -> Vec<AggSpec> {
        vec![
            AggSpec::new("y", AggFunc::Sum, "s"),
            AggSpec::new("y", AggFunc::Mean, "m"),
            AggSpec::new("x", AggFunc::Count, "n"),
            AggSpec::new("x", AggFunc::Min, "lo"),
            AggSpec::new("y", AggFunc::First, "first"),
            AggSpec::new("x", AggFunc::NUnique, "u"),
            AggSpec::new("dd", AggFunc::Sum, "ds"),
        ]
    }

    /// Filter, then keep k, x, y and a decimal `dd`: `d * d`, which overflows
    /// Decimal128(38) on the rows where x < 0, or `d + d`, which does not.
    fn program(filter: Expr, product: bool) -> FrameProgram {
        let dd = if product {
            col("d") * col("d")
        } else {
            col("d") + col("d")
        };
        FrameProgram {
            steps: vec![
                FrameStep::Filter(filter),
                FrameStep::Project(vec![
                    ("k".into(), col("k")),
                    ("x".into(), col("x")),
                    ("y".into(), col("y")),
                    ("dd".into(), dd),
                ]),
            ],
        }
    }

    /// The state filtering first gives.
    fn filtered_first(b: &RecordBatch, p: &FrameProgram, keys: &[String]) -> RecordBatch {
        crate::aggregate::partial(&run_program(b, p).unwrap(), keys, &aggs()).unwrap()
    }

    #[test]
    fn the_selection_path_gives_the_state_filtering_first_gives() {
        let b = batch();
        // Keeps 91% of the rows (every x >= 0; the key seen only on dropped rows must make
        // no group), 86% (nulls in the predicate drop rows too): both on the selection
        // path; and 28%, filtered first.
        for (filter, selected) in [
            (col("x").gt_eq(lit(0i64)), true),
            (col("x").gt_eq(lit(0i64)).and(col("y").gt(lit(-1.0))), true),
            (
                col("x").gt_eq(lit(0i64)).and(col("x").lt(lit(30i64))),
                false,
            ),
        ] {
            let mask = crate::eval::eval(&filter, &b)
                .unwrap()
                .into_array(1000)
                .unwrap();
            let kept = mask
                .as_any()
                .downcast_ref::<BooleanArray>()
                .unwrap()
                .true_count();
            assert_eq!(on_selection(kept, 1000), selected, "{filter} keeps {kept}");
            let p = program(filter.clone(), false);
            for keys in [vec!["k".to_string()], vec![]] {
                let want = filtered_first(&b, &p, &keys);
                let got = partial_of(&b, &p, &keys, &aggs()).unwrap();
                assert_eq!(got, want, "{filter} by {keys:?}");
            }
        }
    }

    #[test]
    fn a_step_failing_on_dropped_rows_falls_back_to_filtering_first() {
        // The product of d overflows only on the rows x >= 0 drops: evaluated on every row
        // it fails, so the state comes from filtering first, without an error.
        let b = batch();
        let p = program(col("x").gt_eq(lit(0i64)), true);
        let after = FrameProgram {
            steps: p.steps[1..].to_vec(),
        };
        assert!(
            run_program(&b, &after).is_err(),
            "the product must overflow"
        );
        let keys = vec!["k".to_string()];
        assert_eq!(
            partial_of(&b, &p, &keys, &aggs()).unwrap(),
            filtered_first(&b, &p, &keys)
        );
        // Keeping the rows where it overflows is an error either way.
        let all = program(col("x").gt_eq(lit(-5i64)), true);
        assert!(partial_of(&b, &all, &keys, &aggs()).is_err());
    }

    #[test]
    fn selection_drops_null_predicates() {
        let mask = BooleanArray::from(vec![Some(true), None, Some(false), Some(true)]);
        let s = selection(&mask);
        assert_eq!(
            (0..4).map(|i| s.is_valid(i)).collect::<Vec<_>>(),
            [true, false, false, true]
        );
    }
}
