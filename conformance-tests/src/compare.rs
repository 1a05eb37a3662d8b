//! Comparing a backend's result with the reference: dtype-aware tolerances.
//!
//! Integers and bools must match exactly. Floats match when NaN sits at the same
//! positions, infinities agree in sign, and otherwise `|x - y| <= max(rtol * |x + y|, atol)`
//! (the form burn uses: symmetric, and relative to the values' own magnitude). `-0.0` and
//! `0.0` compare equal. Each op family picks its tolerance: exact for data movement,
//! a few ulps for arithmetic, more for transcendental functions, and reductions get an
//! absolute slack that grows with the number and magnitude of the summed values, since a
//! backend may legitimately add in another order.

use std::fmt;

use tessera_core::chunks::c_strides;
use tessera_core::{DType, HostArray};

/// A tolerance for float comparisons; ignored for integers and bools (always exact).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tol {
    /// Relative tolerance, scaled by `|x + y|`.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tol {
    /// Bit-for-bit (up to the sign of zero).
    pub const EXACT: Tol = Tol {
        rtol: 0.0,
        atol: 0.0,
    };

    /// Correctly rounded arithmetic (`+ - * /`, casts): a couple of ulps.
    pub fn arithmetic(dtype: DType) -> Tol {
        Tol {
            rtol: 2.0 * eps(dtype),
            atol: 0.0,
        }
    }

    /// Library functions (`exp`, `log`, `sin`, `pow`, ...), which differ between math
    /// libraries by a few ulps; the absolute part covers results near zero.
    pub fn transcendental(dtype: DType) -> Tol {
        let e = eps(dtype);
        Tol {
            rtol: 64.0 * e,
            atol: 64.0 * e * e.sqrt(),
        }
    }

    /// A reduction of `n` values of magnitude up to `scale`: order-dependent rounding.
    pub fn reduction(dtype: DType, n: usize, scale: f64) -> Tol {
        let e = eps(dtype);
        let scale = if scale.is_finite() { scale } else { 0.0 };
        Tol {
            rtol: 16.0 * e,
            atol: 4.0 * e * n as f64 * scale,
        }
    }

    /// A product of `n` values: the relative error grows with `n`. With subnormal inputs
    /// a partial product can underflow in one order and not in another, losing all
    /// relative precision, so then only NaN/inf positions and signs are compared.
    pub fn product(dtype: DType, n: usize, has_subnormal: bool) -> Tol {
        Tol {
            rtol: if has_subnormal {
                1.0
            } else {
                4.0 * n as f64 * eps(dtype)
            },
            atol: 0.0,
        }
    }

    /// The looser of two tolerances.
    pub fn max(self, other: Tol) -> Tol {
        Tol {
            rtol: self.rtol.max(other.rtol),
            atol: self.atol.max(other.atol),
        }
    }
}

/// Machine epsilon of a float dtype (0 for the exact dtypes).
pub fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => f32::EPSILON as f64,
        DType::F64 => f64::EPSILON,
        _ => 0.0,
    }
}

/// Where and how two results differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// What differs: `dtype`, `shape` or `value`.
    pub what: &'static str,
    /// The n-d index of the first differing element (empty for dtype/shape mismatches).
    pub index: Vec<usize>,
    /// The backend's value (or dtype / shape).
    pub got: String,
    /// The reference's value (or dtype / shape).
    pub want: String,
    /// How many elements differ.
    pub count: usize,
}

impl Mismatch {
    /// The mismatch in words, naming the side that produced `got` and the one that gave
    /// `want` (e.g. `backend` and `reference`, or `reference` and `oracle`).
    pub fn describe(&self, got: &str, want: &str) -> String {
        match self.what {
            "value" => format!(
                "first mismatch at index {:?}: {got} {} vs {want} {} ({} element(s) differ)",
                self.index, self.got, self.want, self.count
            ),
            what => format!("{what} differs: {got} {} vs {want} {}", self.got, self.want),
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe("backend", "reference"))
    }
}

fn unravel(flat: usize, shape: &[usize]) -> Vec<usize> {
    c_strides(shape)
        .iter()
        .zip(shape)
        .map(|(&s, &n)| if n == 0 { 0 } else { (flat / s.max(1)) % n })
        .collect()
}

/// True when two floats agree under `tol`.
pub fn floats_close(x: f64, y: f64, tol: Tol) -> bool {
    if x.is_nan() || y.is_nan() {
        return x.is_nan() && y.is_nan();
    }
    if x.is_infinite() || y.is_infinite() {
        return x == y;
    }
    let d = (x - y).abs();
    d == 0.0 || d <= (tol.rtol * (x + y).abs()).max(tol.atol)
}

/// Compares `got` (the backend's) with `want` (the reference's).
pub fn compare(got: &HostArray, want: &HostArray, tol: Tol) -> Result<(), Mismatch> {
    if got.dtype() != want.dtype() {
        return Err(Mismatch {
            what: "dtype",
            index: vec![],
            got: got.dtype().to_string(),
            want: want.dtype().to_string(),
            count: 0,
        });
    }
    if got.shape() != want.shape() {
        return Err(Mismatch {
            what: "shape",
            index: vec![],
            got: format!("{:?}", got.shape()),
            want: format!("{:?}", want.shape()),
            count: 0,
        });
    }
    let shape = want.shape().to_vec();
    let mut first: Option<(usize, String, String)> = None;
    let mut count = 0usize;
    let mut note = |i: usize, g: String, w: String| {
        count += 1;
        if first.is_none() {
            first = Some((i, g, w));
        }
    };
    macro_rules! exact {
        ($a:expr, $b:expr) => {
            for (i, (x, y)) in $a.iter().zip($b.iter()).enumerate() {
                if x != y {
                    note(i, format!("{x:?}"), format!("{y:?}"));
                }
            }
        };
    }
    macro_rules! float {
        ($a:expr, $b:expr) => {
            for (i, (x, y)) in $a.iter().zip($b.iter()).enumerate() {
                if !floats_close(*x as f64, *y as f64, tol) {
                    note(i, format!("{x:?}"), format!("{y:?}"));
                }
            }
        };
    }
    match (got, want) {
        (HostArray::Bool(a), HostArray::Bool(b)) => exact!(a, b),
        (HostArray::I8(a), HostArray::I8(b)) => exact!(a, b),
        (HostArray::I16(a), HostArray::I16(b)) => exact!(a, b),
        (HostArray::I32(a), HostArray::I32(b)) => exact!(a, b),
        (HostArray::I64(a), HostArray::I64(b)) => exact!(a, b),
        (HostArray::U8(a), HostArray::U8(b)) => exact!(a, b),
        (HostArray::U16(a), HostArray::U16(b)) => exact!(a, b),
        (HostArray::U32(a), HostArray::U32(b)) => exact!(a, b),
        (HostArray::U64(a), HostArray::U64(b)) => exact!(a, b),
        (HostArray::F32(a), HostArray::F32(b)) => float!(a, b),
        (HostArray::F64(a), HostArray::F64(b)) => float!(a, b),
        _ => unreachable!("dtypes were checked equal"),
    }
    match first {
        None => Ok(()),
        Some((i, g, w)) => Err(Mismatch {
            what: "value",
            index: unravel(i, &shape),
            got: g,
            want: w,
            count,
        }),
    }
}

/// True when a host array holds a nonzero subnormal float.
pub fn has_subnormal(h: &HostArray) -> bool {
    h.dtype().is_float()
        && h.to_f64_vec().iter().any(|v| {
            if h.dtype() == DType::F32 {
                (*v as f32).is_subnormal()
            } else {
                v.is_subnormal()
            }
        })
}

/// The largest finite `|x|` in a host array (0 when there is none).
pub fn max_abs(h: &HostArray) -> f64 {
    h.to_f64_vec()
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0, |m, v| m.max(v.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn f64s(v: &[f64], shape: &[usize]) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap())
    }

    #[test]
    fn floats_follow_the_tolerance_and_nan_rules() {
        let t = Tol {
            rtol: 1e-6,
            atol: 0.0,
        };
        assert!(floats_close(1.0, 1.0 + 1e-7, t));
        assert!(!floats_close(1.0, 1.0 + 1e-5, t));
        assert!(floats_close(f64::NAN, f64::NAN, t));
        assert!(!floats_close(f64::NAN, 1.0, t));
        assert!(!floats_close(f64::INFINITY, f64::NEG_INFINITY, t));
        assert!(floats_close(0.0, -0.0, Tol::EXACT));
        assert!(!floats_close(1e-300, 0.0, t));
        assert!(floats_close(
            1e-300,
            0.0,
            Tol {
                rtol: 0.0,
                atol: 1e-299
            }
        ));
    }

    #[test]
    fn the_first_mismatch_is_located() {
        let a = f64s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let b = f64s(&[1.0, 2.0, 3.0, 4.0, 5.5, 6.5], &[2, 3]);
        let m = compare(&a, &b, Tol::EXACT).unwrap_err();
        assert_eq!(m.index, vec![1, 1]);
        assert_eq!(m.count, 2);
        assert_eq!((m.got.as_str(), m.want.as_str()), ("5.0", "5.5"));
        assert!(compare(&a, &a, Tol::EXACT).is_ok());
        let m = compare(&a, &a.cast(DType::F32), Tol::EXACT).unwrap_err();
        assert_eq!(m.what, "dtype");
        let m = compare(&a, &f64s(&[1.0; 6], &[3, 2]), Tol::EXACT).unwrap_err();
        assert_eq!(m.what, "shape");
    }

    #[test]
    fn integers_are_exact_beyond_f64_precision() {
        let a = HostArray::I64(ArrayD::from_elem(IxDyn(&[1]), i64::MAX));
        let b = HostArray::I64(ArrayD::from_elem(IxDyn(&[1]), i64::MAX - 1));
        assert!(compare(&a, &b, Tol::arithmetic(DType::F64)).is_err());
    }
}
