//! Native execution of fused programs on the CPU.
//!
//! The output region is walked in C order in tiles of [`TILE`] elements. A tile is cut
//! into *runs* along the last axis; every leaf (stored input, random source, coordinate)
//! is an affine function of the output coordinates, so a run reads it at `base + j*inc`.
//! Each node is then evaluated for the whole tile with one tight loop per op (the op's
//! `match` is outside the loop), so there is no per-element dispatch and nothing larger
//! than a tile is ever allocated. A reduction epilogue folds each tile into accumulators
//! addressed by another affine form; an unreduced output is written straight out.
//!
//! Two things save whole passes over a tile. An operand that dies at a float `+ - * /`
//! takes the result into its own buffer (`in_place`). A float64 random source that the
//! program only shifts by a constant (`x + c`, `c + x`, `x - c`, as in the seed's
//! `(x + 1)[::2, ::2]`) is generated with the shift added (`Shifts`), the same addition
//! in the same order.
//!
//! Integer dtypes narrower than 64 bits compute in `i64` and are wrapped back to their
//! width after every op, which reproduces NumPy's modular arithmetic exactly.
//!
//! One file per step: [`tile`] (tiles, runs, affine reads), [`reads`] (leaves into tile
//! buffers), [`analysis`] (scalar constants, shifted random sources), [`elementwise`]
//! (the per-op tile kernels), [`in_place`] (arithmetic into a dying operand's buffer),
//! [`sinks`] (reduction accumulators, dense outputs), [`moments`] (one-pass sum and M2),
//! [`kernels`] (the SIMD-dispatched sums and the block kernels of the backend), [`dense`]
//! (float output ranges for streamed products); this file is the driver.

use tessera_core::chunks::numel;
use tessera_core::program::{check_moments, wrap_i64, IndexMap, Linear, Node, Program, ReduceOp};
use tessera_core::{DType, Error, HostArray, Result};

mod analysis;
mod dense;
mod elementwise;
mod in_place;
pub(crate) mod kernels;
mod moments;
mod reads;
mod sinks;
mod tile;

use analysis::{scalar_constants, Shifts};
use elementwise::{binary, binary_scalar, cast, select, unary};
use moments::MomentsSink;
use reads::{constant, gather, leaf_maps, Read};
use sinks::{dense_finish, ReduceSink, Sink};
use tile::{base, clone_buf, flat_run, inc, indices, reads_flat, runs_for, spans, Buf, TILE};

pub(crate) use dense::{DenseRanges, FloatOut};

/// Checks inputs against the program before running it.
fn validate(program: &Program, inputs: &[&HostArray]) -> Result<()> {
    if inputs.len() != program.num_inputs() {
        return Err(Error::Internal(format!(
            "program reads {} inputs, got {}",
            program.num_inputs(),
            inputs.len()
        )));
    }
    for (i, (h, d)) in inputs.iter().zip(&program.input_dtypes).enumerate() {
        if h.dtype() != *d {
            return Err(Error::dtype(
                "execute",
                h.dtype(),
                format!("input {i} must be {d}"),
            ));
        }
    }
    for n in &program.nodes {
        let (map, shape): (&IndexMap, Option<&[usize]>) = match n {
            Node::Input { slot, map } => (map, Some(inputs[*slot].shape())),
            Node::Random { map, .. } | Node::Index { map, .. } => (map, None),
            _ => continue,
        };
        if let Some(s) = shape {
            if map.src_shape != s {
                return Err(Error::Internal(format!(
                    "input map for shape {:?} applied to {:?}",
                    map.src_shape, s
                )));
            }
        }
        map.check(&program.shape)
            .map_err(|e| Error::Internal(format!("program leaf out of bounds: {e}")))?;
    }
    Ok(())
}

/// Runs a program over host inputs.
pub fn run(program: &Program, inputs: &[&HostArray]) -> Result<Vec<HostArray>> {
    validate(program, inputs)?;
    let shape = &program.shape;
    let new_sinks = || -> Vec<Sink> {
        program
            .outputs
            .iter()
            .map(|o| match &o.reduce {
                Some(r) => Sink::Reduce(ReduceSink::new(
                    r.op,
                    program.dtypes[o.node],
                    shape,
                    &r.axes,
                )),
                None => Sink::Dense {
                    dtype: program.dtypes[o.node],
                    data: Vec::new(),
                },
            })
            .collect()
    };
    let mergeable = program.outputs.iter().all(|o| {
        o.reduce.as_ref().is_none_or(|r| {
            matches!(
                r.op,
                ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Count | ReduceOp::Any | ReduceOp::All
            )
        })
    });
    Ok(drive(program, inputs, new_sinks, mergeable)?
        .into_iter()
        .map(|s| match s {
            Sink::Dense { dtype, data } => dense_finish(shape, dtype, data),
            Sink::Reduce(r) => r.finish(),
            Sink::Moments(m) => m.finish(),
        })
        .collect())
}

/// The packed sum and `M2` over `axes` of a program's one float output, in one pass over
/// its tiles ([`MomentsSink`]; the layout is `tessera_core::program::moments_shape`).
pub fn moments(program: &Program, inputs: &[&HostArray], axes: &[usize]) -> Result<HostArray> {
    validate(program, inputs)?;
    check_moments(program, axes)?;
    let dtype = program.dtypes[program.outputs[0].node];
    let new_sinks = || vec![Sink::Moments(MomentsSink::new(dtype, &program.shape, axes))];
    match drive(program, inputs, new_sinks, true)?.pop() {
        Some(Sink::Moments(m)) => Ok(m.finish()),
        _ => Err(Error::Internal("a moments run lost its accumulator".into())),
    }
}

/// Runs the program's tiles into the sinks `new_sinks` makes. A large chunk whose partial
/// results merge (`mergeable`) is cut into fixed segments (independent of the thread
/// count, so the result is too), run in parallel inside a rayon pool (the threaded
/// scheduler) and one after the other outside it; the partials merge in segment order.
fn drive(
    program: &Program,
    inputs: &[&HostArray],
    new_sinks: impl Fn() -> Vec<Sink> + Sync,
    mergeable: bool,
) -> Result<Vec<Sink>> {
    let total = numel(&program.shape);
    let lins = leaf_maps(program);
    let segment = SEGMENT_TILES * tile_len(&program.shape);
    let mut whole = new_sinks();
    // Every segment allocates all the accumulators and the merge folds them all, so
    // splitting pays only while they are few against a segment's elements. A reduction
    // that keeps most of its input (a short trailing axis summed: rolling windows) runs
    // as one segment; its chunk's neighbours keep the other workers busy.
    let partials: usize = whole.iter().map(Sink::accumulators).sum();
    if total <= segment || !mergeable || partials.saturating_mul(SPLIT_RATIO) > segment {
        run_range(program, inputs, &lins, 0, total, &mut whole)?;
        return Ok(whole);
    }
    drop(whole);
    let segments: Vec<(usize, usize)> = (0..total)
        .step_by(segment)
        .map(|s| (s, (s + segment).min(total)))
        .collect();
    let run_segment = |&(lo, hi): &(usize, usize)| -> Result<Vec<Sink>> {
        let mut sinks = new_sinks();
        run_range(program, inputs, &lins, lo, hi, &mut sinks)?;
        Ok(sinks)
    };
    let parts: Vec<Vec<Sink>> = if rayon::current_thread_index().is_some() {
        use rayon::prelude::*;
        segments
            .par_iter()
            .map(run_segment)
            .collect::<Result<_>>()?
    } else {
        segments.iter().map(run_segment).collect::<Result<_>>()?
    };
    let mut parts = parts.into_iter();
    let mut sinks = parts.next().unwrap_or_else(new_sinks);
    for part in parts {
        for (into, from) in sinks.iter_mut().zip(part) {
            into.merge(from);
        }
    }
    Ok(sinks)
}

/// Float tile buffers kept from one tile for the next one's random leaves and constants.
const SPARE_TILES: usize = 4;

thread_local! {
    /// The spare tile buffers of the last program this thread ran, handed to the next
    /// one: a task of a small chunk (100 × 100) then fills a buffer it finds instead of
    /// allocating and freeing one, which was a tenth of its cost.
    static SPARE: std::cell::RefCell<Vec<Vec<f64>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Tiles per segment when one large chunk is split across workers.
const SEGMENT_TILES: usize = 128;

/// A chunk is split only when its accumulators are at most a segment's elements over this.
const SPLIT_RATIO: usize = 8;

/// Elements per tile over a region of `shape`: an even number of whole rows when a row is
/// at most [`TILE`] long (at least two, so a tile may reach `2 TILE`), else [`TILE`]. Whole
/// rows keep a row's sum in one run; pairs of rows let a transposed strided random read
/// compute each Philox block once for the two rows that share it
/// (`RandomSpec::sample_runs_into`).
fn tile_len(shape: &[usize]) -> usize {
    let row = shape.last().copied().unwrap_or(1).max(1);
    if shape.len() < 2 || row > TILE {
        return TILE;
    }
    let rows = (TILE / row).max(2);
    (rows - rows % 2) * row
}

/// Runs the program's tiles over output elements `lo..hi` into `sinks`.
fn run_range(
    program: &Program,
    inputs: &[&HostArray],
    lins: &[Option<Linear>],
    lo: usize,
    hi: usize,
    sinks: &mut [Sink],
) -> Result<()> {
    let shape = &program.shape;
    let scalar = scalar_constants(program);
    // Leaves read in C order into outputs addressed in C order (dense outputs, and
    // reductions whose accumulators do not change along the tile, such as a reduction
    // over every axis): tiles need not be cut at row ends. A block of 100 × 100 is then
    // one run per tile instead of 100.
    let flat = shape.len() > 1
        && reads_flat(
            shape,
            lins.iter()
                .flatten()
                .chain(sinks.iter().flat_map(Sink::forms)),
        );
    let tile = tile_len(shape);
    let last = in_place::last_uses(program);
    let shifts = Shifts::of(program, &scalar);
    let mut spare: Vec<Vec<f64>> = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    let mut start = lo;
    while start < hi {
        let len = tile.min(hi - start);
        let runs = if flat {
            flat_run(shape, start, len)
        } else {
            runs_for(shape, start, len)
        };
        let mut vals: Vec<Buf> = Vec::with_capacity(program.nodes.len());
        for (i, node) in program.nodes.iter().enumerate() {
            // A shift its source already added as it was generated: take its tile.
            if let Some(&Some(source)) = shifts.from.get(i) {
                let v = std::mem::replace(&mut vals[source], Buf::B(Vec::new()));
                vals.push(v);
                continue;
            }
            let dtype = program.dtypes[i];
            let v = match node {
                Node::Input { slot, .. } => {
                    let lin = lins[i].as_ref().expect("leaf");
                    match runs.as_slice() {
                        [one] if inc(lin) == 1 => gather(
                            inputs[*slot],
                            Read::Range(base(lin, &one.coords) as usize, len),
                        ),
                        _ => gather(inputs[*slot], Read::At(&indices(lin, &runs, len))),
                    }
                }
                // Read as a scalar by its one kind of consumer: no tile to fill.
                Node::Const(_) if scalar[i] => Buf::B(Vec::new()),
                Node::Const(c) => constant(*c, len, &mut spare),
                Node::Random { spec, .. } if matches!(dtype, DType::F64 | DType::F32) => {
                    // Float samples by runs: a contiguous row computes each shared Philox
                    // block once.
                    // Into a tile buffer of an earlier tile: no allocation, no zeroing.
                    let mut v = spare.pop().unwrap_or_default();
                    v.resize(len, 0.0);
                    let spans = spans(lins[i].as_ref().expect("leaf"), &runs);
                    match shifts.plus.get(i).copied().flatten() {
                        Some(c) => spec.sample_runs_plus_into(&spans, c, &mut v),
                        None => spec.sample_runs_into(&spans, &mut v),
                    }
                    if dtype == DType::F64 {
                        Buf::F64(v)
                    } else {
                        Buf::F32(v.into_iter().map(|v| v as f32).collect())
                    }
                }
                Node::Random { spec, .. } => {
                    let idx = indices(lins[i].as_ref().expect("leaf"), &runs, len);
                    match dtype {
                        DType::U64 => Buf::U(
                            idx.iter()
                                .map(|&k| spec.sample_i64(k as u64) as u64)
                                .collect(),
                        ),
                        DType::Bool => Buf::B(
                            idx.iter()
                                .map(|&k| spec.sample_i64(k as u64) != 0)
                                .collect(),
                        ),
                        d => Buf::I(
                            idx.iter()
                                .map(|&k| wrap_i64(spec.sample_i64(k as u64), d))
                                .collect(),
                        ),
                    }
                }
                Node::Index { .. } => Buf::I(indices(lins[i].as_ref().expect("leaf"), &runs, len)),
                Node::Cast { x, to } => cast(&vals[*x], *to),
                Node::Unary { op, x } => unary(*op, &vals[*x], dtype),
                Node::Binary { op, a, b } => {
                    // The tile of an operand that dies here takes the result (in_place).
                    let mut take = |k: usize| {
                        (last[k] == i).then(|| std::mem::replace(&mut vals[k], Buf::B(Vec::new())))
                    };
                    match (&program.nodes[*a], &program.nodes[*b]) {
                        (_, Node::Const(c)) if scalar[*b] => match take(*a) {
                            Some(x) => {
                                in_place::scalar(*op, x, c.as_f64(), false).or_else(|x| {
                                    binary_scalar(*op, &x, *c, false, program.dtypes[*a])
                                })?
                            }
                            None => binary_scalar(*op, &vals[*a], *c, false, program.dtypes[*a])?,
                        },
                        (Node::Const(c), _) if scalar[*a] => match take(*b) {
                            Some(x) => in_place::scalar(*op, x, c.as_f64(), true).or_else(|x| {
                                binary_scalar(*op, &x, *c, true, program.dtypes[*b])
                            })?,
                            None => binary_scalar(*op, &vals[*b], *c, true, program.dtypes[*b])?,
                        },
                        _ if a != b => match take(*a) {
                            Some(x) => in_place::binary(*op, x, &vals[*b])
                                .or_else(|x| binary(*op, &x, &vals[*b], program.dtypes[*a]))?,
                            None => binary(*op, &vals[*a], &vals[*b], program.dtypes[*a])?,
                        },
                        _ => binary(*op, &vals[*a], &vals[*b], program.dtypes[*a])?,
                    }
                }
                Node::Where { cond, a, b } => select(&vals[*cond], &vals[*a], &vals[*b])?,
            };
            vals.push(v);
        }
        for (o, sink) in program.outputs.iter().zip(sinks.iter_mut()) {
            match sink {
                Sink::Dense { data, .. } => {
                    // Move the tile out when nothing else reads it; copy otherwise.
                    let v = std::mem::replace(&mut vals[o.node], Buf::B(Vec::new()));
                    let keep = program.outputs.iter().filter(|p| p.node == o.node).count() > 1;
                    if keep {
                        vals[o.node] = clone_buf(&v);
                    }
                    data.push(v);
                }
                Sink::Reduce(r) => r.consume(&vals[o.node], &runs),
                Sink::Moments(m) => m.consume(&vals[o.node], &runs),
            }
        }
        // Keep float tiles for the next tile's random leaves.
        for v in vals {
            if let Buf::F64(b) = v {
                if spare.len() < SPARE_TILES && b.capacity() >= len {
                    spare.push(b);
                }
            }
        }
        start += len;
    }
    SPARE.with(|s| *s.borrow_mut() = spare);
    Ok(())
}

#[cfg(test)]
mod tests {
    use ndarray::{ArrayD, IxDyn};
    use tessera_core::program::BinaryOp;

    use tessera_core::Scalar;

    use super::analysis::Shifts;

    use super::tile::reads_flat;
    use super::*;
    use tessera_core::program::{AxisMap, ProgramBuilder, Reduction};

    /// `x op c` and `c op x` through the scalar path equal the same ops on a filled
    /// constant tile, bit for bit, for specials included; and the constant that feeds
    /// them is never filled.
    #[test]
    fn scalar_constants_match_filled_tiles() {
        let xs = [
            1.5,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NAN,
            3.0e300,
            -7.25,
            1e-310,
        ];
        for dtype in [DType::F64, DType::F32] {
            for op in [BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div] {
                for left in [false, true] {
                    let mut pb = ProgramBuilder::new(&[xs.len()]);
                    let x = pb.input(0, dtype, IndexMap::identity(&[xs.len()]));
                    let c = pb.constant(Scalar::F64(-3.0).cast(dtype));
                    let y = if left {
                        pb.binary(op, c, x).unwrap()
                    } else {
                        pb.binary(op, x, c).unwrap()
                    };
                    let program = pb.finish(vec![(y, None)]).unwrap();
                    assert!(scalar_constants(&program)[c]);
                    let host =
                        HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[8]), xs.to_vec()).unwrap())
                            .cast(dtype);
                    let got = run(&program, &[&host]).unwrap().remove(0).to_f64_vec();
                    let tile = match dtype {
                        DType::F64 => Buf::F64(xs.to_vec()),
                        _ => Buf::F32(xs.iter().map(|&v| v as f32).collect()),
                    };
                    let k = constant(Scalar::F64(-3.0).cast(dtype), xs.len(), &mut Vec::new());
                    let (a, b) = if left { (&k, &tile) } else { (&tile, &k) };
                    let want = match binary(op, a, b, dtype).unwrap() {
                        Buf::F64(v) => v,
                        Buf::F32(v) => v.into_iter().map(f64::from).collect(),
                        _ => unreachable!("float arithmetic gives floats"),
                    };
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(
                            g.to_bits(),
                            w.to_bits(),
                            "{dtype} {} left={left}",
                            op.name()
                        );
                    }
                }
            }
        }
    }

    /// A map reading rows `r0..` of a 2-d source of `src` (every column, `step` rows at a
    /// time), or its transpose.
    fn rows_map(src: [usize; 2], r0: i64, step: i64, transposed: bool) -> IndexMap {
        let (ra, ca) = if transposed { (1, 0) } else { (0, 1) };
        IndexMap {
            src_shape: src.to_vec(),
            axes: vec![
                AxisMap {
                    start: r0,
                    step,
                    out_axis: Some(ra),
                },
                AxisMap {
                    start: 0,
                    step: 1,
                    out_axis: Some(ca),
                },
            ],
        }
    }

    /// Which reads make a tile one run: same-shape operands and whole-row slices do;
    /// steps, transposes and column slices do not.
    /// Tiles are an even number of whole rows when rows fit, and TILE elements otherwise.
    #[test]
    fn tiles_are_pairs_of_whole_rows() {
        assert_eq!(tile_len(&[1000, 1000]), 2000);
        assert_eq!(tile_len(&[10, 2048]), 4096);
        assert_eq!(tile_len(&[10, 600]), 1200);
        assert_eq!(tile_len(&[10, 100]), 2000);
        assert_eq!(tile_len(&[10, 3]), 2046);
        assert_eq!(tile_len(&[10, 4000]), TILE);
        assert_eq!(tile_len(&[100_000]), TILE);
        assert_eq!(tile_len(&[]), TILE);
    }

    /// A large chunk reduced over a short trailing axis (many accumulators: one
    /// segment) and over its long leading axis (few: split into segments, run in a pool)
    /// both give the sums computed by hand, in and out of a rayon pool.
    #[test]
    fn reductions_split_only_when_their_partials_are_small() {
        let (m, n) = (300_000, 7);
        let v: Vec<f64> = (0..m * n).map(|i| ((i * 31) % 97) as f64 - 48.0).collect();
        let h = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[m, n]), v.clone()).unwrap());
        assert!(
            m * n > SEGMENT_TILES * tile_len(&[m, n]),
            "the chunk must span segments"
        );
        let reduce = |axis: usize| {
            let mut pb = ProgramBuilder::new(&[m, n]);
            let x = pb.input(0, DType::F64, IndexMap::identity(&[m, n]));
            let red = Reduction {
                op: ReduceOp::Sum,
                axes: vec![axis],
            };
            pb.finish(vec![(x, Some(red))]).unwrap()
        };
        let rows: Vec<f64> = v.chunks(n).map(|r| r.iter().sum()).collect();
        let cols: Vec<f64> = (0..n).map(|j| (0..m).map(|i| v[i * n + j]).sum()).collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        for in_pool in [false, true] {
            let go = |p: &Program| {
                if in_pool {
                    pool.install(|| run(p, &[&h]))
                } else {
                    run(p, &[&h])
                }
                .unwrap()
                .remove(0)
                .to_f64_vec()
            };
            assert_eq!(go(&reduce(1)), rows);
            assert_eq!(go(&reduce(0)), cols);
        }
    }

    #[test]
    fn reads_flat_only_in_c_order() {
        let out = [6, 5];
        let lin = |m: &IndexMap| m.flat_linear(2);
        assert!(reads_flat(&out, [&lin(&IndexMap::identity(&out))]));
        assert!(reads_flat(&out, [&lin(&rows_map([10, 5], 3, 1, false))]));
        assert!(!reads_flat(&out, [&lin(&rows_map([12, 5], 0, 2, false))]));
        assert!(!reads_flat(&out, [&lin(&rows_map([5, 6], 0, 1, true))]));
        let mut cols = IndexMap::identity(&[6, 7]);
        cols.axes[1].start = 1;
        assert!(!reads_flat(&out, [&lin(&cols)]));
        // Size-1 axes do not matter.
        assert!(reads_flat(&[1, 5], [&lin(&rows_map([10, 5], 4, 3, false))]));
    }

    /// A dense program over whole-row slices gives the same elements as computed by hand,
    /// through tiles that cross row ends (the flat path), and a transposed operand beside
    /// one keeps row runs and still agrees.
    #[test]
    fn flat_tiles_match_elementwise_definitions() {
        let (m, n) = (700, 9); // 6,300 elements: four tiles, none aligned to rows
        let src: Vec<f64> = (0..(m + 5) * n).map(|i| i as f64 * 0.5).collect();
        let a = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[m + 5, n]), src).unwrap());
        let b = HostArray::F64(
            ArrayD::from_shape_vec(IxDyn(&[m, n]), (0..m * n).map(|i| -(i as f64)).collect())
                .unwrap(),
        );
        let t = HostArray::F64(
            ArrayD::from_shape_vec(IxDyn(&[n, m]), (0..m * n).map(|i| i as f64).collect()).unwrap(),
        );
        for transposed in [false, true] {
            let mut pb = ProgramBuilder::new(&[m, n]);
            let x = pb.input(0, DType::F64, rows_map([m + 5, n], 5, 1, false));
            let y = if transposed {
                pb.input(1, DType::F64, rows_map([n, m], 0, 1, true))
            } else {
                pb.input(1, DType::F64, IndexMap::identity(&[m, n]))
            };
            let z = pb.binary(BinaryOp::Add, x, y).unwrap();
            let program = pb.finish(vec![(z, None)]).unwrap();
            let second = if transposed { &t } else { &b };
            let got = run(&program, &[&a, second]).unwrap().remove(0).to_f64_vec();
            for i in 0..m {
                for j in 0..n {
                    let left = ((i + 5) * n + j) as f64 * 0.5;
                    let right = if transposed {
                        (j * m + i) as f64
                    } else {
                        -((i * n + j) as f64)
                    };
                    assert_eq!(
                        got[i * n + j],
                        left + right,
                        "({i}, {j}) transposed={transposed}"
                    );
                }
            }
        }
    }

    /// A constant that is also an output, or read by anything but arithmetic, is filled.
    #[test]
    fn constants_read_otherwise_are_filled() {
        let mut pb = ProgramBuilder::new(&[4]);
        let x = pb.input(0, DType::F64, IndexMap::identity(&[4]));
        let c = pb.constant(Scalar::F64(2.0));
        let y = pb.binary(BinaryOp::Pow, x, c).unwrap();
        let program = pb.finish(vec![(y, None)]).unwrap();
        assert!(!scalar_constants(&program)[c]);
        let mut pb = ProgramBuilder::new(&[4]);
        let x = pb.input(0, DType::F64, IndexMap::identity(&[4]));
        let c = pb.constant(Scalar::F64(2.0));
        let y = pb.binary(BinaryOp::Add, x, c).unwrap();
        let program = pb.finish(vec![(y, None), (c, None)]).unwrap();
        assert!(!scalar_constants(&program)[c]);
        let host = HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[4]), vec![1.0; 4]).unwrap());
        let outs = run(&program, &[&host]).unwrap();
        assert_eq!(outs[0].to_f64_vec(), vec![3.0; 4]);
        assert_eq!(outs[1].to_f64_vec(), vec![2.0; 4]);
    }

    /// A reduction over every axis (plain or arg) addresses its accumulators in C order,
    /// so its tiles may cross row ends; a reduction over some axes may not. Both agree
    /// with sums computed by hand through a transposed read (runs by rows) and a direct
    /// one (one run per tile).
    #[test]
    fn reductions_over_every_axis_tile_flat() {
        let shape = [300, 7];
        let flat = |op, axes: &[usize]| {
            let sink = Sink::Reduce(ReduceSink::new(op, DType::F64, &shape, axes));
            reads_flat(&shape, sink.forms())
        };
        assert!(flat(ReduceOp::Sum, &[0, 1]));
        assert!(flat(ReduceOp::ArgMax, &[0, 1]));
        assert!(!flat(ReduceOp::Sum, &[0]));
        assert!(!flat(ReduceOp::Sum, &[1]));
        let moments = Sink::Moments(MomentsSink::new(DType::F64, &shape, &[0, 1]));
        assert!(reads_flat(&shape, moments.forms()));

        let (m, n) = (shape[0], shape[1]);
        let direct = HostArray::F64(
            ArrayD::from_shape_vec(
                IxDyn(&[m, n]),
                (0..m * n).map(|i| (i % 11) as f64).collect(),
            )
            .unwrap(),
        );
        let t = HostArray::F64(
            ArrayD::from_shape_vec(
                IxDyn(&[n, m]),
                (0..m * n).map(|i| (i % 13) as f64).collect(),
            )
            .unwrap(),
        );
        for (transposed, host) in [(false, &direct), (true, &t)] {
            let value = |i: usize, j: usize| -> f64 {
                if transposed {
                    ((j * m + i) % 13) as f64
                } else {
                    ((i * n + j) % 11) as f64
                }
            };
            for axes in [vec![0, 1], vec![1]] {
                let mut pb = ProgramBuilder::new(&shape);
                let map = if transposed {
                    rows_map([n, m], 0, 1, true)
                } else {
                    IndexMap::identity(&shape)
                };
                let x = pb.input(0, DType::F64, map);
                let red = Reduction {
                    op: ReduceOp::Sum,
                    axes: axes.clone(),
                };
                let program = pb.finish(vec![(x, Some(red))]).unwrap();
                let got = run(&program, &[host]).unwrap().remove(0).to_f64_vec();
                if axes.len() == 2 {
                    let want: f64 = (0..m)
                        .flat_map(|i| (0..n).map(move |j| (i, j)))
                        .map(|(i, j)| value(i, j))
                        .sum();
                    assert_eq!(got, vec![want], "transposed={transposed}");
                } else {
                    let want: Vec<f64> =
                        (0..m).map(|i| (0..n).map(|j| value(i, j)).sum()).collect();
                    assert_eq!(got, want, "transposed={transposed}");
                }
            }
        }
    }

    /// A random source that a program only shifts is generated with the shift added
    /// (`Shifts`), with the bits of the separate pass; a source something else also
    /// reads, a float32 one and a product are computed as before. Every case is checked
    /// against `sample_f64` element by element, through a strided read.
    #[test]
    fn shifted_random_sources_match_the_separate_pass() {
        use tessera_core::random::{Distribution, RandomSpec};
        let shape = [40, 30];
        let map = rows_map([200, 90], 3, 2, false);
        let normal = |dtype| RandomSpec {
            seed: 9,
            stream: 1,
            dist: Distribution::Normal {
                mean: 10.0,
                std: 1.0,
            },
            dtype,
        };
        let global = |i: usize| {
            let (r, c) = (i / shape[1], i % shape[1]);
            ((3 + 2 * r) * 90 + c) as u64
        };
        type Case = (BinaryOp, bool, DType, bool);
        // (op, constant on the left, dtype, also an output of its own)
        let cases: [Case; 6] = [
            (BinaryOp::Add, false, DType::F64, false),
            (BinaryOp::Add, true, DType::F64, false),
            (BinaryOp::Sub, false, DType::F64, false),
            (BinaryOp::Sub, true, DType::F64, false),
            (BinaryOp::Add, false, DType::F32, false),
            (BinaryOp::Add, false, DType::F64, true),
        ];
        for (op, left, dtype, shared) in cases {
            let spec = normal(dtype);
            let mut pb = ProgramBuilder::new(&shape);
            let x = pb.random(spec, map.clone());
            let c = pb.constant(Scalar::F64(-2.5).cast(dtype));
            let y = if left {
                pb.binary(op, c, x).unwrap()
            } else {
                pb.binary(op, x, c).unwrap()
            };
            let mut outputs = vec![(y, None)];
            if shared {
                outputs.push((x, None));
            }
            let program = pb.finish(outputs).unwrap();
            let fused = Shifts::of(&program, &scalar_constants(&program)).from[y].is_some();
            let expect_fused = !left || op == BinaryOp::Add;
            assert_eq!(
                fused,
                expect_fused && dtype == DType::F64 && !shared,
                "{op:?} {left} {dtype}"
            );
            let got = run(&program, &[]).unwrap().remove(0).to_f64_vec();
            for (i, &g) in got.iter().enumerate() {
                let v = spec.sample_f64(global(i));
                let want = match (dtype, op, left) {
                    (DType::F32, _, _) => (v as f32 + -2.5f32) as f64,
                    (_, BinaryOp::Sub, false) => v - -2.5,
                    (_, BinaryOp::Sub, true) => -2.5 - v,
                    _ => v + -2.5,
                };
                assert_eq!(g.to_bits(), want.to_bits(), "{op:?} {left} {dtype} at {i}");
            }
        }
        // x * (x + 1): the source is read twice, so nothing is fused, and x is generated
        // once for both reads.
        let spec = normal(DType::F64);
        let mut pb = ProgramBuilder::new(&shape);
        let x = pb.random(spec, map.clone());
        let one = pb.constant(Scalar::F64(1.0));
        let y = pb.binary(BinaryOp::Add, x, one).unwrap();
        let z = pb.binary(BinaryOp::Mul, x, y).unwrap();
        let program = pb.finish(vec![(z, None)]).unwrap();
        assert!(Shifts::of(&program, &scalar_constants(&program))
            .from
            .iter()
            .all(Option::is_none));
        let got = run(&program, &[]).unwrap().remove(0).to_f64_vec();
        for (i, &g) in got.iter().enumerate() {
            let v = spec.sample_f64(global(i));
            assert_eq!(g.to_bits(), (v * (v + 1.0)).to_bits(), "x * (x + 1) at {i}");
        }
    }

    /// Tile buffers handed from one program to the next on a thread never leak values:
    /// a constant filled into a buffer a random tile left behind, at a shorter length,
    /// holds only the constant.
    #[test]
    fn reused_tile_buffers_hold_only_their_program_values() {
        let spec = tessera_core::random::RandomSpec {
            seed: 5,
            stream: 0,
            dist: tessera_core::random::Distribution::Normal {
                mean: 0.0,
                std: 1.0,
            },
            dtype: DType::F64,
        };
        let mut pb = ProgramBuilder::new(&[64, 64]);
        let r = pb.random(spec, IndexMap::identity(&[64, 64]));
        // r * r: the random tile is not the output's, so it is left spare.
        let sq = pb.binary(BinaryOp::Mul, r, r).unwrap();
        let random = pb.finish(vec![(sq, None)]).unwrap();
        for len in [3000, 17, 1] {
            run(&random, &[]).unwrap();
            let mut pb = ProgramBuilder::new(&[len]);
            let c = pb.constant(Scalar::F64(2.5));
            let program = pb.finish(vec![(c, None)]).unwrap();
            assert_eq!(run(&program, &[]).unwrap()[0].to_f64_vec(), vec![2.5; len]);
            let mut pb = ProgramBuilder::new(&[len]);
            let c = pb.constant(Scalar::F64(-1.0));
            let program = pb
                .finish(vec![(
                    c,
                    Some(Reduction {
                        op: ReduceOp::Sum,
                        axes: vec![0],
                    }),
                )])
                .unwrap();
            assert_eq!(
                run(&program, &[]).unwrap()[0].to_f64_vec(),
                vec![-(len as f64)]
            );
        }
    }
}
