//! One task run: what each [`TaskOp`] asks of its backend, the panic boundary around it,
//! and the figures a run reports. Both executors — the schedulers of one process
//! (`super::scheduler`) and the ranks of a job (`super::distributed`) — run tasks
//! through here.

use super::plan::{Task, TaskOp};
use crate::backend::{sketch_with_primitives, AxisSlice, Chunk};
use crate::chunks::numel;
use crate::error::{catch_panic, Error, Result};
use crate::graph::BlockFn;
use crate::host::HostArray;
use crate::program::BinaryOp;
use crate::stored::Held;
use tessera_core::backend::check_packed;

fn run_task(task: &Task, deps: &[Chunk]) -> Result<Chunk> {
    let b = &task.backend;
    match &task.op {
        TaskOp::Program(p) => {
            let mut out = b.execute(p, deps)?;
            out.pop()
                .ok_or_else(|| Error::Internal("program produced no output".into()))
        }
        TaskOp::Stored(held) => held.load(),
        TaskOp::Assemble { grid } => assemble(b.as_ref(), deps, grid),
        TaskOp::ReshapeGather { pieces, shape } => {
            let mut parts = Vec::with_capacity(deps.len());
            for (c, &(lo, hi)) in deps.iter().zip(pieces) {
                let flat = b.reshape(c, &[numel(c.shape())])?;
                let part = if lo == 0 && hi == numel(c.shape()) {
                    flat
                } else {
                    b.slice(
                        &flat,
                        &[AxisSlice {
                            start: lo,
                            step: 1,
                            len: hi - lo,
                        }],
                    )?
                };
                parts.push(part);
            }
            let joined = if parts.len() == 1 {
                parts.pop().expect("one part")
            } else {
                b.concatenate(&parts, 0)?
            };
            b.reshape(&joined, shape)
        }
        TaskOp::MatmulSum => {
            let mut acc: Option<Chunk> = None;
            for pair in deps.chunks(2) {
                let p = b.matmul(&pair[0], &pair[1])?;
                acc = Some(match acc {
                    None => p,
                    Some(a) => b.binary(BinaryOp::Add, &a, &p)?,
                });
            }
            acc.ok_or_else(|| Error::Internal("matmul with no contraction blocks".into()))
        }
        TaskOp::MatmulProgram {
            program,
            program_left,
        } => {
            let (other, inputs) = deps
                .split_last()
                .ok_or_else(|| Error::Internal("a matmul task with no operand".into()))?;
            b.matmul_program(program, inputs, other, *program_left)
        }
        TaskOp::Sketch { program } => {
            let (omega, xs) = deps
                .split_last()
                .ok_or_else(|| Error::Internal("a sketch task with no omega".into()))?;
            match (program, xs) {
                (Some(p), inputs) => b.sketch_program(p, inputs, omega),
                (None, [x]) => sketch_with_primitives(b.as_ref(), x, omega),
                (None, _) => Err(Error::Internal(
                    "a sketch task of a stored block needs exactly x and omega".into(),
                )),
            }
        }
        TaskOp::Moments { program, axes } => {
            let packed = b.moments_program(program, deps, axes)?;
            check_packed(&packed, program, axes)?;
            Ok(packed)
        }
        TaskOp::Rows { skip, len } => {
            let mut acc: Option<Chunk> = None;
            for (c, &start) in deps.iter().zip(skip) {
                let shape = c.shape();
                let part = if start == 0 && shape.first() == Some(len) {
                    c.clone()
                } else {
                    let whole = shape.get(1).copied().unwrap_or(0);
                    b.slice(
                        c,
                        &[
                            AxisSlice {
                                start,
                                step: 1,
                                len: *len,
                            },
                            AxisSlice {
                                start: 0,
                                step: 1,
                                len: whole,
                            },
                        ],
                    )?
                };
                acc = Some(match acc {
                    None => part,
                    Some(a) => b.binary(BinaryOp::Add, &a, &part)?,
                });
            }
            acc.ok_or_else(|| Error::Internal("a rows task with no inputs".into()))
        }
        TaskOp::Sum => {
            let (first, rest) = deps
                .split_first()
                .ok_or_else(|| Error::Internal("a sum task with no inputs".into()))?;
            rest.iter()
                .try_fold(first.clone(), |acc, d| b.binary(BinaryOp::Add, &acc, d))
        }
        TaskOp::MapBlocks {
            f,
            shape,
            dtype,
            block,
        } => {
            let out = match f {
                BlockFn::Host(f) => {
                    let host: Vec<HostArray> =
                        deps.iter().map(|c| b.to_host(c)).collect::<Result<_>>()?;
                    b.from_host_owned(f(&host)?)?
                }
                BlockFn::Backend(f) => f(b.as_ref(), deps)?,
                BlockFn::Lane { f, axis, .. } => f(b.as_ref(), block[*axis], deps)?,
            };
            if out.shape() != shape.as_slice() || out.dtype() != *dtype {
                return Err(Error::user_function(
                    f.name(),
                    format!(
                        "block {block:?} came back as {} {:?}; declared {} {:?}",
                        out.dtype(),
                        out.shape(),
                        dtype,
                        shape
                    ),
                ));
            }
            Ok(out)
        }
        TaskOp::Transfer { from } => {
            let h = from.to_host(&deps[0])?;
            b.from_host_owned(h)
        }
        TaskOp::Read { source, region } => {
            let h = source.read(region)?;
            let want: Vec<usize> = region.iter().map(|r| r.len()).collect();
            if h.shape() != want.as_slice() {
                return Err(Error::Internal(format!(
                    "{} returned a block of shape {:?} for region {region:?}",
                    source.describe(),
                    h.shape()
                )));
            }
            b.from_host_owned(h)
        }
        TaskOp::Write { sink, region } => {
            let h = b.to_host(&deps[0])?;
            let bytes = sink.write(region, &h)?;
            let ones = vec![1; region.len()];
            b.from_host_owned(HostArray::U64(ndarray::ArrayD::from_elem(
                ndarray::IxDyn(&ones),
                bytes,
            )))
        }
    }
}

/// Runs task `i` with a panic caught at the task boundary: a user function's panic is
/// its error ([`Error::UserFunction`]), a reader's or writer's names the region and the
/// store, any other names the task and its backend.
pub(super) fn run_caught(i: usize, task: &Task, deps: &[Chunk]) -> Result<Chunk> {
    catch_panic(
        || run_task(task, deps),
        |message| match &task.op {
            TaskOp::MapBlocks {
                f: BlockFn::Lane { name, .. },
                block,
                ..
            } => Error::Panicked {
                task: format!("{name} of block {block:?}"),
                message,
            },
            TaskOp::MapBlocks { block, .. } => Error::user_function(
                "map_blocks",
                format!("the function panicked on block {block:?}: {message}"),
            ),
            TaskOp::Read { source, region } => Error::Panicked {
                task: format!("reading {region:?} of {}", source.describe()),
                message,
            },
            TaskOp::Write { sink, region } => Error::Panicked {
                task: format!("writing {region:?} to {}", sink.describe()),
                message,
            },
            _ => Error::Panicked {
                task: format!("task {i} on backend '{}'", task.backend.name()),
                message,
            },
        },
    )
}

/// Concatenates a C-order grid of pieces: innermost axis first.
fn assemble(
    b: &dyn crate::backend::ArrayBackend,
    pieces: &[Chunk],
    grid: &[usize],
) -> Result<Chunk> {
    let mut cur: Vec<Chunk> = pieces.to_vec();
    let mut g = grid.to_vec();
    for ax in (0..grid.len()).rev() {
        let n = g[ax];
        if n > 1 {
            cur = cur
                .chunks(n)
                .map(|group| b.concatenate(group, ax))
                .collect::<Result<_>>()?;
        }
        g[ax] = 1;
    }
    cur.pop()
        .ok_or_else(|| Error::Internal("assemble of no pieces".into()))
}

/// Timing and memory figures of one run.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    /// Tasks run.
    pub tasks: usize,
    /// Wall time of the run (excluding lowering).
    pub seconds: f64,
    /// Wall time of lowering.
    pub lower_seconds: f64,
    /// Largest number of chunk bytes held at once (tracked by the scheduler).
    pub peak_bytes: u64,
    /// Bytes this rank sent to other ranks (`scheduler = "mpi"`; 0 otherwise).
    pub sent_bytes: u64,
    /// Bytes this rank received from other ranks.
    pub received_bytes: u64,
}

/// What a task does, in the words of a profile (`tessera_observe::TaskSpan::kind`).
pub(super) fn task_kind(task: &Task) -> &'static str {
    match &task.op {
        TaskOp::Program(p) if p.outputs.iter().any(|o| o.reduce.is_some()) => "reduce",
        TaskOp::Program(_) if task.deps.is_empty() => "generate",
        TaskOp::Program(_) => "program",
        TaskOp::Stored(Held::Spilled(_)) => "unspill",
        TaskOp::Stored(Held::Resident(_) | Held::Placed { .. }) => "stored",
        TaskOp::Assemble { .. } | TaskOp::ReshapeGather { .. } | TaskOp::Rows { .. } => "assemble",
        TaskOp::MatmulSum | TaskOp::MatmulProgram { .. } => "matmul",
        TaskOp::Sketch { .. } => "sketch",
        TaskOp::Moments { .. } => "moments",
        TaskOp::Sum => "reduce",
        TaskOp::MapBlocks {
            f: BlockFn::Lane { name, .. },
            ..
        } => name,
        TaskOp::MapBlocks { .. } => "user function",
        TaskOp::Transfer { .. } => "transfer",
        TaskOp::Read { .. } => "read",
        TaskOp::Write { .. } => "write",
    }
}

/// Where a distributed plan leaves its results.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Results {
    /// On every rank (`compute`): every rank returns the same value.
    Everywhere,
    /// Each block on the rank that computed it (`persist`): later plans run its
    /// consumers there ([`Held::Placed`]).
    Placed,
}
