//! Cumulative scans of a host array along one axis: the reference every backend's
//! [`ArrayBackend::scan`](crate::ArrayBackend::scan) is checked against, and the host
//! step of the backends that do not scan natively.
//!
//! Each element is combined with the running value in order, as NumPy's `cumsum` does (so
//! float sums round as NumPy's sequential loop does within a block). Along the last axis
//! a lane is contiguous and scanned in place; along any other axis the scan walks the
//! axis once, combining each slab with the one before it, so memory is read in order.

use ndarray::{ArrayD, Axis, Zip};

use super::{HostArray, HostElement};
use crate::error::{Error, Result};
use crate::program::ScanOp;

/// How one element type combines in a scan.
trait ScanElement: HostElement {
    fn combine(op: ScanOp, acc: Self, x: Self) -> Self;
}

macro_rules! int_scan {
    ($($t:ty),*) => {$(
        impl ScanElement for $t {
            fn combine(op: ScanOp, acc: Self, x: Self) -> Self {
                match op {
                    ScanOp::Sum => acc.wrapping_add(x),
                    ScanOp::Prod => acc.wrapping_mul(x),
                    ScanOp::Max => acc.max(x),
                    ScanOp::Min => acc.min(x),
                }
            }
        }
    )*};
}
int_scan!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_scan {
    ($($t:ty),*) => {$(
        impl ScanElement for $t {
            fn combine(op: ScanOp, acc: Self, x: Self) -> Self {
                match op {
                    ScanOp::Sum => acc + x,
                    ScanOp::Prod => acc * x,
                    // NumPy's maximum/minimum: a NaN on either side is the answer.
                    ScanOp::Max if acc.is_nan() || x.is_nan() => <$t>::NAN,
                    ScanOp::Min if acc.is_nan() || x.is_nan() => <$t>::NAN,
                    ScanOp::Max => if x > acc { x } else { acc },
                    ScanOp::Min => if x < acc { x } else { acc },
                }
            }
        }
    )*};
}
float_scan!(f32, f64);

impl ScanElement for bool {
    fn combine(op: ScanOp, acc: Self, x: Self) -> Self {
        match op {
            ScanOp::Sum | ScanOp::Max => acc | x,
            ScanOp::Prod | ScanOp::Min => acc & x,
        }
    }
}

fn scan_typed<T: ScanElement>(a: &ArrayD<T>, op: ScanOp, axis: usize) -> HostArray {
    let mut out = a.as_standard_layout().into_owned();
    let n = out.shape()[axis];
    if axis + 1 == out.ndim() {
        for mut lane in out.lanes_mut(Axis(axis)) {
            let mut acc: Option<T> = None;
            for v in lane.iter_mut() {
                let next = match acc {
                    None => *v,
                    Some(p) => T::combine(op, p, *v),
                };
                *v = next;
                acc = Some(next);
            }
        }
    } else {
        for i in 1..n {
            let (left, mut right) = out.view_mut().split_at(Axis(axis), i);
            let prev = left.index_axis(Axis(axis), i - 1);
            let cur = right.index_axis_mut(Axis(axis), 0);
            Zip::from(cur)
                .and(&prev)
                .for_each(|c, &p| *c = T::combine(op, p, *c));
        }
    }
    T::wrap(out)
}

impl HostArray {
    /// The inclusive scan `op` along `axis`, in the array's own dtype (cast first for
    /// NumPy's accumulation dtype: [`ScanOp::result_dtype`]). On `bool`, sum and max are
    /// a running or, product and min a running and.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `axis` is not an axis of the array.
    pub fn scan(&self, op: ScanOp, axis: usize) -> Result<HostArray> {
        if axis >= self.shape().len() {
            return Err(Error::invalid(
                op.name(),
                format!(
                    "axis {axis} is out of bounds for an array of shape {:?}",
                    self.shape()
                ),
            ));
        }
        Ok(crate::dispatch_host!(self, a => scan_typed(a, op, axis)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::IxDyn;

    fn f64s(shape: &[usize], v: &[f64]) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap())
    }

    #[test]
    fn scans_along_each_axis_match_a_loop_written_out() {
        let x = f64s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(
            x.scan(ScanOp::Sum, 1).unwrap(),
            f64s(&[2, 3], &[1.0, 3.0, 6.0, 4.0, 9.0, 15.0])
        );
        assert_eq!(
            x.scan(ScanOp::Sum, 0).unwrap(),
            f64s(&[2, 3], &[1.0, 2.0, 3.0, 5.0, 7.0, 9.0])
        );
        assert_eq!(
            x.scan(ScanOp::Prod, 1).unwrap(),
            f64s(&[2, 3], &[1.0, 2.0, 6.0, 4.0, 20.0, 120.0])
        );
    }

    #[test]
    fn a_nan_propagates_through_max_and_min_and_integers_wrap() {
        let x = f64s(&[4], &[1.0, f64::NAN, 3.0, 0.5]);
        let m = x.scan(ScanOp::Max, 0).unwrap().to_f64_vec();
        assert_eq!(m[0], 1.0);
        assert!(m[1..].iter().all(|v| v.is_nan()), "{m:?}");
        let i = HostArray::I8(ArrayD::from_shape_vec(IxDyn(&[3]), vec![100, 100, -5]).unwrap());
        assert_eq!(
            i.scan(ScanOp::Sum, 0).unwrap(),
            HostArray::I8(ArrayD::from_shape_vec(IxDyn(&[3]), vec![100, -56, -61]).unwrap())
        );
        assert_eq!(
            i.scan(ScanOp::Min, 0).unwrap(),
            HostArray::I8(ArrayD::from_shape_vec(IxDyn(&[3]), vec![100, 100, -5]).unwrap())
        );
    }

    #[test]
    fn an_axis_past_the_end_is_refused_by_name() {
        let err = f64s(&[2], &[1.0, 2.0]).scan(ScanOp::Sum, 1).unwrap_err();
        assert!(err.to_string().contains("axis 1 is out of bounds"), "{err}");
    }
}
