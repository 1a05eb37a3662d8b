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

use ndarray::{ArrayD, IxDyn};
use tessera_core::chunks::{c_strides, numel};
use tessera_core::host::HostElement;
use tessera_core::program::{
    check_moments, wrap_i64, BinaryOp, IndexMap, Linear, Node, Program, ReduceOp, UnaryOp,
};
use tessera_core::random::RandomSpec;
use tessera_core::{DType, Error, HostArray, Result, Scalar};

use crate::in_place;
use crate::kernels;
use crate::moments::MomentsSink;

/// Elements per tile: small enough that a program's tile buffers stay in L1/L2.
pub const TILE: usize = 2048;

/// Values of one node over a tile, in the compute type of its dtype.
#[derive(Debug)]
pub(crate) enum Buf {
    B(Vec<bool>),
    I(Vec<i64>),
    U(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// A run of consecutive output elements along the last axis.
pub(crate) struct Run {
    /// Offset inside the tile.
    pub(crate) pos: usize,
    /// Output coordinates of the run's first element.
    pub(crate) coords: Coords,
    /// Length.
    pub(crate) len: usize,
}

/// Coordinates stored inline up to 8 dimensions: a tile has one run per row, and a heap
/// allocation per run was most of the per-task cost of small chunks.
#[derive(Clone)]
pub(crate) enum Coords {
    Inline([usize; 8], usize),
    Heap(Vec<usize>),
}

impl Coords {
    fn new(v: &[usize]) -> Coords {
        if v.len() <= 8 {
            let mut a = [0; 8];
            a[..v.len()].copy_from_slice(v);
            Coords::Inline(a, v.len())
        } else {
            Coords::Heap(v.to_vec())
        }
    }
}

impl std::ops::Deref for Coords {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        match self {
            Coords::Inline(a, n) => &a[..*n],
            Coords::Heap(v) => v,
        }
    }
}

/// A linear form's value at `coords`.
#[inline]
pub(crate) fn base(lin: &Linear, coords: &[usize]) -> i64 {
    lin.offset
        + lin
            .coef
            .iter()
            .zip(coords)
            .map(|(c, &x)| c * x as i64)
            .sum::<i64>()
}

/// A linear form's step along the last axis (along a run).
#[inline]
pub(crate) fn inc(lin: &Linear) -> i64 {
    lin.coef.last().copied().unwrap_or(0)
}

/// Every element index of the tile, in order, through a linear form.
/// A leaf's element runs `(first index, step, length)` for a tile's runs: how a random
/// source is sampled (`RandomSpec::sample_runs`).
fn spans(lin: &Linear, runs: &[Run]) -> Vec<(i64, i64, usize)> {
    runs.iter()
        .map(|r| (base(lin, &r.coords), inc(lin), r.len))
        .collect()
}

fn indices(lin: &Linear, runs: &[Run], n: usize) -> Vec<i64> {
    // Built by extension: no zero-fill before the values are written.
    let mut v = Vec::with_capacity(n);
    for r in runs {
        let (b, s) = (base(lin, &r.coords), inc(lin));
        v.extend((0..r.len as i64).map(|j| b + j * s));
    }
    debug_assert_eq!(v.len(), n);
    v
}

/// Whether every linear form reads the output's C order as one arithmetic progression
/// (coefficient `inc · stride` on every axis longer than 1): then a tile is one run
/// whatever rows it spans. A same-shape operand or a slice of whole rows is; a
/// transposed one or a column slice is not.
fn reads_flat<'a>(shape: &[usize], lins: impl IntoIterator<Item = &'a Linear>) -> bool {
    let strides = c_strides(shape);
    lins.into_iter().all(|lin| {
        let step = inc(lin);
        lin.coef
            .iter()
            .zip(&strides)
            .zip(shape)
            .all(|((&c, &s), &n)| n <= 1 || c == step * s as i64)
    })
}

/// The tile `start .. start + len` as one run (see [`reads_flat`]).
fn flat_run(shape: &[usize], start: usize, len: usize) -> Vec<Run> {
    let coords: Vec<usize> = c_strides(shape)
        .iter()
        .zip(shape)
        .map(|(&s, &n)| (start / s.max(1)) % n.max(1))
        .collect();
    vec![Run {
        pos: 0,
        coords: Coords::new(&coords),
        len,
    }]
}

fn runs_for(shape: &[usize], start: usize, len: usize) -> Vec<Run> {
    if shape.is_empty() {
        return vec![Run {
            pos: 0,
            coords: Coords::new(&[]),
            len: 1,
        }];
    }
    let strides = c_strides(shape);
    let mut coords: Vec<usize> = strides
        .iter()
        .zip(shape)
        .map(|(&s, &n)| (start / s) % n.max(1))
        .collect();
    let last = shape.len() - 1;
    // One run per row touched: at most len / row + 2.
    let mut runs = Vec::with_capacity(len / shape[last].max(1) + 2);
    let mut pos = 0;
    while pos < len {
        let l = (shape[last] - coords[last]).min(len - pos);
        runs.push(Run {
            pos,
            coords: Coords::new(&coords),
            len: l,
        });
        pos += l;
        coords[last] += l;
        let mut a = last;
        while coords[a] >= shape[a] && a > 0 {
            coords[a] = 0;
            a -= 1;
            coords[a] += 1;
        }
    }
    runs
}

/// Which elements of an input a tile reads.
enum Read<'a> {
    /// These flat indices, in order.
    At(&'a [i64]),
    /// `start .. start + len`, contiguous: copied, not gathered.
    Range(usize, usize),
}

/// The elements `read` names, widened into a tile buffer.
fn gather(h: &HostArray, read: Read<'_>) -> Buf {
    macro_rules! g {
        ($a:expr, $variant:ident, $conv:expr) => {{
            let s = $a.as_slice().expect("cpu chunks are C-contiguous");
            Buf::$variant(match read {
                Read::At(idx) => idx.iter().map(|&i| $conv(s[i as usize])).collect(),
                Read::Range(start, len) => {
                    s[start..start + len].iter().map(|&v| $conv(v)).collect()
                }
            })
        }};
    }
    match h {
        HostArray::Bool(a) => g!(a, B, |v: bool| v),
        HostArray::I8(a) => g!(a, I, |v: i8| v as i64),
        HostArray::I16(a) => g!(a, I, |v: i16| v as i64),
        HostArray::I32(a) => g!(a, I, |v: i32| v as i64),
        HostArray::I64(a) => g!(a, I, |v: i64| v),
        HostArray::U8(a) => g!(a, I, |v: u8| v as i64),
        HostArray::U16(a) => g!(a, I, |v: u16| v as i64),
        HostArray::U32(a) => g!(a, I, |v: u32| v as i64),
        HostArray::U64(a) => g!(a, U, |v: u64| v),
        HostArray::F32(a) => g!(a, F32, |v: f32| v),
        HostArray::F64(a) => g!(a, F64, |v: f64| v),
    }
}

/// A tile of `n` copies of `c`; a `float64` one fills a spare tile buffer when there is
/// one (see [`SPARE`]).
fn constant(c: Scalar, n: usize, spare: &mut Vec<Vec<f64>>) -> Buf {
    match c.dtype() {
        DType::Bool => Buf::B(vec![c.as_bool(); n]),
        DType::U64 => Buf::U(vec![c.as_u64(); n]),
        DType::F32 => Buf::F32(vec![c.as_f64() as f32; n]),
        DType::F64 => {
            let mut v = spare.pop().unwrap_or_default();
            v.clear();
            v.resize(n, c.as_f64());
            Buf::F64(v)
        }
        _ => Buf::I(vec![c.as_i64(); n]),
    }
}

fn cast(x: &Buf, to: DType) -> Buf {
    macro_rules! each {
        ($f:expr) => {
            match x {
                Buf::B(v) => v
                    .iter()
                    .map(|&b| $f(b as i64 as f64, b as i64, b as u64))
                    .collect(),
                Buf::I(v) => v.iter().map(|&i| $f(i as f64, i, i as u64)).collect(),
                Buf::U(v) => v.iter().map(|&u| $f(u as f64, u as i64, u)).collect(),
                Buf::F32(v) => v
                    .iter()
                    .map(|&f| $f(f as f64, f64_to_i64(f as f64), f64_to_u64(f as f64)))
                    .collect(),
                Buf::F64(v) => v
                    .iter()
                    .map(|&f| $f(f, f64_to_i64(f), f64_to_u64(f)))
                    .collect(),
            }
        };
    }
    match to {
        DType::Bool => Buf::B(match x {
            Buf::B(v) => v.clone(),
            Buf::I(v) => v.iter().map(|&i| i != 0).collect(),
            Buf::U(v) => v.iter().map(|&u| u != 0).collect(),
            Buf::F32(v) => v.iter().map(|&f| f != 0.0).collect(),
            Buf::F64(v) => v.iter().map(|&f| f != 0.0).collect(),
        }),
        DType::U64 => Buf::U(each!(|_f: f64, _i: i64, u: u64| u)),
        DType::F64 => Buf::F64(match x {
            Buf::F32(v) => v.iter().map(|&f| f as f64).collect(),
            _ => each!(|f: f64, _i: i64, _u: u64| f),
        }),
        DType::F32 => Buf::F32(match x {
            Buf::F64(v) => v.iter().map(|&f| f as f32).collect(),
            Buf::F32(v) => v.clone(),
            Buf::I(v) => v.iter().map(|&i| i as f32).collect(),
            Buf::U(v) => v.iter().map(|&u| u as f32).collect(),
            Buf::B(v) => v.iter().map(|&b| b as u8 as f32).collect(),
        }),
        d => Buf::I(each!(|_f: f64, i: i64, _u: u64| wrap_i64(i, d))),
    }
}

/// NumPy-on-x86 style float -> int: truncate toward zero, saturating at the i64 range.
#[inline]
fn f64_to_i64(f: f64) -> i64 {
    f as i64
}

/// Float -> u64: negatives go through i64 and wrap (as NumPy on x86-64 does).
#[inline]
fn f64_to_u64(f: f64) -> u64 {
    if f < 0.0 {
        (f as i64) as u64
    } else {
        f as u64
    }
}

fn unary(op: UnaryOp, x: &Buf, dtype: DType) -> Buf {
    let to_bool = matches!(op, UnaryOp::Not | UnaryOp::IsNan | UnaryOp::IsFinite);
    if to_bool {
        return Buf::B(match x {
            Buf::F64(v) => v.iter().map(|&f| op.apply_f64(f) != 0.0).collect(),
            Buf::F32(v) => v.iter().map(|&f| op.apply_f32(f) != 0.0).collect(),
            Buf::I(v) => v.iter().map(|&i| op.apply_i64(i) != 0).collect(),
            Buf::U(v) => v.iter().map(|&u| op.apply_u64(u) != 0).collect(),
            Buf::B(v) => v
                .iter()
                .map(|&b| match op {
                    UnaryOp::Not => !b,
                    UnaryOp::IsNan => false,
                    _ => true,
                })
                .collect(),
        });
    }
    match x {
        Buf::F64(v) => Buf::F64(match op {
            UnaryOp::Neg => v.iter().map(|&f| -f).collect(),
            UnaryOp::Abs => v.iter().map(|&f| f.abs()).collect(),
            UnaryOp::Sqrt => v.iter().map(|&f| f.sqrt()).collect(),
            _ => v.iter().map(|&f| op.apply_f64(f)).collect(),
        }),
        Buf::F32(v) => Buf::F32(v.iter().map(|&f| op.apply_f32(f)).collect()),
        Buf::I(v) => Buf::I(
            v.iter()
                .map(|&i| wrap_i64(op.apply_i64(i), dtype))
                .collect(),
        ),
        Buf::U(v) => Buf::U(v.iter().map(|&u| op.apply_u64(u)).collect()),
        Buf::B(v) => Buf::B(v.clone()),
    }
}

fn binary(op: BinaryOp, a: &Buf, b: &Buf, dtype: DType) -> Result<Buf> {
    macro_rules! zip {
        ($x:expr, $y:expr, $f:expr) => {
            $x.iter().zip($y.iter()).map(|(&p, &q)| $f(p, q)).collect()
        };
    }
    let cmp = op.is_comparison() || op.is_logical();
    Ok(match (a, b) {
        (Buf::F64(x), Buf::F64(y)) if cmp => Buf::B(zip!(x, y, |p, q| op.apply_f64(p, q) != 0.0)),
        (Buf::F32(x), Buf::F32(y)) if cmp => Buf::B(zip!(x, y, |p: f32, q: f32| op
            .apply_f64(p as f64, q as f64)
            != 0.0)),
        (Buf::I(x), Buf::I(y)) if cmp => Buf::B(zip!(x, y, |p, q| op.apply_i64(p, q) != 0)),
        (Buf::U(x), Buf::U(y)) if cmp => Buf::B(zip!(x, y, |p, q| op.apply_u64(p, q) != 0)),
        (Buf::B(x), Buf::B(y)) => {
            let f = |p: bool, q: bool| op.apply_i64(p as i64, q as i64) != 0;
            Buf::B(zip!(x, y, f))
        }
        (Buf::F64(x), Buf::F64(y)) => Buf::F64(match op {
            BinaryOp::Add => zip!(x, y, |p, q| p + q),
            BinaryOp::Sub => zip!(x, y, |p, q| p - q),
            BinaryOp::Mul => zip!(x, y, |p, q| p * q),
            BinaryOp::Div => zip!(x, y, |p, q| p / q),
            _ => zip!(x, y, |p, q| op.apply_f64(p, q)),
        }),
        (Buf::F32(x), Buf::F32(y)) => Buf::F32(match op {
            BinaryOp::Add => zip!(x, y, |p, q| p + q),
            BinaryOp::Sub => zip!(x, y, |p, q| p - q),
            BinaryOp::Mul => zip!(x, y, |p, q| p * q),
            BinaryOp::Div => zip!(x, y, |p, q| p / q),
            _ => zip!(x, y, |p, q| op.apply_f32(p, q)),
        }),
        (Buf::I(x), Buf::I(y)) => Buf::I(zip!(x, y, |p, q| wrap_i64(op.apply_i64(p, q), dtype))),
        (Buf::U(x), Buf::U(y)) => Buf::U(zip!(x, y, |p, q| op.apply_u64(p, q))),
        _ => {
            return Err(Error::Internal(format!(
                "{}: operands of different compute types",
                op.name()
            )))
        }
    })
}

/// Which nodes are constants read only as the scalar side of float arithmetic
/// (`x + 1`), so that `run_range` need not fill a tile with them.
fn scalar_constants(program: &Program) -> Vec<bool> {
    let arith = |op: BinaryOp| {
        matches!(
            op,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        )
    };
    let mut scalar: Vec<bool> = program
        .nodes
        .iter()
        .zip(&program.dtypes)
        .map(|(n, d)| matches!(n, Node::Const(_)) && matches!(d, DType::F64 | DType::F32))
        .collect();
    for n in &program.nodes {
        let mut reads = |x: usize, as_scalar: bool| {
            if !as_scalar {
                scalar[x] = false;
            }
        };
        match n {
            Node::Binary { op, a, b } => {
                // A constant on one side of arithmetic with a tile on the other.
                let one_const = matches!(program.nodes[*a], Node::Const(_))
                    != matches!(program.nodes[*b], Node::Const(_));
                reads(*a, arith(*op) && one_const);
                reads(*b, arith(*op) && one_const);
            }
            Node::Unary { x, .. } | Node::Cast { x, .. } => reads(*x, false),
            Node::Where { cond, a, b } => {
                reads(*cond, false);
                reads(*a, false);
                reads(*b, false);
            }
            _ => {}
        }
    }
    for o in &program.outputs {
        scalar[o.node] = false;
    }
    scalar
}

/// Float64 random sources that a program only shifts by a constant (`x + c`, `c + x`,
/// `x - c`, with nothing else reading `x`), such as the seed's `(x + 1)[::2, ::2]`.
/// `plus[i]` is the constant to add to source `i` as it is generated
/// (`RandomSpec::sample_runs_plus_into`, `-c` for `x - c`), and `from[j]` the source
/// whose tile the shift `j` then simply takes. The generator adds the same constant in the
/// same order, so the bits are those of the separate pass it saves. Both are empty for a
/// program without random sources.
struct Shifts {
    plus: Vec<Option<f64>>,
    from: Vec<Option<usize>>,
}

impl Shifts {
    fn of(program: &Program, scalar: &[bool]) -> Shifts {
        // Most programs have no random source: no allocation for them.
        if !program
            .nodes
            .iter()
            .any(|n| matches!(n, Node::Random { .. }))
        {
            return Shifts {
                plus: Vec::new(),
                from: Vec::new(),
            };
        }
        let n = program.nodes.len();
        let mut readers = vec![0usize; n];
        for k in program.nodes.iter().flat_map(in_place::operands) {
            readers[k] += 1;
        }
        for o in &program.outputs {
            readers[o.node] += 1;
        }
        let mut shifts = Shifts {
            plus: vec![None; n],
            from: vec![None; n],
        };
        for (j, node) in program.nodes.iter().enumerate() {
            let Node::Binary { op, a, b } = *node else {
                continue;
            };
            let (source, c) = match (op, &program.nodes[a], &program.nodes[b]) {
                (BinaryOp::Add, Node::Random { .. }, Node::Const(c)) if scalar[b] => {
                    (a, c.as_f64())
                }
                (BinaryOp::Add, Node::Const(c), Node::Random { .. }) if scalar[a] => {
                    (b, c.as_f64())
                }
                (BinaryOp::Sub, Node::Random { .. }, Node::Const(c)) if scalar[b] => {
                    (a, -c.as_f64())
                }
                _ => continue,
            };
            let float64 = program.dtypes[j] == DType::F64 && program.dtypes[source] == DType::F64;
            if float64 && readers[source] == 1 {
                shifts.plus[source] = Some(c);
                shifts.from[j] = Some(source);
            }
        }
        shifts
    }
}

/// `x op c` (or `c op x` when `scalar_left`) for float arithmetic with a constant: the
/// same values as [`binary`] on a filled tile, without the tile.
fn binary_scalar(op: BinaryOp, x: &Buf, c: Scalar, scalar_left: bool, dtype: DType) -> Result<Buf> {
    macro_rules! arith {
        ($v:expr, $c:expr) => {{
            let c = $c;
            match (op, scalar_left) {
                (BinaryOp::Add, false) => $v.iter().map(|&p| p + c).collect(),
                (BinaryOp::Add, true) => $v.iter().map(|&p| c + p).collect(),
                (BinaryOp::Sub, false) => $v.iter().map(|&p| p - c).collect(),
                (BinaryOp::Sub, true) => $v.iter().map(|&p| c - p).collect(),
                (BinaryOp::Mul, false) => $v.iter().map(|&p| p * c).collect(),
                (BinaryOp::Mul, true) => $v.iter().map(|&p| c * p).collect(),
                (BinaryOp::Div, false) => $v.iter().map(|&p| p / c).collect(),
                (BinaryOp::Div, true) => $v.iter().map(|&p| c / p).collect(),
                _ => {
                    return Err(Error::Internal(format!(
                        "{}: not a scalar arithmetic op",
                        op.name()
                    )))
                }
            }
        }};
    }
    // `scalar_constants` marks only float constants beside a tile of their dtype.
    Ok(match (x, dtype) {
        (Buf::F64(v), DType::F64) => Buf::F64(arith!(v, c.as_f64())),
        (Buf::F32(v), DType::F32) => Buf::F32(arith!(v, c.as_f64() as f32)),
        _ => {
            return Err(Error::Internal(format!(
                "{}: a scalar {dtype} constant beside a tile of another type",
                op.name()
            )))
        }
    })
}

fn select(c: &Buf, a: &Buf, b: &Buf) -> Result<Buf> {
    let Buf::B(c) = c else {
        return Err(Error::Internal("where: condition is not bool".into()));
    };
    macro_rules! sel {
        ($v:ident, $x:expr, $y:expr) => {
            Buf::$v(
                c.iter()
                    .zip($x.iter().zip($y.iter()))
                    .map(|(&k, (&p, &q))| if k { p } else { q })
                    .collect(),
            )
        };
    }
    Ok(match (a, b) {
        (Buf::B(x), Buf::B(y)) => sel!(B, x, y),
        (Buf::I(x), Buf::I(y)) => sel!(I, x, y),
        (Buf::U(x), Buf::U(y)) => sel!(U, x, y),
        (Buf::F32(x), Buf::F32(y)) => sel!(F32, x, y),
        (Buf::F64(x), Buf::F64(y)) => sel!(F64, x, y),
        _ => {
            return Err(Error::Internal(
                "where: branches of different compute types".into(),
            ))
        }
    })
}

/// Reduction accumulators, in the widest type of the input's kind.
enum Acc {
    F(Vec<f64>),
    I(Vec<i64>),
    U(Vec<u64>),
}

/// For a reduction of a region of `shape` over `axes`: the reduced shape (those axes of
/// length 1), the C-order index in it of each element's accumulator, and each element's
/// C-order position among the elements it is reduced with, as linear forms.
pub(crate) fn reduce_target(shape: &[usize], axes: &[usize]) -> (Vec<usize>, Linear, Linear) {
    let mut out_shape = shape.to_vec();
    for &a in axes {
        out_shape[a] = 1;
    }
    let ostr = c_strides(&out_shape);
    let rshape: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let rstr = c_strides(&rshape);
    let mut target = Linear {
        offset: 0,
        coef: vec![0; shape.len()],
    };
    let mut pos = target.clone();
    for (a, &os) in ostr.iter().enumerate() {
        if let Some(k) = axes.iter().position(|&x| x == a) {
            pos.coef[a] = rstr[k] as i64;
        } else {
            target.coef[a] = os as i64;
        }
    }
    (out_shape, target, pos)
}

struct ReduceSink {
    op: ReduceOp,
    input: DType,
    target: Linear,
    pos: Linear,
    acc: Acc,
    index: Vec<i64>,
    seen: Vec<bool>,
    out_shape: Vec<usize>,
}

enum Sink {
    Dense { dtype: DType, data: Vec<Buf> },
    Reduce(ReduceSink),
    Moments(MomentsSink),
}

impl Sink {
    /// The linear forms addressing the sink's accumulators along a run (none for a dense
    /// output, which is written in C order).
    fn forms(&self) -> Vec<&Linear> {
        match self {
            Sink::Dense { .. } => Vec::new(),
            Sink::Reduce(r) => vec![&r.target, &r.pos],
            Sink::Moments(m) => vec![m.target()],
        }
    }

    /// Appends the partial result of the next segment (see `drive`: only sums, counts,
    /// any, all and moments are split, whose partials combine by `+`, `|`, `&` and Chan's
    /// update).
    fn merge(&mut self, next: Sink) {
        match (self, next) {
            (Sink::Dense { data, .. }, Sink::Dense { data: more, .. }) => data.extend(more),
            (Sink::Reduce(a), Sink::Reduce(b)) => a.merge(b),
            (Sink::Moments(a), Sink::Moments(b)) => a.merge(b),
            _ => unreachable!("segments have the same sinks"),
        }
    }
}

impl ReduceSink {
    fn new(op: ReduceOp, input: DType, shape: &[usize], axes: &[usize]) -> ReduceSink {
        let (out_shape, target, pos) = reduce_target(shape, axes);
        let n = numel(&out_shape);
        let float = input.is_float();
        let arg = matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax);
        let init_f = match op {
            ReduceOp::Prod => 1.0,
            ReduceOp::Min => f64::INFINITY,
            ReduceOp::Max => f64::NEG_INFINITY,
            _ => 0.0,
        };
        let init_i = match op {
            ReduceOp::Prod | ReduceOp::All => 1,
            ReduceOp::Min => i64::MAX,
            ReduceOp::Max => i64::MIN,
            _ => 0,
        };
        let acc = if float && !matches!(op, ReduceOp::Any | ReduceOp::All | ReduceOp::Count) {
            Acc::F(vec![init_f; n])
        } else if input == DType::U64
            && !matches!(op, ReduceOp::Any | ReduceOp::All | ReduceOp::Count)
        {
            Acc::U(vec![
                match op {
                    ReduceOp::Prod => 1,
                    ReduceOp::Min => u64::MAX,
                    _ => 0,
                };
                n
            ])
        } else {
            Acc::I(vec![init_i; n])
        };
        ReduceSink {
            op,
            input,
            target,
            pos,
            acc,
            // Only the arg-reductions track positions; a calloc per task was visible in
            // the per-task overhead of small chunks.
            index: if arg { vec![0; n] } else { Vec::new() },
            seen: if arg { vec![false; n] } else { Vec::new() },
            out_shape,
        }
    }

    fn consume(&mut self, buf: &Buf, runs: &[Run]) {
        let op = self.op;
        for r in runs {
            let (t0, ti) = (base(&self.target, &r.coords), inc(&self.target));
            if ti == 0 && self.fold_run(t0 as usize, buf, r.pos, r.len) {
                continue;
            }
            let (p0, pi) = (base(&self.pos, &r.coords), inc(&self.pos));
            for j in 0..r.len {
                let t = (t0 + ti * j as i64) as usize;
                let p = p0 + pi * j as i64;
                let k = r.pos + j;
                match &mut self.acc {
                    Acc::F(acc) => {
                        let v = match buf {
                            Buf::F64(x) => x[k],
                            Buf::F32(x) => x[k] as f64,
                            _ => unreachable!("float accumulators take float buffers"),
                        };
                        let a = &mut acc[t];
                        match op {
                            ReduceOp::Sum => *a += v,
                            ReduceOp::NanSum => {
                                if !v.is_nan() {
                                    *a += v
                                }
                            }
                            ReduceOp::Prod => *a *= v,
                            ReduceOp::Min | ReduceOp::Max => {
                                if v.is_nan() || a.is_nan() {
                                    *a = f64::NAN;
                                } else if (op == ReduceOp::Min) == (v < *a) && v != *a {
                                    *a = v;
                                }
                            }
                            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                                let seen = &mut self.seen[t];
                                if !*seen {
                                    *seen = true;
                                    *a = v;
                                    self.index[t] = p;
                                } else if !a.is_nan()
                                    && (v.is_nan()
                                        || if op == ReduceOp::ArgMin {
                                            v < *a
                                        } else {
                                            v > *a
                                        })
                                {
                                    *a = v;
                                    self.index[t] = p;
                                }
                            }
                            _ => unreachable!("any/all/count use integer accumulators"),
                        }
                    }
                    Acc::I(acc) => {
                        let (v, nan) = match buf {
                            Buf::I(x) => (x[k], false),
                            Buf::B(x) => (x[k] as i64, false),
                            Buf::U(x) => ((x[k] != 0) as i64, false),
                            Buf::F64(x) => ((x[k] != 0.0) as i64, x[k].is_nan()),
                            Buf::F32(x) => ((x[k] != 0.0) as i64, x[k].is_nan()),
                        };
                        let a = &mut acc[t];
                        match op {
                            ReduceOp::Sum | ReduceOp::NanSum => *a = a.wrapping_add(v),
                            ReduceOp::Prod => *a = a.wrapping_mul(v),
                            ReduceOp::Min => *a = (*a).min(v),
                            ReduceOp::Max => *a = (*a).max(v),
                            ReduceOp::Any => *a |= (v != 0) as i64,
                            ReduceOp::All => *a &= (v != 0) as i64,
                            ReduceOp::Count => *a += (!nan) as i64,
                            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                                let seen = &mut self.seen[t];
                                if !*seen
                                    || (if op == ReduceOp::ArgMin {
                                        v < *a
                                    } else {
                                        v > *a
                                    })
                                {
                                    *seen = true;
                                    *a = v;
                                    self.index[t] = p;
                                }
                            }
                        }
                    }
                    Acc::U(acc) => {
                        let Buf::U(x) = buf else {
                            unreachable!("u64 accumulators take u64 buffers")
                        };
                        let v = x[k];
                        let a = &mut acc[t];
                        match op {
                            ReduceOp::Sum | ReduceOp::NanSum => *a = a.wrapping_add(v),
                            ReduceOp::Prod => *a = a.wrapping_mul(v),
                            ReduceOp::Min => *a = (*a).min(v),
                            ReduceOp::Max => *a = (*a).max(v),
                            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                                let seen = &mut self.seen[t];
                                if !*seen
                                    || (if op == ReduceOp::ArgMin {
                                        v < *a
                                    } else {
                                        v > *a
                                    })
                                {
                                    *seen = true;
                                    *a = v;
                                    self.index[t] = p;
                                }
                            }
                            _ => unreachable!("any/all/count use integer accumulators"),
                        }
                    }
                }
            }
        }
    }

    /// Folds the partial accumulators of a later segment into these.
    fn merge(&mut self, other: ReduceSink) {
        let op = self.op;
        match (&mut self.acc, other.acc) {
            (Acc::F(a), Acc::F(b)) => a.iter_mut().zip(b).for_each(|(x, y)| *x += y),
            (Acc::U(a), Acc::U(b)) => a
                .iter_mut()
                .zip(b)
                .for_each(|(x, y)| *x = x.wrapping_add(y)),
            (Acc::I(a), Acc::I(b)) => a.iter_mut().zip(b).for_each(|(x, y)| {
                *x = match op {
                    ReduceOp::Any => *x | y,
                    ReduceOp::All => *x & y,
                    _ => x.wrapping_add(y),
                }
            }),
            _ => unreachable!("segments have the same accumulators"),
        }
    }

    /// Fast path for a run whose elements all fold into one accumulator (`t`): a sum or
    /// count over a contiguous slice of the tile, in tight loops the compiler vectorises
    /// (float sums use eight partial sums, combined pairwise). Returns false when the
    /// combination of op and buffer has no fast path.
    fn fold_run(&mut self, t: usize, buf: &Buf, pos: usize, len: usize) -> bool {
        let range = pos..pos + len;
        match (&mut self.acc, buf, self.op) {
            (Acc::F(acc), Buf::F64(x), ReduceOp::Sum) => {
                acc[t] += kernels::sum_plain_f64(&x[range]);
            }
            (Acc::F(acc), Buf::F64(x), ReduceOp::NanSum) => {
                acc[t] += kernels::sum_f64(&x[range], |v| if v.is_nan() { 0.0 } else { v });
            }
            (Acc::F(acc), Buf::F32(x), ReduceOp::Sum) => {
                acc[t] += kernels::sum_f32(&x[range], |v| v as f64);
            }
            (Acc::F(acc), Buf::F32(x), ReduceOp::NanSum) => {
                acc[t] += kernels::sum_f32(&x[range], |v| if v.is_nan() { 0.0 } else { v as f64 });
            }
            (Acc::I(acc), Buf::I(x), ReduceOp::Sum | ReduceOp::NanSum) => {
                acc[t] = x[range].iter().fold(acc[t], |a, &v| a.wrapping_add(v));
            }
            (Acc::I(acc), Buf::B(x), ReduceOp::Sum | ReduceOp::NanSum) => {
                acc[t] += x[range].iter().map(|&v| v as i64).sum::<i64>();
            }
            (Acc::I(acc), Buf::F64(x), ReduceOp::Count) => {
                acc[t] += x[range].iter().filter(|v| !v.is_nan()).count() as i64;
            }
            _ => return false,
        }
        true
    }

    fn finish(self) -> HostArray {
        let shape = IxDyn(&self.out_shape);
        let out = self.op.result_dtype(self.input);
        if matches!(self.op, ReduceOp::ArgMin | ReduceOp::ArgMax) {
            return HostArray::I64(ArrayD::from_shape_vec(shape, self.index).expect("sized"));
        }
        let scalars: Vec<Scalar> = match self.acc {
            Acc::F(v) => v.into_iter().map(Scalar::F64).collect(),
            Acc::I(v) => v.into_iter().map(Scalar::I64).collect(),
            Acc::U(v) => v.into_iter().map(Scalar::U64).collect(),
        };
        from_scalars(&self.out_shape, out, scalars)
    }
}

fn from_scalars(shape: &[usize], dtype: DType, vals: Vec<Scalar>) -> HostArray {
    fn go<T: HostElement>(shape: &[usize], vals: Vec<Scalar>) -> HostArray {
        T::wrap(
            ArrayD::from_shape_vec(IxDyn(shape), vals.into_iter().map(T::from_scalar).collect())
                .expect("sized"),
        )
    }
    match dtype {
        DType::Bool => go::<bool>(shape, vals),
        DType::I8 => go::<i8>(shape, vals),
        DType::I16 => go::<i16>(shape, vals),
        DType::I32 => go::<i32>(shape, vals),
        DType::I64 => go::<i64>(shape, vals),
        DType::U8 => go::<u8>(shape, vals),
        DType::U16 => go::<u16>(shape, vals),
        DType::U32 => go::<u32>(shape, vals),
        DType::U64 => go::<u64>(shape, vals),
        DType::F32 => go::<f32>(shape, vals),
        DType::F64 => go::<f64>(shape, vals),
    }
}

fn dense_finish(shape: &[usize], dtype: DType, tiles: Vec<Buf>) -> HostArray {
    let sh = IxDyn(shape);
    macro_rules! cat {
        ($v:ident) => {{
            let mut all = Vec::with_capacity(numel(shape));
            for t in tiles {
                if let Buf::$v(x) = t {
                    all.extend(x);
                }
            }
            all
        }};
    }
    match dtype {
        DType::Bool => HostArray::Bool(ArrayD::from_shape_vec(sh, cat!(B)).expect("sized")),
        DType::U64 => HostArray::U64(ArrayD::from_shape_vec(sh, cat!(U)).expect("sized")),
        DType::F32 => HostArray::F32(ArrayD::from_shape_vec(sh, cat!(F32)).expect("sized")),
        DType::F64 => HostArray::F64(ArrayD::from_shape_vec(sh, cat!(F64)).expect("sized")),
        DType::I64 => HostArray::I64(ArrayD::from_shape_vec(sh, cat!(I)).expect("sized")),
        d => {
            let v: Vec<Scalar> = cat!(I)
                .into_iter()
                .map(|i| Scalar::from_i64_wrapping(i, d))
                .collect();
            from_scalars(shape, d, v)
        }
    }
}

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

/// The linear maps of a program's leaves (inputs, random sources, index sources), by
/// node: what running any range of its elements needs.
fn leaf_maps(program: &Program) -> Vec<Option<Linear>> {
    let ndim = program.shape.len();
    program
        .nodes
        .iter()
        .map(|n| match n {
            Node::Input { map, .. } | Node::Random { map, .. } => Some(map.flat_linear(ndim)),
            Node::Index { map, axis } => Some(map.axis_linear(*axis, ndim)),
            _ => None,
        })
        .collect()
}

/// A float type a program's dense output can be read back as.
pub(crate) trait FloatOut: Sized + Copy {
    /// Zero, to size a buffer.
    const ZERO: Self;
    /// The tile's values when it holds this type.
    fn from_buf(b: Buf) -> Option<Vec<Self>>;
    /// The elements of `runs` of a float random source, straight into `out`.
    fn generate(spec: &RandomSpec, runs: &[(i64, i64, usize)], out: &mut [Self]);
}
impl FloatOut for f64 {
    const ZERO: f64 = 0.0;
    fn from_buf(b: Buf) -> Option<Vec<f64>> {
        match b {
            Buf::F64(v) => Some(v),
            _ => None,
        }
    }
    fn generate(spec: &RandomSpec, runs: &[(i64, i64, usize)], out: &mut [f64]) {
        spec.sample_runs_into(runs, out);
    }
}
impl FloatOut for f32 {
    const ZERO: f32 = 0.0;
    fn from_buf(b: Buf) -> Option<Vec<f32>> {
        match b {
            Buf::F32(v) => Some(v),
            _ => None,
        }
    }
    fn generate(spec: &RandomSpec, runs: &[(i64, i64, usize)], out: &mut [f32]) {
        // f32 specs produce f32 values widened exactly, so the narrowing is exact.
        for (o, v) in out.iter_mut().zip(spec.sample_runs(runs)) {
            *o = v as f32;
        }
    }
}

/// A program with one dense float output, checked against its inputs once and then run
/// over any range of its elements (the streaming matmul's bands of rows).
pub(crate) struct DenseRanges<'a> {
    program: &'a Program,
    inputs: &'a [&'a HostArray],
    lins: Vec<Option<Linear>>,
    /// The source when the program is nothing but a float random source (a random
    /// matrix): its values are generated straight into the caller's buffer. With it,
    /// whether it reads in C order ([`reads_flat`]): then any range is one run.
    generator: Option<(&'a RandomSpec, Linear, bool)>,
}

impl<'a> DenseRanges<'a> {
    /// Checks `program` against `inputs` and that its one output is dense.
    pub(crate) fn new(program: &'a Program, inputs: &'a [&'a HostArray]) -> Result<Self> {
        validate(program, inputs)?;
        if program.outputs.len() != 1 || program.outputs[0].reduce.is_some() {
            return Err(Error::Internal(
                "a streamed operand program must have one dense output".into(),
            ));
        }
        let lins = leaf_maps(program);
        let output = program.outputs[0].node;
        let generator = match (&program.nodes[output], &lins[output]) {
            (Node::Random { spec, .. }, Some(lin))
                if matches!(program.dtypes[output], DType::F64 | DType::F32) =>
            {
                Some((spec, lin.clone(), reads_flat(&program.shape, [lin])))
            }
            _ => None,
        };
        Ok(DenseRanges {
            program,
            inputs,
            lins,
            generator,
        })
    }

    /// Output elements `lo..hi` (C order) into `out`, replacing its contents.
    pub(crate) fn fill<T: FloatOut>(&self, lo: usize, hi: usize, out: &mut Vec<T>) -> Result<()> {
        if let Some((spec, lin, flat)) = &self.generator {
            out.resize(hi - lo, T::ZERO);
            let shape = &self.program.shape;
            if *flat {
                // The whole range is one run of the source.
                let runs = flat_run(shape, lo, hi - lo);
                T::generate(spec, &spans(lin, &runs), out);
                return Ok(());
            }
            // Tile by tile, as `run_range` would, but into `out` without a copy.
            let tile = tile_len(shape);
            let mut start = lo;
            while start < hi {
                let len = tile.min(hi - start);
                let runs = runs_for(shape, start, len);
                T::generate(
                    spec,
                    &spans(lin, &runs),
                    &mut out[start - lo..start - lo + len],
                );
                start += len;
            }
            return Ok(());
        }
        let mut sinks = vec![Sink::Dense {
            dtype: self.program.output_dtype(0),
            data: Vec::new(),
        }];
        run_range(self.program, self.inputs, &self.lins, lo, hi, &mut sinks)?;
        out.clear();
        if let Some(Sink::Dense { data, .. }) = sinks.pop() {
            for tile in data {
                let v = T::from_buf(tile).ok_or_else(|| {
                    Error::Internal("a streamed operand's tiles have another dtype".into())
                })?;
                out.extend(v);
            }
        }
        Ok(())
    }
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
    if total <= segment || !mergeable {
        let mut sinks = new_sinks();
        run_range(program, inputs, &lins, 0, total, &mut sinks)?;
        return Ok(sinks);
    }
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

fn clone_buf(b: &Buf) -> Buf {
    match b {
        Buf::B(v) => Buf::B(v.clone()),
        Buf::I(v) => Buf::I(v.clone()),
        Buf::U(v) => Buf::U(v.clone()),
        Buf::F32(v) => Buf::F32(v.clone()),
        Buf::F64(v) => Buf::F64(v.clone()),
    }
}

#[cfg(test)]
mod tests {
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
