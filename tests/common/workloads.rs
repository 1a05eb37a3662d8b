//! The workloads the distributed tests run on every rank and in one process: the seed
//! headline, mean/std over axes, the SVD of a tall-skinny array and `svd_compressed`, on
//! chunk grids that split unevenly over 1 to 4 ranks.

use tessera::linalg::{svd, svd_compressed};
use tessera::{DType, HostArray, Index, RandomState};

/// The elements as `f64`, in C order.
pub fn f64s(h: HostArray) -> Vec<f64> {
    h.cast(DType::F64)
        .into_typed::<f64>()
        .unwrap()
        .iter()
        .copied()
        .collect()
}

/// Asserts `a` and `b` agree within float reassociation (relative 1e-9).
pub fn close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let tol = 1e-9 * x.abs().max(y.abs()).max(1.0);
        assert!((x - y).abs() <= tol, "{what}[{i}]: {x} vs {y}");
    }
}

/// The seed headline `(x + 1)[::2, ::2].sum()` on 300 × 300 in 45-wide (uneven) chunks.
pub fn headline() -> f64 {
    let x = RandomState::new(42)
        .normal(10.0, 1.0, &[300, 300], 45, Some("cpu"))
        .unwrap();
    (&x + 1.0)
        .unwrap()
        .slice(&[Index::step(2), Index::step(2)])
        .unwrap()
        .sum(None, false)
        .unwrap()
        .compute_f64()
        .unwrap()
}

/// Mean and std (ddof 1) of a 40 × 30 × 20 array over three sets of axes.
pub fn moments() -> Vec<Vec<f64>> {
    let x = RandomState::new(7)
        .uniform(-1.0, 3.0, &[40, 30, 20], 11, Some("cpu"))
        .unwrap();
    let mut out = Vec::new();
    for axes in [vec![0], vec![1, 2], vec![0, 1, 2]] {
        out.push(f64s(x.mean(Some(&axes), false).unwrap().compute().unwrap()));
        out.push(f64s(
            x.std(Some(&axes), 1, false).unwrap().compute().unwrap(),
        ));
    }
    out
}

/// Singular values of a 700 × 6 array in 100-row blocks (TSQR).
pub fn tall_svd() -> Vec<f64> {
    let x = RandomState::new(3)
        .normal(0.0, 1.0, &[700, 6], &[100usize, 6][..], Some("cpu"))
        .unwrap();
    f64s(svd(&x).unwrap().s.compute().unwrap())
}

/// The top singular values of a 260 × 90 array by `svd_compressed`.
pub fn compressed_svd() -> Vec<f64> {
    let x = RandomState::new(5)
        .normal(0.0, 1.0, &[260, 90], 50, Some("cpu"))
        .unwrap();
    f64s(
        svd_compressed(&x, 4, 1, 4, 11)
            .unwrap()
            .s
            .compute()
            .unwrap(),
    )
}
