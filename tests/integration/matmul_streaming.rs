//! A matmul whose operand is a fused program (a random matrix, a transposed and scaled
//! input) runs as one task that streams the program's rows into the product
//! (`ArrayBackend::matmul_program`). These tests check that plan against the same product
//! with the operand computed first, on the left and on the right, in `f64` and `f32`,
//! with operands long enough for several bands of rows, and that `explain` shows it.

use tessera::chunks::{ChunkSpec, Chunks};
use tessera::program::BinaryOp;
use tessera::{Array, DType, RandomState, Scalar};

fn exact(sizes0: Vec<usize>, sizes1: Vec<usize>) -> ChunkSpec {
    let shape = [sizes0.iter().sum(), sizes1.iter().sum()];
    ChunkSpec::Exact(Chunks::new(&shape, vec![sizes0, sizes1]).unwrap())
}

/// `2 * normal(shape)ᵀ` as a lazy program, chunked so that blocks hold several bands of
/// rows (a band is 2^17 elements).
fn operand(rows: usize, cols: usize, dtype: DType, row_chunks: Vec<usize>) -> Array {
    let x = RandomState::new(11)
        .normal(
            0.0,
            1.0,
            &[cols, rows],
            exact(vec![cols], row_chunks),
            Some("cpu"),
        )
        .unwrap()
        .astype(dtype);
    x.T()
        .unwrap()
        .binary_scalar(BinaryOp::Mul, Scalar::F64(2.0), false)
        .unwrap()
}

/// The same array, computed and stored: a product with it is an ordinary matmul task.
fn stored(a: &Array) -> Array {
    Array::from_host(
        a.compute().unwrap(),
        ChunkSpec::Exact(a.chunks().clone()),
        Some("cpu"),
    )
    .unwrap()
}

fn max_rel_diff(a: &Array, b: &Array) -> f64 {
    let (a, b) = (
        a.compute().unwrap().to_f64_vec(),
        b.compute().unwrap().to_f64_vec(),
    );
    assert_eq!(a.len(), b.len());
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 0.0, "a product of random matrices is not zero");
    a.iter()
        .zip(&b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs() / scale))
}

#[test]
fn a_streamed_operand_gives_the_materialised_product() {
    // 1,500 x 300 operand in row blocks of 700 and 800: each block is several bands of
    // 436 rows plus a partial one.
    for (dtype, tol) in [(DType::F64, 1e-13), (DType::F32, 1e-5)] {
        let p = operand(1500, 300, dtype, vec![700, 800]);
        let stored_p = stored(&p);
        let right = RandomState::new(5)
            .uniform(-1.0, 1.0, &[300, 7], exact(vec![300], vec![7]), Some("cpu"))
            .unwrap()
            .astype(dtype);
        let left = RandomState::new(6)
            .uniform(
                -1.0,
                1.0,
                &[9, 1500],
                exact(vec![9], vec![700, 800]),
                Some("cpu"),
            )
            .unwrap()
            .astype(dtype);
        let right = stored(&right);
        let left = stored(&left);

        // The streamed plan says so, the stored one does not, and they agree.
        let check = |streamed: Array, plain: Array, shape: &[usize], what: &str| {
            assert!(streamed
                .explain()
                .unwrap()
                .contains("matmul streaming a fused operand"));
            assert!(!plain.explain().unwrap().contains("streaming"));
            assert_eq!(streamed.shape(), shape);
            let d = max_rel_diff(&streamed, &plain);
            assert!(d < tol, "{dtype} {what} differs by {d}");
        };
        check(
            p.matmul(&right).unwrap(),
            stored_p.matmul(&right).unwrap(),
            &[1500, 7],
            "P @ B",
        );
        check(
            left.matmul(&p).unwrap(),
            left.matmul(&stored_p).unwrap(),
            &[9, 300],
            "A @ P",
        );

        // A bare random matrix is generated straight into the band, on either side.
        let g = RandomState::new(8)
            .normal_typed(
                0.0,
                1.0,
                dtype,
                &[1500, 300],
                exact(vec![700, 800], vec![300]),
                Some("cpu"),
            )
            .unwrap();
        let sg = stored(&g);
        check(
            g.matmul(&right).unwrap(),
            sg.matmul(&right).unwrap(),
            &[1500, 7],
            "G @ B",
        );
        check(
            left.matmul(&g).unwrap(),
            left.matmul(&sg).unwrap(),
            &[9, 300],
            "A @ G",
        );
    }
}

#[test]
fn an_operand_used_twice_is_computed_once_per_use_or_shared() {
    // `p @ p.T`-like graphs: the same program block feeds two products. Either plan is
    // correct; the result must match the stored operand's.
    let p = operand(600, 200, DType::F64, vec![600]);
    let q = p.matmul(&p.T().unwrap()).unwrap();
    let sp = stored(&p);
    let want = sp.matmul(&sp.T().unwrap()).unwrap();
    let d = max_rel_diff(&q, &want);
    assert!(d < 1e-13, "{d}");
}
