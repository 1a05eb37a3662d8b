//! Lowering: lazy array graph -> fused task graph (one function per graph op family).

mod by_rank;

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::plan::{Plan, Task, TaskOp};
use crate::backend::BackendRef;
use crate::chunks::{c_strides, grid_indices, numel};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::graph::{Array, BlockFn, Fold, Op};
use crate::program::{
    AxisMap, BinaryOp, IndexMap, Node as PNode, NodeId, Program, ProgramBuilder, ReduceOp,
    Reduction, UnaryOp,
};
use crate::stored::Held;

struct Lowerer {
    tasks: Vec<Task>,
    /// (node id, C-order block number) -> task.
    memo: FxHashMap<(u64, u64), usize>,
    /// Config `optimize`: when false, every node below a program's root is its own
    /// materialised block (no fusion, no pushdown into sources).
    optimize: bool,
    /// Depth of the current `fuse` recursion below the program's root.
    depth: usize,
    /// Per block-reduction node id: the pair of its reduced axes its input is
    /// mirror-symmetric in, if any.
    mirrors: FxHashMap<u64, Option<(usize, usize)>>,
    /// Block reductions given their mirror block's task.
    mirrored: usize,
    /// Per task, the tasks made so far that read it (kept only with a `placer`).
    readers: Vec<usize>,
    /// Under a distributed scheduler with several ranks, the owner rule over the tasks
    /// made so far ([`by_rank`]).
    placer: Option<super::placement::Placer>,
}

/// Lowers arrays into a plan.
pub(crate) fn lower(arrays: &[Array]) -> Result<Plan> {
    let mut l = Lowerer {
        tasks: Vec::new(),
        memo: FxHashMap::default(),
        optimize: crate::config::optimize()?,
        depth: 0,
        mirrors: FxHashMap::default(),
        mirrored: 0,
        readers: Vec::new(),
        placer: match tessera_runtime::cluster::current()? {
            Some(c) if c.size() > 1 => Some(super::placement::Placer::new(c.size())),
            _ => None,
        },
    };
    let mut outputs = Vec::new();
    for a in arrays {
        let blocks: Vec<usize> = a
            .chunks()
            .blocks()
            .map(|b| l.block_task(a, &b))
            .collect::<Result<_>>()?;
        outputs.push(blocks);
    }
    Ok(Plan {
        tasks: l.tasks,
        outputs,
        mirrored: l.mirrored,
    })
}

fn is_fusable(op: &Op) -> bool {
    matches!(
        op,
        Op::Const(_)
            | Op::Random(_)
            | Op::Iota { .. }
            | Op::Cast(_)
            | Op::Unary(..)
            | Op::Binary(..)
            | Op::Where(..)
            | Op::View(..)
            | Op::Concat(..)
            | Op::BlockStart { .. }
            | Op::BlockCount { .. }
    )
}

/// The map addressing block `block` of an array from that block's local coordinates.
/// The memo key of block `block` of `a`: the array's id and the block's C-order number in
/// the grid (a key without an allocation).
fn memo_key(a: &Array, block: &[usize]) -> (u64, u64) {
    let flat = block
        .iter()
        .zip(a.chunks().sizes())
        .fold(0u64, |acc, (&b, sizes)| acc * sizes.len() as u64 + b as u64);
    (a.id(), flat)
}

fn block_map(a: &Array, block: &[usize]) -> IndexMap {
    IndexMap {
        src_shape: a.shape(),
        axes: block
            .iter()
            .enumerate()
            .map(|(ax, &b)| AxisMap {
                start: a.chunks().offsets(ax)[b] as i64,
                step: 1,
                out_axis: Some(ax),
            })
            .collect(),
    }
}

/// Per source axis, the inclusive coordinate range `map` reads over `out_shape`.
fn region(map: &IndexMap, out_shape: &[usize]) -> Vec<(i64, i64)> {
    map.axes
        .iter()
        .map(|ax| match ax.out_axis {
            Some(o) if ax.step != 0 && out_shape[o] > 0 => {
                let last = ax.start + ax.step * (out_shape[o] as i64 - 1);
                (ax.start.min(last), ax.start.max(last))
            }
            _ => (ax.start, ax.start),
        })
        .collect()
}

/// The block of `offsets` containing coordinate `c`.
fn block_of(offsets: &[usize], c: i64) -> usize {
    let k = offsets.partition_point(|&o| o as i64 <= c);
    k.saturating_sub(1).min(offsets.len().saturating_sub(2))
}

/// The block a lowering step produces: its array, grid index, shape, bytes and backend.
struct Target<'a> {
    a: &'a Array,
    block: &'a [usize],
    shape: Vec<usize>,
    bytes: u64,
    backend: BackendRef,
}

impl Lowerer {
    fn push(&mut self, op: TaskOp, deps: Vec<usize>, backend: BackendRef, out_bytes: u64) -> usize {
        // Readers are counted only for the owner rule over ranks.
        if self.placer.is_some() {
            for &d in &deps {
                self.readers[d] += 1;
            }
            self.readers.push(0);
        }
        self.tasks.push(Task {
            op,
            deps,
            backend,
            out_bytes,
            replicated: false,
        });
        self.tasks.len() - 1
    }

    fn block_task(&mut self, a: &Array, block: &[usize]) -> Result<usize> {
        let t = self.operand_task(a, block)?;
        self.memo.insert(memo_key(a, block), t);
        Ok(t)
    }

    /// The task of one contraction block's product `x[xb] @ y[yb]`. When an operand's
    /// block is a float program that no other task has asked for (a random matrix, a
    /// transposed or scaled input), the program moves into the product's task instead of
    /// becoming a task of its own, so the backend can stream it. At most one operand is
    /// moved, the larger block first (in `qᵀ @ x` that is `x`, not the small `qᵀ`).
    fn matmul_block(
        &mut self,
        x: &Array,
        xb: &[usize],
        y: &Array,
        yb: &[usize],
        bytes: u64,
    ) -> Result<usize> {
        let backend = x.backend().clone();
        let x_first = numel(&x.chunks().block_shape(xb)) >= numel(&y.chunks().block_shape(yb));
        let ((first, fb), (second, sb)) = if x_first {
            ((x, xb), (y, yb))
        } else {
            ((y, yb), (x, xb))
        };
        let ft = self.operand_task(first, fb)?;
        if let Some((program, mut deps)) = self.take_program(ft) {
            deps.push(self.block_task(second, sb)?);
            let op = TaskOp::MatmulProgram {
                program,
                program_left: x_first,
            };
            return Ok(self.push(op, deps, backend, bytes));
        }
        self.memo.insert(memo_key(first, fb), ft);
        let st = self.operand_task(second, sb)?;
        if let Some((program, mut deps)) = self.take_program(st) {
            deps.push(ft);
            let op = TaskOp::MatmulProgram {
                program,
                program_left: !x_first,
            };
            return Ok(self.push(op, deps, backend, bytes));
        }
        self.memo.insert(memo_key(second, sb), st);
        let deps = if x_first { vec![ft, st] } else { vec![st, ft] };
        Ok(self.push(TaskOp::MatmulSum, deps, backend, bytes))
    }

    /// A block's task: the memoised one if some task already has it, otherwise a new one
    /// that is *not* memoised yet ([`Self::block_task`] memoises it; a matmul may first
    /// take it apart with [`Self::take_program`]).
    fn operand_task(&mut self, a: &Array, block: &[usize]) -> Result<usize> {
        match self.memo.get(&memo_key(a, block)) {
            Some(&t) => Ok(t),
            None => self.make_block_task(a, block),
        }
    }

    /// Removes task `t` and returns its program and deps when it is the newest task, not
    /// memoised, and a single dense float output of two dimensions: nothing else can
    /// refer to it, so the product can own it.
    fn take_program(&mut self, t: usize) -> Option<(Program, Vec<usize>)> {
        if t + 1 != self.tasks.len() {
            return None;
        }
        let TaskOp::Program(p) = &self.tasks[t].op else {
            return None;
        };
        let streamable = p.outputs.len() == 1
            && p.outputs[0].reduce.is_none()
            && p.output_shape(0).len() == 2
            && matches!(p.output_dtype(0), DType::F32 | DType::F64);
        if !streamable || self.memo.values().any(|&m| m == t) {
            return None;
        }
        let task = self.tasks.pop()?;
        if let Some(placer) = &mut self.placer {
            self.readers.pop();
            for &d in &task.deps {
                self.readers[d] -= 1;
            }
            placer.truncate(self.tasks.len());
        }
        match task.op {
            TaskOp::Program(p) => Some((p, task.deps)),
            _ => None,
        }
    }

    /// The fused chain computing `map` of `a` over `shape`: the program so far, its root
    /// node and the tasks its input slots read.
    fn fused(
        &mut self,
        a: &Array,
        map: &IndexMap,
        shape: &[usize],
    ) -> Result<(ProgramBuilder, NodeId, Vec<usize>)> {
        let mut pb = ProgramBuilder::new(shape);
        let mut leaves = Vec::new();
        let saved = std::mem::replace(&mut self.depth, 0);
        let node = self.fuse(a, map, &mut pb, &mut leaves);
        self.depth = saved;
        Ok((pb, node?, leaves))
    }

    /// A program task computing `map` of `a` over `shape`, with an optional epilogue.
    fn program_task(
        &mut self,
        a: &Array,
        map: &IndexMap,
        shape: &[usize],
        reduce: Option<Reduction>,
        backend: &BackendRef,
    ) -> Result<usize> {
        let (pb, node, leaves) = self.fused(a, map, shape)?;
        // A bare read of a whole stored chunk needs no task of its own.
        if reduce.is_none() && leaves.len() == 1 {
            if let PNode::Input { map: m, .. } = &pb_node(&pb, node) {
                if *m == IndexMap::identity(shape) && self.tasks[leaves[0]].out_shape_is(shape) {
                    return Ok(leaves[0]);
                }
            }
        }
        let program = pb.finish(vec![(node, reduce)])?;
        backend.check_program(&program)?;
        let out_bytes =
            numel(&program.output_shape(0)) as u64 * program.output_dtype(0).size() as u64;
        Ok(self.push(TaskOp::Program(program), leaves, backend.clone(), out_bytes))
    }

    /// For block `block` of the per-block reduction `a` of `input` over `axes`: when the
    /// reduction ignores element order, `input` is mirror-symmetric in two reduced axes
    /// `(p, q)` and the block lies below the diagonal (`block[p] > block[q]`), the task of
    /// the mirror block, which reduces the same elements ([`super::symmetry`]).
    fn mirror_task(
        &mut self,
        a: &Array,
        input: &Array,
        axes: &[usize],
        block: &[usize],
        order_free: bool,
    ) -> Result<Option<usize>> {
        if !self.optimize || !order_free {
            return Ok(None);
        }
        let pair = *self
            .mirrors
            .entry(a.id())
            .or_insert_with(|| super::symmetry::mirror_pair(input, axes));
        let Some((p, q)) = pair else {
            return Ok(None);
        };
        if block[p] <= block[q] {
            return Ok(None);
        }
        let mut mirror = block.to_vec();
        mirror.swap(p, q);
        let t = self.block_task(a, &mirror)?;
        self.mirrored += 1;
        Ok(Some(t))
    }

    fn make_block_task(&mut self, a: &Array, block: &[usize]) -> Result<usize> {
        let shape = a.chunks().block_shape(block);
        let bytes = numel(&shape) as u64 * a.dtype().size() as u64;
        let backend = a.backend().clone();
        if is_fusable(a.op()) {
            return self.program_task(a, &block_map(a, block), &shape, None, &backend);
        }
        let t = Target {
            a,
            block,
            shape,
            bytes,
            backend,
        };
        match a.op() {
            Op::Stored(chunks) => self.stored_task(t, chunks),
            Op::ReduceBlocks { input, op, axes } => self.reduce_blocks_task(t, input, *op, axes),
            Op::Moments { input, axes } => self.moments_task(t, input, axes),
            Op::Combine {
                inputs,
                axes,
                split,
                fold,
            } => self.combine_task(t, inputs, axes, split, fold),
            Op::Rechunk(input) => self.rechunk_task(t, input),
            Op::Reshape(input) => self.reshape_task(t, input),
            Op::Matmul(x, y) => self.matmul_task(t, x, y),
            Op::Sketch(x, omega) => self.sketch_task(t, x, omega),
            Op::SketchPart { packed, xty } => self.sketch_part_task(t, packed, *xty),
            Op::MapBlocks(inputs, f) => self.map_blocks_task(t, inputs, f),
            Op::AlongAxis {
                inputs,
                axis,
                sources,
                with,
                f,
                name,
            } => self.along_axis_task(t, inputs, *axis, sources, with.as_ref(), f, name),
            Op::Transfer(input) => self.transfer_task(t, input),
            Op::Source(source) => {
                let region = crate::array::block_region(a.chunks(), block);
                let op = TaskOp::Read {
                    source: source.clone(),
                    region,
                };
                Ok(self.push(op, vec![], t.backend, t.bytes))
            }
            Op::Store(input, sink) => self.store_task(t, input, sink),
            _ => Err(Error::Internal("unhandled graph op in lowering".into())),
        }
    }

    /// A stored block: the chunk itself.
    fn stored_task(&mut self, t: Target<'_>, chunks: &Arc<Vec<Held>>) -> Result<usize> {
        let Target {
            a,
            block,
            bytes,
            backend,
            ..
        } = t;
        let idx: usize = block
            .iter()
            .zip(c_strides(&a.chunks().grid()))
            .map(|(b, s)| b * s)
            .sum();
        Ok(self.push(TaskOp::Stored(chunks[idx].clone()), vec![], backend, bytes))
    }

    /// One block reduced over `axes` (a fused program with a reduction epilogue), or its
    /// mirror's task.
    fn reduce_blocks_task(
        &mut self,
        t: Target<'_>,
        input: &Array,
        op: ReduceOp,
        axes: &[usize],
    ) -> Result<usize> {
        let Target {
            a, block, backend, ..
        } = t;
        let order_free = !matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax);
        if let Some(t) = self.mirror_task(a, input, axes, block, order_free)? {
            return Ok(t);
        }
        let in_shape = input.chunks().block_shape(block);
        self.program_task(
            input,
            &block_map(input, block),
            &in_shape,
            Some(Reduction {
                op,
                axes: axes.to_vec(),
            }),
            &backend,
        )
    }

    /// One block's sum and M2 over `axes`, or its mirror's task.
    fn moments_task(&mut self, t: Target<'_>, input: &Array, axes: &[usize]) -> Result<usize> {
        let Target {
            a,
            block,
            bytes,
            backend,
            ..
        } = t;
        if let Some(t) = self.mirror_task(a, input, axes, block, true)? {
            return Ok(t);
        }
        // The input block's program (a bare read when it is stored), whose output
        // the backend reduces to its sum and M2 in one request.
        let in_shape = input.chunks().block_shape(block);
        let (pb, node, leaves) = self.fused(input, &block_map(input, block), &in_shape)?;
        let program = pb.finish(vec![(node, None)])?;
        backend.check_program(&program)?;
        let op = TaskOp::Moments {
            program,
            axes: axes.to_vec(),
        };
        Ok(self.push(op, leaves, backend, bytes))
    }

    /// One tree level of a reduction: a group of partials folded in one program.
    fn combine_task(
        &mut self,
        t: Target<'_>,
        inputs: &[Array],
        axes: &[usize],
        split: &[usize],
        fold: &Fold,
    ) -> Result<usize> {
        if let (Some(_), Fold::Binary(op)) = (&self.placer, fold) {
            if self.optimize && axes.iter().all(|&ax| t.a.chunks().axis(ax).len() == 1) {
                return self.combine_by_rank(t, &inputs[0], axes, *op);
            }
        }
        let Target {
            block,
            shape,
            bytes,
            backend,
            ..
        } = t;
        let mut pb = ProgramBuilder::new(&shape);
        let mut leaves = Vec::new();
        let ranges: Vec<Vec<usize>> = (0..block.len())
            .map(|ax| {
                if axes.contains(&ax) {
                    let n = inputs[0].chunks().axis(ax).len();
                    (block[ax] * split[ax]..((block[ax] + 1) * split[ax]).min(n)).collect()
                } else {
                    vec![block[ax]]
                }
            })
            .collect();
        let grid: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        let mut acc: Option<(NodeId, Option<NodeId>)> = None;
        for g in grid_indices(grid) {
            let member: Vec<usize> = g.iter().enumerate().map(|(ax, &i)| ranges[ax][i]).collect();
            let v = self.fuse(
                &inputs[0],
                &block_map(&inputs[0], &member),
                &mut pb,
                &mut leaves,
            )?;
            let ix = match fold {
                Fold::Arg { .. } => Some(self.fuse(
                    &inputs[1],
                    &block_map(&inputs[1], &member),
                    &mut pb,
                    &mut leaves,
                )?),
                Fold::Binary(_) => None,
            };
            acc = Some(match (acc, fold) {
                (None, _) => (v, ix),
                (Some((va, _)), Fold::Binary(op)) => (pb.binary(*op, va, v)?, None),
                (Some((va, ia)), Fold::Arg { max, .. }) => {
                    // Take the new candidate when the current one is not NaN and the
                    // new one is NaN or strictly better (ties keep the earlier one).
                    let nan_b = pb.unary(UnaryOp::IsNan, v)?;
                    let nan_a = pb.unary(UnaryOp::IsNan, va)?;
                    let not_nan_a = pb.unary(UnaryOp::Not, nan_a)?;
                    let better =
                        pb.binary(if *max { BinaryOp::Gt } else { BinaryOp::Lt }, v, va)?;
                    let cand = pb.binary(BinaryOp::Or, nan_b, better)?;
                    let pick = pb.binary(BinaryOp::And, not_nan_a, cand)?;
                    let ib = ix.expect("arg fold reads indices");
                    (
                        pb.where_(pick, v, va),
                        Some(pb.where_(pick, ib, ia.expect("indices"))),
                    )
                }
            });
        }
        let (v, ix) = acc.ok_or_else(|| Error::Internal("empty combine group".into()))?;
        let node = match fold {
            Fold::Arg { out: 1, .. } => ix.expect("indices"),
            _ => v,
        };
        let program = pb.finish(vec![(node, None)])?;
        backend.check_program(&program)?;
        Ok(self.push(TaskOp::Program(program), leaves, backend, bytes))
    }

    /// One block of new chunk boundaries: the pieces of the input's blocks it covers,
    /// assembled (or the one piece).
    fn rechunk_task(&mut self, t: Target<'_>, input: &Array) -> Result<usize> {
        let Target {
            a,
            block,
            shape,
            bytes,
            backend,
        } = t;
        // Split this block's region along the input's chunk boundaries.
        let mut ranges: Vec<Vec<(usize, usize)>> = Vec::new();
        for (ax, &b) in block.iter().enumerate() {
            let lo = a.chunks().offsets(ax)[b];
            let hi = lo + shape[ax];
            let offs = input.chunks().offsets(ax);
            let mut v = Vec::new();
            let mut c = lo;
            while c < hi {
                let k = block_of(offs, c as i64);
                let end = offs[k + 1].min(hi);
                v.push((c, end));
                c = end;
            }
            if v.is_empty() {
                v.push((lo, lo));
            }
            ranges.push(v);
        }
        let grid: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        let mut deps = Vec::new();
        for g in grid_indices(grid.clone()) {
            let piece_shape: Vec<usize> = g
                .iter()
                .enumerate()
                .map(|(ax, &i)| ranges[ax][i].1 - ranges[ax][i].0)
                .collect();
            let map = IndexMap {
                src_shape: input.shape(),
                axes: g
                    .iter()
                    .enumerate()
                    .map(|(ax, &i)| AxisMap {
                        start: ranges[ax][i].0 as i64,
                        step: 1,
                        out_axis: Some(ax),
                    })
                    .collect(),
            };
            deps.push(self.program_task(input, &map, &piece_shape, None, &backend)?);
        }
        if deps.len() == 1 {
            return Ok(deps[0]);
        }
        Ok(self.push(TaskOp::Assemble { grid }, deps, backend, bytes))
    }

    /// One block of a C-order reshape: gathers the flat ranges of the input blocks it spans.
    fn reshape_task(&mut self, t: Target<'_>, input: &Array) -> Result<usize> {
        let Target {
            a,
            block,
            shape,
            bytes,
            backend,
        } = t;
        // Elements per row; 0 when a later axis is empty (an empty product, 1, for 1-d).
        let row_out: usize = shape.iter().skip(1).product::<usize>();
        let (f0, f1) = if shape.is_empty() {
            (0, 1)
        } else {
            let r0 = a.chunks().offsets(0)[block[0]];
            (r0 * row_out, (r0 + shape[0]) * row_out)
        };
        let in_shape = input.shape();
        let row_in: usize = in_shape.iter().skip(1).product::<usize>();
        let mut deps = Vec::new();
        let mut pieces = Vec::new();
        for ib in input.chunks().blocks() {
            let (g0, g1) = if in_shape.is_empty() {
                (0, 1)
            } else {
                let r0 = input.chunks().offsets(0)[ib[0]];
                (r0 * row_in, (r0 + input.chunks().axis(0)[ib[0]]) * row_in)
            };
            let (lo, hi) = (f0.max(g0), f1.min(g1));
            if lo < hi {
                deps.push(self.block_task(input, &ib)?);
                pieces.push((lo - g0, hi - g0));
            }
        }
        if deps.is_empty() {
            // Empty output block: nothing to gather.
            return self.program_task(
                &a.const_like(Scalar::zero(a.dtype())),
                &block_map(a, block),
                &shape,
                None,
                &backend,
            );
        }
        Ok(self.push(
            TaskOp::ReshapeGather { pieces, shape },
            deps,
            backend,
            bytes,
        ))
    }

    /// One block of a product: one task per contraction block, then a tree of sums.
    fn matmul_task(&mut self, t: Target<'_>, x: &Array, y: &Array) -> Result<usize> {
        let Target {
            block,
            bytes,
            backend,
            ..
        } = t;
        let kblocks = x.chunks().axis(1).len();
        // One task per contraction block, then a tree of sums with fan-in
        // `split-every`: the inputs' blocks are consumed (and freed) one pair at a
        // time instead of all being alive for one task.
        let mut level = Vec::with_capacity(kblocks);
        for l in 0..kblocks {
            let t = self.matmul_block(x, &[block[0], l], y, &[l, block[1]], bytes)?;
            level.push(t);
        }
        let fan_in = crate::config::split_every()?;
        while level.len() > 1 {
            level = level
                .chunks(fan_in)
                .map(|g| match g {
                    [one] => *one,
                    _ => self.push(TaskOp::Sum, g.to_vec(), backend.clone(), bytes),
                })
                .collect();
        }
        level
            .pop()
            .ok_or_else(|| Error::Internal("matmul with no contraction blocks".into()))
    }

    /// One row block of a range sketch, streaming x's fused program when it has one.
    fn sketch_task(&mut self, t: Target<'_>, x: &Array, omega: &Array) -> Result<usize> {
        let Target {
            block,
            bytes,
            backend,
            ..
        } = t;
        // Row block `block[0]` of x, whole; omega is one chunk.
        let xb = [block[0], 0];
        let xt = self.operand_task(x, &xb)?;
        if let Some((program, mut deps)) = self.take_program(xt) {
            deps.push(self.block_task(omega, &[0, 0])?);
            let op = TaskOp::Sketch {
                program: Some(program),
            };
            return Ok(self.push(op, deps, backend, bytes));
        }
        self.memo.insert(memo_key(x, &xb), xt);
        let ot = self.block_task(omega, &[0, 0])?;
        Ok(self.push(
            TaskOp::Sketch { program: None },
            vec![xt, ot],
            backend,
            bytes,
        ))
    }

    /// One block of a sketch's product: `x Ω` rows, or the tree of sums giving `xᵀ x Ω`.
    fn sketch_part_task(&mut self, t: Target<'_>, packed: &Array, xty: bool) -> Result<usize> {
        let Target {
            block,
            bytes,
            backend,
            ..
        } = t;
        let Op::Sketch(x, _) = packed.op() else {
            return Err(Error::Internal(
                "a sketch part of a non-sketch array".into(),
            ));
        };
        let rows = x.chunks().axis(0).to_vec();
        if !xty {
            let t = self.block_task(packed, &[block[0], 0])?;
            let op = TaskOp::Rows {
                skip: vec![0],
                len: rows[block[0]],
            };
            return Ok(self.push(op, vec![t], backend, bytes));
        }
        // xᵀ x Ω: a tree of sums over the blocks' lower parts, fan-in
        // `split-every`; a packed block is freed once its sum has run.
        let n = x.shape()[1];
        let mut level = Vec::with_capacity(rows.len());
        for (b, &r) in rows.iter().enumerate() {
            level.push((self.block_task(packed, &[b, 0])?, r));
        }
        let fan_in = crate::config::split_every()?.max(2);
        if self.placer.is_none() {
            return self.rows_tree(level, fan_in, n, &backend, bytes);
        }
        // Over ranks: each packed block's lower part is cut where the block is, so only
        // the n × l parts travel, not the x Ω rows with them. Then each rank sums the parts
        // of its own blocks first (by the owner rule, run over the tasks made so far), and
        // only one n × l partial per rank meets the others'.
        let cut = self.rows_level(&level, 1, n, &backend, bytes);
        let mut partials = Vec::new();
        for (_, mine) in self.group_by_rank(&cut.iter().map(|&(t, _)| t).collect::<Vec<_>>())? {
            let mine = mine.into_iter().map(|t| (t, 0)).collect();
            partials.push((self.rows_tree(mine, fan_in, n, &backend, bytes)?, 0));
        }
        self.rows_tree(partials, fan_in, n, &backend, bytes)
    }

    /// One level of a sum tree over `level` — (task, rows to skip) pairs — in groups of
    /// `width`: each group's `n`-row parts summed (a width of 1 only cuts each entry).
    fn rows_level(
        &mut self,
        level: &[(usize, usize)],
        width: usize,
        n: usize,
        backend: &BackendRef,
        bytes: u64,
    ) -> Vec<(usize, usize)> {
        let mut next = Vec::with_capacity(level.len() / width + 1);
        for g in level.chunks(width) {
            let op = TaskOp::Rows {
                skip: g.iter().map(|&(_, s)| s).collect(),
                len: n,
            };
            let deps = g.iter().map(|&(t, _)| t).collect();
            next.push((self.push(op, deps, backend.clone(), bytes), 0));
        }
        next
    }

    /// The tree of fan-in `fan_in` summing `level` to one `n`-row task; a packed
    /// block's task freed once its sum has run.
    fn rows_tree(
        &mut self,
        mut level: Vec<(usize, usize)>,
        fan_in: usize,
        n: usize,
        backend: &BackendRef,
        bytes: u64,
    ) -> Result<usize> {
        while level.len() > 1 || level.first().is_some_and(|&(_, skip)| skip != 0) {
            level = self.rows_level(&level, fan_in, n, backend, bytes);
        }
        level
            .pop()
            .map(|(t, _)| t)
            .ok_or_else(|| Error::Internal("a sketch of no row blocks".into()))
    }

    /// One block of a user function over the inputs' matching blocks.
    fn map_blocks_task(&mut self, t: Target<'_>, inputs: &[Array], f: &BlockFn) -> Result<usize> {
        let Target {
            a,
            block,
            shape,
            bytes,
            backend,
        } = t;
        let deps = inputs
            .iter()
            .map(|i| self.block_task(i, block))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.push(
            TaskOp::MapBlocks {
                f: f.clone(),
                shape,
                dtype: a.dtype(),
                block: block.to_vec(),
            },
            deps,
            backend,
            bytes,
        ))
    }

    /// One output block of an [`Op::AlongAxis`]: its lane function over the blocks of
    /// `inputs` that `sources[j]` names along `axis`, then `with`'s block.
    #[allow(clippy::too_many_arguments)]
    fn along_axis_task(
        &mut self,
        t: Target<'_>,
        inputs: &[Array],
        axis: usize,
        sources: &[Vec<usize>],
        with: Option<&Array>,
        f: &crate::graph::LaneBlockFn,
        name: &'static str,
    ) -> Result<usize> {
        let Target {
            a,
            block,
            shape,
            bytes,
            backend,
        } = t;
        let j = block[axis];
        let wanted = sources.get(j).ok_or_else(|| {
            Error::Internal(format!("no sources for block {j} along axis {axis}"))
        })?;
        let mut deps = Vec::with_capacity(wanted.len() * inputs.len() + 1);
        for input in inputs {
            for &i in wanted {
                let at = if input.ndim() == 1 && block.len() != 1 {
                    vec![i]
                } else {
                    let mut at = block.to_vec();
                    at[axis] = i;
                    at
                };
                deps.push(self.block_task(input, &at)?);
            }
        }
        if let Some(w) = with {
            let at = if w.ndim() == 1 {
                vec![j]
            } else {
                block.to_vec()
            };
            deps.push(self.block_task(w, &at)?);
        }
        Ok(self.push(
            TaskOp::MapBlocks {
                f: BlockFn::Lane {
                    f: f.clone(),
                    axis,
                    name,
                },
                shape,
                dtype: a.dtype(),
                block: block.to_vec(),
            },
            deps,
            backend,
            bytes,
        ))
    }

    /// One block of `input` written to `sink`.
    fn store_task(
        &mut self,
        t: Target<'_>,
        input: &Array,
        sink: &Arc<dyn crate::array::BlockSink>,
    ) -> Result<usize> {
        let op = TaskOp::Write {
            sink: sink.clone(),
            region: crate::array::block_region(input.chunks(), t.block),
        };
        self.one_input_task(t, input, op)
    }

    /// A task doing `op` to the same block of `input`.
    fn one_input_task(&mut self, t: Target<'_>, input: &Array, op: TaskOp) -> Result<usize> {
        let Target {
            block,
            bytes,
            backend,
            ..
        } = t;
        let dep = self.block_task(input, block)?;
        Ok(self.push(op, vec![dep], backend, bytes))
    }

    /// One block moved from the input's backend.
    fn transfer_task(&mut self, t: Target<'_>, input: &Array) -> Result<usize> {
        let op = TaskOp::Transfer {
            from: input.backend().clone(),
        };
        self.one_input_task(t, input, op)
    }

    /// Adds the nodes computing `map` of `a` to `pb`; stored/materialised inputs become leaves.
    fn fuse(
        &mut self,
        a: &Array,
        map: &IndexMap,
        pb: &mut ProgramBuilder,
        leaves: &mut Vec<usize>,
    ) -> Result<NodeId> {
        if !self.optimize && self.depth > 0 {
            return self.materialized(a, map, pb, leaves);
        }
        self.depth += 1;
        let r = self.fuse_op(a, map, pb, leaves);
        self.depth -= 1;
        r
    }

    /// One node of a fused program (its inputs through [`Self::fuse`]).
    fn fuse_op(
        &mut self,
        a: &Array,
        map: &IndexMap,
        pb: &mut ProgramBuilder,
        leaves: &mut Vec<usize>,
    ) -> Result<NodeId> {
        let shape = pb.shape().to_vec();
        match a.op() {
            Op::Const(s) => Ok(pb.constant(*s)),
            Op::Random(spec) => Ok(pb.random(*spec, map.clone())),
            Op::Iota { axis } => Ok(pb.index(map.clone(), *axis)),
            Op::Cast(x) => {
                let n = self.fuse(x, map, pb, leaves)?;
                Ok(pb.cast(n, a.dtype()))
            }
            Op::Unary(op, x) => {
                let n = self.fuse(x, map, pb, leaves)?;
                pb.unary(*op, n)
            }
            Op::Binary(op, x, y) => {
                let nx = self.fuse(x, map, pb, leaves)?;
                let ny = self.fuse(y, map, pb, leaves)?;
                pb.binary(*op, nx, ny)
            }
            Op::Where(c, x, y) => {
                let nc = self.fuse(c, map, pb, leaves)?;
                let nx = self.fuse(x, map, pb, leaves)?;
                let ny = self.fuse(y, map, pb, leaves)?;
                Ok(pb.where_(nc, nx, ny))
            }
            Op::View(x, maps) => {
                let inner = IndexMap {
                    src_shape: x.shape(),
                    axes: crate::program::AxisMap::compose(maps, &map.axes),
                };
                self.fuse(x, &inner, pb, leaves)
            }
            Op::Concat(inputs, axis) => {
                let (lo, _) = region(map, &shape)[*axis];
                let mut off = 0i64;
                for x in inputs {
                    let n = x.shape()[*axis] as i64;
                    if lo < off + n {
                        let mut m = map.clone();
                        m.src_shape = x.shape();
                        m.axes[*axis].start -= off;
                        return self.fuse(x, &m, pb, leaves);
                    }
                    off += n;
                }
                Err(Error::Internal(
                    "concatenate region outside every input".into(),
                ))
            }
            Op::BlockStart { like, axis } => {
                let k = map.axes[*axis].start as usize;
                Ok(pb.constant(Scalar::I64(like.offsets(*axis)[k] as i64)))
            }
            Op::BlockCount { like, axes } => {
                let n: usize = axes
                    .iter()
                    .map(|&ax| like.axis(ax)[map.axes[ax].start as usize])
                    .product();
                Ok(pb.constant(Scalar::F64(n as f64).cast(a.dtype())))
            }
            _ => self.materialized(a, map, pb, leaves),
        }
    }

    /// A materialisation point: the task of the one block of `a` that holds the region
    /// `map` reads, as an input of the program.
    fn materialized(
        &mut self,
        a: &Array,
        map: &IndexMap,
        pb: &mut ProgramBuilder,
        leaves: &mut Vec<usize>,
    ) -> Result<NodeId> {
        let shape = pb.shape().to_vec();
        let reg = region(map, &shape);
        let mut block = Vec::with_capacity(reg.len());
        let mut local = map.clone();
        for (ax, &(lo, hi)) in reg.iter().enumerate() {
            let offs = a.chunks().offsets(ax);
            let k = block_of(offs, lo);
            if shape.iter().all(|&s| s > 0) && (hi as usize) >= offs[k + 1] {
                return Err(Error::Internal(format!(
                    "fused region {lo}..={hi} on axis {ax} spans chunks {:?}",
                    offs
                )));
            }
            block.push(k);
            local.axes[ax].start -= offs[k] as i64;
        }
        local.src_shape = a.chunks().block_shape(&block);
        let t = self.block_task(a, &block)?;
        let slot = match leaves.iter().position(|&l| l == t) {
            Some(s) => s,
            None => {
                leaves.push(t);
                leaves.len() - 1
            }
        };
        Ok(pb.input(slot, a.dtype(), local))
    }
}

fn pb_node(pb: &ProgramBuilder, id: NodeId) -> PNode {
    pb.node(id).clone()
}
