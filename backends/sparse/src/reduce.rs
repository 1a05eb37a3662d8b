//! Reductions over axes without densifying: each output cell folds its explicit entries,
//! then the fill once per implicit element it covers — `k` implicit elements add `k·fill`
//! to a sum, multiply a product by `fill^k` (wrapping for integers, as the reference
//! does), count `k` towards `count` unless the fill is NaN, and take part in
//! min/max/any/all once. The work is proportional to the explicit entries plus the output
//! size. Arg-reductions are positional and left to the dense reference (the caller
//! densifies for those, and for min/max over an empty axis, where the reference's error
//! is the answer).

use tessera_core::chunks::c_strides;
use tessera_core::dtype::DTypeKind;
use tessera_core::program::{ipow_i64, ReduceOp};
use tessera_core::{DType, HostArray, Result};

use crate::chunk::{to_vec, vec1, zero, SparseChunk};
use crate::structure::{decode, encode};

/// Where each explicit entry lands in the output, and how many elements each cell covers.
struct Cells {
    shape: Vec<usize>,
    of_entry: Vec<usize>,
    count: usize,
    per_cell: u64,
}

fn cells(x: &SparseChunk, axes: &[usize]) -> Cells {
    let shape: Vec<usize> = x
        .shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect();
    let (src, dst) = (c_strides(&x.shape), c_strides(&shape));
    let mut c = vec![0; x.shape.len()];
    let of_entry = x
        .idx
        .iter()
        .map(|&flat| {
            decode(flat, &src, &mut c);
            for &a in axes {
                c[a] = 0;
            }
            encode(&c, &dst) as usize
        })
        .collect();
    Cells {
        count: shape.iter().product(),
        per_cell: axes.iter().map(|&a| x.shape[a] as u64).product(),
        shape,
        of_entry,
    }
}

fn min_max_f64(max: bool, a: f64, v: f64) -> f64 {
    if a.is_nan() || v.is_nan() {
        f64::NAN
    } else if (max && v > a) || (!max && v < a) {
        v
    } else {
        a
    }
}

/// Folds floats (f32 widened exactly) per cell.
fn fold_f64(op: ReduceOp, vals: &[f64], fill: f64, cl: &Cells, explicit: &[u64]) -> Vec<f64> {
    let init = match op {
        ReduceOp::Prod => 1.0,
        ReduceOp::Min => f64::INFINITY,
        ReduceOp::Max => f64::NEG_INFINITY,
        _ => 0.0,
    };
    let mut acc = vec![init; cl.count];
    for (&cell, &v) in cl.of_entry.iter().zip(vals) {
        let a = &mut acc[cell];
        match op {
            ReduceOp::Sum => *a += v,
            ReduceOp::NanSum if !v.is_nan() => *a += v,
            ReduceOp::Prod => *a *= v,
            ReduceOp::Min | ReduceOp::Max => *a = min_max_f64(op == ReduceOp::Max, *a, v),
            _ => {}
        }
    }
    for (cell, a) in acc.iter_mut().enumerate() {
        let k = cl.per_cell - explicit[cell];
        if k == 0 {
            continue;
        }
        match op {
            ReduceOp::Sum => *a += fill * k as f64,
            ReduceOp::NanSum if !fill.is_nan() => *a += fill * k as f64,
            ReduceOp::Prod => *a *= fill.powf(k as f64),
            ReduceOp::Min | ReduceOp::Max => *a = min_max_f64(op == ReduceOp::Max, *a, fill),
            _ => {}
        }
    }
    acc
}

/// Integer accumulators: wrapping arithmetic as the reference, ordered as their type.
trait IntAcc: Copy + Ord {
    const ONE: Self;
    const ZERO: Self;
    const LEAST: Self;
    const GREATEST: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `self · k` and `self^k`, wrapping.
    fn times(self, k: u64) -> Self;
    fn pow(self, k: u64) -> Self;
}

impl IntAcc for i64 {
    const ONE: i64 = 1;
    const ZERO: i64 = 0;
    const LEAST: i64 = i64::MIN;
    const GREATEST: i64 = i64::MAX;
    fn add(self, o: i64) -> i64 {
        self.wrapping_add(o)
    }
    fn mul(self, o: i64) -> i64 {
        self.wrapping_mul(o)
    }
    fn times(self, k: u64) -> i64 {
        self.wrapping_mul(k as i64)
    }
    fn pow(self, k: u64) -> i64 {
        ipow_i64(self, k as i64)
    }
}

impl IntAcc for u64 {
    const ONE: u64 = 1;
    const ZERO: u64 = 0;
    const LEAST: u64 = 0;
    const GREATEST: u64 = u64::MAX;
    fn add(self, o: u64) -> u64 {
        self.wrapping_add(o)
    }
    fn mul(self, o: u64) -> u64 {
        self.wrapping_mul(o)
    }
    fn times(self, k: u64) -> u64 {
        self.wrapping_mul(k)
    }
    fn pow(self, k: u64) -> u64 {
        // Wrapping products are the same bits signed or unsigned.
        ipow_i64(self as i64, k as i64) as u64
    }
}

/// Folds integers (signed, unsigned, bools as 0/1) per cell.
fn fold_int<T: IntAcc>(op: ReduceOp, vals: &[T], fill: T, cl: &Cells, explicit: &[u64]) -> Vec<T> {
    let init = match op {
        ReduceOp::Prod => T::ONE,
        ReduceOp::Min => T::GREATEST,
        ReduceOp::Max => T::LEAST,
        _ => T::ZERO,
    };
    let mut acc = vec![init; cl.count];
    for (&cell, &v) in cl.of_entry.iter().zip(vals) {
        let a = &mut acc[cell];
        match op {
            ReduceOp::Sum | ReduceOp::NanSum => *a = a.add(v),
            ReduceOp::Prod => *a = a.mul(v),
            ReduceOp::Min => *a = (*a).min(v),
            ReduceOp::Max => *a = (*a).max(v),
            _ => {}
        }
    }
    for (cell, a) in acc.iter_mut().enumerate() {
        let k = cl.per_cell - explicit[cell];
        if k == 0 {
            continue;
        }
        match op {
            ReduceOp::Sum | ReduceOp::NanSum => *a = a.add(fill.times(k)),
            ReduceOp::Prod => *a = a.mul(fill.pow(k)),
            ReduceOp::Min => *a = (*a).min(fill),
            ReduceOp::Max => *a = (*a).max(fill),
            _ => {}
        }
    }
    acc
}

/// Any/all/count per cell: `truth` says whether a value is non-zero, `valid` whether it
/// is not NaN.
fn fold_logical(
    op: ReduceOp,
    truth: &[bool],
    valid: &[bool],
    fill: (bool, bool),
    cl: &Cells,
    explicit: &[u64],
) -> Vec<i64> {
    let init = i64::from(op == ReduceOp::All);
    let mut acc = vec![init; cl.count];
    for ((&cell, &t), &ok) in cl.of_entry.iter().zip(truth).zip(valid) {
        let a = &mut acc[cell];
        match op {
            ReduceOp::Any => *a |= i64::from(t),
            ReduceOp::All => *a &= i64::from(t),
            _ => *a += i64::from(ok),
        }
    }
    for (cell, a) in acc.iter_mut().enumerate() {
        let k = cl.per_cell - explicit[cell];
        if k == 0 {
            continue;
        }
        match op {
            ReduceOp::Any => *a |= i64::from(fill.0),
            ReduceOp::All => *a &= i64::from(fill.0),
            _ => *a += if fill.1 { k as i64 } else { 0 },
        }
    }
    acc
}

/// True when the reduction is answered here (not arg-reductions, not an empty min/max).
pub(crate) fn handles(x: &SparseChunk, op: ReduceOp, axes: &[usize]) -> bool {
    let empty = axes.iter().any(|&a| x.shape[a] == 0);
    !matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax) && (op.has_identity() || !empty)
}

/// Reduces over `axes` (validated, sorted, deduplicated), keeping them as size-1 axes.
pub(crate) fn reduce(x: &SparseChunk, op: ReduceOp, axes: &[usize]) -> Result<SparseChunk> {
    let cl = cells(x, axes);
    let mut explicit = vec![0u64; cl.count];
    for &c in &cl.of_entry {
        explicit[c] += 1;
    }
    let dtype = x.dtype();
    let out = op.result_dtype(dtype);
    let dense: HostArray = match op {
        ReduceOp::Any | ReduceOp::All | ReduceOp::Count => {
            let v = x.vals.to_f64_vec();
            let truth: Vec<bool> = v.iter().map(|&e| e != 0.0).collect();
            let valid: Vec<bool> = v.iter().map(|e| !e.is_nan()).collect();
            let f = x.fill.as_f64();
            let fill = (f != 0.0, !f.is_nan());
            vec1(fold_logical(op, &truth, &valid, fill, &cl, &explicit)).cast(out)
        }
        _ => match dtype.kind() {
            DTypeKind::Float => {
                let v: Vec<f64> = x.vals.cast(DType::F64).to_f64_vec();
                vec1(fold_f64(op, &v, x.fill.as_f64(), &cl, &explicit)).cast(out)
            }
            DTypeKind::UInt => {
                let v = to_vec::<u64>(&x.vals.cast(DType::U64));
                let f = x.fill.as_u64();
                vec1(fold_int(op, &v, f, &cl, &explicit)).cast(out)
            }
            DTypeKind::Int | DTypeKind::Bool => {
                let v = to_vec::<i64>(&x.vals.cast(DType::I64));
                let f = x.fill.as_i64();
                vec1(fold_int(op, &v, f, &cl, &explicit)).cast(out)
            }
        },
    };
    let dense = dense.reshape(&cl.shape)?;
    Ok(SparseChunk::from_dense(&dense, zero(out)))
}
