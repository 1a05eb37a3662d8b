//! Singular values by one-sided Jacobi (Hestenes), the oracle for `svd`.
//!
//! Plane rotations applied to pairs of columns until every pair is orthogonal leave the
//! singular values as the column norms. The method is slow and simple, accurate to a few
//! ulps of the largest singular value, and shares nothing with the bidiagonalisation the
//! backends' SVDs use.

use tessera_core::HostArray;

/// The `min(m, n)` singular values of a 2-d array, in descending order.
pub fn singular_values(x: &HostArray) -> Vec<f64> {
    let (m, n) = (x.shape()[0], x.shape()[1]);
    let v = x.to_f64_vec();
    // Columns of X, or of X^T when X is wide, so there are never more columns than rows.
    let (rows, cols) = if m >= n { (m, n) } else { (n, m) };
    let mut c: Vec<Vec<f64>> = (0..cols)
        .map(|j| {
            (0..rows)
                .map(|i| if m >= n { v[i * n + j] } else { v[j * n + i] })
                .collect()
        })
        .collect();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    for _sweep in 0..100 {
        let mut rotated = false;
        for i in 0..cols {
            for j in i + 1..cols {
                let (alpha, beta, gamma) =
                    (dot(&c[i], &c[i]), dot(&c[j], &c[j]), dot(&c[i], &c[j]));
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let cs = 1.0 / (1.0 + t * t).sqrt();
                let sn = cs * t;
                let (ci, cj) = (c[i].clone(), c[j].clone());
                for r in 0..rows {
                    c[i][r] = cs * ci[r] - sn * cj[r];
                    c[j][r] = sn * ci[r] + cs * cj[r];
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let mut s: Vec<f64> = c.iter().map(|col| dot(col, col).sqrt()).collect();
    s.sort_by(|a, b| b.total_cmp(a));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn host(shape: &[usize], v: Vec<f64>) -> HostArray {
        HostArray::F64(ArrayD::from_shape_vec(IxDyn(shape), v).unwrap())
    }

    #[test]
    fn hand_computed_singular_values() {
        // diag(3, -2) has singular values 3 and 2.
        let s = singular_values(&host(&[2, 2], vec![3.0, 0.0, 0.0, -2.0]));
        assert_eq!(s, vec![3.0, 2.0]);
        // [[1 1] [0 0]] has rank one: sqrt(2) and 0; its transpose too.
        let s = singular_values(&host(&[2, 2], vec![1.0, 1.0, 0.0, 0.0]));
        assert!(
            (s[0] - 2f64.sqrt()).abs() < 1e-15 && s[1].abs() < 1e-15,
            "{s:?}"
        );
        // A 1x3 row: its norm.
        let s = singular_values(&host(&[1, 3], vec![2.0, 3.0, 6.0]));
        assert!((s[0] - 7.0).abs() < 1e-14, "{s:?}");
        // [[2 0] [1 2]]: s^2 are the roots of t^2 - 9t + 16, (9 ± sqrt(17)) / 2.
        let s = singular_values(&host(&[2, 2], vec![2.0, 0.0, 1.0, 2.0]));
        let want = [
            ((9.0 + 17f64.sqrt()) / 2.0).sqrt(),
            ((9.0 - 17f64.sqrt()) / 2.0).sqrt(),
        ];
        assert!(
            (s[0] - want[0]).abs() < 1e-14 && (s[1] - want[1]).abs() < 1e-14,
            "{s:?}"
        );
    }
}
