//! The array backend's own kernels for what the protocol would otherwise do by its
//! defaults — `moments_program` (the block evaluated once), `matmul_program` (the program
//! evaluated inside the product's tiles), `concatenate` along inner axes — give the
//! defaults' bits on host devices, and concatenation the CPU backend's values.

use tessera_conformance::skip::skip;
use tessera_core::program::{BinaryOp, IndexMap, Program, ProgramBuilder};
use tessera_core::random::{Distribution, RandomSpec};
use tessera_core::{ArrayBackend, Chunk, DType, HostArray, Scalar};
use tessera_cuda::device::CudaBackend;
use tessera_cuda::host::shim as host_shim;
use tessera_cuda::host::HostDevice;

fn backend() -> CudaBackend<HostDevice> {
    let k = crate::frame::kernels();
    CudaBackend::with_devices(
        "cuda-host-programs",
        vec![HostDevice::new(k.clone()), HostDevice::new(k)],
    )
    .unwrap()
}

fn bytes(b: &CudaBackend<HostDevice>, c: &Chunk) -> (Vec<usize>, Vec<u64>) {
    let h = b.to_host(c).unwrap();
    (
        h.shape().to_vec(),
        h.to_f64_vec().iter().map(|v| v.to_bits()).collect(),
    )
}

/// `normal(seed) * 3 - x` over `shape`, of `dtype`: a generator and a read.
fn program(shape: &[usize], dtype: DType, seed: u64) -> Program {
    let mut pb = ProgramBuilder::new(shape);
    let z = pb.random(
        RandomSpec {
            seed,
            stream: 1,
            dist: Distribution::Normal {
                mean: 0.5,
                std: 2.0,
            },
            dtype,
        },
        IndexMap::identity(shape),
    );
    let three = pb.constant(Scalar::F64(3.0).cast(dtype));
    let scaled = pb.binary(BinaryOp::Mul, z, three).unwrap();
    let x = pb.input(0, dtype, IndexMap::identity(shape));
    let out = pb.binary(BinaryOp::Sub, scaled, x).unwrap();
    pb.finish(vec![(out, None)]).unwrap()
}

fn input(b: &CudaBackend<HostDevice>, shape: &[usize], dtype: DType) -> Chunk {
    let n: usize = shape.iter().product();
    let values: Vec<Scalar> = (0..n)
        .map(|i| Scalar::F64(((i * 37) % 101) as f64 / 7.0 - 5.0).cast(dtype))
        .collect();
    b.from_host(&HostArray::from_scalars(shape, dtype, &values).unwrap())
        .unwrap()
}

#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn native_moments_give_the_defaults_bits() {
    if let Err(reason) = host_shim::compiler() {
        skip("native_moments_give_the_defaults_bits", &reason);
        return;
    }
    let b = backend();
    for (shape, axes, dtype) in [
        (vec![37, 11], vec![0], DType::F64),
        (vec![37, 11], vec![1], DType::F64),
        (vec![37, 11], vec![0, 1], DType::F32),
        (vec![6, 5, 9], vec![0, 2], DType::F64),
        (vec![6, 5, 9], vec![1], DType::F32),
    ] {
        let p = program(&shape, dtype, 9);
        let x = input(&b, &shape, dtype);
        let native = b
            .moments_program(&p, std::slice::from_ref(&x), &axes)
            .unwrap();
        let default = tessera_core::backend::moments_with_primitives(&b, &p, &[x], &axes).unwrap();
        assert_eq!(
            bytes(&b, &native),
            bytes(&b, &default),
            "{shape:?} over {axes:?}, {dtype}"
        );
    }
}

#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn fused_products_give_the_materialised_products_bits() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "fused_products_give_the_materialised_products_bits",
            &reason,
        );
        return;
    }
    let b = backend();
    for (pshape, other, left, dtype) in [
        // svd_compressed's X Ω: a tall generated block times a narrow matrix.
        (vec![70, 33], vec![33, 7], true, DType::F64),
        (vec![70, 33], vec![33, 20], true, DType::F32),
        // Ω-side products: a @ P with few rows.
        (vec![33, 45], vec![5, 33], false, DType::F64),
        // Too wide to fuse: the default path, the same answer.
        (vec![20, 9], vec![9, 80], true, DType::F64),
    ] {
        let p = program(&pshape, dtype, 4);
        let x = input(&b, &pshape, dtype);
        let o = input(&b, &other, dtype);
        let fused = b
            .matmul_program(&p, std::slice::from_ref(&x), &o, left)
            .unwrap();
        let pm = b.execute(&p, &[x]).unwrap().remove(0);
        let want = if left {
            b.matmul(&pm, &o)
        } else {
            b.matmul(&o, &pm)
        }
        .unwrap();
        assert_eq!(
            bytes(&b, &fused),
            bytes(&b, &want),
            "{pshape:?} with {other:?}, {dtype}"
        );
    }
    // A program whose output is not the operand's shape is refused by the product's checks.
    let p = program(&[4, 5], DType::F64, 1);
    let x = input(&b, &[4, 5], DType::F64);
    let o = input(&b, &[6, 2], DType::F64);
    assert!(b.matmul_program(&p, &[x], &o, true).is_err());
}

#[test]
fn inner_concatenation_runs_on_the_device_with_the_cpu_values() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "inner_concatenation_runs_on_the_device_with_the_cpu_values",
            &reason,
        );
        return;
    }
    let b = backend();
    let cpu = tessera_cpu::CpuBackend::default();
    for (dtype, shapes, axis) in [
        (
            DType::F64,
            vec![vec![3, 2, 4], vec![3, 5, 4], vec![3, 1, 4]],
            1,
        ),
        (DType::I16, vec![vec![4, 3], vec![4, 1]], 1),
        (DType::Bool, vec![vec![2, 3, 2], vec![2, 3, 1]], 2),
        (DType::U8, vec![vec![5, 0], vec![5, 2]], 1),
        // More parts than one kernel reads: joined in groups.
        (DType::F32, vec![vec![3, 1]; 70], 1),
    ] {
        let hosts: Vec<HostArray> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n: usize = s.iter().product();
                let v: Vec<Scalar> = (0..n)
                    .map(|j| Scalar::I64((i * 100 + j) as i64 % 7).cast(dtype))
                    .collect();
                HostArray::from_scalars(s, dtype, &v).unwrap()
            })
            .collect();
        let parts: Vec<Chunk> = hosts.iter().map(|h| b.from_host(h).unwrap()).collect();
        let mark = tessera_core::fallback::mark();
        let got = b.to_host(&b.concatenate(&parts, axis).unwrap()).unwrap();
        assert!(
            tessera_core::fallback::since(mark, "cuda-host-programs").is_empty(),
            "no host fallback"
        );
        let cparts: Vec<Chunk> = hosts.iter().map(|h| cpu.from_host(h).unwrap()).collect();
        let want = cpu
            .to_host(&cpu.concatenate(&cparts, axis).unwrap())
            .unwrap();
        assert_eq!(got.shape(), want.shape(), "{dtype} {shapes:?}");
        assert_eq!(got.to_f64_vec(), want.to_f64_vec(), "{dtype} {shapes:?}");
    }
}
