//! The executor's unit of work: a [`Pipeline`], partitions computed lazily, one task
//! each, and [`Build`], how an operator asks for the pipelines of its inputs.
//!
//! Operators take `Build` as an argument instead of calling the dispatcher
//! (`exec/pipeline.rs`) by name: the dispatcher calls the operators, and the operators
//! depend only on this file's types, so each operator's file can be read and tested
//! without the others.

use std::sync::Arc;

use crate::backend::{DataFrameBackend, Partition};
use crate::error::Result;
use crate::exec::spill::{stash, Spill, Stashed};
use crate::exec::stage::{note_read, staged};
use crate::plan::Node;

/// Builds the pipeline of a plan node on a backend, running the blocking nodes below it
/// within the spill budget: the dispatcher, handed to the operators that build inputs.
pub(crate) type Build = fn(&Node, &Arc<dyn DataFrameBackend>, &Spill) -> Result<Pipeline>;

/// A lazily computed sequence of partitions: `task(i)` produces partition `i`.
pub(crate) struct Pipeline {
    /// Number of partitions.
    pub n: usize,
    /// Produces one partition.
    pub task: Arc<dyn Fn(usize) -> Result<Partition> + Send + Sync>,
}

impl Pipeline {
    pub(crate) fn ready(parts: Vec<Partition>) -> Pipeline {
        let parts = Arc::new(parts);
        Pipeline {
            n: parts.len(),
            task: Arc::new(move |i| {
                note_read(parts[i].nbytes() as u64);
                Ok(parts[i].clone())
            }),
        }
    }

    /// Partitions kept between stages (see [`crate::exec::spill`]).
    pub(crate) fn stashed(parts: Vec<Stashed>, backend: &Arc<dyn DataFrameBackend>) -> Pipeline {
        let parts = Arc::new(parts);
        let backend = backend.clone();
        Pipeline {
            n: parts.len(),
            task: Arc::new(move |i| parts[i].load(&backend)),
        }
    }

    /// Runs every task.
    pub fn materialize(&self) -> Result<Vec<Partition>> {
        let task = self.task.clone();
        staged("partitions", self.n, move |i| task(i))
    }

    /// Runs every task, keeping the partitions within the spill budget.
    pub(crate) fn materialize_stashed(
        &self,
        spill: &Spill,
        backend: &Arc<dyn DataFrameBackend>,
    ) -> Result<Vec<Stashed>> {
        let task = self.task.clone();
        staged("partitions", self.n, move |i| {
            stash(spill, backend, task(i)?)
        })
    }
}
