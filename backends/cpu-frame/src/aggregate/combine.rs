//! The second step: partial states of several partitions, concatenated, regrouped by their
//! keys and merged into one state per group.

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::Field;
use tessera_core::frame::{AggFunc, AggSpec};
use tessera_core::{Error, Result};

use super::digests::merge_digests;
use super::lists::value_lists;
use super::moments::{merge_higher_moments, merge_moments};
use super::partial::{key_columns, keyed_output};
use super::pick::pick;
use super::sums::sum;
use crate::keys::grouping::group_rows;

/// The state columns of `spec` in a state batch.
pub(super) fn state_columns(batch: &RecordBatch, spec: &AggSpec) -> Result<Vec<(Field, ArrayRef)>> {
    let schema = batch.schema();
    let prefix = format!("{}#", spec.output);
    let out: Vec<(Field, ArrayRef)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| f.name().starts_with(&prefix))
        .map(|(i, f)| ((**f).clone(), batch.column(i).clone()))
        .collect();
    if out.is_empty() {
        return Err(Error::Internal(format!(
            "state of {} has no columns",
            spec.output
        )));
    }
    Ok(out)
}

/// Merges state batches (already concatenated, in partition order).
pub(crate) fn combine(
    state: &RecordBatch,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<RecordBatch> {
    let g = group_rows(&key_columns(state, keys)?, state.num_rows())?;
    let mut fields = Vec::new();
    let mut columns = Vec::new();
    for spec in aggs {
        let cols = state_columns(state, spec)?;
        fields.extend(cols.iter().map(|(f, _)| f.clone()));
        let arrays: Vec<&ArrayRef> = cols.iter().map(|(_, a)| a).collect();
        match spec.func {
            AggFunc::Sum | AggFunc::Count | AggFunc::Mean => {
                for a in arrays {
                    let t = a.data_type().clone();
                    columns.push(sum(a, &g, &t)?);
                }
            }
            AggFunc::Std | AggFunc::Var => {
                columns.extend(merge_moments(arrays[0], arrays[1], arrays[2], &g))
            }
            AggFunc::Skew | AggFunc::Kurt => columns.extend(merge_higher_moments(&arrays, &g)),
            AggFunc::Cov | AggFunc::Corr => columns.extend(crate::comoments::merge(&arrays, &g)),
            AggFunc::Largest(_) | AggFunc::Smallest(_) => {
                columns.push(crate::top_values::merge(arrays[0], &g, spec.func)?)
            }
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => {
                columns.push(pick(arrays[0], &g, spec.func)?)
            }
            AggFunc::ApproxQuantile(_) => columns.push(merge_digests(arrays[0], &g)?),
            AggFunc::NUnique | AggFunc::Median | AggFunc::Quantile(_) => {
                let (values, vg) = crate::keys::groups::list_items(arrays[0], &g);
                let item = values.data_type().clone();
                let distinct = spec.func == AggFunc::NUnique;
                columns.push(value_lists(&values, &vg, &item, distinct)?)
            }
        }
    }
    keyed_output(state, keys, &g, fields, columns)
}
