//! Quantiles and medians from NumPy 2's definitions, lane by lane: the lane sorted with
//! the oracle's own comparison sort, the virtual index `(n - 1) q`, the neighbours
//! `floor` and `floor + 1` (both the last element at or past the end, the weight then
//! measured from `-1`), `a + (b - a) t` below `t = 0.5` and `b - (b - a)(1 - t)` from it,
//! the index and weight in `float64`, every other step rounded to the result dtype. The median is the middle element or the mean
//! of the middle two. A lane holding NaN gives NaN; the NaN-skipping forms drop NaN
//! first, and a lane left empty gives NaN.

use tessera_core::{DType, HostArray};

use super::layout::lanes;
use super::values::{build, read, V};

/// What a lane gives.
#[derive(Clone, Copy, Debug)]
pub enum Select {
    /// NumPy's `linear` quantile at `q`.
    Quantile(f64),
    /// The median.
    Median,
}

fn round(dtype: DType, v: f64) -> f64 {
    if dtype == DType::F32 {
        f64::from(v as f32)
    } else {
        v
    }
}

/// One lane's value: `lane` in its original order, `src` the float dtype the
/// neighbours' difference is taken in, `dtype` the result's.
fn of_lane(lane: &[f64], sel: Select, skip_nan: bool, src: DType, dtype: DType) -> f64 {
    let mut v: Vec<f64> = if skip_nan {
        lane.iter().copied().filter(|x| !x.is_nan()).collect()
    } else {
        lane.to_vec()
    };
    if v.is_empty() || v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    // Insertion sort: the oracle's own, with the zeros equal.
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && v[j - 1] > v[j] {
            v.swap(j - 1, j);
            j -= 1;
        }
    }
    let n = v.len();
    let r = |x: f64| round(dtype, x);
    match sel {
        Select::Median if n % 2 == 1 => r(v[n / 2]),
        Select::Median => r(r(r(v[n / 2 - 1]) + r(v[n / 2])) / 2.0),
        Select::Quantile(q) => {
            // The virtual index and the weight stay float64; the weight is rounded to
            // the result dtype where it multiplies.
            let virt = (n - 1) as f64 * q;
            let (a, b, t) = if virt >= (n - 1) as f64 {
                (v[n - 1], v[n - 1], virt + 1.0)
            } else {
                let f = virt.floor();
                (v[f as usize], v[f as usize + 1], virt - f)
            };
            let diff = r(round(src, b - a));
            let (a, b) = (r(a), r(b));
            if t >= 0.5 {
                r(b - r(diff * r(1.0 - t)))
            } else {
                r(a + r(diff * r(t)))
            }
        }
    }
}

/// The selections `sels` along `axis` (`None`: of the flattened array), stacked along a
/// new leading axis when `stacked`, the reduced axis kept with length 1 when `keepdims`
/// (every axis for `None`), as `dtype`.
pub fn select(
    x: &HostArray,
    sels: &[Select],
    axis: Option<usize>,
    keepdims: bool,
    skip_nan: bool,
    dtype: DType,
    stacked: bool,
) -> HostArray {
    let src = if x.dtype().is_float() {
        x.dtype()
    } else {
        DType::F64
    };
    let shape = x.shape().to_vec();
    let input: Vec<f64> = read(x).into_iter().map(V::num).collect();
    let (lanes, mut out_shape): (Vec<Vec<f64>>, Vec<usize>) = match axis {
        None => (
            vec![input.clone()],
            if keepdims {
                vec![1; shape.len()]
            } else {
                vec![]
            },
        ),
        Some(ax) => {
            let lanes = lanes(&shape, ax)
                .into_iter()
                .map(|l| l.into_iter().map(|p| input[p]).collect())
                .collect();
            let mut reduced = shape.clone();
            if keepdims {
                reduced[ax] = 1;
            } else {
                reduced.remove(ax);
            }
            (lanes, reduced)
        }
    };
    let mut out = Vec::with_capacity(sels.len() * lanes.len());
    for &s in sels {
        out.extend(
            lanes
                .iter()
                .map(|l| V::F(of_lane(l, s, skip_nan, src, dtype))),
        );
    }
    if stacked {
        out_shape.insert(0, sels.len());
    }
    build(&out_shape, dtype, &out)
}
