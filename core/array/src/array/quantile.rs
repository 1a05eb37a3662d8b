//! Quantiles and medians along an axis by exact chunked selection: the axis sorted chunk
//! by chunk ([`Array::sort`]), then only the order statistics needed read from it.
//!
//! With the axis length known, the ranks each quantile needs are known when the plan is
//! built, so the selection is a `take` of a stored index: only the merges of the sorted
//! output chunks that hold those ranks run, never the whole sorted lane. The NaN-skipping
//! forms need each lane's count of numbers first, so their ranks are lazy (a
//! `take_along_axis` over the lane).
//!
//! The arithmetic is NumPy 2's, step for step, so results agree to the bit: the virtual
//! index `(n - 1) q` and the interpolation weight `t` in `float64`, the neighbours'
//! difference in the input's float dtype, the rest in the result dtype, `a + (b - a) t` below `t = 0.5` and
//! `b - (b - a)(1 - t)` from it, the last rank's weight measured from `-1` (so an
//! infinite neighbour gives NaN as in NumPy), NaN for a lane holding NaN. The median is
//! the middle element, or the mean `(a + b) / 2` of the middle two, as `np.median`.

use crate::chunks::ChunkSpec;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::program::{BinaryOp, UnaryOp};

use super::{Array, Index};

/// What is picked from each sorted lane and how the two neighbours combine.
#[derive(Clone, Copy)]
enum Pick {
    /// NumPy's `linear` quantile at `q`.
    Linear(f64),
    /// The median.
    Median,
}

fn scalar(dtype: DType, v: f64) -> Scalar {
    Scalar::F64(v).cast(dtype)
}

impl Array {
    /// `x` with the selection axis resolved: `None` is the flattened array's one axis.
    fn selection_axis(&self, op: &str, axis: Option<usize>) -> Result<(Array, usize)> {
        if self.dtype() == DType::Bool {
            return Err(Error::dtype(
                op,
                DType::Bool,
                "quantiles interpolate between numbers; cast a bool array to an integer or float dtype first",
            ));
        }
        let (x, axis) = match axis {
            None => (self.reshape(&[-1])?, 0),
            Some(a) => {
                self.check_axis(op, a)?;
                (self.clone(), a)
            }
        };
        if x.shape()[axis] == 0 {
            return Err(Error::invalid(
                op,
                format!(
                    "the {op} of an empty axis (axis {axis} of shape {:?}) is undefined",
                    x.shape()
                ),
            ));
        }
        Ok((x, axis))
    }

    /// The `q` quantiles (each in `[0, 1]`) along `axis` (`None`: of the flattened
    /// array) by NumPy's default `linear` method, stacked along a new leading axis of
    /// length `q.len()`; `keepdims` keeps the reduced axis (all axes for `None`) with
    /// length 1. `dtype` is the float dtype of the interpolation and the result: NumPy's
    /// `float32` for a `float32` array and a Python scalar `q`, else `float64` (the
    /// virtual index and the weight are `float64` either way, as in NumPy).
    /// `skip_nan` ignores NaN as `np.nanquantile` does (a lane of NaN only gives NaN);
    /// without it a lane holding NaN gives NaN.
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// use tessera_core::DType;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::from_slice(&[7.0, 1.0, 4.0, 9.0, 3.0], &[5], 2, None)?;
    /// let q = x.quantile(&[0.0, 0.3, 1.0], None, false, false, DType::F64)?;
    /// assert_eq!(q.compute()?.to_f64_vec(), vec![1.0, 3.2, 9.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Invalid`] for a `q` outside `[0, 1]`, no `q`, an axis out of bounds or
    /// an empty axis; [`Error::DType`] for a bool array or a `dtype` that is not a float.
    pub fn quantile(
        &self,
        q: &[f64],
        axis: Option<usize>,
        keepdims: bool,
        skip_nan: bool,
        dtype: DType,
    ) -> Result<Array> {
        if !dtype.is_float() {
            return Err(Error::dtype(
                "quantile",
                dtype,
                "the result dtype must be float32 or float64",
            ));
        }
        if q.is_empty() {
            return Err(Error::invalid("quantile", "no quantiles asked for"));
        }
        if let Some(bad) = q.iter().find(|v| !(0.0..=1.0).contains(*v)) {
            return Err(Error::invalid(
                "quantile",
                format!("quantiles must be in the range [0, 1]; got {bad}"),
            ));
        }
        let parts = q
            .iter()
            .map(|&v| self.select("quantile", Pick::Linear(v), axis, keepdims, skip_nan, dtype))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Array> = parts.iter().collect();
        Array::stack(&refs, 0)
    }

    /// The median along `axis` (`None`: of the flattened array), as `np.median`: the
    /// middle element of the sorted lane, or the mean of the middle two; `float32` for a
    /// `float32` array, else `float64`. `skip_nan` ignores NaN (`np.nanmedian`).
    ///
    /// ```
    /// # use tessera_cpu as _; // links the `cpu` backend
    /// use tessera_array::Array;
    /// # fn main() -> tessera_core::Result<()> {
    /// let x = Array::from_slice(&[7i32, 1, 4, 9], &[4], 3, None)?;
    /// assert_eq!(x.median(None, false, false)?.compute_f64()?, 5.5);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Array::quantile`].
    pub fn median(&self, axis: Option<usize>, keepdims: bool, skip_nan: bool) -> Result<Array> {
        let dtype = if self.dtype() == DType::F32 {
            DType::F32
        } else {
            DType::F64
        };
        self.select("median", Pick::Median, axis, keepdims, skip_nan, dtype)
    }

    /// A 0-d array of `value` on this array's backend (broadcast by `where`).
    fn scalar_array(&self, value: Scalar) -> Result<Array> {
        Array::full(&[], value, ChunkSpec::Auto, Some(self.backend_name()))
    }

    fn select(
        &self,
        op: &str,
        pick: Pick,
        axis: Option<usize>,
        keepdims: bool,
        skip_nan: bool,
        dtype: DType,
    ) -> Result<Array> {
        let ndim = self.ndim();
        let (x, ax) = self.selection_axis(op, axis)?;
        let float = x.dtype().is_float();
        let sorted = x.sort(ax, false)?;
        let picked = if skip_nan && float {
            x.select_lazy(&sorted, pick, ax, dtype)?
        } else {
            x.select_known(&sorted, pick, ax, dtype)?
        };
        match (axis, keepdims) {
            (_, false) => picked.squeeze(Some(&[ax])),
            (Some(_), true) => Ok(picked),
            (None, true) => picked.reshape(&vec![1; ndim]),
        }
    }

    /// The selection with the axis length `n` known: the ranks are known now.
    fn select_known(&self, sorted: &Array, pick: Pick, axis: usize, dtype: DType) -> Result<Array> {
        let n = self.shape()[axis];
        let last = n - 1;
        // The two neighbours, and the weight of the second (NumPy's `gamma`).
        let (lo, hi, t) = match pick {
            Pick::Linear(q) => {
                let v = last as f64 * q;
                if v >= last as f64 {
                    (last, last, v + 1.0)
                } else {
                    let f = v.floor();
                    (f as usize, f as usize + 1, v - f)
                }
            }
            Pick::Median => (last / 2, n / 2, 0.5),
        };
        let float = self.dtype().is_float();
        let mut ranks = vec![lo as i64, hi as i64];
        if float {
            ranks.push(last as i64);
        }
        let idx = Array::from_slice(
            &ranks,
            &[ranks.len()],
            [ranks.len()].as_slice(),
            Some(self.backend_name()),
        )?;
        let got = sorted.take(&idx, axis)?;
        let at = |k: i64| -> Result<Array> {
            let mut index = vec![Index::FULL; self.ndim()];
            index[axis] = Index::range(k, k + 1);
            got.slice(&index)
        };
        let (a, b) = (at(0)?, at(1)?);
        let r = match pick {
            Pick::Median if lo == hi => a.astype(dtype),
            Pick::Median => a
                .astype(dtype)
                .binary(BinaryOp::Add, &b.astype(dtype))?
                .binary_scalar(BinaryOp::Div, scalar(dtype, 2.0), false)?,
            Pick::Linear(_) => lerp(&a, &b, &Weight::Known(t), dtype)?,
        };
        if !float {
            return Ok(r);
        }
        let nan = self.scalar_array(scalar(dtype, f64::NAN))?;
        at(2)?.unary(UnaryOp::IsNan)?.where_(&nan, &r)
    }

    /// The NaN-skipping selection: each lane's count of numbers `c` decides its ranks.
    fn select_lazy(&self, sorted: &Array, pick: Pick, axis: usize, dtype: DType) -> Result<Array> {
        let c = self
            .unary(UnaryOp::IsNan)?
            .unary(UnaryOp::Not)?
            .astype(DType::I64)
            .sum(Some(&[axis]), true)?
            .astype(DType::I64);
        let last = c.binary_scalar(BinaryOp::Sub, Scalar::I64(1), false)?;
        let zero = |a: Array| a.binary_scalar(BinaryOp::Maximum, Scalar::I64(0), false);
        let (lo, hi, weight) = match pick {
            Pick::Linear(q) => {
                let lastf = last.astype(DType::F64);
                let v = lastf.binary_scalar(BinaryOp::Mul, Scalar::F64(q), false)?;
                let above = v.binary(BinaryOp::Ge, &lastf)?;
                let f = v.unary(UnaryOp::Floor)?;
                let fi = f.astype(DType::I64);
                let lo = above.where_(&last, &fi)?;
                let hi = above.where_(
                    &last,
                    &fi.binary_scalar(BinaryOp::Add, Scalar::I64(1), false)?,
                )?;
                let minus_one = self.scalar_array(Scalar::F64(-1.0))?;
                let prev = above.where_(&minus_one, &f)?;
                (
                    zero(lo)?,
                    zero(hi)?,
                    Weight::Lazy(v.binary(BinaryOp::Sub, &prev)?),
                )
            }
            Pick::Median => {
                let lo = last.binary_scalar(BinaryOp::FloorDiv, Scalar::I64(2), false)?;
                let hi = c.binary_scalar(BinaryOp::FloorDiv, Scalar::I64(2), false)?;
                (zero(lo)?, zero(hi)?, Weight::Known(0.5))
            }
        };
        let a = sorted.take_along_axis(&lo, axis)?;
        let b = sorted.take_along_axis(&hi, axis)?;
        let r = match pick {
            Pick::Median => {
                let mean = a
                    .astype(dtype)
                    .binary(BinaryOp::Add, &b.astype(dtype))?
                    .binary_scalar(BinaryOp::Div, scalar(dtype, 2.0), false)?;
                lo.binary(BinaryOp::Eq, &hi)?
                    .where_(&a.astype(dtype), &mean)?
            }
            Pick::Linear(_) => lerp(&a, &b, &weight, dtype)?,
        };
        let nan = self.scalar_array(scalar(dtype, f64::NAN))?;
        c.binary_scalar(BinaryOp::Eq, Scalar::I64(0), false)?
            .where_(&nan, &r)
    }
}

/// The weight of the second neighbour: one number, or one per lane.
enum Weight {
    Known(f64),
    Lazy(Array),
}

/// NumPy's `_lerp(a, b, t)`: the difference in the neighbours' float dtype (`float64`
/// for integers), the rest in `dtype`; the weight is a `float64` (as NumPy's Python
/// float or `float64` array), rounded to `dtype` where it multiplies.
fn lerp(a: &Array, b: &Array, t: &Weight, dtype: DType) -> Result<Array> {
    let src = if a.dtype().is_float() {
        a.dtype()
    } else {
        DType::F64
    };
    let (a, b) = (a.astype(src), b.astype(src));
    let diff = b.binary(BinaryOp::Sub, &a)?.astype(dtype);
    let (a, b) = (a.astype(dtype), b.astype(dtype));
    match t {
        Weight::Known(t) if *t >= 0.5 => b.binary(
            BinaryOp::Sub,
            &diff.binary_scalar(BinaryOp::Mul, scalar(dtype, 1.0 - t), false)?,
        ),
        Weight::Known(t) => a.binary(
            BinaryOp::Add,
            &diff.binary_scalar(BinaryOp::Mul, scalar(dtype, *t), false)?,
        ),
        Weight::Lazy(t) => {
            let up = a.binary(
                BinaryOp::Add,
                &diff.binary(BinaryOp::Mul, &t.astype(dtype))?,
            )?;
            let one_minus = t
                .binary_scalar(BinaryOp::Sub, Scalar::F64(1.0), true)?
                .astype(dtype);
            let down = b.binary(BinaryOp::Sub, &diff.binary(BinaryOp::Mul, &one_minus)?)?;
            t.binary_scalar(BinaryOp::Ge, Scalar::F64(0.5), false)?
                .where_(&down, &up)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_cpu as _;

    fn arr(v: &[f64], shape: &[usize], chunks: &[usize]) -> Array {
        let h = crate::host::HostArray::F64(
            ndarray::ArrayD::from_shape_vec(shape.to_vec(), v.to_vec()).unwrap(),
        );
        Array::from_host(h, chunks, None).unwrap()
    }

    #[test]
    fn a_quantile_reads_only_the_sorted_chunks_holding_its_ranks() {
        let v: Vec<f64> = (0..100).map(|i| ((i * 37) % 100) as f64).collect();
        let x = arr(&v, &[100], &[10]);
        let q = x.quantile(&[0.5], None, false, false, DType::F64).unwrap();
        assert_eq!(q.compute().unwrap().to_f64_vec(), vec![49.5]);
        // Ranks 49, 50 and 99 (the NaN check) lie in three of the ten sorted chunks: three
        // merges run, not ten.
        let plan = q.explain().unwrap();
        assert!(
            plan.contains(" 3 sort merge of a lane's sorted blocks"),
            "{plan}"
        );
    }

    #[test]
    fn nan_lanes_and_the_nan_skipping_forms_match_numpy() {
        let nan = f64::NAN;
        let x = arr(
            &[1.0, nan, 3.0, 4.0, nan, nan, nan, nan, 2.0, 8.0, 5.0, 6.0],
            &[3, 4],
            &[2, 3],
        );
        let q = x
            .quantile(&[0.3], Some(1), false, false, DType::F64)
            .unwrap()
            .compute()
            .unwrap()
            .to_f64_vec();
        assert!(q[0].is_nan() && q[1].is_nan(), "{q:?}");
        assert!((q[2] - 4.7).abs() < 1e-12, "{q:?}");
        // np.nanquantile(x, 0.3, axis=1) = [2.2, nan, 4.7]; np.nanmedian = [3, nan, 5.5].
        let q = x
            .quantile(&[0.3], Some(1), false, true, DType::F64)
            .unwrap()
            .compute()
            .unwrap()
            .to_f64_vec();
        assert!(
            (q[0] - 2.2).abs() < 1e-12 && q[1].is_nan() && (q[2] - 4.7).abs() < 1e-12,
            "{q:?}"
        );
        let m = x.median(Some(1), true, true).unwrap();
        assert_eq!(m.shape(), vec![3, 1]);
        let m = m.compute().unwrap().to_f64_vec();
        assert!(m[0] == 3.0 && m[1].is_nan() && m[2] == 5.5, "{m:?}");
    }

    #[test]
    fn bad_quantiles_axes_and_dtypes_are_refused() {
        let x = arr(&[1.0, 2.0], &[2], &[1]);
        assert!(x.quantile(&[1.5], None, false, false, DType::F64).is_err());
        assert!(x.quantile(&[], None, false, false, DType::F64).is_err());
        assert!(x
            .quantile(&[0.5], Some(1), false, false, DType::F64)
            .is_err());
        assert!(x.quantile(&[0.5], None, false, false, DType::I64).is_err());
        let b = x
            .binary_scalar(BinaryOp::Gt, Scalar::F64(1.0), false)
            .unwrap();
        assert!(matches!(
            b.median(None, false, false),
            Err(Error::DType { .. })
        ));
        let empty = arr(&[], &[0], &[1]);
        assert!(empty.median(None, false, false).is_err());
    }
}
