//! Joining two batches: a hash join (build on the right, probe with the left) and a
//! sorted merge join, both producing pairs of row indices; the output is assembled by
//! `take` on both sides, with shared keys coalesced for right and outer joins. Semi and
//! anti joins only ask of each left row whether the right side's table holds its key.

mod build;
mod merge;
mod pairs;
mod probe;
#[cfg(test)]
mod tests;

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::SchemaRef;
pub(crate) use build::{build, BuildTable};
use merge::merge_pairs;
use pairs::{indices, keys};
use probe::{has_match, hash_pairs};
use tessera_core::frame::{JoinAlgorithm, JoinSpec, JoinType};
use tessera_core::{Error, Result};

/// Joins two batches; `schema` is [`JoinSpec::output_schema`] of the inputs. `table` is a
/// prepared build table of `right` (a broadcast join), or `None` to build one here.
pub(crate) fn join(
    left: &RecordBatch,
    right: &RecordBatch,
    table: Option<&BuildTable>,
    spec: &JoinSpec,
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let lk = keys(left, &spec.left_on)?;
    if matches!(spec.how, JoinType::Semi | JoinType::Anti) {
        // Whatever the algorithm asked for, a probe of the right side's table: one look-up
        // per left row answers "has a match" without producing the pairs.
        let own;
        let table = match table {
            Some(t) => t,
            None => {
                own = build(right, spec)?;
                &own
            }
        };
        let hits = has_match(&lk, table, left.num_rows())?;
        let keep = spec.how == JoinType::Semi;
        let rows: UInt32Array = (0..left.num_rows() as u32)
            .filter(|&i| hits[i as usize] == keep)
            .collect();
        let columns = left
            .columns()
            .iter()
            .map(|c| {
                arrow_select::take::take(c, &rows, None)
                    .map(|t| crate::views::compact(&t))
                    .map_err(|e| Error::arrow("merge", e))
            })
            .collect::<Result<Vec<_>>>()?;
        return RecordBatch::try_new_with_options(
            schema,
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
        )
        .map_err(|e| Error::arrow("merge", e));
    }
    let pairs = match spec.algorithm {
        JoinAlgorithm::Hash => {
            let own;
            let table = match table {
                Some(t) => t,
                None => {
                    own = build(right, spec)?;
                    &own
                }
            };
            hash_pairs(&lk, table, left.num_rows(), right.num_rows(), spec.how)?
        }
        JoinAlgorithm::SortedMerge => {
            let rk = keys(right, &spec.right_on)?;
            merge_pairs(&lk, &rk, left.num_rows(), right.num_rows(), spec.how)?
        }
    };
    let li = indices(pairs.left);
    let ri = indices(pairs.right);
    let shared = spec.shared_keys();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let lschema = left.schema();
    for (c, f) in left.columns().iter().zip(lschema.fields()) {
        let taken = arrow_select::take::take(c, &li, None).map_err(|e| Error::arrow("merge", e))?;
        let coalesce =
            shared.contains(&f.name()) && matches!(spec.how, JoinType::Right | JoinType::Outer);
        if coalesce {
            let rc = right
                .column_by_name(f.name())
                .ok_or_else(|| Error::Internal("shared key missing".into()))?;
            let rt =
                arrow_select::take::take(rc, &ri, None).map_err(|e| Error::arrow("merge", e))?;
            let mask =
                arrow_arith::boolean::is_not_null(&li).map_err(|e| Error::arrow("merge", e))?;
            columns.push(
                arrow_select::zip::zip(&mask, &taken, &rt).map_err(|e| Error::arrow("merge", e))?,
            );
        } else {
            columns.push(taken);
        }
    }
    let rschema = right.schema();
    for (c, f) in right.columns().iter().zip(rschema.fields()) {
        if shared.contains(&f.name()) {
            continue;
        }
        columns.push(arrow_select::take::take(c, &ri, None).map_err(|e| Error::arrow("merge", e))?);
    }
    let columns = columns
        .iter()
        .map(crate::views::compact)
        .collect::<Vec<_>>();
    let rows = li.len();
    RecordBatch::try_new_with_options(
        schema,
        columns,
        &arrow_array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| Error::arrow("merge", e))
}
