//! An oracle for the dataframe reference: what every frame protocol op must return, from
//! its definition, sharing no code with any backend.
//!
//! The frame suite compares each backend with the CPU frame backend, so that reference
//! needs a check of its own, or `--frame-backend cpu` could only fail by panicking. This
//! module is that check: a row-at-a-time interpreter over plain values ([`value`]: a cell is
//! an `Option` of a Rust `bool`, `i64`, `f64` or `String`) with its own typing, Kleene
//! logic, NaN order and calendar ([`expr`], [`calendar`]), groupby aggregation from the
//! definitions ([`aggregate`]: compensated sums, two-pass variances, NumPy's linear
//! quantiles), a stable insertion sort with nulls last ([`sort`]) and joins as nested loops
//! over row pairs ([`join`]), window functions per group in row order ([`window`]). It uses Arrow only to read a case's input cells and to hold
//! its answer; no Arrow compute kernel, no protocol evaluator, no backend.
//!
//! A case states its expectation with [`FrameSide::expect`](super::FrameSide::expect) before
//! its op runs; the runner checks the reference's outputs against it (a disagreement is the
//! outcome `suite`), then the backend against the reference.

pub mod aggregate;
pub mod calendar;
pub mod expr;
pub mod join;
pub mod sort;
pub mod value;
pub mod window;

use arrow_array::RecordBatch;
use tessera_core::frame::FrameStep;

use value::{Column, Table};

/// What the oracle answers: one batch per output of the case, or why it cannot.
pub type Answer = Result<Vec<RecordBatch>, String>;

/// `t` after the fused `steps`: filters keep the rows whose predicate is true (null is
/// false); projections replace the columns.
///
/// # Errors
/// An expression the oracle cannot evaluate.
pub fn program(t: &Table, steps: &[FrameStep]) -> Result<Table, String> {
    let mut t = t.clone();
    for step in steps {
        t = match step {
            FrameStep::Filter(p) => {
                let keep: Vec<usize> = expr::eval(p, &t)?
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| matches!(c, Some(value::Value::Bool(true))))
                    .map(|(i, _)| i)
                    .collect();
                t.take(&keep)
            }
            FrameStep::Project(list) => Table {
                rows: t.rows,
                columns: list
                    .iter()
                    .map(|(name, e)| {
                        Ok(Column {
                            name: name.clone(),
                            ty: expr::type_of(e, &t)?,
                            cells: expr::eval(e, &t)?,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
            },
        };
    }
    Ok(t)
}

/// `t` read from a batch, for a case's oracle closure.
///
/// # Errors
/// A column type the oracle does not model.
pub fn table(b: &RecordBatch) -> Result<Table, String> {
    Table::from_batch(b)
}

/// The batches of `tables`.
///
/// # Errors
/// A cell the oracle typed wrongly (an oracle bug, reported as such).
pub fn batches(tables: &[Table]) -> Answer {
    tables.iter().map(Table::to_batch).collect()
}
