//! The sparse backend through the user API: fill-value semantics stay sparse, the plan
//! says when it densifies, sparse creation and host forms round-trip, bad input is a
//! typed error. (Op-by-op agreement with the CPU reference is the conformance suite's
//! job: `tessera-conformance --backend sparse`.)

use tessera_array::{Array, Index};
use tessera_core::registry::array_backend;
use tessera_core::{DType, Error, HostArray, Scalar};
use tessera_sparse::{downcast, eye, from_coo, from_dense, random, to_coo, Coo};
use {tessera_cpu as _, tessera_sparse as _};

fn sparse() -> tessera_core::BackendRef {
    array_backend("sparse").unwrap()
}

/// Total explicit entries and the fills of an array's chunks.
fn stats(a: &Array) -> (usize, Vec<Scalar>) {
    let chunks = a.compute_chunks().unwrap();
    let mut nnz = 0;
    let mut fills = Vec::new();
    for c in &chunks {
        let s = downcast(c, "test").unwrap();
        nnz += s.nnz();
        fills.push(s.fill());
    }
    (nnz, fills)
}

#[test]
fn adding_a_scalar_keeps_the_pattern_and_moves_the_fill() {
    let x = random(&sparse(), &[200, 300], 0.05, 100, 3).unwrap();
    let (nnz, fills) = stats(&x);
    assert!(nnz > 1000 && nnz < 5000, "{nnz}");
    assert!(fills.iter().all(|&f| f == Scalar::F64(0.0)));
    let y = (&x + 1.0).unwrap();
    let (nnz_y, fills_y) = stats(&y);
    assert_eq!(nnz_y, nnz, "x + 1 must not densify");
    assert!(
        fills_y.iter().all(|&f| f == Scalar::F64(1.0)),
        "{fills_y:?}"
    );
    // Multiplying by zero prunes everything; comparisons against the fill are sparse.
    assert_eq!(stats(&(&x * 0.0).unwrap()).0, 0);
    let nz = x.gt_scalar(0.0).unwrap();
    let (nnz_b, fills_b) = stats(&nz);
    assert_eq!(nnz_b, nnz);
    assert!(fills_b.iter().all(|&f| f == Scalar::Bool(false)));
    // And the values are the dense values.
    let dense = x.to_backend("cpu").unwrap();
    let want = ((&dense + 1.0).unwrap())
        .sum(None, false)
        .unwrap()
        .compute_f64()
        .unwrap();
    let got = y.sum(None, false).unwrap().compute_f64().unwrap();
    assert!((got - want).abs() <= 1e-9 * want.abs(), "{got} vs {want}");
}

#[test]
fn reductions_statistics_and_count_nonzero_match_dense() {
    let x = random(&sparse(), &[150, 90], 0.1, 40, 9).unwrap();
    let d = x.to_backend("cpu").unwrap();
    for axis in [None, Some(vec![0]), Some(vec![1])] {
        let ax = axis.as_deref();
        let pairs = [
            (x.sum(ax, false).unwrap(), d.sum(ax, false).unwrap()),
            (x.mean(ax, false).unwrap(), d.mean(ax, false).unwrap()),
            (x.max(ax, false).unwrap(), d.max(ax, false).unwrap()),
            (x.min(ax, false).unwrap(), d.min(ax, false).unwrap()),
            (x.std(ax, 0, false).unwrap(), d.std(ax, 0, false).unwrap()),
            (
                x.ne_scalar(0.0)
                    .unwrap()
                    .astype(DType::I64)
                    .sum(ax, false)
                    .unwrap(),
                d.ne_scalar(0.0)
                    .unwrap()
                    .astype(DType::I64)
                    .sum(ax, false)
                    .unwrap(),
            ),
        ];
        for (s, c) in pairs {
            let (s, c) = (
                s.compute().unwrap().to_f64_vec(),
                c.compute().unwrap().to_f64_vec(),
            );
            for (a, b) in s.iter().zip(&c) {
                assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} vs {b}");
            }
        }
    }
}

#[test]
fn sparse_times_dense_vector_matches_dense() {
    let x = random(&sparse(), &[300, 200], 0.02, 100, 5).unwrap();
    let v = Array::arange(0.0, 200.0, 1.0, DType::F64, 100, Some("cpu")).unwrap();
    let v2 = v.reshape(&[200, 1]).unwrap();
    let got = x
        .matmul(&v2.to_backend("sparse").unwrap())
        .unwrap()
        .compute()
        .unwrap();
    let want = x
        .to_backend("cpu")
        .unwrap()
        .matmul(&v2)
        .unwrap()
        .compute()
        .unwrap();
    for (a, b) in got.to_f64_vec().iter().zip(want.to_f64_vec()) {
        assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0));
    }
}

#[test]
fn explain_says_when_the_sparse_backend_densifies() {
    let x = Array::zeros(&[100, 100], DType::F64, 50, Some("sparse")).unwrap();
    let plain = (&x + 1.0).unwrap().explain().unwrap();
    assert!(!plain.contains("densifies"), "{plain}");
    let r = tessera_array::RandomState::new(1)
        .normal(0.0, 1.0, &[100, 100], 50, Some("sparse"))
        .unwrap();
    let text = (&x + &r).unwrap().explain().unwrap();
    assert!(
        text.contains("backend 'sparse': densifies: a dense random generator"),
        "{text}"
    );
}

#[test]
fn a_product_says_it_may_densify_and_records_it_when_it_does() {
    let a = Array::ones(&[20, 30], DType::F64, 10, Some("sparse")).unwrap();
    let b = Array::zeros(&[30, 5], DType::F64, 10, Some("sparse")).unwrap();
    let product = a.matmul(&b).unwrap();
    let text = product.explain().unwrap();
    assert!(
        text.contains(
            "backend 'sparse': matmul may be densified: a left operand with a non-zero fill"
        ),
        "{text}"
    );
    // Ones have fill 1: the product runs on the dense form, and says so where it ran.
    let backend = tessera_core::registry::array_backend("sparse").unwrap();
    let x = backend
        .from_host(&tessera_core::HostArray::full(
            &[2, 3],
            tessera_core::Scalar::F64(1.0),
            DType::F64,
        ))
        .unwrap();
    let ones = backend
        .full(&[2, 3], tessera_core::Scalar::F64(1.0))
        .unwrap();
    let y = backend
        .from_host(&tessera_core::HostArray::full(
            &[3, 2],
            tessera_core::Scalar::F64(2.0),
            DType::F64,
        ))
        .unwrap();
    tessera_core::fallback::take();
    backend.matmul(&x, &y).unwrap();
    assert!(
        tessera_core::fallback::take().is_empty(),
        "fill 0 on the left: native"
    );
    backend.matmul(&ones, &y).unwrap();
    let fell_back = tessera_core::fallback::take();
    assert_eq!(fell_back.len(), 1, "{fell_back:?}");
    assert_eq!(fell_back[0].op, "matmul");
}

#[test]
fn coo_csr_and_arrow_round_trip() {
    let x = random(&sparse(), &[40, 60], 0.1, &[15usize, 25][..], 11).unwrap();
    let coo = to_coo(&x).unwrap();
    assert_eq!(coo.shape, vec![40, 60]);
    assert!(coo.nnz() > 100);
    let dense = x.compute().unwrap().to_f64_vec();
    for k in 0..coo.nnz() {
        let (r, c) = (coo.coords[0][k] as usize, coo.coords[1][k] as usize);
        assert_eq!(dense[r * 60 + c], coo.values.get_flat(k).unwrap().as_f64());
    }
    let csr = coo.to_csr().unwrap();
    assert_eq!(csr.indptr.len(), 41);
    assert_eq!(*csr.indptr.last().unwrap() as usize, coo.nnz());
    assert_eq!(csr.to_coo().unwrap(), coo);
    let batch = coo.to_record_batch().unwrap();
    assert_eq!(batch.num_rows(), coo.nnz());
    assert_eq!(
        Coo::from_record_batch(&batch, &[40, 60], Scalar::F64(0.0)).unwrap(),
        coo
    );
    // Back to a chunked array with other chunks: same values.
    let y = from_coo(&sparse(), &coo, 7).unwrap();
    assert_eq!(y.compute().unwrap().to_f64_vec(), dense);
}

#[test]
fn triplets_eye_threshold_and_backend_moves() {
    let coo = Coo::new(
        &[3, 4],
        Scalar::I64(0),
        vec![vec![2, 0, 1], vec![3, 1, 1]],
        HostArray::from(ndarray::arr1(&[7i64, 5, 6]).into_dyn()),
    )
    .unwrap();
    let a = from_coo(&sparse(), &coo, 2).unwrap();
    assert_eq!(
        a.compute().unwrap().to_f64_vec(),
        vec![0.0, 5.0, 0.0, 0.0, 0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 7.0]
    );
    let dup = Coo::new(
        &[3, 4],
        Scalar::I64(0),
        vec![vec![1, 1], vec![2, 2]],
        HostArray::from(ndarray::arr1(&[1i64, 2]).into_dyn()),
    );
    assert!(matches!(dup, Err(Error::Invalid { .. })), "{dup:?}");
    let oob = Coo::new(
        &[2, 2],
        Scalar::I64(0),
        vec![vec![2], vec![0]],
        HostArray::from(ndarray::arr1(&[1i64]).into_dyn()),
    );
    assert!(oob.unwrap_err().to_string().contains("out of range"));

    let i = eye(&sparse(), 5, DType::F32, 2).unwrap();
    assert_eq!(stats(&i).0, 5);
    assert_eq!(i.sum(None, false).unwrap().compute_f64().unwrap(), 5.0);

    let d = Array::arange(-5.0, 5.0, 1.0, DType::F64, 4, Some("cpu")).unwrap();
    let t = from_dense(&d, 2.5).unwrap();
    assert_eq!(t.backend_name(), "sparse");
    assert_eq!(stats(&t).0, 5); // -5, -4, -3, 3, 4
    let back = t.to_backend("cpu").unwrap().compute().unwrap().to_f64_vec();
    assert_eq!(
        back,
        vec![-5.0, -4.0, -3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0]
    );
    // A strided slice stays sparse and right.
    let s = t
        .slice(&[Index::step(-3)])
        .unwrap()
        .compute()
        .unwrap()
        .to_f64_vec();
    assert_eq!(s, vec![4.0, 0.0, 0.0, -5.0]); // elements 9, 6, 3, 0
}

#[test]
fn a_bad_density_is_a_typed_error() {
    let e = random(&sparse(), &[10, 10], 1.5, 5, 0).unwrap_err();
    assert!(
        e.to_string().contains("density 1.5 is not in [0, 1]"),
        "{e}"
    );
}
