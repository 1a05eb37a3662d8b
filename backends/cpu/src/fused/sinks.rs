//! Where a tile's outputs go: reduction accumulators addressed by an affine form (folded
//! tile by tile, then finished into the reduced array), or dense output tiles.

use ndarray::{ArrayD, IxDyn};
use tessera_core::chunks::numel;
use tessera_core::program::{Linear, ReduceOp};
use tessera_core::{DType, HostArray, Scalar};

use super::kernels;
use super::moments::MomentsSink;
use super::tile::{base, inc, reduce_target, Buf, Run};

/// Reduction accumulators, in the widest type of the input's kind.
pub(crate) enum Acc {
    F(Vec<f64>),
    I(Vec<i64>),
    U(Vec<u64>),
}

pub(crate) struct ReduceSink {
    op: ReduceOp,
    input: DType,
    target: Linear,
    pos: Linear,
    acc: Acc,
    index: Vec<i64>,
    seen: Vec<bool>,
    out_shape: Vec<usize>,
}

pub(crate) enum Sink {
    Dense { dtype: DType, data: Vec<Buf> },
    Reduce(ReduceSink),
    Moments(MomentsSink),
}

impl Sink {
    /// The linear forms addressing the sink's accumulators along a run (none for a dense
    /// output, which is written in C order).
    pub(crate) fn forms(&self) -> Vec<&Linear> {
        match self {
            Sink::Dense { .. } => Vec::new(),
            Sink::Reduce(r) => vec![&r.target, &r.pos],
            Sink::Moments(m) => vec![m.target()],
        }
    }

    /// How many accumulators the sink holds (none for a dense output): what every
    /// segment's partial allocates and the merge folds (see `drive`).
    pub(crate) fn accumulators(&self) -> usize {
        match self {
            Sink::Dense { .. } => 0,
            Sink::Reduce(r) => match &r.acc {
                Acc::F(a) => a.len(),
                Acc::I(a) => a.len(),
                Acc::U(a) => a.len(),
            },
            Sink::Moments(m) => m.accumulators(),
        }
    }

    /// Appends the partial result of the next segment (see `drive`: only sums, counts,
    /// any, all and moments are split, whose partials combine by `+`, `|`, `&` and Chan's
    /// update).
    pub(crate) fn merge(&mut self, next: Sink) {
        match (self, next) {
            (Sink::Dense { data, .. }, Sink::Dense { data: more, .. }) => data.extend(more),
            (Sink::Reduce(a), Sink::Reduce(b)) => a.merge(b),
            (Sink::Moments(a), Sink::Moments(b)) => a.merge(b),
            _ => unreachable!("segments have the same sinks"),
        }
    }
}

impl ReduceSink {
    pub(crate) fn new(op: ReduceOp, input: DType, shape: &[usize], axes: &[usize]) -> ReduceSink {
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

    pub(crate) fn consume(&mut self, buf: &Buf, runs: &[Run]) {
        let op = self.op;
        for r in runs {
            let (t0, ti) = (base(&self.target, &r.coords), inc(&self.target));
            if ti == 0 && self.fold_run(t0 as usize, buf, r.pos, r.len) {
                continue;
            }
            if ti == 1 && self.fold_lanes(t0 as usize, buf, r.pos, r.len) {
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
    pub(crate) fn merge(&mut self, other: ReduceSink) {
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
    pub(crate) fn fold_run(&mut self, t: usize, buf: &Buf, pos: usize, len: usize) -> bool {
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

    /// Folds a run whose elements each go to their own accumulator, `t..t + len` (a
    /// reduction over a leading axis: the run lies along a kept axis), element by element
    /// in a loop the compiler vectorises. Each accumulator sees its elements in the same
    /// order as in the general loop of `consume`, so the results are the same bits.
    /// Returns false for the combinations it does not cover.
    pub(crate) fn fold_lanes(&mut self, t: usize, buf: &Buf, pos: usize, len: usize) -> bool {
        fn lanes<A, V: Copy>(acc: &mut [A], x: &[V], f: impl Fn(&mut A, V)) {
            for (a, &v) in acc.iter_mut().zip(x) {
                f(a, v);
            }
        }
        fn min_max(a: &mut f64, v: f64, min: bool) {
            if v.is_nan() || a.is_nan() {
                *a = f64::NAN;
            } else if (min && v < *a) || (!min && v > *a) {
                *a = v;
            }
        }
        let (x, a) = (pos..pos + len, t..t + len);
        let min = self.op == ReduceOp::Min;
        match (&mut self.acc, buf, self.op) {
            (Acc::F(acc), Buf::F64(v), ReduceOp::Sum) => lanes(&mut acc[a], &v[x], |a, v| *a += v),
            (Acc::F(acc), Buf::F32(v), ReduceOp::Sum) => {
                lanes(&mut acc[a], &v[x], |a, v| *a += v as f64)
            }
            (Acc::F(acc), Buf::F64(v), ReduceOp::NanSum) => lanes(&mut acc[a], &v[x], |a, v| {
                if !v.is_nan() {
                    *a += v
                }
            }),
            (Acc::F(acc), Buf::F32(v), ReduceOp::NanSum) => lanes(&mut acc[a], &v[x], |a, v| {
                if !v.is_nan() {
                    *a += v as f64
                }
            }),
            (Acc::F(acc), Buf::F64(v), ReduceOp::Min | ReduceOp::Max) => {
                lanes(&mut acc[a], &v[x], |a, v| min_max(a, v, min))
            }
            (Acc::F(acc), Buf::F32(v), ReduceOp::Min | ReduceOp::Max) => {
                lanes(&mut acc[a], &v[x], |a, v| min_max(a, v as f64, min))
            }
            (Acc::I(acc), Buf::I(v), ReduceOp::Sum | ReduceOp::NanSum) => {
                lanes(&mut acc[a], &v[x], |a, v| *a = a.wrapping_add(v))
            }
            (Acc::I(acc), Buf::I(v), ReduceOp::Min) => {
                lanes(&mut acc[a], &v[x], |a, v| *a = (*a).min(v))
            }
            (Acc::I(acc), Buf::I(v), ReduceOp::Max) => {
                lanes(&mut acc[a], &v[x], |a, v| *a = (*a).max(v))
            }
            _ => return false,
        }
        true
    }

    pub(crate) fn finish(self) -> HostArray {
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

/// The reduced array from one accumulator per output element.
pub(crate) fn from_scalars(shape: &[usize], dtype: DType, vals: Vec<Scalar>) -> HostArray {
    HostArray::from_scalars(shape, dtype, &vals).expect("one accumulator per output element")
}

pub(crate) fn dense_finish(shape: &[usize], dtype: DType, tiles: Vec<Buf>) -> HostArray {
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
