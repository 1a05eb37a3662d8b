//! The dispatcher: a plan node to its [`Pipeline`]. Blockwise nodes (scans, fused
//! programs, `map_partitions`, concatenations) compose their inputs' tasks; blocking
//! nodes run their operator (one file each), which builds its own inputs through this
//! function, handed to it as a [`Build`](super::partitions::Build).

use std::sync::Arc;

use crate::backend::DataFrameBackend;
use crate::error::{Error, Result};
use crate::exec::aggregate::{aggregate, concat_or_empty};
use crate::exec::external_sort::external_sort;
use crate::exec::join::join;
use crate::exec::partitions::Pipeline;
use crate::exec::ranks::on_rank::held_elsewhere;
use crate::exec::repartition::repartition;
use crate::exec::scan::{leading_filter, scan};
use crate::exec::sort::sort;
use crate::exec::spill::Spill;
use crate::exec::stage::staged;
use crate::exec::window::{first_rows, window_carries};
use crate::plan::Node;

/// Builds the pipeline of `node` on `backend`, running blocking nodes below it; what they
/// keep between stages goes through `spill`'s budget.
pub(crate) fn pipeline(
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
) -> Result<Pipeline> {
    match node {
        Node::Concat { inputs, .. } => {
            let pipes = inputs
                .iter()
                .map(|i| pipeline(i, backend, spill))
                .collect::<Result<Vec<_>>>()?;
            // Partition i of the concat: (input, its partition), by the inputs' counts.
            let mut index = Vec::new();
            for (k, p) in pipes.iter().enumerate() {
                index.extend((0..p.n).map(|j| (k, j)));
            }
            let index = Arc::new(index);
            Ok(Pipeline {
                n: index.len(),
                task: Arc::new(move |i| {
                    let (k, j) = index[i];
                    (pipes[k].task)(j)
                }),
            })
        }
        Node::Partitions { parts, .. } => match parts.iter().find_map(held_elsewhere) {
            Some(e) => Err(e),
            None => Ok(Pipeline::ready(parts.clone())),
        },
        Node::Scan { .. } => Ok(scan(node, backend, None, Vec::new())),
        Node::Map { input, program, .. } => {
            // The filters a program over a scan starts with go to the reader too, which
            // may drop rows early; the program still runs whole.
            let inner = match (&**input, leading_filter(program)) {
                (Node::Scan { .. }, Some(filter)) => scan(input, backend, Some(filter), Vec::new()),
                _ => pipeline(input, backend, spill)?,
            };
            let program = program.clone();
            let backend = backend.clone();
            let task = inner.task.clone();
            Ok(Pipeline {
                n: inner.n,
                task: Arc::new(move |i| backend.evaluate(&task(i)?, &program)),
            })
        }
        Node::MapPartitions {
            input,
            func,
            schema,
        } => {
            let inner = pipeline(input, backend, spill)?;
            let func = func.clone();
            let schema = schema.clone();
            let backend = backend.clone();
            let task = inner.task.clone();
            Ok(Pipeline {
                n: inner.n,
                task: Arc::new(move |i| {
                    let batch = backend.export_batch(&task(i)?)?;
                    let out = tessera_core::error::catch_panic(
                        || func(batch),
                        |m| {
                            Error::user_function(
                                "map_partitions",
                                format!("the function panicked on partition {i}: {m}"),
                            )
                        },
                    )
                    .map_err(|e| match e {
                        e @ Error::UserFunction { .. } => e,
                        e => Error::user_function("map_partitions", format!("partition {i}: {e}")),
                    })?;
                    if out.schema().fields() != schema.fields() {
                        return Err(Error::user_function("map_partitions", format!(
                            "partition {i} returned schema {:?} but the declared/inferred schema is {:?}",
                            out.schema(),
                            schema
                        )));
                    }
                    backend.import_batch(out)
                }),
            })
        }
        Node::Aggregate {
            input,
            keys,
            aggs,
            strategy,
            ..
        } => Ok(Pipeline::stashed(
            aggregate(pipeline, backend, spill, input, keys, aggs, *strategy)?,
            backend,
        )),
        Node::Join {
            left,
            right,
            spec,
            strategy,
            ..
        } => join(pipeline, backend, spill, left, right, spec, *strategy),
        Node::Sort { input, by } => match spill {
            // Within a budget, a sort whose input may pass a task's share keeps its
            // partitions and ranges within the budget (`external_sort`). The plan's
            // model decides, not measured bytes: a partition of string views counts the
            // buffers it shares with others whole (TPC-H Q16's groupby results at scale
            // 10, 27,840 rows, report 46 GiB).
            Some(budget) if input.memory(1).output > budget.task_bytes => {
                let inner = pipeline(input, backend, spill)?;
                let (ranges, _) = external_sort(backend, budget, inner, by, &input.schema())?;
                Ok(Pipeline::stashed(ranges, backend))
            }
            _ => {
                let parts = pipeline(input, backend, spill)?.materialize()?;
                Ok(Pipeline::ready(sort(backend, parts, by, &input.schema())?))
            }
        },
        Node::Repartition { input, n } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            Ok(Pipeline::ready(repartition(backend, parts, *n)?))
        }
        Node::TopK { input, by, n } => {
            let inner = pipeline(input, backend, spill)?;
            let task = inner.task.clone();
            let tops = {
                let backend = backend.clone();
                staged("top-k", inner.n, move |i| {
                    backend.sort_limit(&task(i)?, by, *n)
                })?
            };
            // A stable top-k of the partitions' winners in partition order: ties keep the
            // order a full sort would give them.
            let all = concat_or_empty(backend, &tops, &input.schema())?;
            Ok(Pipeline::ready(vec![backend.sort_limit(&all, by, *n)?]))
        }
        Node::Window { input, spec, .. } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            let carries = window_carries(backend, &parts, spec)?;
            let (backend, spec) = (backend.clone(), spec.clone());
            let parts = Arc::new(parts);
            Ok(Pipeline {
                n: parts.len(),
                task: Arc::new(move |i| backend.window(&parts[i], &spec, carries[i].as_ref())),
            })
        }
        Node::Tail { input, n } => Ok(Pipeline::ready(first_rows(
            &pipeline(input, backend, spill)?,
            backend,
            *n,
            true,
            &input.schema(),
        )?)),
        Node::Head { input, n } => Ok(Pipeline::ready(first_rows(
            &pipeline(input, backend, spill)?,
            backend,
            *n,
            false,
            &input.schema(),
        )?)),
    }
}
