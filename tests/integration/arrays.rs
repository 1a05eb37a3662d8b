//! The CPU reference checked against hand-computed values, known identities and a naive
//! ndarray reference, on random shapes (0-d to 4-d, empty and size-1 axes) and random
//! irregular chunkings. Test data comes from the counter-based generator itself, so every
//! case is reproducible from its seed.

use ndarray::{ArrayD, IxDyn};
use tessera::{Array, DType, Index, RandomState, Scalar};
use tessera_conformance::r#gen::Gen;

use crate::common::{close, data, f64s};

#[test]
fn elementwise_matches_reference_on_random_shapes_and_chunks() {
    let mut g = Gen::new(1);
    for case in 0..40 {
        let shape = g.shape(0, 4);
        let (a, b) = (data(&mut g, &shape), data(&mut g, &shape));
        let x = Array::from_ndarray(a.clone(), g.chunks(&shape), Some("cpu")).unwrap();
        let y = Array::from_ndarray(b.clone(), g.chunks(&shape), Some("cpu")).unwrap();
        let ctx = format!("case {case} shape {shape:?}");
        close(
            &f64s(&(&x + &y).unwrap()),
            &(&a + &b),
            &format!("{ctx} add"),
        );
        close(
            &f64s(&(&x * &y).unwrap()),
            &(&a * &b),
            &format!("{ctx} mul"),
        );
        close(
            &f64s(&(&x - 2.5).unwrap()),
            &a.mapv(|v| v - 2.5),
            &format!("{ctx} sub scalar"),
        );
        close(
            &f64s(&(1.0 / &x).unwrap()),
            &a.mapv(|v| 1.0 / v),
            &format!("{ctx} rdiv"),
        );
        close(
            &f64s(&x.maximum(&y).unwrap()),
            &ndarray::Zip::from(&a).and(&b).map_collect(|p, q| p.max(*q)),
            &format!("{ctx} maximum"),
        );
        close(
            &f64s(&x.abs().unwrap().sqrt().unwrap()),
            &a.mapv(|v| v.abs().sqrt()),
            &format!("{ctx} sqrt abs"),
        );
        close(
            &f64s(&x.exp().unwrap()),
            &a.mapv(f64::exp),
            &format!("{ctx} exp"),
        );
        close(
            &f64s(&x.gt(&y).unwrap().astype(DType::F64)),
            &ndarray::Zip::from(&a)
                .and(&b)
                .map_collect(|p, q| (p > q) as u8 as f64),
            &format!("{ctx} gt"),
        );
        close(
            &f64s(&(&x % 2.0).unwrap()),
            &a.mapv(|v| tessera::program::py_fmod_f64(v, 2.0)),
            &format!("{ctx} rem"),
        );
        let w = x.gt_scalar(0.0).unwrap().where_(&x, &y).unwrap();
        close(
            &f64s(&w),
            &ndarray::Zip::from(&a)
                .and(&b)
                .map_collect(|p, q| if *p > 0.0 { *p } else { *q }),
            &format!("{ctx} where"),
        );
        close(
            &f64s(&x.round().unwrap()),
            &a.mapv(f64::round_ties_even),
            &format!("{ctx} round"),
        );
    }
}

#[test]
fn integer_arithmetic_wraps_like_numpy() {
    let a: Vec<i8> = vec![100, -100, 127, -128, 7, -7];
    let b: Vec<i8> = vec![100, -100, 1, -1, 2, 2];
    let x = Array::from_slice(&a, &[6], 4, Some("cpu")).unwrap();
    let y = Array::from_slice(&b, &[6], 2, Some("cpu")).unwrap();
    let s = (&x + &y).unwrap();
    assert_eq!(s.dtype(), DType::I8);
    let got = s.to_ndarray::<i8>().unwrap();
    let want: Vec<i8> = a.iter().zip(&b).map(|(p, q)| p.wrapping_add(*q)).collect();
    assert_eq!(got.as_slice().unwrap(), &want[..]);
    // Floor division and modulo follow Python; int / int is float64.
    let fd = x.floor_div(&y).unwrap().to_ndarray::<i8>().unwrap();
    assert_eq!(fd.as_slice().unwrap(), &[1, 1, 127, -128, 3, -4]);
    let q = (&x / &y).unwrap();
    assert_eq!(q.dtype(), DType::F64);
    // Weak scalars keep the array's dtype.
    assert_eq!((&x + 1).unwrap().dtype(), DType::I8);
    assert_eq!((&x * 0.5).unwrap().dtype(), DType::F64);
    // Mixed signedness promotes like NumPy.
    let u = Array::from_slice(&[200u8, 1, 2, 3, 4, 5], &[6], 3, Some("cpu")).unwrap();
    assert_eq!((&x + &u).unwrap().dtype(), DType::I16);
    assert_eq!((&x + &u).unwrap().to_ndarray::<i16>().unwrap()[[0]], 300);
}

#[test]
fn slicing_matches_ndarray() {
    let a = ArrayD::from_shape_vec(IxDyn(&[7, 9]), (0..63).map(|v| v as f64).collect()).unwrap();
    let x = Array::from_ndarray(a.clone(), [3i64, 4], Some("cpu")).unwrap();
    let y = x
        .slice(&[Index::step(-1), Index::slice(Some(1), None, 2)])
        .unwrap();
    let want = a.slice(ndarray::s![..;-1, 1..;2]).to_owned().into_dyn();
    close(&f64s(&y), &want, "x[::-1, 1::2]");
    let z = x.slice(&[Index::At(-2), Index::range(2, 8)]).unwrap();
    close(
        &f64s(&z),
        &a.slice(ndarray::s![5, 2..8]).to_owned().into_dyn(),
        "x[-2, 2:8]",
    );
    let n = x.slice(&[Index::Ellipsis, Index::NewAxis]).unwrap();
    assert_eq!(n.shape(), vec![7, 9, 1]);
    let err = x.slice(&[Index::At(7)]).unwrap_err().to_string();
    assert!(
        err.contains("index 7 is out of bounds for axis 0 with size 7"),
        "{err}"
    );
    // Chunks of a strided slice follow the input chunks without computing anything.
    // Input chunks [0,3) [3,6) [6,7) keep coordinates {0,2} {4} {6}.
    assert_eq!(
        x.slice(&[Index::step(2)]).unwrap().chunks().axis(0),
        &[2, 1, 1]
    );
}

#[test]
fn arg_reductions_pick_first_extreme_and_first_nan() {
    let v = vec![3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 9.0];
    let x = Array::from_slice(&v, &[8], [3usize], Some("cpu")).unwrap();
    assert_eq!(
        x.argmin(None, false).unwrap().compute_scalar().unwrap(),
        Scalar::I64(1)
    );
    assert_eq!(
        x.argmax(None, false).unwrap().compute_scalar().unwrap(),
        Scalar::I64(5)
    );
    let m = Array::from_slice(&v, &[2, 4], [1usize, 3], Some("cpu")).unwrap();
    let am = m
        .argmax(Some(1), false)
        .unwrap()
        .to_ndarray::<i64>()
        .unwrap();
    assert_eq!(am.as_slice().unwrap(), &[2, 1]);
    assert_eq!(
        m.argmax(None, false).unwrap().compute_scalar().unwrap(),
        Scalar::I64(5)
    );
    let n =
        Array::from_slice(&[1.0, f64::NAN, 0.0, f64::NAN], &[4], [2usize], Some("cpu")).unwrap();
    assert_eq!(
        n.argmin(None, false).unwrap().compute_scalar().unwrap(),
        Scalar::I64(1)
    );
    assert!(n.max(None, false).unwrap().compute_f64().unwrap().is_nan());
    assert_eq!(n.nansum(None, false).unwrap().compute_f64().unwrap(), 1.0);
    assert_eq!(n.nanmean(None, false).unwrap().compute_f64().unwrap(), 0.5);
}

#[test]
fn variance_is_stable_far_from_zero() {
    // E[x^2] - E[x]^2 loses every digit here; the parallel merge must not.
    let v: Vec<f64> = (0..1000).map(|i| 1e9 + (i % 7) as f64).collect();
    let x = Array::from_slice(&v, &[1000], [37usize], Some("cpu")).unwrap();
    let m = v.iter().sum::<f64>() / 1000.0;
    let want = v.iter().map(|a| (a - m).powi(2)).sum::<f64>() / 1000.0;
    let got = x.var(None, 0, false).unwrap().compute_f64().unwrap();
    assert!((got - want).abs() < 1e-9 * want, "var {got} vs {want}");
}

/// `std` of a fused random expression asks for each block's sum and M2 in one task per
/// block (the block is generated once; `x + x.T` equals its transpose, so only the 10 of
/// 16 blocks on and above the diagonal have a task), and `explain` shows that program;
/// the answer equals the std of the same values computed densely.
#[test]
fn std_takes_one_pass_per_block() {
    let x = RandomState::new(9)
        .normal(0.0, 1.0, &[400, 400], 100, Some("cpu"))
        .unwrap();
    let s = (&x + &x.T().unwrap()).unwrap();
    let std = s.std(None, 0, false).unwrap();
    let plan = std.explain().unwrap();
    assert!(
        plan.contains("10 one-pass block moments"),
        "one moments task per block on or above the diagonal:\n{plan}"
    );
    assert!(
        plan.contains("so 6 block reductions below the diagonal reuse"),
        "{plan}"
    );
    assert!(
        plan.contains("random Normal"),
        "the block program generates:\n{plan}"
    );
    let dense = s.to_ndarray::<f64>().unwrap();
    let m = dense.mean().unwrap();
    let want = (dense.mapv(|v| (v - m) * (v - m)).sum() / dense.len() as f64).sqrt();
    let got = std.compute_f64().unwrap();
    assert!((got - want).abs() < 1e-13 * want, "std {got} vs {want}");
    // Along one axis, with ddof: each column's variance.
    let got = s
        .var(Some(&[0]), 1, false)
        .unwrap()
        .to_ndarray::<f64>()
        .unwrap();
    for (j, col) in dense.axis_iter(ndarray::Axis(1)).enumerate() {
        let m = col.mean().unwrap();
        let want = col.mapv(|v| (v - m) * (v - m)).sum() / (col.len() - 1) as f64;
        assert!((got[[j]] - want).abs() < 1e-12 * want, "column {j}");
    }
}

#[test]
fn creation_hand_computed() {
    let a = Array::arange(0.0, 10.0, 1.0, DType::I64, 3, Some("cpu")).unwrap();
    assert_eq!(
        a.sum(None, false).unwrap().compute_scalar().unwrap(),
        Scalar::I64(45)
    );
    let l = Array::linspace(0.0, 1.0, 5, true, 2, Some("cpu"))
        .unwrap()
        .to_ndarray::<f64>()
        .unwrap();
    assert_eq!(l.as_slice().unwrap(), &[0.0, 0.25, 0.5, 0.75, 1.0]);
    let e = Array::eye(3, Some(4), 1, DType::F32, 2, Some("cpu"))
        .unwrap()
        .to_ndarray::<f32>()
        .unwrap();
    assert_eq!(e.sum(), 3.0);
    assert_eq!(e[[0, 1]], 1.0);
    assert_eq!(e[[2, 3]], 1.0);
    let z = Array::zeros(&[2, 0, 3], DType::U8, 1, Some("cpu")).unwrap();
    assert_eq!(
        z.sum(None, false).unwrap().compute_scalar().unwrap(),
        Scalar::U64(0)
    );
    let f = Array::full(&[3, 3], 2.5f32, 2, Some("cpu")).unwrap();
    assert_eq!(
        f.sum(None, false).unwrap().compute_scalar().unwrap(),
        Scalar::F32(22.5)
    );
}

#[test]
fn headline_small_is_right_and_fuses() {
    let n = 600;
    let x = RandomState::new(1)
        .normal(10.0, 1.0, &[n, n], 150, Some("cpu"))
        .unwrap();
    let y = (&x + 1.0)
        .unwrap()
        .slice(&[Index::step(2), Index::step(2)])
        .unwrap()
        .sum(None, false)
        .unwrap();
    let v = y.compute_f64().unwrap();
    let want = 11.0 * (n as f64 / 2.0).powi(2);
    assert!((v - want).abs() / want < 1e-3, "{v} vs {want}");
    // One fused task per chunk plus the tree: no separate random/add/slice tasks.
    assert!(y.num_tasks().unwrap() <= 16 + 2, "{}", y.explain().unwrap());
    let plan = y.explain().unwrap();
    assert!(plan.contains("slice pushed into random source"), "{plan}");
    // The chunk program generates, adds and reduces in one pass; the plan states its
    // projected peak memory.
    assert!(plan.contains("= random Normal"), "{plan}");
    assert!(plan.contains("out sum("), "{plan}");
    assert!(plan.contains("projected peak memory:"), "{plan}");
    // Transposed fusion: (x + x.T) is symmetric.
    let s = (&x + &x.transpose().unwrap()).unwrap();
    let d = (&s - &s.transpose().unwrap())
        .unwrap()
        .abs()
        .unwrap()
        .max(None, false)
        .unwrap();
    assert_eq!(d.compute_f64().unwrap(), 0.0);
}

#[test]
fn structure_ops_match_reference() {
    let a = ArrayD::from_shape_vec(IxDyn(&[4, 6]), (0..24).map(|v| v as f64).collect()).unwrap();
    let x = Array::from_ndarray(a.clone(), [3usize, 4], Some("cpu")).unwrap();
    close(
        &f64s(&x.transpose().unwrap()),
        &a.t().to_owned(),
        "transpose",
    );
    let r = x.reshape(&[3, -1]).unwrap();
    close(
        &f64s(&r),
        &a.clone().into_shape_with_order(IxDyn(&[3, 8])).unwrap(),
        "reshape",
    );
    close(
        &f64s(&x.reshape(&[24]).unwrap()),
        &a.clone().into_shape_with_order(IxDyn(&[24])).unwrap(),
        "ravel",
    );
    let c = Array::concatenate(&[&x, &x.slice(&[Index::range(0, 2)]).unwrap()], 0).unwrap();
    close(
        &f64s(&c),
        &ndarray::concatenate(
            ndarray::Axis(0),
            &[a.view(), a.slice(ndarray::s![0..2, ..]).into_dyn()],
        )
        .unwrap(),
        "concatenate",
    );
    let st = Array::stack(&[&x, &x], 1).unwrap();
    assert_eq!(st.shape(), vec![4, 2, 6]);
    close(
        &f64s(&st.slice(&[Index::FULL, Index::At(1)]).unwrap()),
        &a,
        "stack",
    );
    close(&f64s(&x.rechunk([4usize, 1]).unwrap()), &a, "rechunk");
    assert_eq!(x.rechunk([4usize, 1]).unwrap().chunks().count(), 6);
    let e = x.expand_dims(0).unwrap();
    assert_eq!(e.shape(), vec![1, 4, 6]);
    close(&f64s(&e.squeeze(None).unwrap()), &a, "squeeze");
    let err = x.reshape(&[5, 5]).unwrap_err().to_string();
    assert!(
        err.contains("cannot reshape array of shape [4, 6]"),
        "{err}"
    );
}

#[test]
fn matmul_and_tensordot_match_naive() {
    let mut g = Gen::new(3);
    let a = data(&mut g, &[5, 7]);
    let b = data(&mut g, &[7, 4]);
    let x = Array::from_ndarray(a.clone(), [2usize, 3], Some("cpu")).unwrap();
    let y = Array::from_ndarray(b.clone(), [4usize, 2], Some("cpu")).unwrap();
    let want = a
        .view()
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap()
        .dot(&b.view().into_dimensionality::<ndarray::Ix2>().unwrap())
        .into_dyn();
    close(&f64s(&x.matmul(&y).unwrap()), &want, "matmul");
    close(
        &f64s(&x.tensordot(&y, &[1], &[0]).unwrap()),
        &want,
        "tensordot",
    );
    let v = y.slice(&[Index::FULL, Index::At(0)]).unwrap();
    assert_eq!(x.matmul(&v).unwrap().shape(), vec![5]);
    let err = x.matmul(&x).unwrap_err().to_string();
    assert!(err.contains("contraction mismatch"), "{err}");
    let i = Array::arange(0.0, 6.0, 1.0, DType::I32, 4, Some("cpu"))
        .unwrap()
        .reshape(&[2, 3])
        .unwrap();
    let p = i
        .matmul(&i.transpose().unwrap())
        .unwrap()
        .to_ndarray::<i32>()
        .unwrap();
    assert_eq!(p.as_slice().unwrap(), &[5, 14, 14, 50]);
}

#[test]
fn map_blocks_host_and_checks() {
    let x = Array::arange(0.0, 10.0, 1.0, DType::F64, 4, Some("cpu")).unwrap();
    let f: tessera::array::HostBlockFn = std::sync::Arc::new(|b: &[tessera::HostArray]| {
        Ok(tessera::HostArray::F64(
            b[0].view_typed::<f64>()?.mapv(|v| v * v),
        ))
    });
    let y = Array::map_blocks(&[&x], f, DType::F64, None).unwrap();
    assert_eq!(y.sum(None, false).unwrap().compute_f64().unwrap(), 285.0);
    let bad: tessera::array::HostBlockFn = std::sync::Arc::new(|_b: &[tessera::HostArray]| {
        Ok(tessera::HostArray::full(&[1], Scalar::F64(0.0), DType::F64))
    });
    let z = Array::map_blocks(&[&x], bad, DType::F64, None).unwrap();
    let err = z.compute().unwrap_err().to_string();
    // Blocks run in parallel: whichever fails first is named.
    assert!(
        err.contains("block [") && err.contains("came back as float64 [1]; declared float64"),
        "{err}"
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let err = Array::zeros(&[2], DType::F64, 1, Some("nope"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown array backend 'nope'") && err.contains("cpu"),
        "{err}"
    );
    let x = Array::ones(&[3, 2], DType::F64, 2, Some("cpu")).unwrap();
    let y = Array::ones(&[4, 2], DType::F64, 2, Some("cpu")).unwrap();
    let err = (&x + &y).unwrap_err().to_string();
    assert!(err.contains("[3, 2] and [4, 2]"), "{err}");
    let b = x.gt_scalar(0.0).unwrap();
    let err = (&b + &b).unwrap_err().to_string();
    assert!(err.contains("bool"), "{err}");
    let err = Array::from_slice(&[1.0, 2.0], &[3], 1, Some("cpu"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 elements do not fill shape [3]"), "{err}");
    let err = x.to_ndarray::<f32>().unwrap_err().to_string();
    assert!(err.contains("holds float64"), "{err}");
}

#[test]
fn repr_shows_backend_and_chunks() {
    let x = Array::ones(&[1000, 4000], DType::F64, [1000usize, 1000], Some("cpu")).unwrap();
    let r = x.to_string();
    assert!(
        r.contains("shape=[1000, 4000]")
            && r.contains("chunksize=[1000, 1000]")
            && r.contains("backend=cpu"),
        "{r}"
    );
    assert!(
        r.contains("30.52 MiB total, 7.63 MiB per chunk; 4 chunks, 4 tasks"),
        "{r}"
    );
    assert!(x.to_backend("cpu").unwrap().id_eq(&x));
}

#[test]
fn count_nonzero_counts_nan_and_negative_zero_as_numpy() {
    let h = tessera::HostArray::F64(
        ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![0.0, 1.5, -0.0, f64::NAN, 0.0, -2.0]).unwrap(),
    );
    for backend in ["cpu", "sparse"] {
        let a = Array::from_host(h.clone(), 1, Some(backend)).unwrap();
        assert_eq!(
            a.count_nonzero(None, false).unwrap().compute_f64().unwrap(),
            3.0
        );
        let cols = a
            .count_nonzero(Some(&[0]), false)
            .unwrap()
            .compute()
            .unwrap();
        assert_eq!(cols.dtype(), DType::I64);
        assert_eq!(cols.to_f64_vec(), vec![1.0, 1.0, 1.0]);
    }
}

/// Operands on two backends are refused with both names and the way out, by every
/// operation that combines arrays.
#[test]
fn operands_on_two_backends_are_refused_by_name() {
    let x = Array::arange(0.0, 16.0, 1.0, DType::F64, 4, Some("cpu"))
        .unwrap()
        .reshape(&[4, 4])
        .unwrap();
    let y = x.to_backend("sparse").unwrap();
    let errors = [
        (&x + &y).err(),
        x.matmul(&y).err(),
        Array::concatenate(&[&x, &y], 0).err(),
    ];
    for e in errors {
        let msg = e.expect("mixed backends must be refused").to_string();
        assert!(
            msg.contains("live on 'cpu' and 'sparse'; move one with to_backend"),
            "{msg}"
        );
    }
}

#[test]
fn floor_divide_is_numpys_divmod_quotient_on_every_backend() {
    // NumPy 2: 1.0 // 0.1 == 9, inf // 3 is nan, 6 // -inf == -1, -7 // 2 == -4.
    let a = [1.0, f64::INFINITY, 6.0, -7.0];
    let b = [0.1, 3.0, f64::NEG_INFINITY, 2.0];
    for backend in ["cpu", "sparse"] {
        let x = Array::from_ndarray(
            ArrayD::from_shape_vec(IxDyn(&[4]), a.to_vec()).unwrap(),
            2,
            Some(backend),
        )
        .unwrap();
        let y = Array::from_ndarray(
            ArrayD::from_shape_vec(IxDyn(&[4]), b.to_vec()).unwrap(),
            2,
            Some(backend),
        )
        .unwrap();
        let q = x.floor_div(&y).unwrap().compute().unwrap().to_f64_vec();
        assert_eq!(q[0], 9.0, "{backend}");
        assert!(q[1].is_nan(), "{backend}: {}", q[1]);
        assert_eq!(q[2], -1.0, "{backend}");
        assert_eq!(q[3], -4.0, "{backend}");
        // The identity with tessera's own `%`.
        let r = x
            .binary(tessera::program::BinaryOp::Rem, &y)
            .unwrap()
            .compute()
            .unwrap()
            .to_f64_vec();
        assert!((q[0] * 0.1 + r[0] - 1.0).abs() < 1e-15, "{backend}: {r:?}");
    }
}

#[test]
fn slices_with_steps_at_the_ends_of_i64_take_one_element() {
    let x = Array::arange(0.0, 10.0, 1.0, DType::I64, 3, Some("cpu")).unwrap();
    for (step, want) in [(i64::MAX, 0.0), (i64::MIN, 9.0), (i64::MIN + 1, 9.0)] {
        let y = x.slice(&[Index::step(step)]).unwrap();
        assert_eq!(y.shape(), vec![1], "step {step}");
        assert_eq!(y.compute().unwrap().to_f64_vec(), vec![want], "step {step}");
        // Composed with another slice, the huge step never reaches the arithmetic.
        let z = y.slice(&[Index::step(-2)]).unwrap();
        assert_eq!(z.compute().unwrap().to_f64_vec(), vec![want], "step {step}");
    }
    let e = x
        .slice(&[Index::slice(Some(i64::MAX), None, i64::MAX)])
        .unwrap();
    assert_eq!(e.shape(), vec![0]);
}

#[test]
fn impossible_shapes_and_chunk_grids_are_refused_at_creation() {
    let big = 1usize << 32;
    // Wrapped to size 0 (and a sum of 0) before.
    let e = Array::zeros(
        &[big, big, 4],
        DType::F64,
        tessera::ChunkSpec::Auto,
        Some("cpu"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("2^60 elements"), "{e}");
    // A grid the plan cannot hold: refused before it is built, not by aborting.
    let e = Array::zeros(&[1 << 45], DType::U8, 1, Some("cpu")).unwrap_err();
    assert!(e.to_string().contains("2^24 chunks"), "{e}");
    // Broadcasting multiplies grids: an outer sum of 2^13 x 2^13 one-element chunks.
    let v = Array::zeros(&[1 << 13], DType::F64, 1, Some("cpu")).unwrap();
    let col = v.reshape(&[1 << 13, 1]).unwrap();
    let row = v.reshape(&[1, 1 << 13]).unwrap();
    let e = (&col + &row).unwrap_err();
    assert!(e.to_string().contains("2^24 chunks"), "{e}");
    // Negative chunk sizes other than -1.
    let e = Array::zeros(&[4, 4], DType::F64, [-3i64, 2], Some("cpu")).unwrap_err();
    assert!(e.to_string().contains("-3 is negative"), "{e}");
}

#[test]
fn reshape_and_tensordot_of_size_zero_arrays_with_several_chunks() {
    let x = Array::zeros(&[4, 0, 6], DType::F64, [1usize, 1, 2], Some("cpu")).unwrap();
    for s in [
        vec![4i64, 0],
        vec![24, 0],
        vec![2, 2, 0, 6],
        vec![0],
        vec![-1, 6],
    ] {
        let y = x.reshape(&s).unwrap();
        let h = y.compute().unwrap();
        assert_eq!(h.len(), 0, "{s:?}");
        assert_eq!(h.shape(), y.shape().as_slice(), "{s:?}");
    }
    // Contracting over an empty axis sums nothing: zeros of the outer shape.
    let w = Array::ones(&[0, 5], DType::F64, [1usize, 2], Some("cpu")).unwrap();
    let t = x.tensordot(&w, &[1], &[0]).unwrap().compute().unwrap();
    assert_eq!(t.shape(), &[4, 6, 5]);
    assert!(t.to_f64_vec().iter().all(|&v| v == 0.0));
}

#[test]
fn a_panicking_block_function_is_an_error_naming_the_block() {
    let x = Array::arange(0.0, 8.0, 1.0, DType::F64, 4, Some("cpu")).unwrap();
    let f: tessera::array::HostBlockFn = std::sync::Arc::new(|blocks| {
        if blocks[0].get_flat(0) == Some(Scalar::F64(4.0)) {
            panic!("bad block");
        }
        Ok(blocks[0].clone())
    });
    let e = Array::map_blocks(&[&x], f, DType::F64, None)
        .unwrap()
        .compute()
        .unwrap_err();
    assert!(
        matches!(&e, tessera::Error::UserFunction { op, detail }
            if op == "map_blocks" && detail.contains("[1]") && detail.contains("bad block")),
        "{e:?}"
    );
}

/// `arange` refuses what NumPy 2 refuses: integer arguments whose first values do not fit
/// an unsigned dtype (`arange(-3, 3, dtype=uint8)`, an OverflowError there; this wrapped
/// to 253, 254, ...), and a bool range of more than two values.
#[test]
fn arange_refuses_values_its_dtype_cannot_hold_and_long_bool_ranges() {
    for (start, step, d) in [
        (-3.0, 1.0, DType::U8),
        (-1.0, 1.0, DType::U64),
        (250.0, 10.0, DType::U8),
    ] {
        let e = Array::arange(start, start + 4.0 * step, step, d, 2, Some("cpu"))
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("out of bounds for"), "{start} {step} {d}: {e}");
    }
    // In range: unchanged.
    let ok = Array::arange(3.0, 7.0, 1.0, DType::U8, 2, Some("cpu")).unwrap();
    assert_eq!(
        f64s(&ok.astype(DType::F64))
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![3.0, 4.0, 5.0, 6.0]
    );
    let e = Array::arange(0.0, 3.0, 1.0, DType::Bool, 2, Some("cpu"))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("a bool arange holds at most 2"), "{e}");
    let two = Array::arange(0.0, 2.0, 1.0, DType::Bool, 2, Some("cpu")).unwrap();
    assert_eq!(two.shape(), &[2]);
}

/// `clip` with a float bound beside an integer bound out of the array's range computes in
/// float64, as NumPy 2's result type of the three (`np.clip(int8, 300, 2.5)` is 2.5
/// everywhere); before, the integer bound was checked against int8 alone and refused.
#[test]
fn clip_with_a_float_bound_promotes_before_checking_integer_bounds() {
    let x = Array::arange(-3.0, 3.0, 1.0, DType::I8, 2, Some("cpu")).unwrap();
    let c = x
        .clip(Some(Scalar::I64(300)), Some(Scalar::F64(2.5)))
        .unwrap();
    assert_eq!(c.dtype(), DType::F64);
    assert!(f64s(&c).iter().all(|&v| v == 2.5), "{:?}", f64s(&c));
    let c = x
        .clip(Some(Scalar::F64(-1.5)), Some(Scalar::I64(-300)))
        .unwrap();
    assert!(f64s(&c).iter().all(|&v| v == -300.0), "{:?}", f64s(&c));
    // Integer bounds alone keep NumPy 2's rules for int8.
    let same = x
        .clip(Some(Scalar::I64(-300)), Some(Scalar::I64(1)))
        .unwrap();
    assert_eq!(same.dtype(), DType::I8);
    assert_eq!(
        f64s(&same.astype(DType::F64))
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![-3.0, -2.0, -1.0, 0.0, 1.0, 1.0]
    );
}

/// An empty slice of an array with a new axis and a reversed axis of several chunks reads
/// nothing, on every backend (the sparse and plugin backends computed a source window
/// from it that started before the axis; `plugins.rs` runs this on the example plugin).
#[test]
fn empty_slices_of_expanded_and_reversed_arrays_read_nothing_on_every_backend() {
    for backend in ["cpu", "sparse"] {
        empty_slices_of_expanded_and_reversed_arrays_read_nothing(backend);
    }
}

/// The cases of the test above on `backend`.
pub(crate) fn empty_slices_of_expanded_and_reversed_arrays_read_nothing(backend: &str) {
    let x = Array::arange(0.0, 8.0, 1.0, DType::F64, 2, Some(backend))
        .unwrap()
        .reshape(&[4, 2])
        .unwrap();
    for axis in [0, 1, 2] {
        let e = x.expand_dims(axis).unwrap();
        for reversed in 0..3 {
            let mut idx = vec![Index::FULL; 3];
            idx[reversed] = Index::step(-1);
            let r = e.slice(&idx).unwrap();
            for empty in 0..3 {
                let mut idx = vec![Index::FULL; 3];
                idx[empty] = Index::slice(Some(1), Some(1), 1);
                let z = r.slice(&idx).unwrap();
                let ctx = format!(
                    "{backend}: expand_dims({axis}), axis {reversed} reversed, axis {empty} emptied"
                );
                assert_eq!(z.size(), 0, "{ctx}");
                let h = z.compute().unwrap_or_else(|err| panic!("{ctx}: {err}"));
                assert_eq!(h.shape(), z.shape(), "{ctx}");
            }
        }
    }
}

/// The sign of a zero that `maximum`, `minimum`, `clip` and `where` give is NumPy 2's on
/// x86-64: on a tie (only +0 and -0 are equal and distinct) `maximum(a, b)` and
/// `minimum(a, b)` give `b`, as SSE's `maxpd`/`minpd` do; `clip` keeps `x` when it equals a
/// bound; `where` gives the value it picks, sign and all. Checked on every element of a
/// grid of signed zeros, on float64 and float32, on every backend
/// (`tests/scripts/numpy_signed_zero_golden.py` prints NumPy's answers).
#[test]
fn signed_zeros_from_maximum_minimum_clip_and_where_follow_numpy() {
    let a = [-0.0, 0.0, -0.0, 0.0, 1.0, -1.0];
    let b = [0.0, -0.0, -0.0, 0.0, -0.0, 0.0];
    let bits = |h: &tessera::HostArray| -> Vec<bool> {
        h.to_f64_vec()
            .iter()
            .map(|v| v.is_sign_negative())
            .collect()
    };
    for backend in ["cpu", "sparse"] {
        for dtype in [DType::F64, DType::F32] {
            let arr = |v: &[f64]| {
                let h = tessera::HostArray::F64(
                    ArrayD::from_shape_vec(IxDyn(&[v.len()]), v.to_vec()).unwrap(),
                );
                Array::from_host(h, 4, Some(backend)).unwrap().astype(dtype)
            };
            let (x, y) = (arr(&a), arr(&b));
            let ctx = format!("{backend} {dtype:?}");
            let neg = |v: &[f64]| v.iter().map(|v| v.is_sign_negative()).collect::<Vec<_>>();
            let pick = |cond: &dyn Fn(f64, f64) -> bool| {
                a.iter()
                    .zip(&b)
                    .map(|(&p, &q)| if cond(p, q) { p } else { q })
                    .collect::<Vec<f64>>()
            };
            let max = x.maximum(&y).unwrap().compute().unwrap();
            assert_eq!(bits(&max), neg(&pick(&|p, q| p > q)), "{ctx}: maximum");
            let min = x.minimum(&y).unwrap().compute().unwrap();
            assert_eq!(bits(&min), neg(&pick(&|p, q| p < q)), "{ctx}: minimum");
            // clip(x, 0, 1) keeps -0 (equal to the lower bound); clip(x, -1, -0) keeps +0.
            let lo = x
                .clip(Some(Scalar::F64(0.0)), Some(Scalar::F64(1.0)))
                .unwrap()
                .compute()
                .unwrap();
            assert_eq!(
                bits(&lo),
                vec![true, false, true, false, false, false],
                "{ctx}: clip(0, 1)"
            );
            let hi = x
                .clip(Some(Scalar::F64(-1.0)), Some(Scalar::F64(-0.0)))
                .unwrap()
                .compute()
                .unwrap();
            assert_eq!(
                bits(&hi),
                vec![true, false, true, false, true, true],
                "{ctx}: clip(-1, -0)"
            );
            let cond = arr(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
            let w = cond.where_(&x, &y).unwrap().compute().unwrap();
            let want: Vec<f64> = (0..6)
                .map(|i| if i % 2 == 0 { a[i] } else { b[i] })
                .collect();
            assert_eq!(bits(&w), neg(&want), "{ctx}: where");
        }
    }
}

/// NumPy 2 on bool arrays: `clip` with neither bound raises (its `positive` has no bool
/// loop) and so does tessera, where it returned a copy; `clip(bool, 0, 1)` is int64, as
/// the weak integer bounds make it; `round(bool)` is float16 there, a dtype tessera does
/// not have, so it is refused with that reason.
#[test]
fn bool_clip_and_round_follow_numpy_or_say_why_not() {
    let b = Array::from_host(
        tessera::HostArray::Bool(
            ArrayD::from_shape_vec(IxDyn(&[3]), vec![true, false, true]).unwrap(),
        ),
        2,
        Some("cpu"),
    )
    .unwrap();
    let e = b.clip(None, None).unwrap_err().to_string();
    assert!(e.contains("neither bound") && e.contains("bool"), "{e}");
    let c = b.clip(Some(Scalar::I64(0)), Some(Scalar::I64(1))).unwrap();
    assert_eq!(c.dtype(), DType::I64);
    assert_eq!(c.compute().unwrap().to_f64_vec(), vec![1.0, 0.0, 1.0]);
    let e = b.round().unwrap_err().to_string();
    assert!(e.contains("float16") && e.contains("float32"), "{e}");
    // A float array with neither bound is a copy, as in NumPy.
    let f = b.astype(DType::F64).clip(None, None).unwrap();
    assert_eq!(f.compute().unwrap().to_f64_vec(), vec![1.0, 0.0, 1.0]);
}
