//! Comparing a backend's batches with the reference's: schema (names and types; nullability
//! is not part of the contract), row count, then every cell. Nulls equal nulls; NaN equals
//! NaN and `-0.0` equals `0.0`; floats agree within a relative tolerance where the op
//! sums (aggregations), exactly elsewhere; every other type is compared by its display
//! form, which is exact for integers, strings, booleans, dates and timestamps. Outputs
//! whose row order the protocol leaves open (joins, hash buckets) are compared after both
//! sides are sorted by every column.

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;

/// Whether an output's row order is part of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Rows must come in the reference's order.
    Exact,
    /// Any order (compared sorted).
    Unordered,
}

/// The relative tolerance of float cells: 0 (exact) or a bound for sums and moments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatTol(pub f64);

impl FloatTol {
    /// Bitwise-equal values (NaN = NaN, -0.0 = 0.0).
    pub const EXACT: FloatTol = FloatTol(0.0);
    /// Sums, means, variances of up to a few hundred values: `|a - b| <= 1e-9 * max(1,
    /// |a|, |b|)`.
    pub const SUMS: FloatTol = FloatTol(1e-9);
}

/// Rows of `b` sorted by every column (a canonical order for unordered outputs).
pub fn sorted(b: &RecordBatch) -> Result<RecordBatch, String> {
    if b.num_rows() < 2 || b.num_columns() == 0 {
        return Ok(b.clone());
    }
    let fields = b
        .columns()
        .iter()
        .map(|c| SortField::new(c.data_type().clone()))
        .collect();
    let conv = RowConverter::new(fields).map_err(|e| format!("sorting rows: {e}"))?;
    let rows = conv
        .convert_columns(b.columns())
        .map_err(|e| format!("sorting rows: {e}"))?;
    let mut idx: Vec<u32> = (0..b.num_rows() as u32).collect();
    idx.sort_by(|&x, &y| rows.row(x as usize).cmp(&rows.row(y as usize)));
    let idx = arrow_array::UInt32Array::from(idx);
    let cols = b
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("sorting rows: {e}"))?;
    RecordBatch::try_new(b.schema(), cols).map_err(|e| format!("sorting rows: {e}"))
}

fn float_at(a: &ArrayRef, i: usize) -> Option<f64> {
    if let Some(f) = a.as_any().downcast_ref::<Float64Array>() {
        return Some(f.value(i));
    }
    a.as_any()
        .downcast_ref::<Float32Array>()
        .map(|f| f64::from(f.value(i)))
}

fn floats_agree(x: f64, y: f64, tol: FloatTol) -> bool {
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    if x == y {
        return true;
    }
    tol.0 > 0.0 && (x - y).abs() <= tol.0 * x.abs().max(y.abs()).max(1.0)
}

/// `Ok(())` when `got` equals `want` under `order` and `tol`, else the first difference
/// in words (column, row, both values).
pub fn compare_batches(
    got: &RecordBatch,
    want: &RecordBatch,
    order: Order,
    tol: FloatTol,
) -> Result<(), String> {
    let names = |b: &RecordBatch| -> Vec<(String, DataType)> {
        b.schema()
            .fields()
            .iter()
            .map(|f| (f.name().clone(), f.data_type().clone()))
            .collect()
    };
    if names(got) != names(want) {
        return Err(format!(
            "schema differs: got {:?}, want {:?}",
            names(got),
            names(want)
        ));
    }
    if got.num_rows() != want.num_rows() {
        return Err(format!("{} rows, want {}", got.num_rows(), want.num_rows()));
    }
    let (got, want) = match order {
        Order::Exact => (got.clone(), want.clone()),
        Order::Unordered => (sorted(got)?, sorted(want)?),
    };
    let opts = FormatOptions::default().with_null("null");
    for (c, field) in want.schema().fields().iter().enumerate() {
        let (g, w) = (got.column(c), want.column(c));
        let gf = ArrayFormatter::try_new(g.as_ref(), &opts).map_err(|e| e.to_string())?;
        let wf = ArrayFormatter::try_new(w.as_ref(), &opts).map_err(|e| e.to_string())?;
        for r in 0..want.num_rows() {
            let same = match (g.is_null(r), w.is_null(r)) {
                (true, true) => true,
                (false, false) => match (float_at(g, r), float_at(w, r)) {
                    (Some(x), Some(y)) => floats_agree(x, y, tol),
                    _ => gf.value(r).to_string() == wf.value(r).to_string(),
                },
                _ => false,
            };
            if !same {
                return Err(format!(
                    "column '{}' row {r}{}: got {}, want {}",
                    field.name(),
                    if order == Order::Unordered {
                        " (rows sorted)"
                    } else {
                        ""
                    },
                    gf.value(r),
                    wf.value(r)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::data::batch;
    use std::sync::Arc;

    #[test]
    fn differences_are_found_and_order_is_optional_where_declared() {
        let a = batch(vec![
            (
                "k",
                Arc::new(arrow_array::Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
            ),
            (
                "v",
                Arc::new(Float64Array::from(vec![0.5, f64::NAN, -0.0])) as ArrayRef,
            ),
        ]);
        let b = batch(vec![
            (
                "k",
                Arc::new(arrow_array::Int64Array::from(vec![Some(3), Some(1), None])) as ArrayRef,
            ),
            (
                "v",
                Arc::new(Float64Array::from(vec![0.0, 0.5, f64::NAN])) as ArrayRef,
            ),
        ]);
        assert!(compare_batches(&a, &a, Order::Exact, FloatTol::EXACT).is_ok());
        assert!(compare_batches(&a, &b, Order::Unordered, FloatTol::EXACT).is_ok());
        let e = compare_batches(&a, &b, Order::Exact, FloatTol::EXACT).unwrap_err();
        assert!(e.contains("column 'k' row 0"), "{e}");
        let c = batch(vec![
            (
                "k",
                Arc::new(arrow_array::Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
            ),
            (
                "v",
                Arc::new(Float64Array::from(vec![0.5 + 1e-12, f64::NAN, 0.0])) as ArrayRef,
            ),
        ]);
        assert!(compare_batches(&c, &a, Order::Exact, FloatTol::EXACT).is_err());
        assert!(compare_batches(&c, &a, Order::Exact, FloatTol::SUMS).is_ok());
    }
}
