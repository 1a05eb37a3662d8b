//! Schedulers: dependency counting, early release, single-threaded or on a rayon pool.
//!
//! Both schedulers count, for every task, the dependencies still missing and the consumers
//! still to come. A task runs once its dependencies are done; a chunk is dropped as soon as
//! its last consumer has run (or kept when it is a requested output). The threaded
//! scheduler spawns ready tasks onto a rayon pool: a finished task spawns the dependents it
//! made ready onto its own worker's stack, so work proceeds depth first and intermediates
//! are freed early (a reduction streams). Before running, the projected peak memory is
//! compared with `memory-limit`: a plan over it whose results may spill (`persist`) runs
//! with as many workers as the limit allows and writes the results that do not fit to
//! `spill-dir` as they finish; any other plan over it is refused before it starts.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::lower::lower;
use super::plan::Plan;
use super::slots::Slots;
use super::task::{run_caught, task_kind, Results, RunStats};
use crate::backend::Chunk;
use crate::chunks::{c_strides, format_bytes, grid_indices};
use crate::config::SchedulerKind;
use crate::error::{Error, Result};
use crate::graph::Array;
use crate::host::{HostArray, HostElement};
use crate::stored::{Held, SpilledChunk};
use tessera_runtime::pool::{worker_pool, worker_threads};

/// Where a plan's results go when they do not fit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Outputs {
    /// They are needed in memory (`compute`, `compute_chunks`): a plan whose results do
    /// not fit is refused.
    InMemory,
    /// They may be spilled (`persist`).
    Spillable,
}

/// Results spilled once those kept reach `budget` bytes.
struct SpillOutputs {
    base: std::path::PathBuf,
    budget: u64,
    resident: std::sync::atomic::AtomicU64,
}

/// How a plan runs within `memory-limit`.
pub(crate) struct Budget {
    /// Workers.
    pub threads: usize,
    /// Results kept in memory at most (bytes) and the spill directory, when the results
    /// do not all fit.
    pub spill: Option<(std::path::PathBuf, u64)>,
}

struct State<'a> {
    plan: &'a Plan,
    progress: &'a tessera_observe::Stage,
    slots: Slots,
    missing: Vec<AtomicUsize>,
    dependents: Vec<Vec<usize>>,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    spill: Option<SpillOutputs>,
    spilled: Vec<Mutex<Option<Arc<SpilledChunk>>>>,
    /// The caller's cancel token (`tessera_runtime::cancel`), read before every task.
    cancel: Option<tessera_runtime::cancel::CancelToken>,
}

impl<'a> State<'a> {
    fn new(
        plan: &'a Plan,
        progress: &'a tessera_observe::Stage,
        spill: Option<(std::path::PathBuf, u64)>,
    ) -> State<'a> {
        let n = plan.tasks.len();
        let mut dependents = vec![Vec::new(); n];
        let mut consumers = vec![0usize; n];
        for (i, t) in plan.tasks.iter().enumerate() {
            for &d in &t.deps {
                dependents[d].push(i);
                consumers[d] += 1;
            }
        }
        let mut keep = vec![false; n];
        for o in plan.outputs.iter().flatten() {
            keep[*o] = true;
        }
        State {
            plan,
            progress,
            slots: Slots::new(consumers, keep),
            missing: plan
                .tasks
                .iter()
                .map(|t| AtomicUsize::new(t.deps.len()))
                .collect(),
            dependents,
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            spill: spill.map(|(base, budget)| SpillOutputs {
                base,
                budget,
                resident: std::sync::atomic::AtomicU64::new(0),
            }),
            spilled: (0..n).map(|_| Mutex::new(None)).collect(),
            cancel: tessera_runtime::cancel::current(),
        }
    }

    /// Runs task `i`; returns the dependents it made ready.
    fn execute(&self, i: usize) -> Vec<usize> {
        if self.failed.load(Ordering::Relaxed) {
            return Vec::new();
        }
        if let Some(Err(e)) = self.cancel.as_ref().map(|t| t.check()) {
            self.fail(e);
            return Vec::new();
        }
        let task = &self.plan.tasks[i];
        let Some(deps) = self.slots.inputs(&task.deps) else {
            self.fail(Error::Internal(format!("task {i} ran before its inputs")));
            return Vec::new();
        };
        let started = Instant::now();
        let bytes_in: usize = deps.iter().map(|c| c.nbytes()).sum();
        let out = run_caught(i, task, &deps);
        drop(deps);
        let out = out.and_then(|c| self.keep_or_spill(i, c, started, bytes_in as u64));
        match out {
            Ok(None) => {}
            Ok(Some(c)) => {
                let bytes = c.nbytes();
                let now = self.slots.put(i, c);
                self.progress.task_finished(tessera_observe::TaskTiming {
                    kind: task_kind(task),
                    start: started,
                    bytes_in: bytes_in as u64,
                    bytes_out: bytes as u64,
                    held_bytes: Some(now as u64),
                });
            }
            Err(e) => {
                self.fail(e);
                return Vec::new();
            }
        }
        self.slots.release(&task.deps);
        self.dependents[i]
            .iter()
            .copied()
            .filter(|&j| self.missing[j].fetch_sub(1, Ordering::AcqRel) == 1)
            .collect()
    }

    /// A finished result that no task reads: kept while the results kept fit the spill
    /// budget, else written to disk (`None`: it was spilled). Anything else is kept.
    /// A spilled result's task is recorded here (its span, then the spill's), the others
    /// by the caller.
    fn keep_or_spill(
        &self,
        i: usize,
        c: Chunk,
        task_start: Instant,
        bytes_in: u64,
    ) -> Result<Option<Chunk>> {
        let Some(spill) = &self.spill else {
            return Ok(Some(c));
        };
        if !self.slots.is_kept(i) || !self.dependents[i].is_empty() {
            return Ok(Some(c));
        }
        let bytes = c.nbytes() as u64;
        let fits = spill
            .resident
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
                (r + bytes <= spill.budget).then_some(r + bytes)
            })
            .is_ok();
        if fits {
            return Ok(Some(c));
        }
        let task = &self.plan.tasks[i];
        self.progress.task_finished(tessera_observe::TaskTiming {
            kind: task_kind(task),
            start: task_start,
            bytes_in,
            bytes_out: bytes,
            held_bytes: None,
        });
        let started = Instant::now();
        let spilled = SpilledChunk::write(&spill.base, &task.backend, &c)?;
        tessera_observe::profile::side_span(
            "compute",
            tessera_observe::TaskTiming {
                kind: "spill",
                start: started,
                bytes_in: bytes,
                bytes_out: spilled.disk_bytes(),
                held_bytes: None,
            },
        );
        *self.spilled[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(spilled));
        Ok(None)
    }

    fn fail(&self, e: Error) {
        self.failed.store(true, Ordering::Relaxed);
        let mut slot = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
    }
}

/// A plan's projected peak memory: the results it keeps, plus, per worker, the largest
/// task's inputs and output held at once (dependency counting frees everything else).
pub(crate) struct Projection {
    /// Projected peak bytes.
    pub projected: u64,
    /// Bytes of the results.
    pub outputs: u64,
    /// The largest task's inputs plus output.
    pub worst: u64,
    /// That task.
    pub worst_task: usize,
    /// Workers assumed.
    pub threads: usize,
}

/// Workers the configured scheduler runs.
pub(crate) fn planned_threads() -> Result<usize> {
    Ok(match crate::config::scheduler()? {
        SchedulerKind::SingleThreaded => 1,
        SchedulerKind::Threads | SchedulerKind::Mpi => worker_threads()?,
    })
}

/// Projects `plan`'s peak memory on `threads` workers.
pub(crate) fn project(plan: &Plan, threads: usize) -> Projection {
    let outputs: u64 = plan
        .outputs
        .iter()
        .flatten()
        .map(|&t| plan.tasks[t].out_bytes)
        .sum();
    let (worst, worst_task) = plan
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            (
                t.out_bytes + t.deps.iter().map(|&d| plan.tasks[d].out_bytes).sum::<u64>(),
                i,
            )
        })
        .max()
        .unwrap_or((0, 0));
    Projection {
        projected: outputs + worst * threads as u64,
        outputs,
        worst,
        worst_task,
        threads,
    }
}

/// How `plan` runs within `memory-limit` on up to `threads` workers: everything in memory
/// when the projected peak fits; with results spilled when they may be and the rest fits
/// (workers cut so that the tasks in flight take at most half the limit, at least one);
/// refused otherwise, or when one task with its inputs is over the limit on its own.
pub(crate) fn budget(plan: &Plan, threads: usize, outputs: Outputs) -> Result<Budget> {
    let Some(limit) = crate::config::memory_limit()? else {
        return Ok(Budget {
            threads,
            spill: None,
        });
    };
    let Projection {
        projected,
        outputs: output_bytes,
        worst,
        worst_task,
        threads,
    } = project(plan, threads);
    if projected <= limit {
        return Ok(Budget {
            threads,
            spill: None,
        });
    }
    let spill_dir = crate::config::spill_dir()?;
    if let (Outputs::Spillable, Some(base)) = (outputs, spill_dir.as_ref()) {
        if worst <= limit {
            let workers = (limit / 2 / worst.max(1)).clamp(1, threads as u64);
            return Ok(Budget {
                threads: workers as usize,
                spill: Some((base.clone(), limit - worst * workers)),
            });
        }
    }
    let advice = if worst > limit {
        format!(
            "task {worst_task} alone reads its inputs and writes its output, {}, at once: no spilling makes that fit; use smaller chunks or raise memory-limit",
            format_bytes(worst)
        )
    } else {
        let spill = match (outputs, spill_dir) {
            (Outputs::Spillable, _) => "",
            (Outputs::InMemory, Some(_)) => {
                "; persist() instead of computing would spill the results that do not fit"
            }
            (Outputs::InMemory, None) => "",
        };
        format!(
            "results hold {} and each of {threads} workers may hold up to {} (task {worst_task} reads its inputs and writes its output at once); use smaller chunks, fewer threads (num-threads), or reduce before computing{spill}",
            format_bytes(output_bytes),
            format_bytes(worst)
        )
    };
    Err(Error::MemoryLimit {
        projected,
        limit,
        advice,
    })
}

/// Runs a plan; returns the output blocks (spilled ones only with
/// [`Outputs::Spillable`]) and figures. Under a distributed scheduler, `results` says
/// where the outputs stay; in one process they are all here.
fn run(plan: &Plan, outputs: Outputs, results: Results) -> Result<(Vec<Vec<Held>>, RunStats)> {
    if let Some(cluster) = tessera_runtime::cluster::current()? {
        // Spilling a distributed plan's results is not supported: each rank keeps its
        // results in memory, so the plan must fit as `compute()` would.
        let Budget { threads, .. } = budget(plan, worker_threads()?, Outputs::InMemory)?;
        return super::distributed::run(plan, &cluster, threads, results);
    }
    let kind = crate::config::scheduler()?;
    let Budget { threads, spill } = budget(plan, planned_threads()?, outputs)?;
    let start = Instant::now();
    let progress = tessera_observe::Stage::start("compute", plan.tasks.len())?;
    let state = State::new(plan, &progress, spill);
    let ready: Vec<usize> = (0..plan.tasks.len())
        .filter(|&i| plan.tasks[i].deps.is_empty())
        .collect();
    match kind {
        SchedulerKind::SingleThreaded => {
            // Depth first: a stack of ready tasks, earliest task on top.
            let mut stack: Vec<usize> = ready.into_iter().rev().collect();
            while let Some(i) = stack.pop() {
                let mut next = state.execute(i);
                next.sort_unstable_by(|a, b| b.cmp(a));
                stack.extend(next);
                if state.failed.load(Ordering::Relaxed) {
                    break;
                }
            }
        }
        SchedulerKind::Threads | SchedulerKind::Mpi => {
            let p = worker_pool(threads)?;
            fn go<'s>(scope: &rayon::Scope<'s>, state: &'s State<'s>, i: usize) {
                for j in state.execute(i) {
                    scope.spawn(move |s| go(s, state, j));
                }
            }
            let st = &state;
            p.scope(|scope| {
                for i in ready {
                    scope.spawn(move |s| go(s, st, i));
                }
            });
        }
    }
    let failed = state.error.lock().unwrap_or_else(|e| e.into_inner()).take();
    progress.finish();
    if let Some(e) = failed {
        return Err(e);
    }
    let outs = plan
        .outputs
        .iter()
        .map(|blocks| {
            blocks
                .iter()
                .map(|&t| {
                    let resident = state.slots.get(t);
                    let spilled = || {
                        state.spilled[t]
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .clone()
                    };
                    match (resident, spilled()) {
                        (Some(c), _) => Ok(Held::Resident(c)),
                        (None, Some(s)) => Ok(Held::Spilled(s)),
                        (None, None) => Err(Error::Internal(format!("output task {t} never ran"))),
                    }
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    let stats = RunStats {
        tasks: plan.tasks.len(),
        seconds: start.elapsed().as_secs_f64(),
        lower_seconds: 0.0,
        peak_bytes: state.slots.peak() as u64,
        sent_bytes: 0,
        received_bytes: 0,
    };
    Ok((outs, stats))
}

/// The chunks of results run with [`Outputs::InMemory`] and [`Results::Everywhere`]
/// (none spilled, all here).
fn resident(blocks: Vec<Held>) -> Result<Vec<Chunk>> {
    blocks
        .into_iter()
        .map(|h| match h {
            Held::Resident(c) => Ok(c),
            Held::Spilled(_) | Held::Placed { .. } => Err(Error::Internal(
                "a result needed in memory here was spilled or left on another rank".into(),
            )),
        })
        .collect()
}

/// Gives placed blocks held elsewhere their shapes from the array's grid.
fn shape_placed(array: &Array, blocks: &mut [Held]) {
    for (h, block) in blocks.iter_mut().zip(array.chunks().blocks()) {
        if let Held::Placed {
            shape, chunk: None, ..
        } = h
        {
            *shape = array.chunks().block_shape(&block);
        }
    }
}

/// Computes arrays to host arrays.
pub(crate) fn compute(arrays: &[Array]) -> Result<Vec<HostArray>> {
    let plan = lower(arrays)?;
    let (outs, _) = run(&plan, Outputs::InMemory, Results::Everywhere)?;
    arrays
        .iter()
        .zip(outs)
        .map(|(a, blocks)| assemble_host(a, &resident(blocks)?))
        .collect()
}

/// Computes an array, keeping its chunks on the backend; with `memory-limit` set, the
/// chunks that do not fit are spilled to `spill-dir`. Under a distributed scheduler each
/// block stays on the rank that computed it.
pub(crate) fn persist(array: &Array) -> Result<Vec<Held>> {
    let plan = lower(std::slice::from_ref(array))?;
    let (mut outs, _) = run(&plan, Outputs::Spillable, Results::Placed)?;
    let mut blocks = outs.pop().expect("one output");
    shape_placed(array, &mut blocks);
    Ok(blocks)
}

/// Computes an array into chunks on the backend, all in memory.
pub(crate) fn compute_chunks(array: &Array) -> Result<Vec<Chunk>> {
    let plan = lower(std::slice::from_ref(array))?;
    let (mut outs, _) = run(&plan, Outputs::InMemory, Results::Everywhere)?;
    resident(outs.pop().expect("one output"))
}

/// Computes several arrays in one plan, keeping their chunks on the backend (on the rank
/// that computed each, under a distributed scheduler): blocks they share are computed
/// once.
pub(crate) fn persist_many(arrays: &[Array]) -> Result<Vec<Vec<Held>>> {
    let plan = lower(arrays)?;
    let (mut outs, _) = run(&plan, Outputs::InMemory, Results::Placed)?;
    for (a, blocks) in arrays.iter().zip(outs.iter_mut()) {
        shape_placed(a, blocks);
    }
    Ok(outs)
}

/// Lowers and runs `array`, returning figures instead of data (benchmarks, overhead).
pub fn run_plan_stats(array: &Array) -> Result<RunStats> {
    let t = Instant::now();
    let plan = lower(std::slice::from_ref(array))?;
    let lower_seconds = t.elapsed().as_secs_f64();
    let (_, mut stats) = run(&plan, Outputs::InMemory, Results::Everywhere)?;
    stats.lower_seconds = lower_seconds;
    Ok(stats)
}

/// Copies output chunks into one host array.
fn assemble_host(a: &Array, chunks: &[Chunk]) -> Result<HostArray> {
    let backend = a.backend();
    let shape = a.shape();
    let grid = a.chunks().grid();
    if chunks.len() == 1 {
        return Ok(backend.to_host(&chunks[0])?.into_standard_layout());
    }
    // Blocks stacked along axis 0 only: the result is their C-order data one after the
    // other — one copy per element, no zero-filled buffer first.
    if grid.iter().skip(1).all(|&g| g == 1) {
        fn concat<T: HostElement>(
            parts: &[std::borrow::Cow<'_, HostArray>],
            shape: &[usize],
        ) -> Result<HostArray> {
            use rayon::prelude::*;
            // Zeroed allocation (fresh pages cost nothing until touched), then every block
            // copied into its own slice in parallel: the page faults of a large result are
            // shared by the workers instead of serialised on one thread.
            let mut flat: Vec<T> = vec![T::default(); shape.iter().product()];
            let views: Vec<_> = parts
                .iter()
                .map(|p| p.view_typed::<T>())
                .collect::<Result<_>>()?;
            let mut slots: Vec<&mut [T]> = Vec::with_capacity(views.len());
            let mut rest: &mut [T] = &mut flat;
            for v in &views {
                let (head, tail) = rest.split_at_mut(v.len().min(rest.len()));
                slots.push(head);
                rest = tail;
            }
            slots
                .into_par_iter()
                .zip(views.par_iter())
                .for_each(|(dst, v)| match v.as_slice() {
                    Some(s) if s.len() == dst.len() => dst.copy_from_slice(s),
                    _ => dst.iter_mut().zip(v.iter()).for_each(|(d, x)| *d = *x),
                });
            let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), flat)
                .map_err(|e| Error::Internal(format!("assembling blocks: {e}")))?;
            Ok(T::wrap(a))
        }
        let parts: Vec<std::borrow::Cow<'_, HostArray>> = chunks
            .iter()
            .map(|c| match backend.host_view(c) {
                Some(h) => Ok(std::borrow::Cow::Borrowed(h)),
                None => backend.to_host(c).map(std::borrow::Cow::Owned),
            })
            .collect::<Result<_>>()?;
        use crate::dtype::DType as D;
        return match a.dtype() {
            D::Bool => concat::<bool>(&parts, &shape),
            D::I8 => concat::<i8>(&parts, &shape),
            D::I16 => concat::<i16>(&parts, &shape),
            D::I32 => concat::<i32>(&parts, &shape),
            D::I64 => concat::<i64>(&parts, &shape),
            D::U8 => concat::<u8>(&parts, &shape),
            D::U16 => concat::<u16>(&parts, &shape),
            D::U32 => concat::<u32>(&parts, &shape),
            D::U64 => concat::<u64>(&parts, &shape),
            D::F32 => concat::<f32>(&parts, &shape),
            D::F64 => concat::<f64>(&parts, &shape),
        };
    }
    fn fill<T: HostElement>(
        out: &mut ndarray::ArrayD<T>,
        part: HostArray,
        offsets: &[usize],
    ) -> Result<()> {
        let part = part.into_typed::<T>()?;
        let mut view = out.view_mut();
        for (ax, &o) in offsets.iter().enumerate() {
            view.slice_axis_inplace(
                ndarray::Axis(ax),
                ndarray::Slice::from(o..o + part.shape()[ax]),
            );
        }
        view.assign(&part);
        Ok(())
    }
    let mut out = HostArray::full(&shape, crate::dtype::Scalar::zero(a.dtype()), a.dtype());
    let strides = c_strides(&grid);
    for block in grid_indices(grid.clone()) {
        let idx: usize = block.iter().zip(&strides).map(|(b, s)| b * s).sum();
        let part = backend.to_host(&chunks[idx])?;
        let offsets: Vec<usize> = block
            .iter()
            .enumerate()
            .map(|(ax, &b)| a.chunks().offsets(ax)[b])
            .collect();
        crate::dispatch_host!(&mut out, o => fill(o, part, &offsets)?);
    }
    Ok(out)
}
