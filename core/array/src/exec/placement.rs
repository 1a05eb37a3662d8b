//! Where each task of a plan runs under several ranks: the owner rule.
//!
//! Every rank lowers the same graph to the same plan (lowering is deterministic), so this
//! rule, evaluated on every rank, places each task identically with no coordination:
//!
//! - a chunk held in memory (`from_array`, `persist`) is on every rank already, and runs
//!   wherever it is read;
//! - any other task runs on the owner of the input the fewest tasks read (the first of
//!   those), when at most two read it: an elementwise chain stays with its chunk, a
//!   tree-reduction node lands on its left input's rank;
//! - a task with no such input — a generator, a file read, a block multiplied by an
//!   operand many blocks read (Ω of a sketch) — goes to rank `k mod P`, `k` its position
//!   among such tasks: the chunks of an array are dealt block-cyclically over the ranks in
//!   the chunk grid's C order;
//! - the last fold of a reduction over ranks ([`Task::replicated`]: lowering folds each
//!   rank's partials on that rank first, `super::lower::by_rank`), and a task reading
//!   only such folds and chunks every rank holds, runs on every rank that needs it: each
//!   rank's partial is sent to those ranks, which fold the partials in rank order. For a
//!   result every rank receives, that is an all-reduce in one round, and every rank holds
//!   the same bits.
//!
//! The executor (`super::distributed`) runs it over a whole plan; lowering
//! (`super::lower::by_rank`) over the tasks made so far.

use super::plan::{Task, TaskOp};
use crate::stored::Held;

/// Where a task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// On this rank.
    Rank(usize),
    /// On every rank that reads it (a chunk every rank holds).
    Everywhere,
}

/// An input read by at most this many tasks pulls its readers onto its rank (a chunk and
/// its mirror, a packed sketch and its two slices); one read by more is sent to them.
const FOLLOW_READERS: usize = 2;

/// The owner rule (module docs), the same on every rank.
pub(crate) fn placement(plan: &super::plan::Plan, size: usize) -> Vec<Place> {
    let mut readers = vec![0usize; plan.tasks.len()];
    for t in &plan.tasks {
        for &d in &t.deps {
            readers[d] += 1;
        }
    }
    let mut placer = Placer::new(size);
    placer.extend(&plan.tasks, &readers);
    placer.place
}

/// The owner rule applied one task at a time, in plan order. [`placement`] runs it over a
/// whole plan; lowering runs it over the tasks made so far, to group a reduction's
/// partials by the rank they will be on (a task's place can still change when later
/// tasks read its inputs, which only costs traffic, never correctness).
#[derive(Debug, Clone)]
pub(crate) struct Placer {
    size: usize,
    /// Per placed task, where it runs.
    place: Vec<Place>,
    /// Per placed task, the number of tasks dealt round the ranks before it.
    sources_before: Vec<usize>,
    /// Per placed task: computed on every rank that needs it (an all-reduce's fold, or a
    /// task reading only such tasks and chunks every rank holds).
    replicated: Vec<bool>,
    sources: usize,
}

impl Placer {
    /// A placer for `size` ranks.
    pub(crate) fn new(size: usize) -> Placer {
        Placer {
            size: size.max(1),
            place: Vec::new(),
            sources_before: Vec::new(),
            replicated: Vec::new(),
            sources: 0,
        }
    }

    /// Places `tasks[self.len()..]`, `readers[d]` the number of tasks reading task `d`.
    pub(crate) fn extend(&mut self, tasks: &[Task], readers: &[usize]) {
        for t in &tasks[self.place.len().min(tasks.len())..] {
            self.sources_before.push(self.sources);
            let computed_here = t.replicated
                || (!t.deps.is_empty()
                    && t.deps.iter().all(|&d| self.place[d] == Place::Everywhere)
                    && t.deps.iter().any(|&d| self.replicated[d]));
            self.replicated.push(computed_here);
            let p = if computed_here {
                Place::Everywhere
            } else if let TaskOp::Stored(Held::Placed { rank, .. }) = &t.op {
                Place::Rank(*rank)
            } else if matches!(t.op, TaskOp::Stored(_)) && t.deps.is_empty() {
                Place::Everywhere
            } else {
                // Follow the input the fewest tasks read (the first of those): a chain, a
                // tree's partials, a block read by itself and its mirror. An input many
                // tasks read (Ω of a sketch, a broadcast operand) is sent to them instead
                // of pulling them all onto its rank.
                let inherited = t
                    .deps
                    .iter()
                    .filter_map(|&d| match self.place[d] {
                        Place::Rank(r) => Some((readers[d], r)),
                        Place::Everywhere => None,
                    })
                    .min_by_key(|&(n, _)| n)
                    .filter(|&(n, _)| n <= FOLLOW_READERS)
                    .map(|(_, r)| r);
                Place::Rank(inherited.unwrap_or_else(|| {
                    self.sources += 1;
                    (self.sources - 1) % self.size
                }))
            };
            self.place.push(p);
        }
    }

    /// Forgets the places of tasks `len..` (lowering took the newest task back).
    pub(crate) fn truncate(&mut self, len: usize) {
        if len < self.place.len() {
            self.sources = self.sources_before[len];
            self.place.truncate(len);
            self.sources_before.truncate(len);
            self.replicated.truncate(len);
        }
    }

    /// Where the placed tasks run.
    pub(crate) fn places(&self) -> &[Place] {
        &self.place
    }
}
