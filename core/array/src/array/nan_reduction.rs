//! The NaN-ignoring reductions NumPy has beyond `nansum` and `nanmean`: `nanmax`,
//! `nanmin`, `nanprod`, `nanvar`, `nanstd`, `nanargmax`, `nanargmin`, composed from the
//! chunked reductions, so they run on every backend with the same tree of partials.
//!
//! A NaN is replaced by the op's identity before reducing (`-inf` for max, `+inf` for min,
//! `1` for products, `0` for the squared deviations); a result whose reduced elements were
//! all NaN is NaN (NumPy's value, without its warning), and a variance with no degree of
//! freedom left is NaN. `nanargmax`/`nanargmin` have no value to give for an all-NaN
//! lane: as NumPy, that is an error (raised when the plan runs). Integer and bool arrays
//! have no NaN: these are the plain reductions there.

use crate::chunks::ChunkSpec;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::program::{BinaryOp, ReduceOp, UnaryOp};

use super::reduction::normalize_axes;
use super::Array;

impl Array {
    /// `value` (cast to this array's dtype) shaped and chunked like this array.
    fn filled_like(&self, value: f64) -> Result<Array> {
        Array::full(
            &self.shape(),
            Scalar::F64(value).cast(self.dtype()),
            ChunkSpec::Exact(self.chunks().clone()),
            Some(self.backend_name()),
        )
    }

    /// The array with its NaNs replaced by `value`, and the NaN mask.
    fn nan_filled(&self, value: f64) -> Result<(Array, Array)> {
        let nan = self.unary(UnaryOp::IsNan)?;
        let filled = nan.where_(&self.filled_like(value)?, self)?;
        Ok((filled, nan))
    }

    /// `r` where some reduced element was not NaN, NaN where all were.
    fn nan_where_all_nan(r: Array, nan: &Array, axes: &[usize], keepdims: bool) -> Result<Array> {
        let all_nan = nan.all(Some(axes), keepdims)?;
        all_nan.where_(&r.filled_like(f64::NAN)?, &r)
    }

    fn nan_extremum(
        &self,
        op: ReduceOp,
        fill: f64,
        axes: Option<&[usize]>,
        keepdims: bool,
    ) -> Result<Array> {
        if !self.dtype().is_float() {
            return self.reduce(op, axes, keepdims);
        }
        let ax = normalize_axes(op.name(), axes, self.ndim())?;
        let (filled, nan) = self.nan_filled(fill)?;
        let r = filled.reduce(op, Some(&ax), keepdims)?;
        Array::nan_where_all_nan(r, &nan, &ax, keepdims)
    }

    /// Maximum ignoring NaN; NaN where every reduced element is NaN (`np.nanmax`).
    ///
    /// # Errors
    /// [`crate::error::Error::Invalid`] for an axis out of range or a reduced axis of
    /// length 0 (a maximum has no identity).
    pub fn nanmax(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.nan_extremum(ReduceOp::Max, f64::NEG_INFINITY, axes, keepdims)
    }

    /// Minimum ignoring NaN; NaN where every reduced element is NaN (`np.nanmin`).
    ///
    /// # Errors
    /// As [`Array::nanmax`].
    pub fn nanmin(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        self.nan_extremum(ReduceOp::Min, f64::INFINITY, axes, keepdims)
    }

    /// Product ignoring NaN (a NaN counts as 1, as `np.nanprod`).
    ///
    /// # Errors
    /// [`crate::error::Error::Invalid`] for an axis out of range.
    pub fn nanprod(&self, axes: Option<&[usize]>, keepdims: bool) -> Result<Array> {
        if !self.dtype().is_float() {
            return self.prod(axes, keepdims);
        }
        self.nan_filled(1.0)?.0.prod(axes, keepdims)
    }

    /// Variance ignoring NaN with `ddof` delta degrees of freedom: the mean of the
    /// non-NaN elements first, then their squared deviations (`np.nanvar`); NaN where
    /// fewer than `ddof + 1` elements are not NaN.
    ///
    /// # Errors
    /// [`crate::error::Error::Invalid`] for an axis out of range.
    pub fn nanvar(&self, axes: Option<&[usize]>, ddof: usize, keepdims: bool) -> Result<Array> {
        if !self.dtype().is_float() {
            return self.var(axes, ddof, keepdims);
        }
        let ax = normalize_axes("nanvar", axes, self.ndim())?;
        let mean = self.nanmean(Some(&ax), true)?;
        // The input's NaNs (not the NaNs `inf - inf` makes) add nothing to the squares.
        let nan = self.unary(UnaryOp::IsNan)?;
        let dev = self.binary(BinaryOp::Sub, &mean)?;
        let dev = nan.where_(&dev.filled_like(0.0)?, &dev)?;
        let ss = dev.binary(BinaryOp::Mul, &dev)?.sum(Some(&ax), keepdims)?;
        let count = self
            .reduce(ReduceOp::Count, Some(&ax), keepdims)?
            .astype(self.dtype());
        let dof = count.binary_scalar(BinaryOp::Sub, Scalar::F64(ddof as f64), false)?;
        let var = ss.binary(BinaryOp::Div, &dof)?;
        let none_left = dof.binary_scalar(BinaryOp::Le, Scalar::F64(0.0), false)?;
        none_left.where_(&var.filled_like(f64::NAN)?, &var)
    }

    fn nan_arg(&self, max: bool, axis: Option<usize>, keepdims: bool) -> Result<Array> {
        if !self.dtype().is_float() {
            return if max {
                self.argmax(axis, keepdims)
            } else {
                self.argmin(axis, keepdims)
            };
        }
        let name = if max { "nanargmax" } else { "nanargmin" };
        let fill = if max {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        let (filled, nan) = self.nan_filled(fill)?;
        let r = if max {
            filled.argmax(axis, keepdims)?
        } else {
            filled.argmin(axis, keepdims)?
        };
        let all_nan = match axis {
            Some(a) => nan.all(Some(&[a]), keepdims)?,
            None => {
                let every: Vec<usize> = (0..self.ndim()).collect();
                nan.all(Some(&every), keepdims)?
            }
        };
        // NumPy's filling order: the index of the first extremum after NaN became the
        // op's identity, so an all-NaN lane has no answer.
        Array::map_blocks(
            &[&r, &all_nan],
            std::sync::Arc::new(move |b: &[crate::host::HostArray]| {
                if b[1].to_f64_vec().iter().any(|&v| v != 0.0) {
                    return Err(Error::invalid(name, "All-NaN slice encountered"));
                }
                Ok(b[0].clone())
            }),
            crate::dtype::DType::I64,
            None,
        )
    }

    /// The index of the first maximum ignoring NaN (`np.nanargmax`: NaN counts as
    /// `-inf`), along `axis` (`None`: of the flattened array).
    ///
    /// # Errors
    /// [`Error::Invalid`] for an axis out of range or an empty axis, and when the plan
    /// runs for a lane of NaN only ("All-NaN slice encountered", as NumPy).
    pub fn nanargmax(&self, axis: Option<usize>, keepdims: bool) -> Result<Array> {
        self.nan_arg(true, axis, keepdims)
    }

    /// The index of the first minimum ignoring NaN (`np.nanargmin`).
    ///
    /// # Errors
    /// As [`Array::nanargmax`].
    pub fn nanargmin(&self, axis: Option<usize>, keepdims: bool) -> Result<Array> {
        self.nan_arg(false, axis, keepdims)
    }

    /// Standard deviation ignoring NaN (`np.nanstd`): the square root of
    /// [`Array::nanvar`].
    ///
    /// # Errors
    /// As [`Array::nanvar`].
    pub fn nanstd(&self, axes: Option<&[usize]>, ddof: usize, keepdims: bool) -> Result<Array> {
        self.nanvar(axes, ddof, keepdims)?.unary(UnaryOp::Sqrt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostArray;
    use tessera_cpu as _;

    fn x() -> Array {
        let n = f64::NAN;
        let v = vec![1.0, n, 3.0, n, n, n, -2.0, 5.0, n, 4.0, 0.5, 8.0];
        let h = HostArray::F64(ndarray::ArrayD::from_shape_vec(vec![3, 4], v).unwrap());
        Array::from_host(h, &[2usize, 3][..], None).unwrap()
    }

    #[test]
    fn nanargmax_skips_nan_and_refuses_an_all_nan_lane_when_it_runs() {
        let n = f64::NAN;
        // Rows of x(): [1, n, 3, n], [n, n, -2, 5], [n, 4, 0.5, 8].
        assert_eq!(
            values(x().nanargmax(Some(1), false).unwrap()),
            vec![2.0, 3.0, 3.0]
        );
        assert_eq!(
            values(x().nanargmin(Some(1), true).unwrap()),
            vec![0.0, 2.0, 2.0]
        );
        assert_eq!(values(x().nanargmax(None, false).unwrap()), vec![11.0]);
        let h = HostArray::F64(
            ndarray::ArrayD::from_shape_vec(vec![2, 2], vec![n, 1.0, n, n]).unwrap(),
        );
        let y = Array::from_host(h, &[1usize, 1][..], None).unwrap();
        assert_eq!(values(y.nanargmin(None, false).unwrap()), vec![1.0]);
        for axis in [0, 1] {
            let err = y
                .nanargmin(Some(axis), false)
                .unwrap()
                .compute()
                .unwrap_err();
            assert!(
                err.to_string().contains("All-NaN slice encountered"),
                "{err}"
            );
        }
    }

    fn values(a: Array) -> Vec<f64> {
        a.compute().unwrap().to_f64_vec()
    }

    fn same(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g.is_nan() && w.is_nan()) || (g - w).abs() < 1e-12,
                "{got:?} != {want:?}"
            );
        }
    }

    #[test]
    fn nan_reductions_skip_nans_and_an_all_nan_lane_is_nan() {
        let n = f64::NAN;
        // Rows: [1, n, 3, n], [n, n, -2, 5], [n, 4, 0.5, 8].
        same(
            &values(x().nanmax(Some(&[0]), false).unwrap()),
            &[1.0, 4.0, 3.0, 8.0],
        );
        same(
            &values(x().nanmin(Some(&[1]), false).unwrap()),
            &[1.0, -2.0, 0.5],
        );
        same(
            &values(x().nanprod(Some(&[1]), false).unwrap()),
            &[3.0, -10.0, 16.0],
        );
        let all_nan = {
            let h = HostArray::F64(
                ndarray::ArrayD::from_shape_vec(vec![2, 2], vec![n, 1.0, n, 2.0]).unwrap(),
            );
            Array::from_host(h, 1, None).unwrap()
        };
        same(
            &values(all_nan.nanmax(Some(&[0]), false).unwrap()),
            &[n, 2.0],
        );
        // Row 0: [1, 3] -> var 1; row 1: [-2, 5] -> 12.25; row 2: [4, 0.5, 8].
        let m = (4.0 + 0.5 + 8.0) / 3.0;
        let v2 = ((4.0f64 - m).powi(2) + (0.5f64 - m).powi(2) + (8.0f64 - m).powi(2)) / 3.0;
        same(
            &values(x().nanvar(Some(&[1]), 0, false).unwrap()),
            &[1.0, 12.25, v2],
        );
        same(
            &values(x().nanstd(Some(&[1]), 0, false).unwrap()),
            &[1.0, 3.5, v2.sqrt()],
        );
        // ddof leaving no degree of freedom: NaN.
        same(
            &values(x().nanvar(Some(&[1]), 2, false).unwrap())[..2],
            &[n, n],
        );
    }
}
