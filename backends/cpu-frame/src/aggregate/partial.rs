//! The first step: a batch's rows grouped and folded into partial states, one row per
//! group in the layout of [`AggFunc::state_fields`].

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema};
use tessera_core::frame::{AggFunc, AggSpec};
use tessera_core::{Error, Result};

use super::columns::{cast, column};
use super::digests::digests;
use super::lists::value_lists;
use super::moments::{higher_moments, moments};
use super::pick::pick;
use super::sums::{count, sum};
use crate::keys::grouping::group_selected_rows;
use crate::keys::groups::Groups;

/// State columns computed once per partition and shared by the specs that need the same
/// one: `sum(x)` and `mean(x)` both sum `x`, and every count of a column without nulls is
/// the group sizes (TPC-H Q1 asks for four sums of three columns, three means and a
/// count: five sums and one count instead of seven and four).
#[derive(Default)]
pub(super) struct Shared {
    /// Sums by column and sum type.
    sums: Vec<(String, DataType, ArrayRef)>,
    /// Counts by column; `None` for the group sizes (a column without nulls).
    counts: Vec<(Option<String>, ArrayRef)>,
}

impl Shared {
    /// [`sum`] of column `name` (`a`) as `t`, computed at most once.
    fn sum(&mut self, name: &str, a: &ArrayRef, g: &Groups, t: &DataType) -> Result<ArrayRef> {
        if let Some((_, _, s)) = self.sums.iter().find(|(n, st, _)| n == name && st == t) {
            return Ok(s.clone());
        }
        let s = sum(a, g, t)?;
        self.sums.push((name.to_string(), t.clone(), s.clone()));
        Ok(s)
    }

    /// [`count`] of column `name` (`a`), computed at most once.
    fn count(&mut self, name: &str, a: &ArrayRef, g: &Groups) -> ArrayRef {
        let key = a.logical_nulls().is_some().then(|| name.to_string());
        if let Some((_, c)) = self.counts.iter().find(|(k, _)| *k == key) {
            return c.clone();
        }
        let c = count(a, g);
        self.counts.push((key, c.clone()));
        c
    }
}

/// One spec's state columns for one partition.
pub(super) fn partial_state(
    (a, with): (&ArrayRef, Option<&ArrayRef>),
    g: &Groups,
    spec: &AggSpec,
    shared: &mut Shared,
) -> Result<Vec<ArrayRef>> {
    let t = a.data_type().clone();
    let sum_t = spec.func.output_type(&t);
    Ok(match spec.func {
        AggFunc::Sum => vec![shared.sum(&spec.column, a, g, &sum_t)?],
        AggFunc::Count => vec![shared.count(&spec.column, a, g)],
        AggFunc::Mean => {
            // The running sum's type is the state layout's (exact for a decimal).
            let fields = spec.func.state_fields(&spec.output, &t);
            vec![
                shared.sum(&spec.column, a, g, fields[0].data_type())?,
                shared.count(&spec.column, a, g),
            ]
        }
        AggFunc::Std | AggFunc::Var => moments(a, g)?,
        AggFunc::Skew | AggFunc::Kurt => higher_moments(a, g)?,
        AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => {
            vec![pick(a, g, spec.func)?]
        }
        AggFunc::NUnique => vec![value_lists(a, g, &t, true)?],
        AggFunc::Median | AggFunc::Quantile(_) => {
            let f = cast(a, &DataType::Float64)?;
            vec![value_lists(&f, g, &DataType::Float64, false)?]
        }
        AggFunc::ApproxQuantile(_) => vec![digests(a, g)?],
        AggFunc::Largest(_) | AggFunc::Smallest(_) => {
            vec![crate::top_values::select(a, g, spec.func)?]
        }
        AggFunc::Cov | AggFunc::Corr => {
            let y = with.ok_or_else(|| {
                Error::invalid(
                    spec.func.name(),
                    "a pair aggregation without its second column",
                )
            })?;
            crate::comoments::partial(a, y, g)?
        }
    })
}

pub(super) fn keyed_output(
    batch: &RecordBatch,
    keys: &[String],
    g: &Groups,
    mut fields: Vec<Field>,
    mut columns: Vec<ArrayRef>,
) -> Result<RecordBatch> {
    let first = UInt32Array::from(g.first_rows.clone());
    let mut key_fields = Vec::new();
    let mut key_cols = Vec::new();
    for k in keys {
        let c = column(batch, k, "groupby")?;
        key_fields.push(Field::new(k, c.data_type().clone(), true));
        // A group's key taken from a view column shares the whole partition's text;
        // compacted, a state of a few thousand groups holds their keys alone (TPC-H Q16's
        // states at scale 10 otherwise counted, and spilled, their partitions' buffers).
        let taken =
            arrow_select::take::take(&c, &first, None).map_err(|e| Error::arrow("groupby", e))?;
        key_cols.push(crate::views::compact(&taken));
    }
    key_fields.append(&mut fields);
    key_cols.append(&mut columns);
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(key_fields)),
        key_cols,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(g.len())),
    )
    .map_err(|e| Error::arrow("groupby", e))
}

pub(super) fn key_columns(batch: &RecordBatch, keys: &[String]) -> Result<Vec<ArrayRef>> {
    keys.iter().map(|k| column(batch, k, "groupby")).collect()
}

/// Partial aggregation of one batch.
pub(crate) fn partial(
    batch: &RecordBatch,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    partial_of_selected(batch, None, keys, aggs)
}

/// [`partial`] of the rows of `batch` that `selected` marks valid (all when `None`), as if
/// the others had been filtered out.
pub(crate) fn partial_of_selected(
    batch: &RecordBatch,
    selected: Option<&NullBuffer>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    let g = group_selected_rows(&key_columns(batch, keys)?, batch.num_rows(), selected)?;
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    let mut shared = Shared::default();
    for spec in aggs {
        spec.check_arity()?;
        let a = column(batch, &spec.column, spec.func.name())?;
        let with = match &spec.with {
            Some(w) => Some(column(batch, w, spec.func.name())?),
            None => None,
        };
        fields.extend(spec.func.state_fields(&spec.output, a.data_type()));
        columns.extend(partial_state((&a, with.as_ref()), &g, spec, &mut shared)?);
    }
    keyed_output(batch, keys, &g, fields, columns)
}
