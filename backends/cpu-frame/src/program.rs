//! A fused program ([`FrameProgram`]) run on one batch, step by step: filters through
//! `crate::filter`, projections through the expression evaluator.

use arrow_array::{RecordBatch, RecordBatchOptions};
use tessera_core::frame::{program_schema, FrameProgram, FrameStep};
use tessera_core::{Error, Result};

/// Runs `program` on `b`.
///
/// # Errors
/// An expression's error (a missing column, a type the operator does not take, an
/// overflow), or Arrow's when a projected batch cannot be built.
pub(crate) fn run_program(b: &RecordBatch, program: &FrameProgram) -> Result<RecordBatch> {
    let mut cur = b.clone();
    for (i, step) in program.steps.iter().enumerate() {
        cur = match step {
            FrameStep::Filter(e) => {
                // A projection next reads only some columns: the others are not copied.
                let read = match program.steps.get(i + 1) {
                    Some(FrameStep::Project(list)) => {
                        let mut read = std::collections::BTreeSet::new();
                        for (_, e) in list {
                            e.columns_into(&mut read);
                        }
                        Some(read)
                    }
                    _ => None,
                };
                crate::filter::filter(&cur, e, read.as_ref())?
            }
            FrameStep::Project(list) => {
                let schema = program_schema(
                    &cur.schema(),
                    &FrameProgram {
                        steps: vec![step.clone()],
                    },
                )?;
                let rows = cur.num_rows();
                let cols = list
                    .iter()
                    .map(|(_, e)| crate::eval::eval(e, &cur)?.into_array(rows))
                    .collect::<Result<Vec<_>>>()?;
                RecordBatch::try_new_with_options(
                    schema,
                    cols,
                    &RecordBatchOptions::new().with_row_count(Some(rows)),
                )
                .map_err(|e| Error::arrow("select", e))?
            }
        };
    }
    Ok(cur)
}
