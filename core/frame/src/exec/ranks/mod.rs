//! Running a dataframe plan over the ranks of a job (`scheduler = "mpi"`).
//!
//! Every rank holds the same plan. Partition `i` of every stage belongs to rank
//! `i mod P` (file range `i` of a scan is read there), and blockwise work — scans, fused
//! filters and projections, `map_partitions` — runs where its partition is. Blocking nodes
//! exchange Arrow IPC bytes:
//!
//! - **groupby, tree** (few groups): each rank aggregates its partitions partially, every
//!   rank gathers all partial states (small by construction) and combines them in partition
//!   order — the same tree as one process, so the same answer;
//! - **groupby, shuffle** (many groups): each rank hash-partitions its partial states into
//!   one bucket per partition (at most 256) and an all-to-all delivers bucket `j` to its
//!   owner, which combines the pieces in partition order;
//! - **join, broadcast**: the small side is gathered by every rank, its hash table built
//!   once, and joined with the rank's own partitions of the other side;
//! - **join, shuffle**: both sides hash-partitioned into matching buckets, moved by
//!   all-to-all;
//! - **sort**: evenly spaced samples of every partition are gathered, every rank computes
//!   the same range boundaries, partitions are split by them and an all-to-all sends range
//!   `j` to its owner, which sorts it.
//!
//! Whatever the optimizer chose the same way as one process would (the strategy is decided
//! from sizes all ranks gather), so every rank's answer equals the single-process answer
//! row for row. Nodes without a distributed algorithm yet (a sorted merge join, `head`,
//! `tail`, top-k, `repartition`) gather their input on every rank and run as in one
//! process. The result of the plan is gathered by every rank in partition order.

pub(crate) mod on_rank;
pub(crate) mod persist;
pub(crate) mod traffic;
pub(crate) mod write;

use std::sync::Arc;

use arrow_array::RecordBatch;
use tessera_runtime::cluster::Exchange;

use crate::backend::{DataFrameBackend, JoinAlgorithm, JoinSpec, Partition, SortKey};
use crate::error::{Error, Result};
use crate::exec::aggregate::{concat_or_empty, tree_combine};
use crate::exec::join::{broadcast_side, Side};
use crate::exec::partitions::Build;
use crate::exec::tuning::{RANK_BROADCAST_BYTES, SHUFFLE_FAN, SHUFFLE_ROWS};
use crate::plan::{empty_batch, GroupStrategy, JoinStrategy, Node};

/// The rank partition `i` belongs to.
fn owner(i: usize, size: usize) -> usize {
    i % size.max(1)
}

/// The partitions of one stage: `n` in all, this rank's own present.
struct Owned {
    parts: Vec<Option<Partition>>,
}

impl Owned {
    fn n(&self) -> usize {
        self.parts.len()
    }

    /// This rank's partitions with their numbers.
    fn mine(&self) -> impl Iterator<Item = (usize, &Partition)> {
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
    }
}

/// One plan's run on this rank.
struct Run<'a> {
    ex: &'a Exchange<'a>,
    backend: &'a Arc<dyn DataFrameBackend>,
    /// The one-process dispatcher, for the steps each rank runs on its own partitions.
    pipeline: Build,
}

/// Numbered partitions as one message, each an Arrow IPC stream
/// ([`tessera_runtime::cluster::numbered`] gives the layout).
fn encode(backend: &Arc<dyn DataFrameBackend>, parts: &[(usize, &Partition)]) -> Result<Vec<u8>> {
    let items = parts
        .iter()
        .map(|(i, p)| {
            let batch = backend.export_batch(p)?;
            let mut ipc = Vec::new();
            let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut ipc, &batch.schema())
                .map_err(|e| Error::arrow("distributed exchange", e))?;
            w.write(&batch)
                .map_err(|e| Error::arrow("distributed exchange", e))?;
            w.finish()
                .map_err(|e| Error::arrow("distributed exchange", e))?;
            drop(w);
            Ok((*i, ipc))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(tessera_runtime::cluster::numbered::pack(&items))
}

/// The batches of an [`encode`]d message.
fn decode(bytes: &[u8]) -> Result<Vec<(usize, RecordBatch)>> {
    tessera_runtime::cluster::numbered::unpack(bytes)?
        .into_iter()
        .map(|(i, ipc)| {
            let mut reader = arrow_ipc::reader::StreamReader::try_new(ipc, None)
                .map_err(|e| Error::arrow("distributed exchange", e))?;
            let batch = reader
                .next()
                .transpose()
                .map_err(|e| Error::arrow("distributed exchange", e))?
                .ok_or_else(|| Error::Internal(format!("partition {i} arrived without a batch")))?;
            Ok((i, batch))
        })
        .collect()
}

impl Run<'_> {
    fn me(&self) -> usize {
        self.ex.rank()
    }

    fn size(&self) -> usize {
        self.ex.size()
    }

    /// The stage's partitions this rank owns, computed by `f`.
    fn own(&self, n: usize, f: impl Fn(usize) -> Result<Partition> + Send + Sync) -> Result<Owned> {
        let mine: Vec<usize> = (0..n)
            .filter(|&i| owner(i, self.size()) == self.me())
            .collect();
        let computed = tessera_runtime::pool::parallel_map(mine.len(), |k| f(mine[k]))?;
        let mut parts: Vec<Option<Partition>> = (0..n).map(|_| None).collect();
        for (i, p) in mine.into_iter().zip(computed) {
            parts[i] = Some(p);
        }
        Ok(Owned { parts })
    }

    /// Every partition on every rank, in order.
    fn gather(&self, owned: &Owned) -> Result<Vec<Partition>> {
        let mine: Vec<(usize, &Partition)> = owned.mine().collect();
        let mut all: Vec<Option<Partition>> = (0..owned.n()).map(|_| None).collect();
        for share in self.ex.all_gather(encode(self.backend, &mine)?)? {
            for (i, b) in decode(&share)? {
                *all.get_mut(i).ok_or_else(|| {
                    Error::Internal(format!("partition {i} of {} gathered", owned.n()))
                })? = Some(self.backend.import_batch(b)?);
            }
        }
        all.into_iter()
            .enumerate()
            .map(|(i, p)| {
                p.ok_or_else(|| Error::Internal(format!("partition {i} was not gathered")))
            })
            .collect()
    }

    /// Partitions of the same stage present everywhere (computed by every rank, or
    /// persisted over the ranks with stand-ins for the others'), kept where they belong.
    ///
    /// # Errors
    /// A partition this rank should hold is held by another (a frame persisted by a job
    /// of another size).
    fn keep_own(&self, all: Vec<Partition>) -> Result<Owned> {
        let (me, size) = (self.me(), self.size());
        let parts = all
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                if owner(i, size) != me {
                    return Ok(None);
                }
                match crate::exec::ranks::on_rank::held_elsewhere(&p) {
                    Some(e) => Err(e),
                    None => Ok(Some(p)),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Owned { parts })
    }

    /// Buckets for a shuffle of `parts` partitions: a bucket per partition, at most
    /// [`SHUFFLE_FAN`] (each partition is cut into
    /// every bucket: a bucket per partition grows the pieces as its square).
    fn buckets(parts: usize) -> usize {
        parts.min(SHUFFLE_FAN)
    }

    /// Splits this rank's partitions into `n` pieces each with `split`, sends piece `j` to
    /// the owner of `j`, and returns, for each of this rank's `j`, the pieces from every
    /// partition in partition order.
    fn shuffle(
        &self,
        owned: &Owned,
        n: usize,
        split: impl Fn(&Partition) -> Result<Vec<Partition>> + Send + Sync,
    ) -> Result<Vec<(usize, Vec<Partition>)>> {
        let size = self.size();
        let mine: Vec<(usize, &Partition)> = owned.mine().collect();
        let pieces = tessera_runtime::pool::parallel_map(mine.len(), |k| split(mine[k].1))?;
        // Per destination rank: (source partition * n + bucket, piece).
        let mut outgoing: Vec<Vec<(usize, &Partition)>> = vec![Vec::new(); size];
        for ((i, _), ps) in mine.iter().zip(&pieces) {
            for (j, piece) in ps.iter().enumerate() {
                outgoing[owner(j, size)].push((i * n + j, piece));
            }
        }
        let messages = outgoing
            .iter()
            .map(|parts| encode(self.backend, parts))
            .collect::<Result<Vec<_>>>()?;
        let mut arrived: Vec<(usize, RecordBatch)> = Vec::new();
        for share in self.ex.all_to_all(messages)? {
            arrived.extend(decode(&share)?);
        }
        arrived.sort_by_key(|(key, _)| *key);
        let mut buckets: Vec<(usize, Vec<Partition>)> = (0..n)
            .filter(|&j| owner(j, size) == self.me())
            .map(|j| (j, Vec::new()))
            .collect();
        for (key, batch) in arrived {
            let j = key % n.max(1);
            let slot = buckets.iter_mut().find(|(b, _)| *b == j).ok_or_else(|| {
                Error::Internal(format!(
                    "bucket {j} arrived at rank {}, which does not own it",
                    self.me()
                ))
            })?;
            slot.1.push(self.backend.import_batch(batch)?);
        }
        Ok(buckets)
    }

    /// Sums of `values` over every rank (sizes that decide a strategy the same way
    /// everywhere).
    fn total(&self, values: &[u64]) -> Result<Vec<u64>> {
        let mine: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut sum = vec![0u64; values.len()];
        for share in self.ex.all_gather(mine)? {
            for (k, word) in share.chunks_exact(8).enumerate().take(values.len()) {
                sum[k] += u64::from_le_bytes(word.try_into().expect("8 bytes"));
            }
        }
        Ok(sum)
    }

    /// Runs `node`: its partitions, this rank's own present.
    fn eval(&self, node: &Node) -> Result<Owned> {
        let b = self.backend;
        match node {
            Node::Partitions { parts, .. } => self.keep_own(parts.clone()),
            // The one-process scan's tasks, each run where its partition belongs.
            Node::Scan { .. } => {
                let scan = (self.pipeline)(node, b, &None)?;
                self.own(scan.n, |i| (scan.task)(i))
            }
            Node::Map { input, program, .. } => {
                let inner = self.eval(input)?;
                self.map_own(&inner, |p| b.evaluate(p, program))
            }
            Node::Aggregate {
                input,
                keys,
                aggs,
                strategy,
                ..
            } => self.aggregate(input, keys, aggs, *strategy),
            Node::Join {
                left,
                right,
                spec,
                strategy,
                ..
            } => self.join(left, right, spec, *strategy),
            Node::Sort { input, by } => self.sort(input, by),
            // Blockwise: the user's function on each partition where it is.
            Node::MapPartitions {
                input,
                func,
                schema,
            } => {
                let inner = self.eval(input)?;
                let in_schema = input.schema();
                self.map_own(&inner, |p| {
                    let one = Node::MapPartitions {
                        input: Arc::new(Node::Partitions {
                            parts: vec![p.clone()],
                            schema: in_schema.clone(),
                        }),
                        func: func.clone(),
                        schema: schema.clone(),
                    };
                    let pipe = (self.pipeline)(&one, b, &None)?;
                    (pipe.task)(0)
                })
            }
            // The inputs' partitions where they are: each input padded with empty
            // partitions to a multiple of P, so that its partition j (on rank j mod P)
            // stays on its rank in the concat. Nothing moves.
            Node::Concat { inputs, schema } => {
                let (me, size) = (self.me(), self.size());
                let mut parts = Vec::new();
                for (k, input) in inputs.iter().enumerate() {
                    parts.extend(self.eval(input)?.parts);
                    if k + 1 < inputs.len() {
                        while parts.len() % size.max(1) != 0 {
                            let mine = owner(parts.len(), size) == me;
                            parts.push(if mine {
                                Some(b.import_batch(empty_batch(schema))?)
                            } else {
                                None
                            });
                        }
                    }
                }
                Ok(Owned { parts })
            }
            // No distributed algorithm yet: the input gathered by every rank, the node
            // run as in one process.
            Node::Repartition { input, .. }
            | Node::Head { input, .. }
            | Node::Tail { input, .. }
            | Node::Window { input, .. }
            | Node::TopK { input, .. } => {
                let owned = self.eval(input)?;
                let gathered = Arc::new(Node::Partitions {
                    parts: self.gather(&owned)?,
                    schema: input.schema(),
                });
                let mut local = node.clone();
                if let Node::Repartition { input, .. }
                | Node::Head { input, .. }
                | Node::Tail { input, .. }
                | Node::Window { input, .. }
                | Node::TopK { input, .. } = &mut local
                {
                    *input = gathered;
                }
                let all = (self.pipeline)(&local, b, &None)?.materialize()?;
                self.keep_own(all)
            }
        }
    }

    fn map_own(
        &self,
        inner: &Owned,
        f: impl Fn(&Partition) -> Result<Partition> + Send + Sync,
    ) -> Result<Owned> {
        let mine: Vec<(usize, &Partition)> = inner.mine().collect();
        let out = tessera_runtime::pool::parallel_map(mine.len(), |k| f(mine[k].1))?;
        let mut parts: Vec<Option<Partition>> = (0..inner.n()).map(|_| None).collect();
        for ((i, _), p) in mine.into_iter().zip(out) {
            parts[i] = Some(p);
        }
        Ok(Owned { parts })
    }

    fn aggregate(
        &self,
        input: &Node,
        keys: &[String],
        aggs: &[crate::backend::AggSpec],
        strategy: Option<GroupStrategy>,
    ) -> Result<Owned> {
        let b = self.backend;
        // As in one process: a fused program under the groupby goes with the aggregation.
        let mut partials = match input {
            Node::Map {
                input: below,
                program,
                ..
            } => {
                let inner = self.eval(below)?;
                self.map_own(&inner, |p| b.aggregate_partial_of(p, program, keys, aggs))?
            }
            _ => {
                let inner = self.eval(input)?;
                self.map_own(&inner, |p| b.aggregate_partial(p, keys, aggs))?
            }
        };
        if partials.n() == 0 {
            let empty = b.import_batch(empty_batch(&input.schema()))?;
            partials = self.keep_own(vec![b.aggregate_partial(&empty, keys, aggs)?])?;
        }
        let rows: u64 = partials.mine().map(|(_, p)| p.num_rows() as u64).sum();
        let rows = self.total(&[rows])?[0] as usize;
        let strategy = strategy.unwrap_or(if keys.is_empty() || rows <= SHUFFLE_ROWS {
            GroupStrategy::Tree
        } else {
            GroupStrategy::Shuffle
        });
        if keys.is_empty() || strategy == GroupStrategy::Tree || partials.n() == 1 {
            let states = self.gather(&partials)?;
            let state = tree_combine(b, states, keys, aggs)?;
            let out = b.aggregate_finalize(&state, keys, aggs)?;
            return self.keep_own(vec![out]);
        }
        let n = Self::buckets(partials.n());
        let buckets = self.shuffle(&partials, n, |p| b.hash_partition(p, keys, n))?;
        let mut parts: Vec<Option<Partition>> = (0..n).map(|_| None).collect();
        let done = tessera_runtime::pool::parallel_map(buckets.len(), |k| {
            let state = b.aggregate_combine(&buckets[k].1, keys, aggs)?;
            b.aggregate_finalize(&state, keys, aggs)
        })?;
        for ((j, _), p) in buckets.iter().zip(done) {
            parts[*j] = Some(p);
        }
        Ok(Owned { parts })
    }

    fn join(
        &self,
        left_node: &Node,
        right_node: &Node,
        spec: &JoinSpec,
        strategy: JoinStrategy,
    ) -> Result<Owned> {
        let b = self.backend;
        let both_sorted = crate::exec::join::sorted_on_keys(b, left_node, right_node, spec);
        let left = self.eval(left_node)?;
        let right = self.eval(right_node)?;
        let (lschema, rschema) = (left_node.schema(), right_node.schema());
        let bytes = |o: &Owned| o.mine().map(|(_, p)| p.nbytes() as u64).sum::<u64>();
        let sizes = self.total(&[bytes(&left), bytes(&right)])?;
        let (lbytes, rbytes) = (sizes[0] as usize, sizes[1] as usize);
        let hash = JoinSpec {
            algorithm: JoinAlgorithm::Hash,
            ..spec.clone()
        };
        let side = broadcast_side(spec, strategy, lbytes, rbytes, RANK_BROADCAST_BYTES);
        if both_sorted && matches!(strategy, JoinStrategy::Auto | JoinStrategy::SortedMerge) {
            let (l, r) = (self.gather(&left)?, self.gather(&right)?);
            let all = crate::exec::join::sorted_merge_join(b, l, r, spec, &lschema, &rschema)?;
            return self.keep_own(all);
        }
        match side {
            Some(Side::Right) => {
                let r = concat_or_empty(b, &self.gather(&right)?, &rschema)?;
                let r = b.prepare_broadcast(&r, &hash)?;
                return self.map_own(&left, |l| b.join(l, &r, &hash));
            }
            Some(Side::Left) => {
                let l = concat_or_empty(b, &self.gather(&left)?, &lschema)?;
                if let Some(turned) = crate::exec::swap_join::swapped(&hash, &lschema, &rschema) {
                    let l = b.prepare_broadcast(&l, &turned.spec)?;
                    return self.map_own(&right, |r| {
                        b.evaluate(&b.join(r, &l, &turned.spec)?, &turned.restore)
                    });
                }
                return self.map_own(&right, |r| b.join(&l, r, &hash));
            }
            None => {}
        }
        let n = Self::buckets(left.n().max(right.n())).max(1);
        // Both sides get `n` buckets; the owner of bucket j joins the two.
        let lb = self.shuffle(&left, n, |p| b.hash_partition(p, &spec.left_on, n))?;
        let rb = self.shuffle(&right, n, |p| b.hash_partition(p, &spec.right_on, n))?;
        let joined = tessera_runtime::pool::parallel_map(lb.len(), |k| {
            let l = concat_or_empty(b, &lb[k].1, &lschema)?;
            let r = concat_or_empty(b, &rb[k].1, &rschema)?;
            b.join(&l, &r, &hash)
        })?;
        let mut parts: Vec<Option<Partition>> = (0..n).map(|_| None).collect();
        for ((j, _), p) in lb.iter().zip(joined) {
            parts[*j] = Some(p);
        }
        Ok(Owned { parts })
    }

    fn sort(&self, input: &Node, by: &[SortKey]) -> Result<Owned> {
        let b = self.backend;
        let schema = input.schema();
        for k in by {
            if schema.field_with_name(&k.column).is_err() {
                return Err(Error::invalid(
                    "sort_values",
                    format!("no column '{}'", k.column),
                ));
            }
        }
        let parts = self.eval(input)?;
        let n = parts.n();
        if n <= 1 {
            let all = concat_or_empty(b, &self.gather(&parts)?, &schema)?;
            return self.keep_own(vec![b.sort(&all, by)?]);
        }
        // The samples one process would take, gathered in partition order.
        let samples = self.map_own(&parts, |p| crate::exec::sort::sort_sample(b, p, by))?;
        let samples = self.gather(&samples)?;
        let Some(bounds) = crate::exec::sort::range_bounds(b, &samples, by, n)? else {
            return Ok(parts);
        };
        let ranges = self.shuffle(&parts, n, |p| b.range_partition(p, by, &bounds))?;
        let sorted = tessera_runtime::pool::parallel_map(ranges.len(), |k| {
            let all = concat_or_empty(b, &ranges[k].1, &schema)?;
            b.sort(&all, by)
        })?;
        let mut out: Vec<Option<Partition>> = (0..n).map(|_| None).collect();
        for ((j, _), p) in ranges.iter().zip(sorted) {
            out[*j] = Some(p);
        }
        Ok(Owned { parts: out })
    }
}

/// Runs the planned `node` over the ranks of `ex`'s cluster (this rank's part of it),
/// reporting a failure here to every rank.
fn run_here(
    pipeline: Build,
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    ex: &Exchange<'_>,
) -> Result<Owned> {
    Run {
        ex,
        backend,
        pipeline,
    }
    .eval(node)
    .inspect_err(|e| {
        // Another rank's failure was reported by that rank; report only this one's.
        if !matches!(e, Error::Distributed { rank, .. } if *rank != ex.rank()) {
            ex.report_failure(&format!("rank {}: {e}", ex.rank()));
        }
        // A collective this rank left early may still be sending to a rank that stopped:
        // end the job if it stays blocked, as the array executor does.
        ex.cluster()
            .end_failed_plan(&e.to_string(), std::time::Duration::from_secs(10));
    })
}

/// Runs the planned `node` over the ranks of `ex`'s cluster and leaves the result where
/// it was computed: the number of partitions, and this rank's own (partition `i` is on
/// rank `i mod P`) with their numbers. What writers start from: each rank writes its own.
///
/// # Errors
/// As [`partitions`].
pub(crate) fn owned_partitions(
    pipeline: Build,
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    ex: &Exchange<'_>,
) -> Result<(usize, Vec<(usize, Partition)>)> {
    let owned = run_here(pipeline, node, backend, ex)?;
    let n = owned.n();
    let mine = owned
        .parts
        .into_iter()
        .enumerate()
        .filter_map(|(i, p)| p.map(|p| (i, p)))
        .collect();
    Ok((n, mine))
}

/// Every rank's partitions (as [`owned_partitions`] left them) on rank `root`, in order;
/// `None` on the other ranks. A collective.
///
/// # Errors
/// A partition missing or out of range, the exchange's errors.
pub(crate) fn gather_to(
    root: usize,
    n: usize,
    mine: &[(usize, Partition)],
    backend: &Arc<dyn DataFrameBackend>,
    ex: &Exchange<'_>,
) -> Result<Option<Vec<Partition>>> {
    let refs: Vec<(usize, &Partition)> = mine.iter().map(|(i, p)| (*i, p)).collect();
    let mut messages: Vec<Vec<u8>> = vec![Vec::new(); ex.size()];
    messages[root] = encode(backend, &refs)?;
    let shares = ex.all_to_all(messages)?;
    if ex.rank() != root {
        return Ok(None);
    }
    let mut all: Vec<Option<Partition>> = (0..n).map(|_| None).collect();
    for (i, p) in mine {
        all[*i] = Some(p.clone());
    }
    for (from, share) in shares.iter().enumerate() {
        if from == root {
            continue;
        }
        for (i, b) in decode(share)? {
            *all.get_mut(i).ok_or_else(|| {
                Error::Internal(format!("partition {i} of {n} gathered from rank {from}"))
            })? = Some(backend.import_batch(b)?);
        }
    }
    all.into_iter()
        .enumerate()
        .map(|(i, p)| p.ok_or_else(|| Error::Internal(format!("partition {i} was not gathered"))))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// Runs the planned `node` over the ranks of `ex`'s cluster and returns every partition
/// of the result on every rank, in order.
///
/// # Errors
/// Whatever a partition's work fails with, another rank's failure, or a wait over
/// `distributed.timeout`.
pub(crate) fn partitions(
    pipeline: Build,
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    ex: &Exchange<'_>,
) -> Result<Vec<Partition>> {
    let out = run_here(pipeline, node, backend, ex)?;
    Run {
        ex,
        backend,
        pipeline,
    }
    .gather(&out)
}
