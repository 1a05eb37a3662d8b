//! The `mpi` scheduler's executor: every rank runs its share of the same plan.
//!
//! Every rank lowers the same graph to the same plan (lowering is deterministic), so the
//! owner rule of [`super::placement`], evaluated on every rank, places each task
//! identically with no coordination.
//!
//! A rank runs its tasks on its own worker pool (the threaded scheduler's dependency
//! counting and early release). When a task finishes, its chunk is sent — host bytes,
//! [`crate::codec`] — once to every other rank that owns a consumer of it, and a result
//! the caller asked for to every rank, so `compute()` returns the same value everywhere.
//! The calling thread receives from any rank while the workers compute: no send waits on
//! a receive posted in another order, so the plan cannot deadlock; a rank that waits
//! `distributed.timeout` with nothing arriving and nothing running reports what it waits
//! for. A failed task is reported to every rank, which all stop with an error naming the
//! rank and the task.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tessera_runtime::cluster::{Cluster, Exchange};
use tessera_runtime::pool::worker_pool;

use super::placement::{placement, Place};
use super::plan::Plan;
use super::slots::Slots;
use super::task::{run_caught, task_kind, Results, RunStats};
use crate::backend::Chunk;
use crate::error::{Error, Result};
use crate::stored::Held;

/// Per task placed [`Place::Everywhere`], the ranks that compute it: those running a task
/// that reads it, and every rank for a requested result. Empty for tasks on one rank.
fn runners(plan: &Plan, place: &[Place], size: usize) -> Vec<Vec<usize>> {
    let n = plan.tasks.len();
    let mut runs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &o in plan.outputs.iter().flatten() {
        if place[o] == Place::Everywhere {
            runs[o] = (0..size).collect();
        }
    }
    for j in (0..n).rev() {
        let on = match place[j] {
            Place::Rank(r) => vec![r],
            Place::Everywhere => runs[j].clone(),
        };
        for &d in &plan.tasks[j].deps {
            if place[d] == Place::Everywhere {
                for &r in &on {
                    if !runs[d].contains(&r) {
                        runs[d].push(r);
                    }
                }
            }
        }
    }
    runs
}

/// What each rank sends and receives for a plan, by the owner rule: `(sent, received)`
/// bytes per rank, from the tasks' projected output sizes.
pub(crate) fn projected_traffic(plan: &Plan, size: usize) -> Vec<(u64, u64)> {
    let place = placement(plan, size);
    let runs = runners(plan, &place, size);
    let routes = routes(plan, &place, &runs, size, Results::Everywhere);
    let mut out = vec![(0u64, 0u64); size];
    for (i, dests) in routes.iter().enumerate() {
        let Place::Rank(from) = place[i] else {
            continue;
        };
        for &to in dests {
            out[from].0 += plan.tasks[i].out_bytes;
            out[to].1 += plan.tasks[i].out_bytes;
        }
    }
    out
}

/// Per task, the ranks other than its owner that its output is sent to: the ranks running
/// its readers (`runs` from [`runners`]), and every rank for a result under
/// [`Results::Everywhere`].
fn routes(
    plan: &Plan,
    place: &[Place],
    runs: &[Vec<usize>],
    size: usize,
    results: Results,
) -> Vec<Vec<usize>> {
    let mut dests: Vec<Vec<usize>> = vec![Vec::new(); plan.tasks.len()];
    for (j, t) in plan.tasks.iter().enumerate() {
        let readers_at: &[usize] = match &place[j] {
            Place::Rank(to) => std::slice::from_ref(to),
            Place::Everywhere => &runs[j],
        };
        for &d in &t.deps {
            if let Place::Rank(from) = place[d] {
                for &to in readers_at {
                    if from != to && !dests[d].contains(&to) {
                        dests[d].push(to);
                    }
                }
            }
        }
    }
    let everywhere = if results == Results::Everywhere {
        plan.outputs.as_slice()
    } else {
        &[]
    };
    for &o in everywhere.iter().flatten() {
        if let Place::Rank(from) = place[o] {
            for to in (0..size).filter(|&r| r != from) {
                if !dests[o].contains(&to) {
                    dests[o].push(to);
                }
            }
        }
    }
    dests
}

struct Rank<'a> {
    plan: &'a Plan,
    ex: &'a Exchange<'a>,
    me: usize,
    /// Where each task runs.
    place: Vec<Place>,
    /// Per task, the other ranks its chunk is sent to.
    routes: Vec<Vec<usize>>,
    /// Tasks this rank runs.
    local: Vec<bool>,
    /// Chunks held, with the consumers on this rank counted.
    slots: Slots,
    missing: Vec<AtomicUsize>,
    /// Local dependents (with multiplicity), per task.
    dependents: Vec<Vec<usize>>,
    /// Local tasks not yet finished, and remote chunks not yet received.
    to_run: AtomicUsize,
    to_receive: AtomicUsize,
    in_flight: AtomicUsize,
    failed: AtomicBool,
    error: OnceLock<Error>,
    progress: &'a tessera_observe::Stage,
}

impl<'a> Rank<'a> {
    fn new(
        plan: &'a Plan,
        ex: &'a Exchange<'a>,
        progress: &'a tessera_observe::Stage,
        results: Results,
    ) -> Rank<'a> {
        let (me, size) = (ex.rank(), ex.size());
        let place = placement(plan, size);
        let runs = runners(plan, &place, size);
        let routes = routes(plan, &place, &runs, size, results);
        let n = plan.tasks.len();
        let mut keep = vec![false; n];
        for &o in plan.outputs.iter().flatten() {
            keep[o] = true;
        }
        // A task runs here when it is placed here, or placed everywhere and needed here
        // (read by a task here, or a result: `runners`).
        let local: Vec<bool> = (0..n)
            .map(|i| match place[i] {
                Place::Rank(r) => r == me,
                Place::Everywhere => runs[i].contains(&me),
            })
            .collect();
        // Outputs placed on one rank are needed here when results go everywhere.
        let mut needed_here: Vec<bool> = (0..n)
            .map(|i| keep[i] && results == Results::Everywhere)
            .collect();
        for (j, t) in plan.tasks.iter().enumerate() {
            if local[j] {
                for &d in &t.deps {
                    needed_here[d] = true;
                }
            }
        }
        let receive = (0..n)
            .filter(|&i| matches!(place[i], Place::Rank(r) if r != me) && needed_here[i])
            .count();
        let mut dependents = vec![Vec::new(); n];
        let mut consumers = vec![0usize; n];
        for (j, t) in plan.tasks.iter().enumerate() {
            if local[j] {
                for &d in &t.deps {
                    dependents[d].push(j);
                    consumers[d] += 1;
                }
            }
        }
        Rank {
            plan,
            ex,
            me,
            routes,
            place,
            to_run: AtomicUsize::new(local.iter().filter(|&&l| l).count()),
            to_receive: AtomicUsize::new(receive),
            local,
            slots: Slots::new(consumers, keep),
            missing: plan
                .tasks
                .iter()
                .map(|t| AtomicUsize::new(t.deps.len()))
                .collect(),
            dependents,
            in_flight: AtomicUsize::new(0),
            failed: AtomicBool::new(false),
            error: OnceLock::new(),
            progress,
        }
    }

    fn fail(&self, e: Error) {
        let _ = self.error.set(e);
        self.failed.store(true, Ordering::Release);
    }

    /// Local tasks with all inputs at hand at the start.
    fn ready(&self) -> Vec<usize> {
        (0..self.plan.tasks.len())
            .filter(|&i| self.local[i] && self.plan.tasks[i].deps.is_empty())
            .collect()
    }

    /// Stores task `i`'s chunk (computed here or received) and returns the local tasks it
    /// made ready.
    fn arrived(&self, i: usize, chunk: Chunk) -> Vec<usize> {
        if self.slots.is_kept(i) || !self.dependents[i].is_empty() {
            self.slots.put(i, chunk);
        }
        self.dependents[i]
            .iter()
            .copied()
            .filter(|&j| self.missing[j].fetch_sub(1, Ordering::AcqRel) == 1)
            .collect()
    }

    /// Runs local task `i`: computes it, sends it where it is needed, releases inputs.
    fn execute(&self, i: usize) -> Vec<usize> {
        if self.failed.load(Ordering::Acquire) {
            return Vec::new();
        }
        let task = &self.plan.tasks[i];
        let Some(deps) = self.slots.inputs(&task.deps) else {
            self.fail(Error::Internal(format!("task {i} ran before its inputs")));
            return Vec::new();
        };
        let started = Instant::now();
        let bytes_in: usize = deps.iter().map(|c| c.nbytes()).sum();
        let what = || {
            format!(
                "task {i} ({} on backend '{}')",
                task_kind(task),
                task.backend.name()
            )
        };
        let out = run_caught(i, task, &deps).and_then(|c| {
            let dests = &self.routes[i];
            if !dests.is_empty() {
                let host = task.backend.to_host(&c)?;
                let bytes = crate::codec::encode(&host)?;
                for &to in dests {
                    self.ex.send(to, i as u64, &bytes)?;
                }
            }
            Ok(c)
        });
        drop(deps);
        let ready = match out {
            Ok(c) => {
                self.progress.task_finished(tessera_observe::TaskTiming {
                    kind: task_kind(task),
                    start: started,
                    bytes_in: bytes_in as u64,
                    bytes_out: c.nbytes() as u64,
                    held_bytes: Some(self.slots.held() as u64),
                });
                self.arrived(i, c)
            }
            Err(e) => {
                self.fail(Error::Distributed {
                    rank: self.me,
                    detail: format!("{} failed: {e}", what()),
                });
                return Vec::new();
            }
        };
        self.slots.release(&task.deps);
        self.to_run.fetch_sub(1, Ordering::AcqRel);
        ready
    }

    /// Decodes a chunk another rank sent.
    fn receive(&self, from: usize, id: u64, bytes: &[u8]) -> Result<Vec<usize>> {
        let i = usize::try_from(id)
            .ok()
            .filter(|&i| i < self.plan.tasks.len() && !self.local[i])
            .ok_or_else(|| Error::Distributed {
                rank: from,
                detail: format!("sent chunk {id}, which rank {} does not expect", self.me),
            })?;
        let host = crate::codec::decode(bytes)?;
        let chunk = self.plan.tasks[i].backend.from_host_owned(host)?;
        self.to_receive.fetch_sub(1, Ordering::AcqRel);
        Ok(self.arrived(i, chunk))
    }

    fn done(&self) -> bool {
        self.to_run.load(Ordering::Acquire) == 0 && self.to_receive.load(Ordering::Acquire) == 0
    }

    /// The remote chunks still awaited, in words (for the watchdog).
    fn awaited(&self) -> String {
        let waiting: Vec<String> = (0..self.plan.tasks.len())
            .filter(|&i| {
                !self.local[i]
                    && self.slots.get(i).is_none()
                    && (self.slots.is_kept(i) || !self.dependents[i].is_empty())
            })
            .take(4)
            .map(|i| match self.place[i] {
                Place::Rank(r) => format!("task {i} from rank {r}"),
                Place::Everywhere => format!("task {i}"),
            })
            .collect();
        waiting.join(", ")
    }
}

/// Runs `plan` on this rank's share, exchanging chunks over `cluster`; returns every
/// output block (on every rank) and the run's figures.
pub(crate) fn run(
    plan: &Plan,
    cluster: &Cluster,
    threads: usize,
    results: Results,
) -> Result<(Vec<Vec<Held>>, RunStats)> {
    let start = Instant::now();
    let before = cluster.traffic();
    let ex = cluster.begin()?;
    let progress = tessera_observe::Stage::start("compute", plan.tasks.len())?;
    let rank = Rank::new(plan, &ex, &progress, results);
    let pool = worker_pool(threads)?;
    let poll = Duration::from_millis(2);
    pool.in_place_scope(|scope| {
        fn go<'s>(scope: &rayon::Scope<'s>, rank: &'s Rank<'s>, i: usize) {
            for j in rank.execute(i) {
                rank.in_flight.fetch_add(1, Ordering::AcqRel);
                scope.spawn(move |s| go(s, rank, j));
            }
            rank.in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        let r = &rank;
        for i in r.ready() {
            r.in_flight.fetch_add(1, Ordering::AcqRel);
            scope.spawn(move |s| go(s, r, i));
        }
        let mut last = Instant::now();
        let mut seen = (usize::MAX, usize::MAX);
        let mut told = false;
        while !r.done() && !r.failed.load(Ordering::Acquire) {
            match ex.recv_data(poll) {
                Ok(Some((from, id, bytes))) => match r.receive(from, id, &bytes) {
                    Ok(ready) => {
                        last = Instant::now();
                        for j in ready {
                            r.in_flight.fetch_add(1, Ordering::AcqRel);
                            scope.spawn(move |s| go(s, r, j));
                        }
                    }
                    Err(e) => r.fail(e),
                },
                Ok(None) => {
                    let now = (r.to_run.load(Ordering::Relaxed), r.to_receive.load(Ordering::Relaxed));
                    if now != seen || r.in_flight.load(Ordering::Acquire) > 0 {
                        seen = now;
                        last = Instant::now();
                    } else if last.elapsed() > ex.timeout() {
                        r.fail(Error::Distributed {
                            rank: r.me,
                            detail: format!(
                                "waited {:.0} s with nothing arriving for {} (distributed.timeout); a rank stopped, hangs, or runs a different program",
                                last.elapsed().as_secs_f64(),
                                r.awaited()
                            ),
                        });
                    }
                }
                // Another rank's failure report: stop, without reporting back.
                Err(e) => {
                    told = true;
                    r.fail(e);
                }
            }
        }
        if let Some(e) = r.error.get() {
            if !told {
                // The receivers name this rank themselves.
                match e {
                    Error::Distributed { detail, .. } => ex.report_failure(detail),
                    e => ex.report_failure(&e.to_string()),
                }
            }
            // A worker blocked sending to a rank that has stopped would hold the job
            // forever: give the workers a moment, then end the job (after reporting).
            let grace = Instant::now();
            while r.in_flight.load(Ordering::Acquire) > 0 {
                if grace.elapsed() > Duration::from_secs(10) {
                    eprintln!("tessera: rank {}: {e}; ending the job", r.me);
                    ex.cluster().abort(1);
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });
    progress.finish();
    if let Some(e) = rank.error.into_inner() {
        return Err(e);
    }
    let outs = plan
        .outputs
        .iter()
        .map(|blocks| {
            blocks
                .iter()
                .map(|&t| {
                    let chunk = rank.slots.get(t);
                    match (results, rank.place[t], chunk) {
                        (Results::Placed, Place::Rank(r), chunk)
                            if r == rank.me || chunk.is_none() =>
                        {
                            Ok(Held::Placed {
                                rank: r,
                                shape: chunk
                                    .as_ref()
                                    .map(|c| c.shape().to_vec())
                                    .unwrap_or_default(),
                                chunk,
                            })
                        }
                        (_, _, Some(c)) => Ok(Held::Resident(c)),
                        (_, _, None) => {
                            Err(Error::Internal(format!("output task {t} never arrived")))
                        }
                    }
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let traffic = cluster.traffic().since(&before);
    let stats = RunStats {
        tasks: rank.local.iter().filter(|&&l| l).count(),
        seconds: start.elapsed().as_secs_f64(),
        lower_seconds: 0.0,
        peak_bytes: rank.slots.peak() as u64,
        sent_bytes: traffic.sent_bytes,
        received_bytes: traffic.received_bytes,
    };
    Ok((outs, stats))
}
