//! The grace hash join: a join whose build side is past the broadcast bound, run within a
//! spill budget while its probe side streams.
//!
//! Before it, a join side past the bound under `memory-limit` shuffled *both* sides: each
//! was computed whole, kept (and spilled) as partitions, cut into buckets (spilled again)
//! and joined a bucket at a time. DuckDB's hash join instead partitions the build side
//! and streams the probe side, and at TPC-H SF 100 under a limit the gap was the queries
//! whose joins outgrow the bound (Q10 2.6x DuckDB, Q2 2.5x, Q9 2.0x, Q4 1.9x). Here:
//!
//! 1. The build side, already computed, is hash partitioned on its keys into buckets of
//!    about a task's bytes each. As many buckets as the budget has room for are kept in
//!    memory and each gets its hash table, built in parallel; the pieces of the others
//!    go straight to spill files, so what is spilled is whole buckets, not a piece of
//!    every bucket.
//! 2. When every bucket is in memory, the probe side streams: each of its partitions is
//!    cut by the same hash and every piece probes its bucket's table, in the probe's own
//!    task — a scan, filter, probe and whatever follows the join run as one task, and
//!    the probe side is never held (a broadcast join split into buckets).
//! 3. Otherwise the probe side is run once, in groups of partitions: the pieces of
//!    buckets in memory are joined at once and the others written to spill files; then
//!    each spilled bucket's build pieces and probe pieces are joined, one bucket a task.
//! 4. A spilled bucket whose build side is still over a task's bytes is split again by
//!    the hash modulo a number prime to the ones before (rows with equal keys stay
//!    together, and the split spreads rows that the earlier moduli put together), up to
//!    [`GRACE_MAX_DEPTH`] times. A part that does not shrink is skewed — one key's rows
//!    cannot be split — and is joined by sorting both sides and merging them (for semi and
//!    anti joins, against the build side's distinct keys, which a skewed key makes few).
//!
//! The join is oriented so that the build side is the right side of the backend's
//! `join`: as written for a right build side (inner, left, semi and anti joins), turned
//! around for a left one (inner and right joins, [`crate::exec::swap_join`]). Every
//! output row then comes from a probe row, so an empty probe piece has nothing to join,
//! and a probe row's matches are all in its bucket: the buckets' joins together are the
//! join. Outer joins, which also keep the build side's unmatched rows, shuffle.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_schema::SchemaRef;

use super::aggregate::{concat_or_empty, load_all, load_whole, shuffle_groups, total_bytes};
use super::stage::{staged, TaskOutput};
use crate::backend::{
    DataFrameBackend, FrameProgram, JoinAlgorithm, JoinSpec, JoinType, Partition, SortKey,
};
use crate::error::{Error, Result};
use crate::exec::partitions::Pipeline;
use crate::exec::spill::{
    piece_bookkeeping, stash, stash_on_disk, try_charge, Charge, Spill, SpillBudget, Stashed,
};
use crate::exec::swap_join::Side;
use crate::exec::tuning::{
    GRACE_MAX_DEPTH, GRACE_MIN_BUCKET_ROWS, GRACE_TABLE_ROW_BYTES, SHUFFLE_FAN,
};

/// A join turned so that its build side is the `right` of the backend's `join`.
#[derive(Debug, Clone)]
pub(crate) struct Oriented {
    /// The join as called: `join(probe, build, &spec)`.
    spec: JoinSpec,
    /// Puts the columns of a turned-around join back in the written join's layout.
    restore: Option<FrameProgram>,
    /// The build side's schema.
    build_schema: SchemaRef,
    /// The written join's output schema.
    out_schema: SchemaRef,
}

impl Oriented {
    /// The join `hash` (of sides with schemas `lschema` and `rschema`) with `side` as its
    /// build side, or `None` where that side cannot be built on: a left side but for inner
    /// and right joins (and those [`crate::exec::swap_join::swapped`] refuses), a right
    /// side of a right or outer join.
    pub(crate) fn new(
        side: Side,
        hash: &JoinSpec,
        lschema: &SchemaRef,
        rschema: &SchemaRef,
    ) -> Option<Oriented> {
        let out_schema = hash.output_schema(lschema, rschema).ok()?;
        let (spec, restore, build_schema) = match side {
            Side::Right
                if matches!(
                    hash.how,
                    JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti
                ) =>
            {
                (hash.clone(), None, rschema.clone())
            }
            Side::Right => return None,
            Side::Left => {
                let turned = crate::exec::swap_join::swapped(hash, lschema, rschema)?;
                (turned.spec, Some(turned.restore), lschema.clone())
            }
        };
        Some(Oriented {
            spec: JoinSpec {
                algorithm: JoinAlgorithm::Hash,
                ..spec
            },
            restore,
            build_schema,
            out_schema,
        })
    }

    /// The same join over a build side of schema `schema` (the build side's key columns
    /// alone, for a semi or anti join).
    pub(crate) fn with_build_schema(self, schema: SchemaRef) -> Oriented {
        Oriented {
            build_schema: schema,
            ..self
        }
    }

    fn build_keys(&self) -> &[String] {
        &self.spec.right_on
    }

    fn probe_keys(&self) -> &[String] {
        &self.spec.left_on
    }

    /// Whether only the existence of a match matters (semi and anti joins).
    fn matches_only(&self) -> bool {
        matches!(self.spec.how, JoinType::Semi | JoinType::Anti)
    }

    /// `probe` joined with `build` (a table `prepare_broadcast` made, or a plain
    /// partition), in the written join's layout.
    fn join(
        &self,
        backend: &Arc<dyn DataFrameBackend>,
        probe: &Partition,
        build: &Partition,
        spec: &JoinSpec,
    ) -> Result<Partition> {
        let joined = backend.join(probe, build, spec)?;
        match &self.restore {
            Some(program) => backend.evaluate(&joined, program),
            None => Ok(joined),
        }
    }
}

/// What a grace join did: for tests and the reasons in its doc.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GraceReport {
    /// Buckets the build side was cut into.
    pub buckets: usize,
    /// Of those, the ones kept in memory with their tables.
    pub resident: usize,
    /// Spilled buckets (or parts of them) split again for being over a task's bytes.
    pub splits: usize,
    /// Parts that did not shrink when split, or still over after [`GRACE_MAX_DEPTH`]
    /// splits, joined by sorting (or by distinct keys) instead.
    pub skewed: usize,
}

/// A bucket of the build side.
enum Bucket {
    /// In memory, with its hash table; the stash keeps its bytes charged to the budget.
    Resident {
        table: Partition,
        _kept: Stashed,
        _table: Charge,
    },
    /// In spill files (and whatever of it stayed in memory), joined after the probe side
    /// has run.
    OnDisk { pieces: Vec<Stashed> },
}

impl TaskOutput for Bucket {
    fn bytes(&self) -> u64 {
        match self {
            Bucket::Resident { _kept, .. } => _kept.nbytes() as u64,
            Bucket::OnDisk { pieces } => total_bytes(pieces) as u64,
        }
    }
}

/// What one group of probe partitions made when some buckets are on disk.
struct Probed {
    /// Its rows joined with the buckets in memory.
    joined: Vec<Stashed>,
    /// Its pieces for the buckets on disk, with their bucket.
    pieces: Vec<(usize, Stashed)>,
}

impl TaskOutput for Probed {
    fn bytes(&self) -> u64 {
        (total_bytes(&self.joined) + self.pieces.iter().map(|(_, p)| p.nbytes()).sum::<usize>())
            as u64
    }
}

/// Counts kept while spilled buckets are joined in parallel.
#[derive(Default)]
struct Counts {
    splits: AtomicUsize,
    skewed: AtomicUsize,
}

/// The grace hash join of `build` (the side `o` builds on, computed and kept) with the
/// streamed `probe` side, within `budget` (see the module doc).
///
/// # Errors
///
/// What the backend's primitives or the spill files report.
pub(crate) fn grace_join(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    build: Vec<Stashed>,
    probe: Pipeline,
    o: Oriented,
) -> Result<(Pipeline, GraceReport)> {
    let spill: Spill = Some(budget.clone());
    let bytes = total_bytes(&build) as u64;
    // Buckets of two thirds of a task: hashing makes some larger than others, and a
    // spilled bucket over a task is split again. One bucket when the side is that small:
    // cutting every probe partition into a piece per bucket and concatenating their joins
    // cost TPC-H Q8 at scale 10 under 1 GiB 2.6 s against 2.0 s for its 91 MB of orders
    // in one table. No more buckets than that either: each probe partition is cut
    // into a piece per bucket, and the pieces' joins are concatenated — at 256 buckets
    // (cache-sized tables, as the shuffle makes) TPC-H Q9 at scale 10 under 1 GiB took
    // 350 s at a 7.2 GB peak, against 7.4 s at 945 MB, string views taken into 256 pieces
    // each keeping the partition's buffers. Never buckets of fewer than
    // GRACE_MIN_BUCKET_ROWS rows: `nbytes` is an estimate, and a partition whose arrays
    // share the buffers of a larger one (views, slices) counts those buffers whole.
    let rows = build.iter().map(Stashed::num_rows).sum::<usize>();
    let n = budget
        .buckets(bytes.saturating_mul(3) / 2, 1)
        .min(rows.div_ceil(GRACE_MIN_BUCKET_ROWS).max(1));
    // The room the buckets may take: what the budget has left, and what the build side's
    // own stashes hold (released as they are cut). A bucket's share is its bytes and the
    // bookkeeping of its pieces (one per group of build parts), with a quarter to spare
    // for uneven hashing and its table.
    let room = budget
        .room()
        .saturating_add(build.iter().map(Stashed::charged).sum());
    let groups = shuffle_groups(
        &build.iter().map(|p| p.nbytes() as u64).collect::<Vec<_>>(),
        budget.task_bytes,
    )
    .len() as u64;
    let bookkeeping = piece_bookkeeping(o.build_schema.fields().len()).saturating_mul(groups);
    let share = (bytes / n as u64)
        .saturating_add(bookkeeping)
        .saturating_add((rows / n) as u64 * GRACE_TABLE_ROW_BYTES)
        .saturating_mul(5)
        / 4;
    let in_memory = usize::try_from(room / share.max(1))
        .unwrap_or(usize::MAX)
        .min(n);
    let cut = cut_build(backend, budget, build, o.build_keys(), n, in_memory)?;
    let buckets = {
        let (b, o, spill) = (backend.clone(), &o, &spill);
        let cut: Vec<Mutex<Vec<Stashed>>> = cut.into_iter().map(Mutex::new).collect();
        staged("join: build buckets", n, move |j| {
            let pieces = std::mem::take(&mut *lock(&cut[j])?);
            if j >= in_memory || !pieces.iter().all(Stashed::is_resident) {
                return Ok(Bucket::OnDisk { pieces });
            }
            let parts = load_all(&b, &pieces)?;
            drop(pieces);
            let whole = concat_or_empty(&b, &parts, &o.build_schema)?;
            drop(parts);
            let kept = stash(spill, &b, whole)?;
            if !kept.is_resident() {
                return Ok(Bucket::OnDisk { pieces: vec![kept] });
            }
            let table = b.prepare_broadcast(&kept.load(&b)?, &o.spec)?;
            // The table's own bytes (what `nbytes` counts past the batch) are charged too;
            // where they do not fit, the bucket goes to disk after all.
            let extra = table.nbytes().saturating_sub(kept.nbytes()) as u64;
            match try_charge(budget, extra) {
                Some(charge) => Ok(Bucket::Resident {
                    table,
                    _kept: kept,
                    _table: charge,
                }),
                None => {
                    drop(table);
                    let part = kept.load(&b)?;
                    drop(kept);
                    Ok(Bucket::OnDisk {
                        pieces: vec![stash_on_disk(budget, &b, part)?],
                    })
                }
            }
        })?
    };
    let mut report = GraceReport {
        buckets: n,
        resident: buckets
            .iter()
            .filter(|b| matches!(b, Bucket::Resident { .. }))
            .count(),
        ..GraceReport::default()
    };
    let o = Arc::new(o);
    if report.resident == n {
        return Ok((streamed(backend, buckets, probe, o), report));
    }
    let counts = Counts::default();
    let parts = probe_and_spill(backend, budget, &buckets, probe, &o, &counts)?;
    report.splits = counts.splits.load(Ordering::Relaxed);
    report.skewed = counts.skewed.load(Ordering::Relaxed);
    Ok((Pipeline::stashed(parts, backend), report))
}

/// The probe side streamed through buckets all in memory: each partition cut by the keys'
/// hash and every piece joined with its bucket's table, in the partition's task.
fn streamed(
    backend: &Arc<dyn DataFrameBackend>,
    buckets: Vec<Bucket>,
    probe: Pipeline,
    o: Arc<Oriented>,
) -> Pipeline {
    // The buckets, with their charges, live as long as the pipeline.
    let tables: Vec<Partition> = buckets
        .iter()
        .filter_map(|b| match b {
            Bucket::Resident { table, .. } => Some(table.clone()),
            Bucket::OnDisk { .. } => None,
        })
        .collect();
    let (b, task) = (backend.clone(), probe.task);
    Pipeline {
        n: probe.n,
        task: Arc::new(move |i| {
            let _held = &buckets;
            let part = task(i)?;
            if let [table] = tables.as_slice() {
                return o.join(&b, &part, table, &o.spec);
            }
            let pieces = b.hash_partition(&part, o.probe_keys(), tables.len())?;
            drop(part);
            let joined = pieces
                .iter()
                .zip(&tables)
                .filter(|(piece, _)| piece.num_rows() > 0)
                .map(|(piece, table)| o.join(&b, piece, table, &o.spec))
                .collect::<Result<Vec<_>>>()?;
            concat_or_empty(&b, &joined, &o.out_schema)
        }),
    }
}

/// The probe side run once in groups of partitions, joined with the buckets in memory and
/// written out for the others; then each bucket on disk joined with its probe pieces.
fn probe_and_spill(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    buckets: &[Bucket],
    probe: Pipeline,
    o: &Oriented,
    counts: &Counts,
) -> Result<Vec<Stashed>> {
    let spill: Spill = Some(budget.clone());
    let n = buckets.len();
    // Consecutive probe partitions share a group (at most SHUFFLE_FAN groups), and a group
    // writes its pieces out whenever they pass half a task's bytes: a spilled bucket gets
    // a few large pieces, not one per partition.
    let per = probe.n.div_ceil(SHUFFLE_FAN).max(1);
    let groups = probe.n.div_ceil(per);
    let flush_at = (budget.task_bytes / 2).max(1) as usize;
    let task = probe.task;
    let probed = {
        let (b, spill) = (backend.clone(), &spill);
        staged("join: probe", groups, move |g| {
            let mut out = Probed {
                joined: Vec::new(),
                pieces: Vec::new(),
            };
            let mut pending: Vec<Vec<Partition>> = vec![Vec::new(); n];
            let mut pending_bytes = 0usize;
            let end = ((g + 1) * per).min(probe.n);
            for i in g * per..end {
                let part = task(i)?;
                let pieces = if n == 1 {
                    vec![part]
                } else {
                    b.hash_partition(&part, o.probe_keys(), n)?
                };
                let mut joined = Vec::new();
                for (j, piece) in pieces.into_iter().enumerate() {
                    if piece.num_rows() == 0 {
                        continue;
                    }
                    match &buckets[j] {
                        Bucket::Resident { table, .. } => {
                            joined.push(o.join(&b, &piece, table, &o.spec)?)
                        }
                        Bucket::OnDisk { .. } => {
                            pending_bytes += piece.nbytes();
                            pending[j].push(piece);
                        }
                    }
                }
                if !joined.is_empty() {
                    let part = concat_or_empty(&b, &joined, &o.out_schema)?;
                    drop(joined);
                    out.joined.push(stash(spill, &b, part)?);
                }
                if pending_bytes >= flush_at || i + 1 == end {
                    for (j, list) in pending.iter_mut().enumerate() {
                        if list.is_empty() {
                            continue;
                        }
                        let schema = list[0].schema();
                        let part = concat_or_empty(&b, &std::mem::take(list), &schema)?;
                        out.pieces.push((j, stash_on_disk(budget, &b, part)?));
                    }
                    pending_bytes = 0;
                }
            }
            Ok(out)
        })?
    };
    let mut parts = Vec::new();
    let mut probe_pieces: Vec<Vec<Stashed>> = (0..n).map(|_| Vec::new()).collect();
    for p in probed {
        parts.extend(p.joined);
        for (j, piece) in p.pieces {
            probe_pieces[j].push(piece);
        }
    }
    let on_disk: Vec<usize> = (0..n)
        .filter(|&j| matches!(buckets[j], Bucket::OnDisk { .. }))
        .collect();
    let probe_pieces: Vec<Mutex<Vec<Stashed>>> = probe_pieces.into_iter().map(Mutex::new).collect();
    let joined = {
        let b = backend.clone();
        staged("join: spilled buckets", on_disk.len(), move |k| {
            let j = on_disk[k];
            let Bucket::OnDisk { pieces } = &buckets[j] else {
                return Err(Error::Internal("grace join: a bucket in memory".into()));
            };
            let probe = std::mem::take(&mut *lock(&probe_pieces[j])?);
            join_bucket(&b, budget, o, pieces, &probe, &[n], 0, counts)
        })?
    };
    parts.extend(joined.into_iter().flatten());
    if parts.is_empty() {
        let empty = concat_or_empty(backend, &[], &o.out_schema)?;
        parts.push(stash(&spill, backend, empty)?);
    }
    Ok(parts)
}

/// The build parts cut into `n` buckets by the hash of `keys`, in groups of consecutive
/// parts (each part's stash dropped once it is cut): bucket `j`'s pieces, in part order,
/// kept within the budget for `j < in_memory` and written to spill files for the others.
fn cut_build(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    build: Vec<Stashed>,
    keys: &[String],
    n: usize,
    in_memory: usize,
) -> Result<Vec<Vec<Stashed>>> {
    let spill: Spill = Some(budget.clone());
    let sizes: Vec<u64> = build.iter().map(|p| p.nbytes() as u64).collect();
    let groups = shuffle_groups(&sizes, budget.task_bytes);
    let build: Vec<Mutex<Option<Stashed>>> =
        build.into_iter().map(|p| Mutex::new(Some(p))).collect();
    let cut = staged("join: partition build", groups.len(), |g| {
        let mut loaded = Vec::new();
        for slot in &build[groups[g].clone()] {
            let stashed = lock(slot)?
                .take()
                .ok_or_else(|| Error::Internal("grace join: a build part cut twice".into()))?;
            loaded.push(stashed.load(backend)?);
        }
        let part = match loaded.len() {
            1 => loaded
                .pop()
                .ok_or_else(|| Error::Internal("no part".into()))?,
            _ => backend.concat(&loaded)?,
        };
        drop(loaded);
        let pieces = if n == 1 {
            vec![part]
        } else {
            backend.hash_partition(&part, keys, n)?
        };
        pieces
            .into_iter()
            .enumerate()
            .map(|(j, piece)| {
                if j < in_memory {
                    stash(&spill, backend, piece)
                } else {
                    stash_on_disk(budget, backend, piece)
                }
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let mut buckets: Vec<Vec<Stashed>> = (0..n).map(|_| Vec::with_capacity(cut.len())).collect();
    for group in cut {
        for (j, piece) in group.into_iter().enumerate() {
            buckets[j].push(piece);
        }
    }
    Ok(buckets)
}

/// A spilled bucket (or part of one, `depth` splits down, cut by the hash modulo each of
/// `moduli`) joined: directly when its build side fits a task, else split again, and by
/// sorting where splitting does not shrink it.
#[allow(clippy::too_many_arguments)]
fn join_bucket(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    o: &Oriented,
    build: &[Stashed],
    probe: &[Stashed],
    moduli: &[usize],
    depth: usize,
    counts: &Counts,
) -> Result<Vec<Stashed>> {
    if probe.iter().all(|p| p.num_rows() == 0) {
        return Ok(Vec::new());
    }
    let bytes = total_bytes(build) as u64;
    let rows: usize = build.iter().map(Stashed::num_rows).sum();
    if bytes <= budget.task_bytes || rows <= GRACE_MIN_BUCKET_ROWS {
        return hashed(backend, budget, o, build, probe);
    }
    if depth >= GRACE_MAX_DEPTH {
        counts.skewed.fetch_add(1, Ordering::Relaxed);
        return sorted(backend, budget, o, build, probe);
    }
    counts.splits.fetch_add(1, Ordering::Relaxed);
    let m = split_factor(bytes, budget.task_bytes, rows, moduli);
    let sub_build = split(backend, budget, build, o.build_keys(), m)?;
    let sub_probe = split(backend, budget, probe, o.probe_keys(), m)?;
    let mut moduli = moduli.to_vec();
    moduli.push(m);
    let mut out = Vec::new();
    for (b, p) in sub_build.iter().zip(&sub_probe) {
        let sub = total_bytes(b) as u64;
        let sub_rows: usize = b.iter().map(Stashed::num_rows).sum();
        // Still over a task, and at least three quarters of what was split: one key (or a
        // few) holds the bucket, and another split would not part them.
        if sub > budget.task_bytes
            && sub_rows > GRACE_MIN_BUCKET_ROWS
            && sub.saturating_mul(4) >= bytes.saturating_mul(3)
        {
            counts.skewed.fetch_add(1, Ordering::Relaxed);
            out.extend(sorted(backend, budget, o, b, p)?);
        } else {
            out.extend(join_bucket(
                backend,
                budget,
                o,
                b,
                p,
                &moduli,
                depth + 1,
                counts,
            )?);
        }
    }
    Ok(out)
}

/// The number of parts to split `bytes` (of `rows` rows) into so that each fits
/// `task_bytes`, at least 2, at most 64 and about [`GRACE_MIN_BUCKET_ROWS`] rows each at
/// least, and prime to every modulus the rows were already cut by: with a hash taken
/// modulo each, a common factor would leave parts empty.
fn split_factor(bytes: u64, task_bytes: u64, rows: usize, moduli: &[usize]) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let want = usize::try_from(bytes.div_ceil(task_bytes.max(1)))
        .unwrap_or(usize::MAX)
        .saturating_add(1)
        .min(rows.div_ceil(GRACE_MIN_BUCKET_ROWS))
        .clamp(2, 64);
    (want..)
        .find(|&m| moduli.iter().all(|&k| gcd(m, k) == 1))
        .unwrap_or(want)
}

/// `parts` cut into `m` by the hash of `keys`: part `k`'s pieces, kept within the budget.
fn split(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    parts: &[Stashed],
    keys: &[String],
    m: usize,
) -> Result<Vec<Vec<Stashed>>> {
    let spill: Spill = Some(budget.clone());
    let mut out: Vec<Vec<Stashed>> = (0..m).map(|_| Vec::new()).collect();
    for p in parts.iter().filter(|p| p.num_rows() > 0) {
        let pieces = backend.hash_partition(&p.load(backend)?, keys, m)?;
        for (k, piece) in pieces.into_iter().enumerate() {
            if piece.num_rows() > 0 {
                out[k].push(stash(&spill, backend, piece)?);
            }
        }
    }
    Ok(out)
}

/// The build pieces' table, built once, probed by every probe piece.
fn hashed(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    o: &Oriented,
    build: &[Stashed],
    probe: &[Stashed],
) -> Result<Vec<Stashed>> {
    let whole = load_whole(backend, build, &o.build_schema)?;
    let table = backend.prepare_broadcast(&whole, &o.spec)?;
    drop(whole);
    probe_each(backend, budget, probe, |p| {
        o.join(backend, p, &table, &o.spec)
    })
}

/// A skewed part: for semi and anti joins, the probe pieces joined with the build side's
/// distinct keys (as many as its keys, however many rows repeat them); otherwise both
/// sides sorted on the keys and merged, where the backend merges (a hash join of the
/// part where it does not).
fn sorted(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    o: &Oriented,
    build: &[Stashed],
    probe: &[Stashed],
) -> Result<Vec<Stashed>> {
    let keys = o.build_keys();
    if o.matches_only() {
        let distinct = build
            .iter()
            .filter(|p| p.num_rows() > 0)
            .map(|p| backend.aggregate_partial(&p.load(backend)?, keys, &[]))
            .collect::<Result<Vec<_>>>()?;
        let spill: Spill = Some(budget.clone());
        let distinct = match distinct.len() {
            0 => return hashed(backend, budget, o, &[], probe),
            1 => distinct,
            _ => vec![backend.aggregate_combine(&distinct, keys, &[])?],
        }
        .into_iter()
        .map(|p| stash(&spill, backend, p))
        .collect::<Result<Vec<_>>>()?;
        // The keys alone: a semi or anti join's output is the probe side's columns.
        let keys_only = o
            .clone()
            .with_build_schema(distinct[0].load(backend)?.schema());
        return hashed(backend, budget, &keys_only, &distinct, probe);
    }
    if backend
        .capabilities()
        .missing_join_algorithms
        .contains(&JoinAlgorithm::SortedMerge)
    {
        return hashed(backend, budget, o, build, probe);
    }
    let ascending = |keys: &[String]| -> Vec<SortKey> {
        keys.iter()
            .map(|k| SortKey {
                column: k.clone(),
                descending: false,
            })
            .collect()
    };
    let whole = load_whole(backend, build, &o.build_schema)?;
    let whole = backend.sort(&whole, &ascending(keys))?;
    let merge = JoinSpec {
        algorithm: JoinAlgorithm::SortedMerge,
        ..o.spec.clone()
    };
    let by = ascending(o.probe_keys());
    probe_each(backend, budget, probe, |p| {
        o.join(backend, &backend.sort(p, &by)?, &whole, &merge)
    })
}

/// `join` of every non-empty probe piece, each kept within the budget.
fn probe_each(
    backend: &Arc<dyn DataFrameBackend>,
    budget: &Arc<SpillBudget>,
    probe: &[Stashed],
    join: impl Fn(&Partition) -> Result<Partition>,
) -> Result<Vec<Stashed>> {
    let spill: Spill = Some(budget.clone());
    probe
        .iter()
        .filter(|p| p.num_rows() > 0)
        .map(|p| stash(&spill, backend, join(&p.load(backend)?)?))
        .collect()
}

/// Locks `m`, naming a task that panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>> {
    m.lock()
        .map_err(|_| Error::Internal("grace join: a task panicked holding its bucket".into()))
}

#[cfg(test)]
mod tests;
