//! The bytes each rank sends and receives for a dataframe plan under `scheduler = "mpi"`,
//! projected before it runs (what `explain()` prints).
//!
//! The projection follows the distributed engine ([`crate::exec::ranks`]) node by node:
//! partition `i` of every stage is on rank `i mod P`; scans, fused programs, user
//! functions and concatenations move nothing; a gather (a tree groupby's partial states, a
//! broadcast join's small side, the inputs of nodes without a distributed algorithm, and
//! the result `compute()` returns on every rank) sends each rank's partitions to the
//! `P - 1` others; a shuffle (a shuffle groupby's states, both sides of a shuffle join, a
//! sort's ranges) sends each partition's pieces to the owners of their buckets, assuming
//! keys spread evenly over the buckets.
//!
//! Sizes are estimates by the plan's memory model ([`Node::memory`]): partitions in memory
//! count their bytes; a scan's partitions the bytes the format reports, scaled by the
//! columns read; a program's output scales with its columns and keeps every row (a
//! filter's selectivity is unknown, so that is an upper bound); a groupby's partial states
//! are as large as their input with keys (an upper bound) and one row without; a join's
//! output is as large as its two sides. Strategies are chosen as the run chooses them, from
//! these sizes: a groupby shuffles when its states would be over
//! [`SHUFFLE_ROWS`](crate::exec::SHUFFLE_ROWS) rows, a join broadcasts a side under
//! [`RANK_BROADCAST_BYTES`](crate::exec::tuning::RANK_BROADCAST_BYTES). Where the run measures sizes
//! that differ, it may choose otherwise; the real figures are in `RunStats`-like counters
//! (`Cluster::traffic`) after a run.

use std::sync::Arc;

use arrow_schema::SchemaRef;

use crate::backend::DataFrameBackend;
use crate::exec::join::{broadcast_side, sorted_on_keys, Side};
use crate::exec::tuning::{RANK_BROADCAST_BYTES, SHUFFLE_ROWS};
use crate::plan::{GroupStrategy, JoinStrategy, Node};

/// A plan's projected traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Projection {
    /// Per rank, `(sent, received)` bytes.
    pub per_rank: Vec<(u64, u64)>,
    /// Each exchange in words, in the order the plan runs them.
    pub steps: Vec<String>,
}

/// Projects the traffic of running the optimized plan `node` on `size` ranks and gathering
/// its result on every rank.
pub(crate) fn project(node: &Node, backend: &Arc<dyn DataFrameBackend>, size: usize) -> Projection {
    let mut p = Projector {
        size: size.max(1),
        backend: Some(backend),
        per_rank: vec![(0, 0); size.max(1)],
        steps: Vec::new(),
    };
    let out = p.stage(node);
    p.gather("the result, gathered by every rank", &out);
    Projection {
        per_rank: p.per_rank,
        steps: p.steps,
    }
}

struct Projector<'a> {
    size: usize,
    /// The frame's backend (whether it merges sorted sides); none in unit tests.
    backend: Option<&'a Arc<dyn DataFrameBackend>>,
    per_rank: Vec<(u64, u64)>,
    steps: Vec<String>,
}

/// Bytes of a row of `schema`: fixed widths as they are, 16 for anything variable.
fn row_bytes(schema: &SchemaRef) -> u64 {
    schema
        .fields()
        .iter()
        .map(|f| f.data_type().primitive_width().unwrap_or(16) as u64)
        .sum::<u64>()
        .max(1)
}

fn total(sizes: &[u64]) -> u64 {
    sizes.iter().fold(0u64, |a, &b| a.saturating_add(b))
}

/// `sizes` scaled by `to / from` (columns kept of columns in).
fn scaled(sizes: &[u64], to: usize, from: usize) -> Vec<u64> {
    let from = from.max(1) as u64;
    sizes
        .iter()
        .map(|&s| s.saturating_mul(to as u64) / from)
        .collect()
}

impl Projector<'_> {
    /// Estimated bytes of each partition `node` produces, after recording the exchanges
    /// the node and its inputs make.
    fn stage(&mut self, node: &Node) -> Vec<u64> {
        match node {
            Node::Partitions { parts, .. } => parts.iter().map(|p| p.nbytes() as u64).collect(),
            Node::Scan { .. } => node.scan_partition_bytes(),
            Node::Map { input, schema, .. } => {
                let i = self.stage(input);
                scaled(&i, schema.fields().len(), input.schema().fields().len())
            }
            Node::MapPartitions { input, .. } => self.stage(input),
            Node::Concat { inputs, .. } => {
                // Each input padded with empty partitions to a multiple of P, as the
                // engine keeps every partition on its rank.
                let mut out = Vec::new();
                for (k, input) in inputs.iter().enumerate() {
                    out.extend(self.stage(input));
                    if k + 1 < inputs.len() {
                        while out.len() % self.size != 0 {
                            out.push(0);
                        }
                    }
                }
                out
            }
            Node::Aggregate {
                input,
                keys,
                strategy,
                schema,
                ..
            } => {
                let i = self.stage(input);
                let states: Vec<u64> = if keys.is_empty() {
                    i.iter().map(|_| row_bytes(schema)).collect()
                } else {
                    i.clone()
                };
                let rows = total(&states) / row_bytes(&input.schema());
                let tree = keys.is_empty()
                    || states.len() <= 1
                    || match strategy {
                        Some(s) => *s == GroupStrategy::Tree,
                        None => rows <= SHUFFLE_ROWS as u64,
                    };
                let what = format!("groupby [{}]", keys.join(", "));
                if tree {
                    self.gather(&format!("{what}: partial states (tree)"), &states);
                    vec![total(&states).min(i.iter().copied().max().unwrap_or(0))]
                } else {
                    let n = states.len();
                    self.shuffle(&format!("{what}: partial states (shuffle)"), &states, n);
                    vec![total(&states) / n as u64; n]
                }
            }
            Node::Join {
                left,
                right,
                spec,
                strategy,
                ..
            } => {
                let (l, r) = (self.stage(left), self.stage(right));
                let (lt, rt) = (total(&l), total(&r));
                let on = spec.left_on.join(", ");
                let merge = self
                    .backend
                    .is_some_and(|b| sorted_on_keys(b, left, right, spec))
                    && matches!(strategy, JoinStrategy::Auto | JoinStrategy::SortedMerge);
                let side = broadcast_side(
                    spec,
                    *strategy,
                    usize::try_from(lt).unwrap_or(usize::MAX),
                    usize::try_from(rt).unwrap_or(usize::MAX),
                    RANK_BROADCAST_BYTES,
                );
                if merge {
                    self.gather(&format!("join on [{on}]: left side (sorted merge)"), &l);
                    self.gather(&format!("join on [{on}]: right side (sorted merge)"), &r);
                    let n = l.len().max(1);
                    return vec![lt.saturating_add(rt) / n as u64; n];
                }
                match side {
                    Some(Side::Right) => {
                        self.gather(&format!("join on [{on}]: right side (broadcast)"), &r);
                        l.iter().map(|&b| b.saturating_add(rt)).collect()
                    }
                    Some(Side::Left) => {
                        self.gather(&format!("join on [{on}]: left side (broadcast)"), &l);
                        r.iter().map(|&b| b.saturating_add(lt)).collect()
                    }
                    None => {
                        let n = l.len().max(r.len()).max(1);
                        self.shuffle(&format!("join on [{on}]: left side (shuffle)"), &l, n);
                        self.shuffle(&format!("join on [{on}]: right side (shuffle)"), &r, n);
                        vec![lt.saturating_add(rt) / n as u64; n]
                    }
                }
            }
            Node::Sort { input, .. } => {
                let i = self.stage(input);
                let n = i.len();
                if n <= 1 {
                    self.gather("sort: the input (one partition)", &i);
                    return vec![total(&i)];
                }
                self.shuffle("sort: ranges (sample sort)", &i, n);
                vec![total(&i) / n as u64; n]
            }
            Node::Repartition { input, n } => {
                let i = self.stage(input);
                self.gather("repartition: the input (no distributed algorithm)", &i);
                vec![total(&i) / (*n).max(1) as u64; (*n).max(1)]
            }
            Node::Window { input, .. } => {
                let i = self.stage(input);
                self.gather("window: the input (no distributed algorithm)", &i);
                i
            }
            Node::Head { input, .. } | Node::Tail { input, .. } | Node::TopK { input, .. } => {
                let i = self.stage(input);
                self.gather("head/tail/top-k: the input (no distributed algorithm)", &i);
                vec![i.iter().copied().max().unwrap_or(0)]
            }
        }
    }

    /// Every partition sent by its owner to the `P - 1` other ranks.
    fn gather(&mut self, what: &str, sizes: &[u64]) {
        let p = self.size;
        if p == 1 {
            return;
        }
        let mut own = vec![0u64; p];
        for (i, &s) in sizes.iter().enumerate() {
            own[i % p] = own[i % p].saturating_add(s);
        }
        let all = total(&own);
        for (r, &o) in own.iter().enumerate() {
            self.per_rank[r].0 = self.per_rank[r]
                .0
                .saturating_add(o.saturating_mul(p as u64 - 1));
            self.per_rank[r].1 = self.per_rank[r].1.saturating_add(all - o);
        }
        self.steps.push(format!(
            "{what}: all-gather, {} from every rank to every other",
            tessera_core::chunks::format_bytes(all)
        ));
    }

    /// Every partition split evenly into `n` buckets, bucket `j` sent to rank `j mod P`.
    fn shuffle(&mut self, what: &str, sizes: &[u64], n: usize) {
        let p = self.size;
        if p == 1 || n == 0 {
            return;
        }
        let owned: Vec<u64> = (0..p)
            .map(|r| (0..n).filter(|j| j % p == r).count() as u64)
            .collect();
        let n = n as u64;
        let mut moved = 0u64;
        for (i, &s) in sizes.iter().enumerate() {
            let from = i % p;
            for (to, &k) in owned.iter().enumerate() {
                if to != from {
                    let b = s.saturating_mul(k) / n;
                    self.per_rank[from].0 = self.per_rank[from].0.saturating_add(b);
                    self.per_rank[to].1 = self.per_rank[to].1.saturating_add(b);
                    moved = moved.saturating_add(b);
                }
            }
        }
        self.steps.push(format!(
            "{what}: all-to-all, {} changes rank",
            tessera_core::chunks::format_bytes(moved)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn projector(size: usize) -> Projector<'static> {
        Projector {
            size,
            backend: None,
            per_rank: vec![(0, 0); size],
            steps: Vec::new(),
        }
    }

    #[test]
    fn a_gather_sends_each_ranks_share_to_every_other_rank() {
        let mut p = projector(3);
        // Partitions 0 and 3 on rank 0, 1 on rank 1, 2 on rank 2.
        p.gather("x", &[10, 20, 30, 40]);
        assert_eq!(p.per_rank, vec![(100, 50), (40, 80), (60, 70)]);
        let sent: u64 = p.per_rank.iter().map(|r| r.0).sum();
        let received: u64 = p.per_rank.iter().map(|r| r.1).sum();
        assert_eq!(sent, received);
    }

    #[test]
    fn a_shuffle_moves_the_pieces_owned_elsewhere() {
        let mut p = projector(2);
        // 4 buckets: 0 and 2 on rank 0, 1 and 3 on rank 1; each partition sends half.
        p.shuffle("x", &[400, 800, 400, 800], 4);
        assert_eq!(p.per_rank, vec![(400, 800), (800, 400)]);
        assert!(p.steps[0].contains("changes rank"), "{:?}", p.steps);
    }

    #[test]
    fn one_rank_moves_nothing() {
        let mut p = projector(1);
        p.gather("x", &[5, 6]);
        p.shuffle("y", &[5, 6], 2);
        assert_eq!(p.per_rank, vec![(0, 0)]);
        assert!(p.steps.is_empty());
    }
}
