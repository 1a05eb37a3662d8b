//! Reductions over ranks: fold each rank's partials where they are, then all-reduce.
//!
//! A reduction's graph is a tree of [`Op::Combine`] levels that folds *neighbouring*
//! blocks (`array.split-every` at a time). On one process that is the right shape: it
//! frees partials early and keeps every worker busy. Over ranks it is not: the owner rule
//! deals a chunk grid block-cyclically, so neighbouring blocks sit on different ranks and
//! every level of the tree moves partials between them — O(blocks) messages for a
//! reduction along one axis of a grid with many blocks.
//!
//! So under a distributed scheduler the top of a tree with a standard combine (a
//! [`Fold::Binary`]: sum, product, min, max, any, all — not the order-sensitive
//! argmin/argmax folds, which keep the graph's tree) is lowered from its leaves again:
//!
//! 1. the partials of one output block are made as the graph would make them, in C order
//!    (so the owner rule deals them as always);
//! 2. the owner rule, run over the tasks made so far ([`Placer`]), says which rank each
//!    partial will be on, and the partials are grouped by that rank;
//! 3. each rank's group is folded by a tree of fan-in `split-every` on that rank: no
//!    traffic;
//! 4. the per-rank partials are folded by one task marked
//!    [`replicated`](super::super::plan::Task::replicated): the executor runs it on every
//!    rank that needs the result, and each rank sends its partial to those ranks. When
//!    every rank needs it (a result of `compute()`, a mean subtracted from every block),
//!    that is an all-reduce in one round — an all-gather of the partials and the same
//!    fold, in rank order, on every rank, so every rank holds the same bits; when one rank
//!    needs it, it is a reduce to that rank.
//!
//! Why not `MPI_Allreduce`: a blocking collective must be entered by every rank in the
//! same order, while this executor's workers run whatever task is ready; ordering the
//! collectives would serialise them, and a rank that died would leave the others inside
//! the collective, past the watchdog (`distributed.timeout`). With point-to-point messages
//! the receiving thread keeps its watchdog and the plan keeps its deadlock-freedom
//! argument (`super::super::distributed`). The partials crossing ranks are one chunk per
//! rank and output block, so the messages are few and small either way.
//!
//! [`Placer`]: super::super::placement::Placer

use super::{Lowerer, Target};
use crate::chunks::grid_indices;
use crate::error::{Error, Result};
use crate::exec::placement::Place;
use crate::graph::{Array, Fold, Op};
use crate::program::{BinaryOp, IndexMap, ProgramBuilder};

use super::super::plan::TaskOp;
use crate::backend::BackendRef;
use crate::dtype::DType;

impl Lowerer {
    /// The top level of a reduction tree over `axes` with combine `op` (target `t`, one
    /// block along every reduced axis), lowered rank by rank (module docs). `input` is the
    /// tree's top level's input, whose own [`Op::Combine`] levels are skipped.
    pub(super) fn combine_by_rank(
        &mut self,
        t: Target<'_>,
        input: &Array,
        axes: &[usize],
        op: BinaryOp,
    ) -> Result<usize> {
        let Target {
            a,
            block,
            shape,
            bytes,
            backend,
        } = t;
        // The leaves: the array the lowest level of the tree folds.
        let mut leaves = input;
        while let Op::Combine {
            inputs,
            axes: level_axes,
            fold: Fold::Binary(_),
            ..
        } = leaves.op()
        {
            if level_axes.as_slice() != axes {
                break;
            }
            leaves = &inputs[0];
        }
        // Its blocks under this output block: every block along the reduced axes, this
        // block's along the others; C order, as the graph's tree would make them.
        let ranges: Vec<usize> = (0..block.len())
            .map(|ax| {
                if axes.contains(&ax) {
                    leaves.chunks().axis(ax).len()
                } else {
                    1
                }
            })
            .collect();
        let mut members = Vec::new();
        for g in grid_indices(ranges) {
            let member: Vec<usize> = g
                .iter()
                .enumerate()
                .map(|(ax, &i)| if axes.contains(&ax) { i } else { block[ax] })
                .collect();
            let member_shape = leaves.chunks().block_shape(&member);
            if member_shape != shape {
                return Err(Error::Internal(format!(
                    "a partial of shape {member_shape:?} under a reduction block of shape {shape:?}"
                )));
            }
            members.push(self.block_task(leaves, &member)?);
        }
        let by_rank = self.group_by_rank(&members)?;
        // Each rank's tree, then one fold of the ranks' partials, run where it is needed.
        let fan_in = crate::config::split_every()?.max(2);
        let dtype = a.dtype();
        let mut partials = Vec::with_capacity(by_rank.len());
        for (_, mut level) in by_rank {
            while level.len() > 1 {
                level = level
                    .chunks(fan_in)
                    .map(|g| self.fold_task(g, op, &shape, dtype, &backend, bytes))
                    .collect::<Result<_>>()?;
            }
            partials.extend(level);
        }
        match partials.as_slice() {
            [] => Err(Error::Internal("a reduction over no blocks".into())),
            [one] => Ok(*one),
            _ => {
                let all = self.fold_task(&partials, op, &shape, dtype, &backend, bytes)?;
                self.tasks[all].replicated = true;
                Ok(all)
            }
        }
    }

    /// `tasks` grouped by the rank the owner rule puts them on (run over the tasks made so
    /// far), in rank order, each group in the order given. Tasks every rank holds count as
    /// rank 0's.
    ///
    /// # Errors
    /// Internal: called on one process.
    pub(super) fn group_by_rank(&mut self, tasks: &[usize]) -> Result<Vec<(usize, Vec<usize>)>> {
        let placer = self
            .placer
            .as_mut()
            .ok_or_else(|| Error::Internal("a grouping by rank on one process".into()))?;
        placer.extend(&self.tasks, &self.readers);
        let mut by_rank: Vec<(usize, Vec<usize>)> = Vec::new();
        for &t in tasks {
            let rank = match placer.places()[t] {
                Place::Rank(r) => r,
                Place::Everywhere => 0,
            };
            match by_rank.iter_mut().find(|(r, _)| *r == rank) {
                Some((_, group)) => group.push(t),
                None => by_rank.push((rank, vec![t])),
            }
        }
        by_rank.sort_by_key(|&(r, _)| r);
        Ok(by_rank)
    }

    /// A task folding the chunks of `tasks` (all of `shape` and `dtype`) with `op`, in
    /// order; a single task is itself.
    fn fold_task(
        &mut self,
        tasks: &[usize],
        op: BinaryOp,
        shape: &[usize],
        dtype: DType,
        backend: &BackendRef,
        bytes: u64,
    ) -> Result<usize> {
        if let [one] = tasks {
            return Ok(*one);
        }
        let mut pb = ProgramBuilder::new(shape);
        let mut acc = None;
        for slot in 0..tasks.len() {
            let v = pb.input(slot, dtype, IndexMap::identity(shape));
            acc = Some(match acc {
                None => v,
                Some(a) => pb.binary(op, a, v)?,
            });
        }
        let node = acc.ok_or_else(|| Error::Internal("a fold of no chunks".into()))?;
        let program = pb.finish(vec![(node, None)])?;
        backend.check_program(&program)?;
        Ok(self.push(
            TaskOp::Program(program),
            tasks.to_vec(),
            backend.clone(),
            bytes,
        ))
    }
}
