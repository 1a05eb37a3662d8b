//! Every program the conformance suite hands a backend, as CUDA kernels: compiled by NVRTC
//! (no GPU needed), and the same text compiled on the host with the shim, run over the
//! suite's own inputs and compared with what the CPU backend returned — bit for bit for
//! every unreduced output, within the suite's tolerances for float sums and products
//! (a tree adds in another order), exactly for every other reduction.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use tessera_conformance::compare::{compare, has_subnormal, max_abs, Tol};
use tessera_conformance::skip::skip;
use tessera_core::backend::ArrayBackend;
use tessera_core::program::{Program, ReduceOp};
use tessera_core::HostArray;
use tessera_cuda::codegen::{generate, KernelPlan, PRELUDE};

use crate::{suite_runs, suite_structures};
use tessera_cuda::host::shim as host_shim;

/// The architecture the compile test targets: the H100/H200 of the GPU machines.
const ARCH: &str = "compute_90";

/// Every kernel the suite's programs make, and the matrix product for every dtype,
/// compiled for the host once per test binary (the bit test and the backend test share
/// them; a kernel the backend asks for beyond these is compiled when it is asked for).
pub fn suite_kernels() -> Arc<host_shim::HostKernels> {
    static KERNELS: OnceLock<Arc<host_shim::HostKernels>> = OnceLock::new();
    KERNELS
        .get_or_init(|| {
            let mut plans: Vec<KernelPlan> = suite_structures()
                .iter()
                .flat_map(|p| (0..p.outputs.len()).map(move |o| (p, o)))
                .map(|(p, o)| generate(p, o, 1).unwrap_or_else(|e| panic!("{e}\n{}", p.describe())))
                .collect();
            plans.extend(product_kernels());
            let refs: Vec<&KernelPlan> = plans.iter().collect();
            Arc::new(host_shim::build(&refs).unwrap_or_else(|e| panic!("{e}")))
        })
        .clone()
}

/// The matrix product kernels (`a @ b` and `aᵀ @ b`) of every numeric dtype.
fn product_kernels() -> Vec<KernelPlan> {
    tessera_core::DType::ALL
        .into_iter()
        .filter(|&d| d != tessera_core::DType::Bool)
        .flat_map(|d| {
            [
                tessera_cuda::codegen::matmul(d, 1, 1, 1).expect("matmul kernel"),
                tessera_cuda::codegen::matmul_transposed_a(d, 1, 1, 1).expect("matmul kernel"),
            ]
        })
        .collect()
}

/// One kernel per output of every recorded program; `parts` varies from 1 to 3 so that
/// the second pass of reductions folds one and several partials.
fn plans(runs: &[crate::Run]) -> Vec<(usize, usize, KernelPlan)> {
    let mut v = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for o in 0..run.program.outputs.len() {
            let plan = generate(&run.program, o, 1 + (i % 3) as u64)
                .unwrap_or_else(|e| panic!("{e}\n{}", run.program.describe()));
            v.push((i, o, plan));
        }
    }
    v
}

#[test]
fn conformance_programs_compile_with_nvrtc() {
    if let Err(reason) = tessera_cuda::nvrtc::load() {
        skip("conformance_programs_compile_with_nvrtc", &reason);
        return;
    }
    let mut unique: BTreeMap<u64, KernelPlan> = BTreeMap::new();
    for p in suite_structures() {
        for o in 0..p.outputs.len() {
            let plan = generate(p, o, 1).unwrap_or_else(|e| panic!("{e}\n{}", p.describe()));
            unique.entry(plan.hash).or_insert(plan);
        }
    }
    for plan in product_kernels() {
        unique.entry(plan.hash).or_insert(plan);
    }
    let texts: Vec<&KernelPlan> = unique.values().collect();
    assert!(texts.len() > 300, "only {} distinct kernels", texts.len());
    // Kernels are compiled in batches that share one prelude (NVRTC's cost is mostly the
    // parse of the prelude), on two threads; a batch that fails is compiled kernel by
    // kernel to name the culprit.
    let failures: Vec<String> = std::thread::scope(|s| {
        let halves: Vec<_> = texts
            .chunks(texts.len().div_ceil(2))
            .map(|half| {
                s.spawn(move || {
                    half.chunks(BATCH)
                        .flat_map(compile_batch)
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().expect("compile thread"))
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} kernels did not compile; the first:\n{}",
        failures.len(),
        texts.len(),
        failures[0]
    );
}

/// Kernels per NVRTC program in the compile test.
pub(crate) const BATCH: usize = 100;

/// Compiles `batch` as one program; every entry must be in the PTX. On failure, compiles
/// each kernel alone and returns each one's error.
pub(crate) fn compile_batch(batch: &[&KernelPlan]) -> Vec<String> {
    let mut src = String::from(PRELUDE);
    for p in batch {
        src.push('\n');
        src.push_str(&p.body);
    }
    let missing = |ptx: &str| {
        batch
            .iter()
            .flat_map(|p| &p.entries)
            .filter(|e| !ptx.contains(&format!(".entry {}(", e.name)))
            .map(|e| format!("{}: not in the PTX", e.name))
            .collect::<Vec<_>>()
    };
    match tessera_cuda::nvrtc::compile_uncached(&src, ARCH) {
        Ok(ptx) => missing(&ptx),
        Err(_) => batch
            .iter()
            .filter_map(|p| tessera_cuda::nvrtc::compile_uncached(&p.source(), ARCH).err())
            .map(|e| e.to_string())
            .collect(),
    }
}

/// Bits equal, any NaN equal to any NaN.
fn same_bits(got: &HostArray, want: &HostArray) -> Result<(), String> {
    if got.dtype() != want.dtype() || got.shape() != want.shape() {
        return Err(format!(
            "{} {:?} vs {} {:?}",
            got.dtype(),
            got.shape(),
            want.dtype(),
            want.shape()
        ));
    }
    let bits = |h: &HostArray| -> Vec<Option<u64>> {
        match h {
            HostArray::F64(a) => a
                .iter()
                .map(|v| (!v.is_nan()).then(|| v.to_bits()))
                .collect(),
            HostArray::F32(a) => a
                .iter()
                .map(|v| (!v.is_nan()).then(|| u64::from(v.to_bits())))
                .collect(),
            other => other
                .to_f64_vec()
                .iter()
                .map(|v| Some(v.to_bits()))
                .collect(),
        }
    };
    let (g, w) = (bits(got), bits(want));
    match g.iter().zip(&w).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "element {i}: host kernel {:?} vs cpu {:?} ({} of {} differ)",
            got.get_flat(i),
            want.get_flat(i),
            g.iter().zip(&w).filter(|(a, b)| a != b).count(),
            g.len()
        )),
    }
}

/// The tolerance for a reduced output: float sums and products may round differently in
/// a tree; everything else must be exact.
fn reduction_tol(program: &Program, output: usize, inputs: &[HostArray]) -> Tol {
    let o = &program.outputs[output];
    let Some(r) = &o.reduce else {
        return Tol::EXACT;
    };
    let dtype = program.output_dtype(output);
    if !dtype.is_float() {
        return Tol::EXACT;
    }
    // The unreduced values, for the slack's scale.
    let mut unreduced = program.clone();
    unreduced.outputs = vec![tessera_core::program::Output {
        node: o.node,
        reduce: None,
    }];
    let cpu = tessera_cpu::CpuBackend::new();
    let chunks: Vec<_> = inputs
        .iter()
        .map(|h| cpu.from_host(h).expect("host"))
        .collect();
    let values = cpu
        .execute(&unreduced, &chunks)
        .and_then(|v| cpu.to_host(&v[0]))
        .expect("unreduced values");
    let n: usize = r.axes.iter().map(|&a| program.shape[a]).product();
    match r.op {
        ReduceOp::Sum | ReduceOp::NanSum => Tol::reduction(dtype, n, max_abs(&values)),
        ReduceOp::Prod => Tol::product(dtype, n, has_subnormal(&values)),
        _ => Tol::EXACT,
    }
}

#[test]
#[ignore = "minutes: compiles the host-shim kernel unit; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored kernels::"]
fn conformance_programs_give_the_cpu_bits_on_the_host() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "conformance_programs_give_the_cpu_bits_on_the_host",
            &reason,
        );
        return;
    }
    let runs = suite_runs();
    let plans = plans(runs);
    let lib = suite_kernels();
    let (mut checked, mut reduced, mut failures) = (0, 0, Vec::new());
    for (i, o, plan) in &plans {
        let run = &runs[*i];
        let shape = run.program.output_shape(*o);
        let want = &run.outputs[*o];
        let got = match lib.run(plan, &run.inputs, &shape) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{e}\n{}", run.program.describe()));
                continue;
            }
        };
        let verdict = if run.program.outputs[*o].reduce.is_none() {
            same_bits(&got, want)
        } else {
            reduced += 1;
            let tol = reduction_tol(&run.program, *o, &run.inputs);
            compare(&got, want, tol).map_err(|m| m.describe("host kernel", "cpu"))
        };
        checked += 1;
        if let Err(e) = verdict {
            failures.push(format!(
                "output {o} of\n{}inputs {:?}\n{e}",
                run.program.describe(),
                run.inputs
                    .iter()
                    .map(|h| (h.dtype(), h.shape().to_vec()))
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        checked > 1000 && reduced > 100,
        "{checked} outputs, {reduced} reduced"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} outputs differ; the first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(6)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// The tiled product kernels (`a @ b`, and `aᵀ @ b` reading `a` in place) against the CPU
/// backend's product, over shapes that span several tiles with ragged edges and a shared
/// axis that is not a multiple of the tile: integers exactly (wrapping), floats within
/// the suite's tolerance for a sum of `k` products.
#[test]
fn matmul_kernels_match_the_cpu_on_the_host() {
    if let Err(reason) = host_shim::compiler() {
        skip("matmul_kernels_match_the_cpu_on_the_host", &reason);
        return;
    }
    use tessera_core::{DType, Scalar};
    let cpu = tessera_cpu::CpuBackend::new();
    let mut cases = Vec::new();
    for (m, k, n) in [(7, 33, 5), (37, 21, 18), (1, 40, 1)] {
        for d in DType::ALL.into_iter().filter(|&d| d != DType::Bool) {
            // Values over the type's range, so integer products overflow and wrap.
            let vals = |len: usize, salt: i64| -> Vec<Scalar> {
                (0..len as i64)
                    .map(|i| {
                        Scalar::I64((i * 7919 + salt).wrapping_mul(0x9e37_79b9) % 100_003 - 50_000)
                            .cast(d)
                    })
                    .collect()
            };
            let a = HostArray::from_scalars(&[m, k], d, &vals(m * k, 1)).expect("a");
            let b = HostArray::from_scalars(&[k, n], d, &vals(k * n, 2)).expect("b");
            let on_cpu = |x: &HostArray| cpu.from_host(x).expect("to cpu");
            let want = cpu
                .matmul(&on_cpu(&a), &on_cpu(&b))
                .and_then(|c| cpu.to_host(&c))
                .expect("cpu matmul");
            // The same product from `a` stored transposed (k x m).
            let at = cpu
                .transpose(&on_cpu(&a), &[1, 0])
                .and_then(|c| cpu.to_host(&c))
                .expect("cpu transpose");
            let plain = tessera_cuda::codegen::matmul(d, m, k, n).expect("kernel");
            let transposed =
                tessera_cuda::codegen::matmul_transposed_a(d, m, k, n).expect("kernel");
            cases.push((d, (m, k, n), a.clone(), b.clone(), want.clone(), plain));
            cases.push((d, (m, k, n), at, b, want, transposed));
        }
    }
    assert!(tessera_cuda::codegen::matmul(DType::Bool, 2, 2, 2).is_err());
    let lib = host_shim::build(&cases.iter().map(|c| &c.5).collect::<Vec<_>>())
        .unwrap_or_else(|e| panic!("{e}"));
    for (d, (m, k, n), a, b, want, plan) in &cases {
        let got = lib
            .run(plan, &[a.clone(), b.clone()], &[*m, *n])
            .expect("host run");
        let scale = max_abs(a) * max_abs(b);
        let tol = Tol::reduction(*d, *k, scale);
        compare(&got, want, tol).unwrap_or_else(|e| {
            panic!(
                "{d} {m}x{k}x{n} {}: {}",
                plan.entries[0].name,
                e.describe("host kernel", "cpu")
            )
        });
    }
}

/// The CUDA backend itself — two devices, round-robin placement, cross-device copies,
/// parameter packing, partial buffers, reshape as a relabel, the matmul kernel and the
/// concatenate fallback — through the whole conformance suite, on host devices that run
/// the same kernel texts. Only the cudarc calls are left for a GPU to prove.
#[test]
#[ignore = "minutes: compiles the host-shim kernel unit; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored kernels::"]
fn the_cuda_backend_passes_the_suite_on_host_devices() {
    if let Err(reason) = host_shim::compiler() {
        skip("the_cuda_backend_passes_the_suite_on_host_devices", &reason);
        return;
    }
    use tessera_cuda::host::HostDevice;
    let kernels = suite_kernels();
    let devices = vec![HostDevice::new(kernels.clone()), HostDevice::new(kernels)];
    let backend: tessera_core::BackendRef = Arc::new(
        tessera_cuda::device::CudaBackend::with_devices("cuda-host", devices).expect("backend"),
    );
    let report = tessera_conformance::check_array_backend(
        &backend,
        &tessera_conformance::Options::default(),
    );
    assert!(report.is_ok(), "{}", report.failure_text());
    assert!(report.cases.len() > 3000, "{} cases", report.cases.len());
}
