//! Reductions over any set of axes, as tree reductions with a configurable fan-in.
//!
//! Each input chunk is reduced by the epilogue of its fused program (one pass, nothing
//! materialised), then partial results are folded `array.split-every` at a time.
//! `var`/`std` use the parallel merge of Chan et al.: per chunk, the count `n_b`, mean
//! `m_b` and the sum of squared deviations from its *own* mean `M2_b`; then
//! `M2 = sum_b (M2_b + n_b (m_b - m)^2)` — stable where `E[x^2] - E[x]^2` cancels. A
//! chunk's sum and `M2_b` come from one request to the backend
//! ([`crate::ArrayBackend::moments_program`]), so a fused or generated chunk is evaluated
//! once, not once per partial.

use super::{Array, Fold, Op};
use crate::chunks::Chunks;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::program::{AxisMap, BinaryOp, ReduceOp};

/// Normalises an axis list (`None` = all axes), rejecting duplicates and out-of-range axes.
pub(crate) fn normalize_axes(op: &str, axes: Option<&[usize]>, ndim: usize) -> Result<Vec<usize>> {
    let mut v: Vec<usize> = match axes {
        None => (0..ndim).collect(),
        Some(a) => a.to_vec(),
    };
    v.sort_unstable();
    for w in v.windows(2) {
        if w[0] == w[1] {
            return Err(Error::invalid(op, format!("axis {} repeated", w[0])));
        }
    }
    if let Some(&a) = v.iter().find(|&&a| a >= ndim) {
        return Err(Error::invalid(
            op,
            format!("axis {a} is out of bounds for a {ndim}-d array"),
        ));
    }
    Ok(v)
}

impl Array {
    /// The chunks of per-block partials over `axes` (non-empty for `first > 1`): `first`
    /// elements per block along `axes[0]`, one along the other reduced axes, the input's
    /// chunks elsewhere.
    fn partial_chunks(&self, axes: &[usize], first: usize) -> Result<Chunks> {
        let sizes = (0..self.ndim())
            .map(|a| {
                let blocks = self.chunks().axis(a).len();
                match axes.iter().position(|&x| x == a) {
                    Some(0) => vec![first; blocks],
                    Some(_) => vec![1; blocks],
                    None => self.chunks().axis(a).to_vec(),
                }
            })
            .collect::<Vec<_>>();
        let shape: Vec<usize> = sizes.iter().map(|s| s.iter().sum()).collect();
        Chunks::new(&shape, sizes)
    }

    /// Per-block partial reduction: reduced axes get one element per block.
    fn reduce_blocks(&self, op: ReduceOp, axes: &[usize]) -> Result<Array> {
        if !op.accepts(self.dtype()) {
            return Err(Error::dtype(
                op.name(),
                self.dtype(),
                "not defined for this dtype",
            ));
        }
        Ok(Array::new(
            Op::ReduceBlocks {
                input: self.clone(),
                op,
                axes: axes.to_vec(),
            },
            op.result_dtype(self.dtype()),
            self.partial_chunks(axes, 1)?,
            self.backend().clone(),
        ))
    }

    /// Folds blocks of per-block arrays until each reduced axis has one element.
    fn tree(inputs: Vec<Array>, axes: &[usize], fold: Fold) -> Result<Array> {
        let split_every = crate::config::split_every()?;
        let mut cur = inputs;
        loop {
            let first = &cur[0];
            let busy: Vec<usize> = axes
                .iter()
                .copied()
                .filter(|&a| first.chunks().axis(a).len() > 1)
                .collect();
            if busy.is_empty() {
                let idx = match fold {
                    Fold::Arg { out, .. } => out,
                    Fold::Binary(_) => 0,
                };
                return Ok(cur.swap_remove(idx));
            }
            let per_axis =
                ((split_every as f64).powf(1.0 / busy.len() as f64).floor() as usize).max(2);
            let split: Vec<usize> = (0..first.ndim())
                .map(|a| if busy.contains(&a) { per_axis } else { 1 })
                .collect();
            let sizes: Vec<Vec<usize>> = (0..first.ndim())
                .map(|a| {
                    if axes.contains(&a) {
                        vec![1; first.chunks().axis(a).len().div_ceil(split[a])]
                    } else {
                        first.chunks().axis(a).to_vec()
                    }
                })
                .collect();
            let shape: Vec<usize> = sizes.iter().map(|s| s.iter().sum()).collect();
            let chunks = Chunks::new(&shape, sizes)?;
            let outs = match fold {
                Fold::Binary(_) => 1,
                Fold::Arg { .. } => 2,
            };
            cur = (0..outs)
                .map(|o| {
                    let f = match fold {
                        Fold::Arg { max, .. } => Fold::Arg { max, out: o },
                        b => b,
                    };
                    let dtype = cur[o].dtype();
                    Array::new(
                        Op::Combine {
                            inputs: cur.clone(),
                            axes: axes.to_vec(),
                            split: split.clone(),
                            fold: f,
                        },
                        dtype,
                        chunks.clone(),
                        first.backend().clone(),
                    )
                })
                .collect();
        }
    }

    /// Drops reduced axes unless `keepdims`.
    fn finish_reduction(x: Array, axes: &[usize], keepdims: bool) -> Result<Array> {
        if keepdims {
            return Ok(x);
        }
        let mut out_shape = Vec::new();
        let maps = (0..x.ndim())
            .map(|a| {
                if axes.contains(&a) {
                    AxisMap {
                        start: 0,
                        step: 0,
                        out_axis: None,
                    }
                } else {
                    out_shape.push(x.shape()[a]);
                    AxisMap {
                        start: 0,
                        step: 1,
                        out_axis: Some(out_shape.len() - 1),
                    }
                }
            })
            .collect();
        x.view(maps, &out_shape)
    }

    /// A reduction over `axes` (`None` = all) with one of the foldable ops.
    pub fn reduce(&self, op: ReduceOp, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        let axes = normalize_axes(op.name(), axes, self.ndim())?;
        let fold = match op {
            ReduceOp::Sum | ReduceOp::NanSum | ReduceOp::Count => BinaryOp::Add,
            ReduceOp::Prod => BinaryOp::Mul,
            ReduceOp::Min => BinaryOp::Minimum,
            ReduceOp::Max => BinaryOp::Maximum,
            ReduceOp::Any => BinaryOp::Or,
            ReduceOp::All => BinaryOp::And,
            ReduceOp::ArgMin | ReduceOp::ArgMax => {
                return Err(Error::invalid(
                    op.name(),
                    "use argmin/argmax, which take one axis",
                ));
            }
        };
        op.check_identity(&self.shape(), &axes)?;
        let partial = self.reduce_blocks(op, &axes)?;
        let total = Array::tree(vec![partial], &axes, Fold::Binary(fold))?;
        Array::finish_reduction(total, &axes, keepdims)
    }

    /// Sum (`int64`/`uint64` for integers, as NumPy).
    pub fn sum(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.reduce(ReduceOp::Sum, axes, keepdims)
    }

    /// Number of non-zero elements (`int64`; NaN counts as non-zero, as NumPy's
    /// `count_nonzero`).
    pub fn count_nonzero(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.astype(DType::Bool)
            .astype(DType::I64)
            .sum(axes, keepdims)
    }

    /// Product.
    pub fn prod(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.reduce(ReduceOp::Prod, axes, keepdims)
    }

    /// Minimum (NaN propagates).
    pub fn min(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.reduce(ReduceOp::Min, axes, keepdims)
    }

    /// Maximum (NaN propagates).
    pub fn max(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.reduce(ReduceOp::Max, axes, keepdims)
    }

    /// True where any element is nonzero.
    pub fn any(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.reduce(ReduceOp::Any, axes, keepdims)
    }

    /// True where all elements are nonzero.
    pub fn all(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.reduce(ReduceOp::All, axes, keepdims)
    }

    /// Sum ignoring NaN.
    pub fn nansum(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.reduce(ReduceOp::NanSum, axes, keepdims)
    }

    /// Number of reduced elements per output element.
    fn reduced_count(&self, axes: &[usize]) -> usize {
        axes.iter().map(|&a| self.shape()[a]).product()
    }

    /// Mean (`f64` for integers).
    pub fn mean(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        let ax = normalize_axes("mean", axes, self.ndim())?;
        let x = self.astype(self.dtype().mean_result());
        let s = x.sum(Some(&ax), keepdims)?;
        s.binary_scalar(
            BinaryOp::Div,
            Scalar::F64(self.reduced_count(&ax) as f64),
            false,
        )
    }

    /// Mean ignoring NaN.
    pub fn nanmean(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        let ax = normalize_axes("nanmean", axes, self.ndim())?;
        let x = self.astype(self.dtype().mean_result());
        let s = x.nansum(Some(&ax), keepdims)?;
        let n = x
            .reduce(ReduceOp::Count, Some(&ax), keepdims)?
            .astype(x.dtype());
        s.div(&n)
    }

    /// Variance with `ddof` delta degrees of freedom (parallel merge, see module docs).
    pub fn var(&self, axes: Option<&[usize]>, ddof: usize, keepdims: bool) -> Result<Array> {
        let ax = normalize_axes("var", axes, self.ndim())?;
        let dt = self.dtype().mean_result();
        let x = self.astype(dt);
        let total_n = self.reduced_count(&ax);
        let denom = Scalar::F64((total_n as f64 - ddof as f64).max(0.0));
        if ax.is_empty() {
            // Nothing reduced: each element is its own block, M2 = (x - x)^2 (NaN for
            // non-finite x, as NumPy).
            let d = x.sub(&x)?;
            return d.mul(&d)?.binary_scalar(BinaryOp::Div, denom, false);
        }
        // Per block, in one pass: s_b and M2_b, packed along the first reduced axis.
        let packed = x.moments_blocks(&ax)?;
        let half = |start: i64| -> Result<Array> {
            let maps = (0..x.ndim())
                .map(|a| AxisMap {
                    start: if a == ax[0] { start } else { 0 },
                    step: if a == ax[0] { 2 } else { 1 },
                    out_axis: Some(a),
                })
                .collect();
            let mut shape = packed.shape();
            shape[ax[0]] /= 2;
            packed.view(maps, &shape)
        };
        let (s_b, m2_b) = (half(0)?, half(1)?);
        let n_b = Array::new(
            Op::BlockCount {
                like: x.chunks().clone(),
                axes: ax.clone(),
            },
            dt,
            s_b.chunks().clone(),
            self.backend().clone(),
        );
        let m_b = s_b.div(&n_b)?;
        // Global mean, then the merge.
        let m = Array::tree(vec![s_b], &ax, Fold::Binary(BinaryOp::Add))?.binary_scalar(
            BinaryOp::Div,
            Scalar::F64(total_n as f64),
            false,
        )?;
        let dev = m_b.sub(&m)?;
        let term = m2_b.add(&n_b.mul(&dev.mul(&dev)?)?)?;
        let m2 = term.reduce(ReduceOp::Sum, Some(&ax), true)?;
        let v = m2.binary_scalar(BinaryOp::Div, denom, false)?;
        Array::finish_reduction(v, &ax, keepdims)
    }

    /// Per block, its sum and `M2` over `axes` (non-empty), packed along `axes[0]` (two
    /// elements per block there; [`Op::Moments`]).
    fn moments_blocks(&self, axes: &[usize]) -> Result<Array> {
        Ok(Array::new(
            Op::Moments {
                input: self.clone(),
                axes: axes.to_vec(),
            },
            self.dtype(),
            self.partial_chunks(axes, 2)?,
            self.backend().clone(),
        ))
    }

    /// Standard deviation with `ddof`.
    pub fn std(&self, axes: Option<&[usize]>, ddof: usize, keepdims: bool) -> Result<Array> {
        self.var(axes, ddof, keepdims)?.sqrt()
    }

    fn arg_reduce(&self, max: bool, axis: Option<usize>, keepdims: bool) -> Result<Array> {
        let name = if max { "argmax" } else { "argmin" };
        let flattened = axis.is_none() && self.ndim() != 1;
        let (x, axis) = match axis {
            Some(a) => {
                normalize_axes(name, Some(&[a]), self.ndim())?;
                (self.clone(), a)
            }
            None if self.ndim() == 1 => (self.clone(), 0),
            None => (self.reshape(&[-1])?, 0),
        };
        if x.shape()[axis] == 0 {
            return Err(Error::invalid(
                name,
                format!(
                    "attempt to get {name} of an empty sequence (shape {:?})",
                    self.shape()
                ),
            ));
        }
        let (vop, iop) = if max {
            (ReduceOp::Max, ReduceOp::ArgMax)
        } else {
            (ReduceOp::Min, ReduceOp::ArgMin)
        };
        let values = x.reduce_blocks(vop, &[axis])?;
        let local = x.reduce_blocks(iop, &[axis])?;
        let start = Array::new(
            Op::BlockStart {
                like: x.chunks().clone(),
                axis,
            },
            DType::I64,
            local.chunks().clone(),
            self.backend().clone(),
        );
        let global = local.add(&start)?;
        let idx = Array::tree(vec![values, global], &[axis], Fold::Arg { max, out: 1 })?;
        if flattened {
            let r = Array::finish_reduction(idx, &[axis], false)?;
            if keepdims {
                return r.reshape(&vec![1i64; self.ndim()]);
            }
            return Ok(r);
        }
        Array::finish_reduction(idx, &[axis], keepdims)
    }

    /// Index of the first minimum along `axis` (`None`: of the flattened array).
    pub fn argmin(&self, axis: Option<usize>, keepdims: bool) -> Result<Array> {
        self.arg_reduce(false, axis, keepdims)
    }

    /// Index of the first maximum along `axis` (`None`: of the flattened array).
    pub fn argmax(&self, axis: Option<usize>, keepdims: bool) -> Result<Array> {
        self.arg_reduce(true, axis, keepdims)
    }
}
