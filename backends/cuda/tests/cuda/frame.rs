//! The `cuda` dataframe backend without a GPU: the whole frame conformance suite over two
//! host devices that run the generated program kernels through the host shim (outputs
//! poisoned before each kernel, as a GPU leaves them), the programs it declares native
//! checked to run natively, and the same kernels compiled with NVRTC.

use std::sync::{Arc, OnceLock};

use arrow_array::{
    Array, ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int32Array, Int64Array, Int8Array, RecordBatch, StringArray, UInt8Array,
};
use arrow_schema::DataType;
use tessera_conformance::skip::skip;
use tessera_conformance::Outcome;
use tessera_core::frame::expr::{coalesce, col, lit, when, Expr, Literal};
use tessera_core::frame::{DataFrameBackend, FrameBackendRef, FrameProgram, FrameStep};
use tessera_cpu_frame::CpuFrameBackend;
use tessera_cuda_frame::CudaFrameBackend;

use tessera_cuda::host::shim::{self as host_shim, HostKernels};
use tessera_cuda::host::HostDevice;

pub(crate) fn kernels() -> Arc<HostKernels> {
    static K: OnceLock<Arc<HostKernels>> = OnceLock::new();
    K.get_or_init(|| Arc::new(host_shim::build(&[]).expect("an empty kernel library")))
        .clone()
}

fn host_backend(name: &str) -> CudaFrameBackend<HostDevice> {
    let k = kernels();
    CudaFrameBackend::with_devices(name, vec![HostDevice::new(k.clone()), HostDevice::new(k)])
        .expect("backend")
}

/// The frame suite run once on two host devices, and the backend that ran it.
fn suite() -> &'static (
    Arc<CudaFrameBackend<HostDevice>>,
    tessera_conformance::Report,
) {
    static S: OnceLock<(
        Arc<CudaFrameBackend<HostDevice>>,
        tessera_conformance::Report,
    )> = OnceLock::new();
    S.get_or_init(|| {
        let backend = Arc::new(host_backend("cuda-host-frame"));
        let shared: FrameBackendRef = backend.clone();
        let report = tessera_conformance::frame::check_frame_backend(
            &shared,
            &tessera_conformance::Options::default(),
        );
        (backend, report)
    })
}

#[test]
#[ignore = "about a minute: the whole frame suite through the host shim; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored frame::"]
fn the_cuda_frame_backend_passes_the_frame_suite_on_host_devices() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "the_cuda_frame_backend_passes_the_frame_suite_on_host_devices",
            &reason,
        );
        return;
    }
    let (_, report) = suite();
    assert!(report.is_ok(), "{}", report.failure_text());
    let (pass, fallback) = (
        report.count(&Outcome::Pass),
        report.count(&Outcome::Fallback),
    );
    println!("cuda frame suite on host devices: {pass} native, {fallback} through a host fallback");
    assert!(report.cases.len() > 300, "{} cases", report.cases.len());
}

/// A batch of every type the kernels read, with nulls, NaN, ±0, ±inf and integer
/// extremes, over enough rows that every launch has several blocks and ragged tiles.
fn edge_batch(rows: usize) -> RecordBatch {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let specials = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.5,
        -2.25,
        1e300,
    ];
    let mut t = vec![];
    let mut ts = vec![];
    let mut sv: Vec<Option<String>> = vec![];
    let mut d64: Vec<Option<i64>> = vec![];
    let (mut a, mut b, mut f, mut g, mut k, mut u, mut flag, mut d, mut dec, mut s) = (
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
    );
    for _ in 0..rows {
        let r = next();
        let ext = [i32::MIN, i32::MAX, -1, 0, 1];
        a.push((r % 7 != 0).then(|| {
            if r % 11 == 0 {
                ext[(r % 5) as usize]
            } else {
                (r % 2001) as i32 - 1000
            }
        }));
        b.push((r % 13 != 0).then(|| {
            if r % 17 == 0 {
                i64::MIN
            } else {
                (r as i64 % 100_000) - 50_000
            }
        }));
        f.push((r % 5 != 0).then(|| {
            if r % 3 == 0 {
                specials[(r % 8) as usize]
            } else {
                (r % 1000) as f64 / 7.0 - 70.0
            }
        }));
        g.push((r % 9 != 0).then(|| (r % 400) as f32 / 3.0 - 60.0));
        k.push((r % 4 != 0).then_some((r % 256) as i8));
        u.push(Some((r % 256) as u8));
        flag.push((r % 6 != 0).then_some(r % 2 == 0));
        let edges = [-719_468, -1, 0, 59, 11_016, 2_932_896, -25_567];
        d.push((r % 10 != 0).then(|| {
            if r % 9 == 0 {
                edges[(r % 7) as usize]
            } else {
                18_000 + (r % 1000) as i32
            }
        }));
        ts.push((r % 11 != 0).then(|| (r as i64 % 4_000_000_000_000_000) - 2_000_000_000_000_000));
        dec.push((r % 8 != 0).then(|| (r as i128 - (1 << 30)) * 1_000_000_007));
        s.push((r % 3 != 0).then(|| format!("s{}", r % 50)));
        // Views: inline (12 bytes or fewer) and held in a data buffer.
        sv.push((r % 5 != 1).then(|| {
            let text = format!("view {} of a longer text", r % 40);
            text[..text.len().min((r % 30) as usize)].to_string()
        }));
        d64.push((r % 6 != 2).then(|| (r as i64 % 2_000_000_000_000) - 1_000_000_000_000));
        let words = ["", "é", "s1", "naïve s2", "s12", "zz"];
        t.push((r % 7 != 3).then(|| words[(r % 6) as usize].to_string()));
    }
    RecordBatch::try_from_iter([
        ("a", Arc::new(Int32Array::from(a)) as ArrayRef),
        ("b", Arc::new(Int64Array::from(b)) as ArrayRef),
        ("f", Arc::new(Float64Array::from(f)) as ArrayRef),
        ("g", Arc::new(Float32Array::from(g)) as ArrayRef),
        ("k", Arc::new(Int8Array::from(k)) as ArrayRef),
        ("u", Arc::new(UInt8Array::from(u)) as ArrayRef),
        ("flag", Arc::new(BooleanArray::from(flag)) as ArrayRef),
        ("d", Arc::new(Date32Array::from(d)) as ArrayRef),
        (
            "dec",
            Arc::new(
                Decimal128Array::from(dec)
                    .with_precision_and_scale(30, 4)
                    .unwrap(),
            ) as ArrayRef,
        ),
        ("s", Arc::new(StringArray::from(s)) as ArrayRef),
        (
            "t",
            Arc::new(arrow_array::LargeStringArray::from(t)) as ArrayRef,
        ),
        (
            "ts",
            Arc::new(arrow_array::TimestampMicrosecondArray::from(ts)) as ArrayRef,
        ),
        (
            "sv",
            Arc::new(arrow_array::StringViewArray::from(sv)) as ArrayRef,
        ),
        (
            "d64",
            Arc::new(
                arrow_array::Decimal64Array::from(d64)
                    .with_precision_and_scale(18, 2)
                    .unwrap(),
            ) as ArrayRef,
        ),
    ])
    .unwrap()
}

fn lit_v(s: &str) -> Literal {
    Literal::Str(s.to_string())
}

fn project(list: Vec<(&str, Expr)>) -> FrameStep {
    FrameStep::Project(list.into_iter().map(|(n, e)| (n.to_string(), e)).collect())
}

/// Programs the kernel generator covers: each runs natively (no fallback recorded) and
/// gives exactly the CPU backend's batch — values bit for bit, nulls where its nulls are.
#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn native_programs_give_the_cpu_batches_on_host_devices() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "native_programs_give_the_cpu_batches_on_host_devices",
            &reason,
        );
        return;
    }
    let cuda = host_backend("cuda-host-programs");
    let cpu = CpuFrameBackend::default();
    let keep_all = |e: Expr| FrameProgram {
        steps: vec![FrameStep::Filter(e)],
    };
    let programs: Vec<(&str, FrameProgram)> = vec![
        (
            "filter on an int, all columns gathered",
            keep_all(col("a").gt(lit(0))),
        ),
        (
            "filter on floats: -0 equals 0, NaN equals NaN",
            keep_all(col("f").eq(lit(0.0)).or(col("f").eq(lit(f64::NAN)))),
        ),
        ("NaN above every number", keep_all(col("f").gt(lit(1e308)))),
        (
            "Kleene logic in a filter",
            keep_all((col("a").gt(lit(0)) & col("b").is_null()) | !col("flag")),
        ),
        (
            "a literal out of the column's range is null",
            keep_all(col("k").gt(lit(300)).is_null()),
        ),
        (
            "a date against a string literal",
            keep_all(col("d").gt_eq(lit("2019-06-01"))),
        ),
        ("keeps nothing", keep_all(col("a").gt(lit(5000)))),
        (
            "a string equal to a literal",
            keep_all(col("s").eq(lit("s7"))),
        ),
        (
            "strings ordered byte by byte",
            keep_all(col("s").gt(lit("s3")) & col("t").lt_eq(lit("s12"))),
        ),
        (
            "two string columns",
            keep_all(col("t").lt(col("s")) | col("t").eq(col("s"))),
        ),
        (
            "string tests",
            keep_all(col("s").starts_with("s1") | col("t").ends_with("2") | col("s").contains("4")),
        ),
        (
            "an empty pattern and a multi-byte one",
            keep_all(col("t").contains("") & col("t").contains("ï")),
        ),
        (
            "decimals against float and int literals",
            keep_all(col("dec").gt(lit(0.5)) & col("dec").lt_eq(lit(100_000_000))),
        ),
        (
            "like with % wildcards",
            FrameProgram {
                steps: vec![project(vec![
                    ("l1", col("t").like("%s%2")),
                    ("l2", col("s").like("s1%")),
                    ("l3", col("s").like("%1")),
                    ("l4", col("t").like("naïve%s2")),
                    ("l5", col("t").like("%%")),
                    ("l6", col("t").like("zz")),
                    ("l7", col("s").like("s1%1")),
                    ("l8", col("sv").like("%of%text")),
                    ("l9", col("t").like("")),
                ])],
            },
        ),
        (
            "exact decimal arithmetic",
            FrameProgram {
                steps: vec![project(vec![
                    ("sum", col("dec") + col("dec")),
                    ("less", col("dec") - lit(1.25)),
                    ("twice", col("dec") * lit(2)),
                    ("by_int", col("k") * col("dec")),
                    ("one_less", lit(1) - col("dec")),
                    ("rate", col("k") * (lit(1) - col("dec"))),
                    ("wider", col("dec").cast(DataType::Decimal128(38, 6))),
                    ("eq", col("dec").eq(col("dec") + lit(0))),
                ])],
            },
        ),
        (
            "calendar parts of dates and timestamps, before 1970 too",
            FrameProgram {
                steps: vec![project(vec![
                    ("y", col("d").year()),
                    ("m", col("d").month()),
                    ("day", col("d").day()),
                    ("wd", col("d").weekday()),
                    ("q", col("d").quarter()),
                    ("doy", col("d").day_of_year()),
                    ("ty", col("ts").year()),
                    ("tdoy", col("ts").day_of_year()),
                    ("th", col("ts").hour()),
                    (
                        "tmin",
                        col("ts").date_part(tessera_core::frame::DatePart::Minute),
                    ),
                    (
                        "tsec",
                        col("ts").date_part(tessera_core::frame::DatePart::Second),
                    ),
                    ("twd", col("ts").weekday()),
                ])],
            },
        ),
        (
            "is_in: strings with null, numbers out of range, NaN",
            FrameProgram {
                steps: vec![project(vec![
                    (
                        "s_in",
                        col("s").is_in(vec![lit_v("s1"), lit_v("s22"), Literal::Null]),
                    ),
                    ("t_in", col("t").is_in(vec![lit_v(""), lit_v("é")])),
                    (
                        "a_in",
                        col("a").is_in(vec![
                            Literal::Int(1),
                            Literal::Int(-5),
                            Literal::Int(i64::MAX),
                        ]),
                    ),
                    (
                        "k_in",
                        col("k").is_in(vec![Literal::Int(300), Literal::Int(7)]),
                    ),
                    (
                        "f_in",
                        col("f").is_in(vec![
                            Literal::Float(f64::NAN),
                            Literal::Float(-0.0),
                            Literal::Int(3),
                        ]),
                    ),
                    ("only_null", col("b").is_in(vec![Literal::Null])),
                    ("nothing", col("d").is_in(Vec::<Literal>::new())),
                ])],
            },
        ),
        (
            "arithmetic and its types",
            FrameProgram {
                steps: vec![project(vec![
                    ("sum", col("a") + col("b")),
                    ("wrap", col("a") * lit(3)),
                    ("fdiv", col("f") / col("a")),
                    ("idiv", col("a") / col("b")),
                    ("frem", col("f") % lit(2.5)),
                    ("grem", col("g") % col("g")),
                    ("neg", -col("b")),
                    ("fneg", -col("f")),
                    ("mixed", col("g") + col("f")),
                    ("f32lit", col("g") * lit(0.1)),
                    ("u8", col("u") + lit(250)),
                    ("s", col("s")),
                ])],
            },
        ),
        (
            "comparisons and null tests",
            FrameProgram {
                steps: vec![project(vec![
                    ("lt", col("f").lt(col("g"))),
                    ("le", col("a").lt_eq(col("b"))),
                    ("ne", col("flag").not_eq(lit(true))),
                    ("isnull", col("f").is_null()),
                    ("notnull", col("flag").is_not_null()),
                    ("nan", col("f").is_nan()),
                    ("inan", col("a").is_nan()),
                    ("not", !col("flag")),
                    (
                        "litnull",
                        Expr::Literal(tessera_core::frame::expr::Literal::Null).is_null(),
                    ),
                ])],
            },
        ),
        (
            "casts: safe, null where a value does not fit",
            FrameProgram {
                steps: vec![project(vec![
                    ("f_i32", col("f").cast(DataType::Int32)),
                    ("f_u64", col("f").cast(DataType::UInt64)),
                    ("f_i64", col("f").cast(DataType::Int64)),
                    ("b_i8", col("b").cast(DataType::Int8)),
                    ("a_u16", col("a").cast(DataType::UInt16)),
                    ("u_i64", col("u").cast(DataType::Int64)),
                    ("flag_i32", col("flag").cast(DataType::Int32)),
                    ("a_bool", col("a").cast(DataType::Boolean)),
                    ("f_bool", col("f").cast(DataType::Boolean)),
                    ("f_f32", col("f").cast(DataType::Float32)),
                    ("b_f32", col("b").cast(DataType::Float32)),
                ])],
            },
        ),
        (
            "fill_null, when and coalesce",
            FrameProgram {
                steps: vec![project(vec![
                    ("filled", col("a").fill_null(lit(-7))),
                    ("ffilled", col("f").fill_null(col("g"))),
                    (
                        "case",
                        when(col("a").gt(lit(0)))
                            .then(col("b"))
                            .when(col("flag"))
                            .then(lit(1))
                            .otherwise(lit(-1)),
                    ),
                    (
                        "first",
                        coalesce([col("f"), col("g").cast(DataType::Float64), lit(0.5)]),
                    ),
                ])],
            },
        ),
        (
            "steps: filter, compute, filter on the computed column, rename",
            FrameProgram {
                steps: vec![
                    FrameStep::Filter(col("flag").is_not_null()),
                    project(vec![
                        ("x", col("a") + lit(1)),
                        ("y", col("f")),
                        ("dec", col("dec")),
                        ("flag", col("flag")),
                    ]),
                    FrameStep::Filter(col("x").gt(lit(-500)) & col("flag")),
                    project(vec![
                        ("z", col("x") * col("x")),
                        ("dec2", col("dec")),
                        ("y", col("y")),
                    ]),
                ],
            },
        ),
    ];
    let batch = edge_batch(1000);
    // A decimal product past 38 digits is an error on both, with the same words.
    let overflow = FrameProgram {
        steps: vec![project(vec![(
            "cube",
            col("dec") * col("dec") * col("dec"),
        )])],
    };
    let want = cpu
        .evaluate(&cpu.import_batch(batch.clone()).unwrap(), &overflow)
        .expect_err("the CPU backend refuses a decimal overflow")
        .to_string();
    let got = cuda
        .evaluate(&cuda.import_batch(batch.clone()).unwrap(), &overflow)
        .expect_err("the device refuses a decimal overflow")
        .to_string();
    assert_eq!(got, want);
    for (what, program) in &programs {
        for (offset, len) in [(0, batch.num_rows()), (3, 517), (0, 0)] {
            let part = batch.slice(offset, len);
            let want = cpu
                .export_batch(
                    &cpu.evaluate(&cpu.import_batch(part.clone()).unwrap(), program)
                        .unwrap(),
                )
                .unwrap();
            // The device partition is sliced on the device, so kernels read at an offset.
            let whole = cuda.import_batch(batch.clone()).unwrap();
            let dev = cuda.slice(&whole, offset, len).unwrap();
            tessera_core::fallback::take();
            let got = cuda
                .evaluate(&dev, program)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let fell = tessera_core::fallback::take();
            assert!(fell.is_empty(), "{what}: ran through a fallback: {fell:?}");
            let got = cuda.export_batch(&got).unwrap();
            assert_eq!(got.schema(), want.schema(), "{what}");
            for (i, (g, w)) in got.columns().iter().zip(want.columns()).enumerate() {
                assert_eq!(
                    g.to_data(),
                    w.to_data(),
                    "{what} (rows {offset}..{}): column '{}'",
                    offset + len,
                    want.schema().field(i).name()
                );
            }
        }
    }
}

/// Every program kernel the frame suite made the backend generate, and the string
/// gather's, compiles with NVRTC for the device's architecture.
#[test]
#[ignore = "about a minute: runs the frame suite first; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored frame::"]
fn frame_suite_kernels_compile_with_nvrtc() {
    if let Err(reason) = tessera_cuda::nvrtc::load() {
        skip("frame_suite_kernels_compile_with_nvrtc", &reason);
        return;
    }
    if let Err(reason) = host_shim::compiler() {
        skip("frame_suite_kernels_compile_with_nvrtc", &reason);
        return;
    }
    let (backend, _) = suite();
    let mut unique = std::collections::BTreeMap::new();
    for plan in backend.generated_kernels() {
        unique.entry(plan.hash).or_insert(plan);
    }
    let texts: Vec<&tessera_cuda::codegen::KernelPlan> = unique.values().collect();
    assert!(
        texts.len() > 20,
        "only {} distinct frame kernels",
        texts.len()
    );
    let failures: Vec<String> = texts
        .chunks(crate::kernels::BATCH)
        .flat_map(crate::kernels::compile_batch)
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} frame kernels did not compile; the first:\n{}",
        failures.len(),
        texts.len(),
        failures[0]
    );
    println!("{} distinct frame kernels compile with NVRTC", texts.len());
}

/// Under the `error` policy a step without a device kernel is refused with the reason and
/// the setting that refused it, and nothing is recorded; a native program still runs.
#[test]
fn the_error_policy_refuses_host_fallbacks() {
    if let Err(reason) = host_shim::compiler() {
        skip("the_error_policy_refuses_host_fallbacks", &reason);
        return;
    }
    let cuda = host_backend("cuda-host-strict")
        .with_fallback_policy(tessera_core::config::FallbackPolicy::Error);
    let part = cuda.import_batch(edge_batch(50)).unwrap();
    tessera_core::fallback::take();
    let e = cuda
        .sort(
            &part,
            &[tessera_core::frame::SortKey {
                column: "s".into(),
                descending: false,
            }],
        )
        .expect_err("a sort by strings has no device kernel yet, so the error policy refuses it");
    let text = e.to_string();
    assert!(
        matches!(e, tessera_core::Error::FrameUnsupported { .. }),
        "{text}"
    );
    assert!(
        text.contains("sort") && text.contains("dataframe.fallback"),
        "{text}"
    );
    let e = cuda
        .evaluate(
            &part,
            &FrameProgram {
                steps: vec![FrameStep::Filter(col("s").like("s_1"))],
            },
        )
        .expect_err("like with `_` has no device kernel yet");
    assert!(e.to_string().contains("like"), "{e}");
    assert!(tessera_core::fallback::take().is_empty());
    let kept = cuda
        .evaluate(
            &part,
            &FrameProgram {
                steps: vec![FrameStep::Filter(col("a").gt(lit(0)))],
            },
        )
        .expect("a native program runs under the error policy");
    assert!(kept.num_rows() < 50);
}

/// `explain()` names every step the backend will run on the host — all of them, before
/// anything runs — and a plan the device runs whole has no such section; under the
/// `error` setting the same plan is refused with that list.
#[test]
fn explain_lists_every_host_fallback_before_the_plan_runs() {
    use tessera_core::frame::AggFunc;
    use tessera_frame::DataFrame;
    let name = "cuda-host-explain";
    let _ = tessera_core::registry::register_dataframe_backend(Arc::new(host_backend(name)));
    let df = DataFrame::from_record_batch(edge_batch(100), 3, Some(name)).unwrap();
    // A plan the device runs whole: a program, then a groupby whose partials, combine
    // and final step (by an integer key) all run there.
    let native = df
        .filter(col("a").gt(lit(0)))
        .unwrap()
        .groupby(&["k"])
        .unwrap()
        .agg(&[("b", AggFunc::Sum)])
        .unwrap();
    let text = native.explain().unwrap();
    assert!(!text.contains("fallbacks:"), "{text}");
    // Three steps with a part on the host, each named with its reason.
    let q = df
        .filter(col("s").like("s_1%"))
        .unwrap()
        .groupby(&["s"])
        .unwrap()
        .agg(&[("b", AggFunc::Mean)])
        .unwrap()
        .sort_values(&["b"], &[true])
        .unwrap();
    let text = q.explain().unwrap();
    assert!(
        text.contains(&format!("fallbacks: backend '{name}' runs 3 steps")),
        "{text}"
    );
    for step in [
        "sort: each partition's sort runs on the device; the range partitioning",
        "groupby [s]: the partial aggregation runs on the device; on the host: the final step (a sort key of type Utf8",
        "like(\"s_1%\")",
    ] {
        assert!(text.contains(step), "{step}: {text}");
    }
}

/// Partial aggregations the generator covers run on the device (no fallback recorded),
/// give the same bytes on every run, and finalize to the CPU backend's groups — integer,
/// boolean, date and string keys (null keys dropped), several keys, no keys; counts,
/// wrapping sums, minimums and maximums with nulls and integer extremes; sliced
/// partitions and empty ones.
#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn device_groupbys_give_the_cpu_groups_on_host_devices() {
    use tessera_core::frame::{AggFunc, AggSpec};
    if let Err(reason) = host_shim::compiler() {
        skip(
            "device_groupbys_give_the_cpu_groups_on_host_devices",
            &reason,
        );
        return;
    }
    let cuda = host_backend("cuda-host-groupby");
    let cpu = CpuFrameBackend::default();
    let aggs = vec![
        AggSpec::new("f", AggFunc::Count, "n_f"),
        AggSpec::new("s", AggFunc::Count, "n_s"),
        AggSpec::new("a", AggFunc::Sum, "sum_a"),
        AggSpec::new("u", AggFunc::Sum, "sum_u"),
        AggSpec::new("b", AggFunc::Sum, "sum_b"),
        AggSpec::new("a", AggFunc::Min, "min_a"),
        AggSpec::new("b", AggFunc::Max, "max_b"),
        AggSpec::new("d", AggFunc::Min, "min_d"),
        AggSpec::new("ts", AggFunc::Max, "max_ts"),
        AggSpec::new("u", AggFunc::Min, "min_u"),
        AggSpec::new("k", AggFunc::Max, "max_k"),
        AggSpec::new("dec", AggFunc::Sum, "sum_dec"),
        AggSpec::new("dec", AggFunc::Mean, "mean_dec"),
        AggSpec::new("d64", AggFunc::Sum, "sum_d64"),
        AggSpec::new("a", AggFunc::Mean, "mean_a"),
        AggSpec::new("u", AggFunc::Mean, "mean_u"),
        AggSpec::new("b", AggFunc::Mean, "mean_b"),
        AggSpec::new("f", AggFunc::Sum, "sum_f"),
        AggSpec::new("g", AggFunc::Sum, "sum_g"),
        AggSpec::new("f", AggFunc::Mean, "mean_f"),
        AggSpec::new("g", AggFunc::Mean, "mean_g"),
    ];
    let key_sets: Vec<Vec<&str>> = vec![
        vec!["k"],
        vec!["s"],
        vec!["a", "flag"],
        vec!["d", "t"],
        vec!["u"],
        vec!["sv", "k"],
        vec![],
    ];
    // A decimal sum past 38 digits is an error on both, with the same words, also when
    // the 128-bit sum would wrap back into range.
    let big = RecordBatch::try_from_iter([
        ("g", Arc::new(Int32Array::from(vec![1; 40])) as ArrayRef),
        (
            "x",
            Arc::new(
                Decimal128Array::from(vec![9 * 10i128.pow(37); 40])
                    .with_precision_and_scale(38, 0)
                    .unwrap(),
            ) as ArrayRef,
        ),
    ])
    .unwrap();
    let sum_x = [AggSpec::new("x", AggFunc::Sum, "sx")];
    let g = ["g".to_string()];
    let want = cpu
        .aggregate_partial(&cpu.import_batch(big.clone()).unwrap(), &g, &sum_x)
        .expect_err("the CPU backend refuses a decimal sum past 38 digits")
        .to_string();
    let got = cuda
        .aggregate_partial(&cuda.import_batch(big).unwrap(), &g, &sum_x)
        .expect_err("the device refuses a decimal sum past 38 digits")
        .to_string();
    assert_eq!(got, want);
    let batch = edge_batch(1000);
    for keys in &key_sets {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        for (offset, len) in [(0, batch.num_rows()), (5, 333), (0, 0)] {
            let what = format!("keys {keys:?}, rows {offset}..{}", offset + len);
            let part = batch.slice(offset, len);
            let want = cpu
                .aggregate_finalize(
                    &cpu.aggregate_partial(&cpu.import_batch(part).unwrap(), &keys, &aggs)
                        .unwrap(),
                    &keys,
                    &aggs,
                )
                .map(|p| cpu.export_batch(&p).unwrap())
                .unwrap();
            let dev = cuda
                .slice(&cuda.import_batch(batch.clone()).unwrap(), offset, len)
                .unwrap();
            tessera_core::fallback::take();
            let states = cuda
                .aggregate_partial(&dev, &keys, &aggs)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let fell = tessera_core::fallback::take();
            assert!(fell.is_empty(), "{what}: ran through a fallback: {fell:?}");
            let states = cuda.export_batch(&states).unwrap();
            let again = cuda
                .export_batch(&cuda.aggregate_partial(&dev, &keys, &aggs).unwrap())
                .unwrap();
            assert_eq!(states, again, "{what}: two runs differ");
            let got = cpu
                .export_batch(
                    &cpu.aggregate_finalize(&cpu.import_batch(states).unwrap(), &keys, &aggs)
                        .unwrap(),
                )
                .unwrap();
            // The same partials combined on the device (two copies and a slice of them):
            // the counts and sums doubled, the rest unchanged, against the CPU's combine.
            let combinable: Vec<AggSpec> = aggs.clone();

            let dev_states = cuda.aggregate_partial(&dev, &keys, &combinable).unwrap();
            let parts = vec![
                dev_states.clone(),
                dev_states.clone(),
                cuda.slice(&dev_states, 1, 5).unwrap(),
            ];
            tessera_core::fallback::take();
            let combined = cuda
                .aggregate_combine(&parts, &keys, &combinable)
                .unwrap_or_else(|e| panic!("{what}: combine: {e}"));
            let fell = tessera_core::fallback::take();
            assert!(
                fell.is_empty(),
                "{what}: the combine ran through a fallback: {fell:?}"
            );
            let host_parts: Vec<_> = parts
                .iter()
                .map(|p| cpu.import_batch(cuda.export_batch(p).unwrap()).unwrap())
                .collect();
            let finalize = |p| {
                cpu.export_batch(&cpu.aggregate_finalize(&p, &keys, &combinable).unwrap())
                    .unwrap()
            };
            let want_combined = finalize(
                cpu.aggregate_combine(&host_parts, &keys, &combinable)
                    .unwrap(),
            );
            let got_combined = finalize(
                cpu.import_batch(cuda.export_batch(&combined).unwrap())
                    .unwrap(),
            );
            assert_eq!(got_combined, want_combined, "{what}: combine");
            // The final step on the device (every result its state, or a mean's division).
            // (A mean of decimals finishes on the host: its division is not on the device.)
            let plain: Vec<AggSpec> = combinable
                .iter()
                .filter(|a| !(a.func == AggFunc::Mean && a.column == "dec"))
                .cloned()
                .collect();
            let states = cuda.aggregate_partial(&dev, &keys, &plain).unwrap();
            tessera_core::fallback::take();
            let finished = cuda.aggregate_finalize(&states, &keys, &plain).unwrap();
            let fell = tessera_core::fallback::take();
            let string_keys = keys.iter().any(|k| ["s", "t", "sv"].contains(&k.as_str()));
            assert_eq!(
                fell.is_empty(),
                !string_keys,
                "{what}: finalize fallbacks {fell:?}"
            );
            let want_finished = cpu
                .export_batch(
                    &cpu.aggregate_finalize(
                        &cpu.import_batch(cuda.export_batch(&states).unwrap())
                            .unwrap(),
                        &keys,
                        &plain,
                    )
                    .unwrap(),
                )
                .unwrap();
            assert_eq!(
                cuda.export_batch(&finished).unwrap(),
                want_finished,
                "{what}: finalize"
            );
            assert_eq!(got.num_rows(), want.num_rows(), "{what}");
            for (i, (g, w)) in got.columns().iter().zip(want.columns()).enumerate() {
                let name = want.schema().field(i).name().clone();
                let int_mean = ["mean_a", "mean_b", "mean_u"].contains(&name.as_str());
                if let (true, Some(g), Some(w)) = (
                    int_mean,
                    g.as_any().downcast_ref::<Float64Array>(),
                    w.as_any().downcast_ref::<Float64Array>(),
                ) {
                    // A mean's sum: exact on the device, then rounded once; the CPU adds
                    // in Float64 row by row. Equal within rounding, nulls exactly.
                    for r in 0..w.len() {
                        assert_eq!(g.is_null(r), w.is_null(r), "{what}: '{name}' row {r}");
                        let (a, b) = (g.value(r), w.value(r));
                        assert!(
                            w.is_null(r) || (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                            "{what}: '{name}' row {r}: {a} vs {b}"
                        );
                    }
                    continue;
                }
                assert_eq!(g.to_data(), w.to_data(), "{what}: column '{name}'");
            }
        }
    }
}

/// Inner, left, semi and anti joins of the key types the device covers run there (no
/// fallback), give the same rows on every run and the CPU backend's rows in its order:
/// duplicate keys
/// on both sides, null keys, several keys, string keys, an empty right side.
#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn device_joins_give_the_cpu_rows_on_host_devices() {
    use tessera_core::frame::{JoinAlgorithm, JoinSpec, JoinType};
    if let Err(reason) = host_shim::compiler() {
        skip("device_joins_give_the_cpu_rows_on_host_devices", &reason);
        return;
    }
    let cuda = host_backend("cuda-host-join");
    let cpu = CpuFrameBackend::default();
    let left = edge_batch(700);
    let right = edge_batch(1000).slice(300, 400);
    for keys in [
        vec!["k"],
        vec!["s"],
        vec!["a", "flag"],
        vec!["sv", "u"],
        vec!["d"],
    ] {
        for how in [
            JoinType::Inner,
            JoinType::Left,
            JoinType::Semi,
            JoinType::Anti,
        ] {
            for right in [right.clone(), right.slice(0, 0)] {
                let spec = JoinSpec {
                    left_on: keys.iter().map(|k| k.to_string()).collect(),
                    right_on: keys.iter().map(|k| k.to_string()).collect(),
                    how,
                    suffixes: ("_x".into(), "_y".into()),
                    algorithm: JoinAlgorithm::Hash,
                };
                let what = format!(
                    "{} join on {keys:?}, {} right rows",
                    how.name(),
                    right.num_rows()
                );
                let want = cpu
                    .export_batch(
                        &cpu.join(
                            &cpu.import_batch(left.clone()).unwrap(),
                            &cpu.import_batch(right.clone()).unwrap(),
                            &spec,
                        )
                        .unwrap(),
                    )
                    .unwrap();
                let (l, r) = (
                    cuda.import_batch(left.clone()).unwrap(),
                    cuda.import_batch(right.clone()).unwrap(),
                );
                tessera_core::fallback::take();
                let got = cuda
                    .join(&l, &r, &spec)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let fell = tessera_core::fallback::take();
                assert!(fell.is_empty(), "{what}: ran through a fallback: {fell:?}");
                let got = cuda.export_batch(&got).unwrap();
                let again = cuda
                    .export_batch(&cuda.join(&l, &r, &spec).unwrap())
                    .unwrap();
                assert_eq!(got, again, "{what}: two runs differ");
                assert_eq!(got.schema(), want.schema(), "{what}");
                assert_eq!(got.num_rows(), want.num_rows(), "{what}");
                // Each left row's matches in right-row order, as the CPU backend gives them.
                assert_eq!(got, want, "{what}");
            }
        }
    }
}

/// Sorts by keys the device covers run there (no fallback) and give the CPU backend's
/// rows in its order: stable, nulls last ascending and descending, NaN above every number,
/// -0 tied with 0, several keys, integer extremes, decimals, booleans, a sliced partition.
#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn device_sorts_give_the_cpu_order_on_host_devices() {
    use tessera_core::frame::SortKey;
    if let Err(reason) = host_shim::compiler() {
        skip("device_sorts_give_the_cpu_order_on_host_devices", &reason);
        return;
    }
    let cuda = host_backend("cuda-host-sort");
    let cpu = CpuFrameBackend::default();
    let key = |c: &str, descending: bool| SortKey {
        column: c.to_string(),
        descending,
    };
    let batch = edge_batch(600);
    for by in [
        vec![key("a", false)],
        vec![key("f", true)],
        vec![key("f", false)],
        vec![key("k", false), key("d", true)],
        vec![key("flag", true), key("b", false)],
        vec![key("dec", false)],
        vec![key("ts", true), key("u", false)],
        vec![key("g", false), key("d64", true)],
    ] {
        for (offset, len) in [(0, batch.num_rows()), (7, 300)] {
            let what = format!("{by:?} rows {offset}..{}", offset + len);
            let part = batch.slice(offset, len);
            let want = cpu
                .export_batch(&cpu.sort(&cpu.import_batch(part).unwrap(), &by).unwrap())
                .unwrap();
            let dev = cuda
                .slice(&cuda.import_batch(batch.clone()).unwrap(), offset, len)
                .unwrap();
            tessera_core::fallback::take();
            let got = cuda
                .sort(&dev, &by)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let fell = tessera_core::fallback::take();
            assert!(fell.is_empty(), "{what}: ran through a fallback: {fell:?}");
            assert_eq!(cuda.export_batch(&got).unwrap(), want, "{what}");
            let top = cuda
                .export_batch(&cuda.sort_limit(&dev, &by, 10).unwrap())
                .unwrap();
            assert_eq!(
                top,
                want.slice(0, 10.min(want.num_rows())),
                "{what}: top 10"
            );
            // `take` at positions given, repeated and out of order.
            let at: Vec<u64> = (0..len as u64)
                .rev()
                .step_by(3)
                .chain([0, 0])
                .filter(|&i| i < len as u64)
                .collect();
            let want_take = cpu
                .export_batch(
                    &cpu.take(&cpu.import_batch(batch.slice(offset, len)).unwrap(), &at)
                        .unwrap(),
                )
                .unwrap();
            tessera_core::fallback::take();
            let taken = cuda.take(&dev, &at).unwrap();
            assert!(
                tessera_core::fallback::take().is_empty(),
                "{what}: take fell back"
            );
            assert_eq!(
                cuda.export_batch(&taken).unwrap(),
                want_take,
                "{what}: take"
            );
        }
    }
}

/// Concatenations run on the device (no fallback) and give the CPU backend's batch:
/// partitions sliced at offsets that are not whole bytes of their bitmaps, empty ones,
/// one to five of them, strings of both offset widths and views, booleans, decimals.
#[test]
fn device_concatenations_give_the_cpu_batch_on_host_devices() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "device_concatenations_give_the_cpu_batch_on_host_devices",
            &reason,
        );
        return;
    }
    let cuda = host_backend("cuda-host-concat");
    let cpu = CpuFrameBackend::default();
    let batch = edge_batch(500);
    let cuts: Vec<Vec<(usize, usize)>> = vec![
        vec![(0, 500)],
        vec![(3, 17), (100, 0), (21, 77)],
        vec![(0, 9), (9, 9), (18, 9), (27, 100), (499, 1)],
        vec![(0, 0), (0, 0)],
        vec![(250, 250), (1, 249)],
    ];
    for cut in cuts {
        let want = cpu
            .export_batch(
                &cpu.concat(
                    &cut.iter()
                        .map(|&(o, l)| cpu.import_batch(batch.slice(o, l)).unwrap())
                        .collect::<Vec<_>>(),
                )
                .unwrap(),
            )
            .unwrap();
        let whole = cuda.import_batch(batch.clone()).unwrap();
        let parts: Vec<_> = cut
            .iter()
            .map(|&(o, l)| cuda.slice(&whole, o, l).unwrap())
            .collect();
        tessera_core::fallback::take();
        let got = cuda
            .concat(&parts)
            .unwrap_or_else(|e| panic!("{cut:?}: {e}"));
        let fell = tessera_core::fallback::take();
        assert!(fell.is_empty(), "{cut:?}: ran through a fallback: {fell:?}");
        assert_eq!(cuda.export_batch(&got).unwrap(), want, "{cut:?}");
    }
}

/// Hash partitioning on the device: every row lands in exactly one output, in its order;
/// equal keys land in the same output from every partition (two slices of a batch, and a
/// batch with a column the device cannot gather, whose rows then move on the host by the
/// device's buckets); the same outputs on every run; no fallback where the device covers it.
#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn device_hash_partitions_keep_keys_together_on_host_devices() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "device_hash_partitions_keep_keys_together_on_host_devices",
            &reason,
        );
        return;
    }
    let cuda = host_backend("cuda-host-partition");
    let base = edge_batch(800);
    let ids = Arc::new(Int64Array::from((0..800i64).collect::<Vec<_>>())) as ArrayRef;
    let mut fields = base.schema().fields().to_vec();
    fields.push(Arc::new(arrow_schema::Field::new(
        "id",
        DataType::Int64,
        false,
    )));
    let mut columns = base.columns().to_vec();
    columns.push(ids);
    let batch = RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), columns).unwrap();
    // A list column the device does not gather.
    let lists = Arc::new(arrow_array::ListArray::from_iter_primitive::<
        arrow_array::types::Int32Type,
        _,
        _,
    >((0..800).map(|i| Some(vec![Some(i), None])))) as ArrayRef;
    let with_list = RecordBatch::try_from_iter(
        batch
            .columns()
            .iter()
            .cloned()
            .zip(batch.schema().fields().iter().map(|f| f.name().clone()))
            .map(|(c, n)| (n, c))
            .chain([("l".to_string(), lists)]),
    )
    .unwrap();
    for keys in [vec!["k"], vec!["s", "flag"], vec!["sv"], vec!["d", "u"]] {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let n = 5;
        let mut bucket_of: std::collections::HashMap<String, usize> = Default::default();
        let mut seen = vec![false; 800];
        for (what, data, native) in [
            ("first half", batch.slice(0, 400), true),
            ("second half", batch.slice(400, 400), true),
            ("with a list column", with_list.clone(), false),
        ] {
            let dev = cuda.import_batch(data.clone()).unwrap();
            tessera_core::fallback::take();
            let outs = cuda.hash_partition(&dev, &keys, n).unwrap();
            let fell = tessera_core::fallback::take();
            assert_eq!(fell.is_empty(), native, "{keys:?} {what}: {fell:?}");
            let again: Vec<RecordBatch> = cuda
                .hash_partition(&dev, &keys, n)
                .unwrap()
                .iter()
                .map(|p| cuda.export_batch(p).unwrap())
                .collect();
            assert_eq!(outs.len(), n);
            let mut total = 0;
            for (i, out) in outs.iter().enumerate() {
                let out = cuda.export_batch(out).unwrap();
                assert_eq!(out, again[i], "{keys:?} {what}: two runs differ");
                total += out.num_rows();
                let id = out
                    .column_by_name("id")
                    .unwrap()
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap();
                assert!(
                    id.values().windows(2).all(|w| w[0] < w[1]),
                    "{keys:?} {what}: order"
                );
                for r in 0..out.num_rows() {
                    if native {
                        assert!(!seen[id.value(r) as usize], "{keys:?}: row twice");
                        seen[id.value(r) as usize] = true;
                    }
                    let key: Vec<String> = keys
                        .iter()
                        .map(|k| {
                            let c = out.column_by_name(k).unwrap();
                            if c.is_null(r) {
                                "∅".to_string()
                            } else {
                                arrow_cast::display::array_value_to_string(c, r).unwrap()
                            }
                        })
                        .collect();
                    let b = *bucket_of.entry(key.join("|")).or_insert(i);
                    assert_eq!(b, i, "{keys:?} {what}: key {key:?} in two outputs");
                }
            }
            assert_eq!(total, data.num_rows(), "{keys:?} {what}");
        }
        assert!(seen.iter().all(|&s| s), "{keys:?}: a row lost");
    }
}
