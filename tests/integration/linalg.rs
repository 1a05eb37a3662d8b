//! Chunked linear algebra against definitions: reconstruction and orthogonality of exact
//! QR/SVD over several shapes and chunkings (including multi-level TSQR), recovery of a
//! known spectrum by `svd_compressed` (in one pass over the input when its sketch is well
//! conditioned, in two otherwise), the one-pass range sketch, least squares, norms, and
//! the errors.

use ndarray::{Array2, Ix2};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tessera::chunks::{ChunkSpec, Chunks};

use tessera::linalg::{lstsq, norm, norm_axis, qr, sketch, svd, svd_compressed, tsqr};
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

/// `X = A diag(sigma) Bᵀ` (m × n, chunked by `chunks`) with orthonormal `A` (m × r), `B`
/// (n × r) and `sigma_i = 0.5^i`: a matrix whose spectrum is known. `A` is factored in
/// row blocks of `block`; `seed` and `seed + 1` draw `A` and `B`.
fn halving_spectrum(
    m: usize,
    n: usize,
    r: usize,
    block: usize,
    chunks: ChunkSpec,
    seed: u64,
) -> (Array, Vec<f64>) {
    let a = host2(
        &tsqr(&random(
            [m, r],
            exact(vec![block; m / block], vec![r]),
            seed,
        ))
        .unwrap()
        .q,
    );
    let b = host2(
        &tsqr(&random([n, r], exact(vec![n], vec![r]), seed + 1))
            .unwrap()
            .q,
    );
    let sigma: Vec<f64> = (0..r).map(|i| 0.5f64.powi(i as i32)).collect();
    let ad = Array2::from_shape_fn((m, r), |(i, j)| a[[i, j]] * sigma[j]);
    let x = Array::from_host(
        HostArray::F64(ad.dot(&b.t()).into_dyn()),
        chunks,
        Some("cpu"),
    )
    .unwrap();
    (x, sigma)
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
    let (m, n) = (2000, 300);
    let (x, sigma) = halving_spectrum(m, n, 40, 500, exact(vec![500; 4], vec![100; 3]), 11);
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

/// `x` as a `map_blocks` identity that counts how many blocks are computed: the passes
/// `svd_compressed` makes over its input.
fn counted(x: &Array) -> (Array, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let f: tessera::array::HostBlockFn = Arc::new(move |b: &[HostArray]| {
        seen.fetch_add(1, Ordering::Relaxed);
        Ok(b[0].clone())
    });
    (Array::map_blocks(&[x], f, x.dtype(), None).unwrap(), calls)
}

#[test]
fn sketch_gives_both_products_in_one_pass() {
    let x = random([1000, 60], exact(vec![250, 250, 300, 200], vec![60]), 21);
    let omega = random([60, 8], exact(vec![60], vec![8]), 22);
    let (xh, oh) = (host2(&x), host2(&omega));
    let want_y = xh.dot(&oh);
    let want_xty = xh.t().dot(&want_y);
    let close = |got: &Array2<f64>, want: &Array2<f64>| {
        assert_eq!(got.dim(), want.dim());
        let err = frob(&(got - want)) / frob(want);
        assert!(err < 1e-13, "relative error {err}");
    };
    // A generated block (streamed through the backend's sketch_program), its negation,
    // and a block only a user function can produce (the stored-block path).
    let (stored, calls) = counted(&x);
    for (operand, sign) in [
        (x.clone(), 1.0),
        (x.unary(tessera::program::UnaryOp::Neg).unwrap(), -1.0),
        (stored, 1.0),
    ] {
        let sk = sketch(&operand, &omega).unwrap();
        let (y, xty) = sk.persist().unwrap();
        assert_eq!(y.chunks().axis(0), x.chunks().axis(0));
        close(&host2(&y), &(&want_y * sign));
        close(&host2(&xty), &want_xty);
    }
    assert_eq!(
        calls.load(Ordering::Relaxed),
        4,
        "one pass over four blocks"
    );
    let plan = sketch(&x, &omega).unwrap().y.explain().unwrap();
    assert!(
        plan.contains("range sketch streaming a fused block"),
        "{plan}"
    );
}

#[test]
fn sketch_needs_whole_rows_and_matching_shapes() {
    let x = random([100, 40], exact(vec![50, 50], vec![20, 20]), 1);
    let omega = random([40, 5], exact(vec![40], vec![5]), 2);
    let e = sketch(&x, &omega).unwrap_err();
    assert!(
        e.to_string().contains("rechunk axis 1 into one chunk"),
        "{e}"
    );
    let x = random([100, 40], exact(vec![50, 50], vec![40]), 1);
    let e = sketch(&x, &random([39, 5], exact(vec![39], vec![5]), 2)).unwrap_err();
    assert!(matches!(e, Error::Shape { .. }), "{e:?}");
}

#[test]
fn svd_compressed_makes_one_pass_when_the_sketch_is_well_conditioned() {
    // Uniform data: the sketch's condition number is modest, so B = Qᵀ x comes from the
    // same pass as Y. Its answer must equal the two-pass one (the same x split into two
    // column chunks, where the sketch does not apply; the test matrix is the same
    // counter-based one either way).
    let shape = [3000, 200];
    let one_col = exact(vec![500; 6], vec![200]);
    let x = RandomState::new(4)
        .uniform(0.0, 1.0, &shape, one_col, Some("cpu"))
        .unwrap();
    let (xc, calls) = counted(&x);
    let (k, p) = (6, 6);
    let one = svd_compressed(&xc, k, 0, p, 9).unwrap();
    let s1 = one.s.compute().unwrap().to_f64_vec();
    assert_eq!(calls.load(Ordering::Relaxed), 6, "one pass over six blocks");
    let two_col = x.rechunk(exact(vec![500; 6], vec![100, 100])).unwrap();
    let two = svd_compressed(&two_col, k, 0, p, 9).unwrap();
    let s2 = two.s.compute().unwrap().to_f64_vec();
    for (a, b) in s1.iter().zip(&s2) {
        assert!((a - b).abs() <= 1e-10 * b, "{s1:?} vs {s2:?}");
    }
    // The factors agree up to each singular pair's sign.
    let (u1, u2) = (host2(&one.u), host2(&two.u));
    let (v1, v2) = (host2(&one.vt), host2(&two.vt));
    for j in 0..k {
        let sign = u1.column(j).dot(&u2.column(j)).signum();
        let du = &u1.column(j) - &(&u2.column(j) * sign);
        let dv = &v1.row(j) - &(&v2.row(j) * sign);
        assert!(
            du.iter().map(|d| d.abs()).fold(0.0, f64::max) < 1e-8,
            "u column {j}"
        );
        assert!(
            dv.iter().map(|d| d.abs()).fold(0.0, f64::max) < 1e-8,
            "v row {j}"
        );
    }
    assert!(frob(&(&u1.t().dot(&u1) - &Array2::<f64>::eye(k))) < 1e-12);
}

#[test]
fn svd_compressed_makes_a_second_pass_when_the_sketch_is_ill_conditioned() {
    // sigma_i = 0.5^i: with 16 test vectors and a power iteration cond(R) is far past the
    // one-pass limit, so B = Qᵀ x is formed from Q directly, and the spectrum is recovered
    // as accurately as in the known-spectrum test.
    let (x, sigma) = halving_spectrum(1200, 150, 30, 400, exact(vec![400; 3], vec![150]), 31);
    let (xc, calls) = counted(&x);
    let k = 8;
    let d = svd_compressed(&xc, k, 1, 8, 5).unwrap();
    let s = d.s.compute().unwrap().to_f64_vec();
    // Two for the power iteration, the sketch, and the second pass it falls back to.
    assert_eq!(
        calls.load(Ordering::Relaxed),
        12,
        "four passes over three blocks"
    );
    for (i, (&got, &want)) in s.iter().zip(&sigma).enumerate() {
        assert!(
            ((got - want) / want).abs() < 1e-6,
            "sigma_{i}: {got} vs {want}"
        );
    }
}

#[test]
fn block_kernels_a_backend_lacks_are_declared_and_run_on_the_host_by_linalg() {
    let sparse = tessera::registry::array_backend("sparse").unwrap();
    for op in [tessera::ArrayOp::Qr, tessera::ArrayOp::Svd] {
        assert!(!sparse.capabilities().supports(op, DType::F64), "{op}");
    }
    let x = tessera::tessera_sparse::random(&sparse, &[300, 6], 0.3, 100, 5).unwrap();
    // The protocol kernel is refused, never converted behind the caller's back...
    let chunk = sparse.from_host(&x.compute().unwrap()).unwrap();
    let e = sparse.qr(&chunk).unwrap_err();
    assert!(
        matches!(e, Error::Unsupported { ref op, .. } if op == "qr"),
        "{e:?}"
    );
    // ...while chunked linear algebra runs the blocks on the host, with the same answer.
    let dense = x.to_backend("cpu").unwrap();
    let (a, b) = (svd(&x).unwrap(), svd(&dense).unwrap());
    assert_eq!(a.u.backend_name(), "sparse");
    let (sa, sb) = (
        a.s.compute().unwrap().to_f64_vec(),
        b.s.compute().unwrap().to_f64_vec(),
    );
    assert_eq!(sa.len(), 6);
    for (p, q) in sa.iter().zip(&sb) {
        assert!((p - q).abs() <= 1e-12 * q.max(1.0), "{p} vs {q}");
    }
}
