//! The counter-based generators in kernel text, on the host: bit for bit the CPU backend's
//! numbers for uniform, normal (with ziggurat rejections, wedge and tail) and randint, in
//! every dtype they take, over contiguous, strided, reversed and transposed reads and
//! indices past 2^32; and the seed headline's fused program, `(x + 1)[::2, ::2].sum()`.

use tessera_conformance::compare::{compare, max_abs, Tol};
use tessera_conformance::skip::skip;
use tessera_core::backend::ArrayBackend;
use tessera_core::program::{AxisMap, BinaryOp, IndexMap, ProgramBuilder, ReduceOp, Reduction};
use tessera_core::random::{first_word, ziggurat, Distribution, RandomSpec};
use tessera_core::{DType, Scalar};
use tessera_cpu::CpuBackend;
use tessera_cuda::codegen::generate;

use tessera_cuda::host::shim as host_shim;

/// Reads of a random array, each `(name, map, out shape)`.
fn reads() -> Vec<(&'static str, IndexMap, Vec<usize>)> {
    let axis = |start, step, out| AxisMap {
        start,
        step,
        out_axis: Some(out),
    };
    vec![
        (
            "contiguous",
            IndexMap::identity(&[300, 700]),
            vec![300, 700],
        ),
        (
            "strided",
            IndexMap {
                src_shape: vec![900, 2000],
                axes: vec![axis(3, 2, 0), axis(7, 3, 1)],
            },
            vec![300, 600],
        ),
        (
            "reversed",
            IndexMap {
                src_shape: vec![400, 500],
                axes: vec![axis(399, -1, 0), axis(498, -2, 1)],
            },
            vec![400, 250],
        ),
        (
            "transposed step 2",
            IndexMap {
                src_shape: vec![1000, 800],
                axes: vec![axis(0, 2, 1), axis(0, 2, 0)],
            },
            vec![400, 500],
        ),
        (
            "past 2^32",
            IndexMap {
                src_shape: vec![100_000, 100_000],
                axes: vec![axis(99_000, 1, 0), axis(99_500, 1, 1)],
            },
            vec![200, 500],
        ),
    ]
}

fn specs() -> Vec<RandomSpec> {
    let mut v = Vec::new();
    for dtype in [DType::F64, DType::F32] {
        v.push(RandomSpec {
            seed: 42,
            stream: 3,
            dist: Distribution::Uniform {
                low: -2.0,
                high: 5.0,
            },
            dtype,
        });
        v.push(RandomSpec {
            seed: 0x1234_5678_9abc,
            stream: 0,
            dist: Distribution::Normal {
                mean: 10.0,
                std: 2.5,
            },
            dtype,
        });
    }
    for (dtype, low, high) in [
        (DType::I8, -100, 100),
        (DType::I16, -3, 30_000),
        (DType::I32, i64::from(i32::MIN), i64::from(i32::MAX)),
        (DType::I64, -(1 << 62), 1 << 62),
        (DType::U8, 0, 256),
        (DType::U16, 7, 9),
        (DType::U32, 0, 1 << 32),
        (DType::U64, 0, i64::MAX),
    ] {
        v.push(RandomSpec {
            seed: 7,
            stream: 1,
            dist: Distribution::RandInt { low, high },
            dtype,
        });
    }
    v
}

#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn random_kernels_give_the_cpu_bits_on_the_host() {
    if let Err(reason) = host_shim::compiler() {
        skip("random_kernels_give_the_cpu_bits_on_the_host", &reason);
        return;
    }
    let cpu = CpuBackend::new();
    let mut cases = Vec::new();
    for spec in specs() {
        for (name, map, shape) in reads() {
            let p =
                tessera_core::program::primitives::random(&spec, &map, &shape).expect("program");
            let plan = generate(&p, 0, 1).expect("kernel");
            let want = cpu
                .random(&spec, &map, &shape)
                .and_then(|c| cpu.to_host(&c))
                .expect("cpu");
            cases.push((spec, name, map, shape, plan, want));
        }
    }
    let lib = host_shim::build(&cases.iter().map(|c| &c.4).collect::<Vec<_>>())
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut rejected, mut tail) = (0, 0);
    let t = ziggurat::tables();
    for (spec, name, map, shape, plan, want) in &cases {
        let got = lib.run(plan, &[], shape).expect("host run");
        assert_eq!(got.dtype(), spec.dtype);
        compare(&got, want, Tol::EXACT)
            .unwrap_or_else(|m| panic!("{spec:?} {name}: {}", m.describe("host kernel", "cpu")));
        // Bits, not just values (the comparison above takes -0.0 for 0.0).
        assert_eq!(
            got.to_f64_vec()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>(),
            want.to_f64_vec()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>(),
            "{spec:?} {name}"
        );
        if let Distribution::Normal { .. } = spec.dist {
            // How many elements took the slow path: the test is only as good as these.
            let flat = map.flat_linear(shape.len());
            for i in 0..shape[0] as i64 {
                for j in 0..shape[1] as i64 {
                    let g = flat.offset + flat.coef[0] * i + flat.coef[1] * j;
                    let w = first_word(
                        [spec.seed as u32, (spec.seed >> 32) as u32],
                        spec.stream,
                        g as u64,
                    );
                    if !ziggurat::first_try(t, w).1 {
                        rejected += 1;
                        tail += usize::from(w & 0x3ff == 0);
                    }
                }
            }
        }
    }
    assert!(
        rejected > 1000 && tail > 3,
        "{rejected} rejections, {tail} in the base layer"
    );
}

/// The seed headline's program on one block: a strided read of a normal array, `+ 1`, and
/// a sum over both axes, as the lowering builds it.
#[test]
fn the_headline_program_matches_the_cpu_on_the_host() {
    if let Err(reason) = host_shim::compiler() {
        skip("the_headline_program_matches_the_cpu_on_the_host", &reason);
        return;
    }
    let spec = RandomSpec {
        seed: 42,
        stream: 0,
        dist: Distribution::Normal {
            mean: 10.0,
            std: 1.0,
        },
        dtype: DType::F64,
    };
    let map = IndexMap {
        src_shape: vec![2000, 2000],
        axes: (0..2)
            .map(|a| AxisMap {
                start: 0,
                step: 2,
                out_axis: Some(a),
            })
            .collect(),
    };
    let shape = [1000, 1000];
    let mut pb = ProgramBuilder::new(&shape);
    let x = pb.random(spec, map);
    let one = pb.constant(Scalar::F64(1.0));
    let y = pb.binary(BinaryOp::Add, x, one).expect("add");
    let full = pb.finish(vec![(y, None)]).expect("program");
    let mut summed = full.clone();
    summed.outputs[0].reduce = Some(Reduction {
        op: ReduceOp::Sum,
        axes: vec![0, 1],
    });
    let cpu = CpuBackend::new();
    let values = cpu
        .execute(&full, &[])
        .and_then(|v| cpu.to_host(&v[0]))
        .expect("cpu");
    let sum = cpu
        .execute(&summed, &[])
        .and_then(|v| cpu.to_host(&v[0]))
        .expect("cpu");
    let plans = [
        generate(&full, 0, 1).expect("kernel"),
        generate(&summed, 0, 5).expect("kernel"),
    ];
    let lib = host_shim::build(&plans.iter().collect::<Vec<_>>()).unwrap_or_else(|e| panic!("{e}"));
    let got = lib.run(&plans[0], &[], &shape).expect("host");
    compare(&got, &values, Tol::EXACT).expect("every element");
    let got_sum = lib.run(&plans[1], &[], &[1, 1]).expect("host");
    let tol = Tol::reduction(DType::F64, 1_000_000, max_abs(&values));
    compare(&got_sum, &sum, tol).expect("the sum within the suite's reduction tolerance");
    let s = got_sum.to_f64_vec()[0];
    assert!((s / 1e6 - 11.0).abs() < 0.01, "mean {}", s / 1e6);
}
