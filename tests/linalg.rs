//! Chunked linear algebra against definitions: reconstruction and orthogonality of exact
//! QR/SVD over several shapes and chunkings (including multi-level TSQR), recovery of a
//! known spectrum by `svd_compressed`, least squares, norms, and the errors.

use ndarray::{Array2, Ix2};
use tessera::chunks::{ChunkSpec, Chunks};
use tessera::linalg::{lstsq, norm, norm_axis, qr, svd, svd_compressed, tsqr};
use tessera::{Array, DType, Error, HostArray, RandomState};

fn host2(a: &Array) -> Array2<f64> {
    a.compute()
        .unwrap()
        .cast(DType::F64)
        .into_typed::<f64>()
        .unwrap()
        .into_dimensionality::<Ix2>()
        .unwrap()
}

fn frob(a: &Array2<f64>) -> f64 {
    a.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn exact(sizes0: Vec<usize>, sizes1: Vec<usize>) -> ChunkSpec {
    let shape = [sizes0.iter().sum(), sizes1.iter().sum()];
    ChunkSpec::Exact(Chunks::new(&shape, vec![sizes0, sizes1]).unwrap())
}

fn random(shape: [usize; 2], chunks: ChunkSpec, seed: u64) -> Array {
    RandomState::new(seed)
        .normal(0.0, 1.0, &shape, chunks, Some("cpu"))
        .unwrap()
}

fn check_svd(x: &Array, tol: f64) {
    let d = svd(x).unwrap();
    let (u, vt) = (host2(&d.u), host2(&d.vt));
    let s = d.s.compute().unwrap().to_f64_vec();
    let xs = host2(x);
    let k = s.len();
    assert_eq!(k, xs.nrows().min(xs.ncols()));
    assert!(
        s.windows(2).all(|w| w[0] >= w[1]) && s[k - 1] >= 0.0,
        "{s:?}"
    );
    let us = Array2::from_shape_fn(u.dim(), |(i, j)| u[[i, j]] * s[j]);
    let rec = frob(&(&us.dot(&vt) - &xs)) / frob(&xs);
    let orth_u = frob(&(&u.t().dot(&u) - &Array2::<f64>::eye(k)));
    let orth_v = frob(&(&vt.dot(&vt.t()) - &Array2::<f64>::eye(k)));
    assert!(
        rec < tol && orth_u < tol && orth_v < tol,
        "{:?}: rec {rec:e}, UtU {orth_u:e}, VVt {orth_v:e}",
        x.shape()
    );
}

#[test]
fn exact_svd_reconstructs_over_shapes_and_chunkings() {
    // Tall-and-skinny, regular and irregular row chunks; 40 blocks make TSQR two-level
    // at the default split-every of 16.
    check_svd(
        &random([1000, 10], exact(vec![100; 10], vec![10]), 1),
        1e-13,
    );
    check_svd(
        &random([999, 7], exact(vec![250, 3, 500, 246], vec![7]), 2),
        1e-13,
    );
    check_svd(&random([2000, 5], exact(vec![50; 40], vec![5]), 3), 1e-13);
    // Blocks shorter than the width (QR of 3 x 8 blocks).
    check_svd(&random([24, 8], exact(vec![3; 8], vec![8]), 4), 1e-13);
    // Short-and-fat goes through the transpose.
    check_svd(&random([6, 800], exact(vec![6], vec![100; 8]), 5), 1e-13);
    // float32 stays float32, to its precision.
    let x32 = random([500, 6], exact(vec![125; 4], vec![6]), 6).astype(DType::F32);
    assert_eq!(svd(&x32).unwrap().u.dtype(), DType::F32);
    check_svd(&x32, 1e-5);
}

#[test]
fn tsqr_gives_orthonormal_q_and_triangular_r() {
    let x = random([1200, 9], exact(vec![100; 12], vec![9]), 7);
    let f = tsqr(&x).unwrap();
    let (q, r) = (host2(&f.q), host2(&f.r));
    assert_eq!(f.q.chunks().axis(0), x.chunks().axis(0));
    assert!(frob(&(&q.dot(&r) - &host2(&x))) / frob(&host2(&x)) < 1e-13);
    assert!(frob(&(&q.t().dot(&q) - &Array2::<f64>::eye(9))) < 1e-13);
    for i in 0..9 {
        for j in 0..i {
            assert!(r[[i, j]].abs() < 1e-14, "R[{i},{j}] = {}", r[[i, j]]);
        }
    }
    // Integer input is factored as float64.
    let ints = Array::arange(1.0, 41.0, 1.0, DType::I64, 10, Some("cpu"))
        .unwrap()
        .reshape(&[20, 2])
        .unwrap();
    assert_eq!(qr(&ints).unwrap().q.dtype(), DType::F64);
}

#[test]
fn svd_compressed_recovers_a_known_spectrum() {
    // X = A diag(sigma) B^T with orthonormal A (m x r), B (n x r), sigma_i = 0.5^i.
    let (m, n, r) = (2000, 300, 40);
    let a = host2(
        &tsqr(&random([m, r], exact(vec![500; 4], vec![r]), 11))
            .unwrap()
            .q,
    );
    let b = host2(
        &tsqr(&random([n, r], exact(vec![300], vec![r]), 12))
            .unwrap()
            .q,
    );
    let sigma: Vec<f64> = (0..r).map(|i| 0.5f64.powi(i as i32)).collect();
    let ad = Array2::from_shape_fn((m, r), |(i, j)| a[[i, j]] * sigma[j]);
    let xh = ad.dot(&b.t());
    let x = Array::from_host(
        HostArray::F64(xh.into_dyn()),
        exact(vec![500; 4], vec![100; 3]),
        Some("cpu"),
    )
    .unwrap();
    let k = 10;
    let d = svd_compressed(&x, k, 2, 10, 42).unwrap();
    let s = d.s.compute().unwrap().to_f64_vec();
    assert_eq!(s.len(), k);
    for (i, (&got, &want)) in s.iter().zip(&sigma).enumerate() {
        assert!(
            ((got - want) / want).abs() < 1e-6,
            "sigma_{i}: {got} vs {want}"
        );
    }
    assert_eq!(d.u.shape(), vec![m, k]);
    assert_eq!(d.vt.shape(), vec![k, n]);
    let u = host2(&d.u);
    assert!(frob(&(&u.t().dot(&u) - &Array2::<f64>::eye(k))) < 1e-10);
}

#[test]
fn svd_compressed_draws_its_test_matrix_on_the_inputs_backend() {
    let sparse = tessera::registry::array_backend("sparse").unwrap();
    let x = tessera::tessera_sparse::random(&sparse, &[400, 300], 0.05, 100, 3).unwrap();
    let d = svd_compressed(&x, 4, 1, 6, 1).unwrap();
    assert_eq!(d.u.backend_name(), "sparse");
    let dense = x.to_backend("cpu").unwrap();
    let dd = svd_compressed(&dense, 4, 1, 6, 1).unwrap();
    let (a, b) = (
        d.s.compute().unwrap().to_f64_vec(),
        dd.s.compute().unwrap().to_f64_vec(),
    );
    for (p, q) in a.iter().zip(&b) {
        assert!((p - q).abs() < 1e-9 * q, "{p} vs {q}");
    }
}

#[test]
fn roughly_square_arrays_point_to_svd_compressed() {
    let x = random([100, 100], exact(vec![50, 50], vec![50, 50]), 8);
    let e = svd(&x).unwrap_err();
    assert!(matches!(e, Error::Invalid { .. }), "{e:?}");
    assert!(e.to_string().contains("svd_compressed"), "{e}");
    let e = svd_compressed(&x, 95, 0, 10, 0).unwrap_err();
    assert!(e.to_string().contains("min(m, n) = 100"), "{e}");
}

#[test]
fn lstsq_solves_an_overdetermined_system() {
    let a = random([3000, 4], exact(vec![750; 4], vec![4]), 9);
    let truth = Array::from_slice(&[1.5, -2.0, 0.25, 4.0], &[4, 1], 4, Some("cpu")).unwrap();
    let b = a.matmul(&truth).unwrap().persist().unwrap();
    let sol = lstsq(&a, &b).unwrap();
    assert_eq!(sol.rank, 4);
    let x = sol.x.compute().unwrap().to_f64_vec();
    for (got, want) in x.iter().zip([1.5, -2.0, 0.25, 4.0]) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    assert!(sol.residuals.compute().unwrap().to_f64_vec()[0] < 1e-20);
    let e = lstsq(
        &a,
        &Array::zeros(&[10], DType::F64, 10, Some("cpu")).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
}

#[test]
fn norms_match_hand_values() {
    let x = Array::from_slice(&[3.0, 0.0, 4.0, 12.0], &[2, 2], 1, Some("cpu")).unwrap();
    assert_eq!(norm(&x).unwrap().compute_f64().unwrap(), 13.0);
    assert_eq!(
        norm_axis(&x, 0).unwrap().compute().unwrap().to_f64_vec(),
        vec![5.0, 12.0]
    );
}
