//! Array tests that change process-wide configuration (`split-every`, `scheduler`); they
//! run in the serialised binary so that no other test sees their settings.

use tessera::chunks::ChunkSpec;
use tessera::random::{Distribution, RandomSpec};
use tessera::{Array, DType, Index, RandomState};
use tessera_conformance::r#gen::Gen;

use crate::common::{close, data, f64s, naive_reduce};

#[test]
fn reductions_match_reference_over_axis_sets() {
    let _serial = crate::serial();
    let mut g = Gen::new(2);
    let _g = tessera::config::set(&[("array.split-every", "2")]).unwrap();
    for case in 0..30 {
        let mut shape = g.shape(0, 4);
        if shape.is_empty() {
            shape = vec![4];
        }
        let a = data(&mut g, &shape);
        let x = Array::from_ndarray(a.clone(), g.chunks(&shape), Some("cpu")).unwrap();
        let axes: Vec<usize> = (0..shape.len()).filter(|_| g.below(2) == 1).collect();
        let ctx = format!("case {case} shape {shape:?} axes {axes:?}");
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let var = |v: &[f64], ddof: f64| {
            let m = mean(v);
            // NumPy divides by max(n - ddof, 0): an empty or too-small group gives NaN/inf.
            v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - ddof).max(0.0)
        };
        close(
            &f64s(&x.sum(Some(&axes), true).unwrap()),
            &naive_reduce(&a, &axes, |v| v.iter().sum()),
            &format!("{ctx} sum"),
        );
        close(
            &f64s(&x.mean(Some(&axes), true).unwrap()),
            &naive_reduce(&a, &axes, mean),
            &format!("{ctx} mean"),
        );
        close(
            &f64s(&x.var(Some(&axes), 0, true).unwrap()),
            &naive_reduce(&a, &axes, |v| var(v, 0.0)),
            &format!("{ctx} var"),
        );
        close(
            &f64s(&x.std(Some(&axes), 1, true).unwrap()),
            &naive_reduce(&a, &axes, |v| var(v, 1.0).sqrt()),
            &format!("{ctx} std ddof=1"),
        );
        close(
            &f64s(&x.prod(Some(&axes), true).unwrap()),
            &naive_reduce(&a, &axes, |v| v.iter().product()),
            &format!("{ctx} prod"),
        );
        if shape.iter().all(|&n| n > 0) {
            close(
                &f64s(&x.min(Some(&axes), true).unwrap()),
                &naive_reduce(&a, &axes, |v| {
                    v.iter().cloned().fold(f64::INFINITY, f64::min)
                }),
                &format!("{ctx} min"),
            );
            close(
                &f64s(&x.max(Some(&axes), true).unwrap()),
                &naive_reduce(&a, &axes, |v| {
                    v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
                }),
                &format!("{ctx} max"),
            );
        } else if !axes.is_empty() && axes.iter().any(|&ax| shape[ax] == 0) {
            let err = x.min(Some(&axes), true).unwrap_err().to_string();
            assert!(err.contains("no identity"), "{err}");
        }
        // keepdims=false drops exactly the reduced axes.
        let dropped = x.sum(Some(&axes), false).unwrap();
        assert_eq!(dropped.ndim(), shape.len() - axes.len(), "{ctx}");
    }
}

#[test]
fn random_is_identical_under_any_chunking_and_scheduler() {
    let _serial = crate::serial();
    let shape = [37usize, 23];
    let spec = |chunks: ChunkSpec| {
        RandomState::new(7)
            .normal(10.0, 1.0, &shape, chunks, Some("cpu"))
            .unwrap()
    };
    let reference = RandomSpec {
        seed: 7,
        stream: 0,
        dist: Distribution::Normal {
            mean: 10.0,
            std: 1.0,
        },
        dtype: DType::F64,
    };
    let want: Vec<f64> = (0..37 * 23).map(|i| reference.sample_f64(i)).collect();
    for chunks in [
        ChunkSpec::from(5usize),
        ChunkSpec::from([7usize, 11]),
        ChunkSpec::from(100usize),
    ] {
        for sched in ["threads", "single-threaded"] {
            let _g = tessera::config::set(&[("scheduler", sched)]).unwrap();
            let got = spec(chunks.clone()).compute().unwrap().to_f64_vec();
            assert_eq!(got, want, "chunks {chunks:?} scheduler {sched}");
        }
    }
    // A strided slice generates exactly the kept elements of the full array.
    let x = spec(ChunkSpec::from(8usize));
    let s = x
        .slice(&[Index::step(2), Index::slice(Some(1), None, 3)])
        .unwrap()
        .compute()
        .unwrap()
        .to_f64_vec();
    let mut k = 0;
    for i in (0..37).step_by(2) {
        for j in (1..23).step_by(3) {
            assert_eq!(s[k], want[i * 23 + j]);
            k += 1;
        }
    }
}
