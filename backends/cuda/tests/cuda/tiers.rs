//! Device memory in tiers on host devices given a small simulated capacity: arrays and
//! frames several times the device limit complete with the answers of unlimited devices;
//! the bytes the three tiers are charged with equal what is held; disk is used exactly
//! when host memory is full; nothing stays in the spill directory, also after an error.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tessera_array::{Array, RandomState};
use tessera_conformance::skip::skip;
use tessera_core::frame::{AggFunc, FrameBackendRef};
use tessera_core::{BackendRef, DType, Error, HostArray};
use tessera_cuda::device::{CudaBackend, TierLimits, Tiered, Tiers};
use tessera_cuda::host::shim as host_shim;
use tessera_cuda::host::HostDevice;
use tessera_cuda_frame::CudaFrameBackend;

fn host_tiers(name: &str, devices: usize, limits: TierLimits) -> Arc<Tiers<HostDevice>> {
    // One kernel library for the whole test binary: each kernel text compiles once.
    let k = crate::frame::kernels();
    Tiers::new(
        name,
        (0..devices).map(|_| HostDevice::new(k.clone())).collect(),
        limits,
    )
}

/// A fresh spill directory of this test.
fn spill_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-cuda-tiers-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

fn array_backend(name: &str, tiers: &Arc<Tiers<HostDevice>>) -> BackendRef {
    let b: BackendRef = Arc::new(CudaBackend::with_devices(name, tiers.devices()).unwrap());
    tessera_core::registry::register_array_backend(b.clone()).unwrap();
    b
}

const MIB: u64 = 1 << 20;

/// 1,000 x 655 doubles (5.24 MB: five times a 1 MiB device) in ten chunks.
fn big(backend: &str) -> Array {
    RandomState::new(7)
        .uniform(-1.0, 1.0, &[1000, 655], [100usize, 655], Some(backend))
        .unwrap()
}

fn bits(a: &HostArray) -> Vec<u64> {
    a.to_f64_vec().iter().map(|v| v.to_bits()).collect()
}

#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn an_array_five_times_the_device_persists_and_reduces_through_the_tiers() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "an_array_five_times_the_device_persists_and_reduces_through_the_tiers",
            &reason,
        );
        return;
    }
    // The answer of an unlimited device: the same kernels, nothing moved.
    let free = host_tiers("free", 1, TierLimits::default());
    array_backend("cuda-tiers-free", &free);
    let want = big("cuda-tiers-free")
        .sum(Some(&[0]), false)
        .unwrap()
        .compute()
        .unwrap();
    let want_total = big("cuda-tiers-free")
        .sum(None, false)
        .unwrap()
        .compute_f64()
        .unwrap();
    assert_eq!(
        free.moves(),
        Default::default(),
        "nothing moves without a limit"
    );

    let dir = spill_dir("array");
    let tiers = host_tiers(
        "small",
        1,
        TierLimits {
            device: Some(MIB),
            host: Some(2 * MIB),
            spill_dir: Some(dir.clone()),
        },
    );
    array_backend("cuda-tiers-small", &tiers);
    let held = big("cuda-tiers-small").persist().unwrap();
    let data = 1000 * 655 * 8;
    let u = tiers.usage();
    assert_eq!(
        u.total(),
        data,
        "the tiers hold the persisted chunks exactly: {u:?}"
    );
    assert!(u.device[0] <= MIB && u.host <= 2 * MIB, "{u:?}");
    assert!(u.disk >= data - 3 * MIB, "the rest is on disk: {u:?}");
    assert!(!empty(&dir));
    // Reductions read every chunk back (disk, host, device) and give the unlimited bits;
    // the profile shows each move as a task of the device's memory.
    let (got, profile) = held
        .sum(Some(&[0]), false)
        .unwrap()
        .compute_with_profile()
        .unwrap();
    assert_eq!(bits(&got), bits(&want));
    let moves: std::collections::BTreeSet<&str> = profile
        .spans
        .iter()
        .filter(|s| s.stage == "small:0 memory")
        .map(|s| s.kind.as_str())
        .collect();
    for kind in [
        "unspill from disk",
        "unspill from host",
        "spill to host",
        "spill to disk",
    ] {
        assert!(moves.contains(kind), "{kind}: {moves:?}");
    }
    assert_eq!(
        held.sum(None, false)
            .unwrap()
            .compute_f64()
            .unwrap()
            .to_bits(),
        want_total.to_bits()
    );
    let m = tiers.moves();
    assert!(m.disk_to_device.0 > 0 && m.host_to_device.0 > 0, "{m:?}");
    // After the reductions only the persisted chunks are held, in the same bytes.
    let u = tiers.usage();
    assert_eq!(u.total(), data, "{u:?}");
    assert!(u.device[0] <= MIB && u.host <= 2 * MIB, "{u:?}");

    // A plan over the held chunks that fails halfway (a block function's error) leaves
    // the tiers holding exactly the persisted chunks again.
    let failing = Array::map_blocks(
        &[&held],
        Arc::new(|blocks: &[HostArray]| {
            if blocks[0].to_f64_vec()[0] > 0.0 {
                Err(Error::Internal("this block is refused".into()))
            } else {
                Ok(blocks[0].clone())
            }
        }),
        DType::F64,
        None,
    )
    .unwrap();
    let e = failing.sum(None, false).unwrap().compute().unwrap_err();
    assert!(e.to_string().contains("this block is refused"), "{e}");
    assert_eq!(tiers.usage().total(), data);
    drop((held, failing));
    let u = tiers.usage();
    assert_eq!((u.total(), u.buffers), (0, 0), "{u:?}");
    assert!(empty(&dir), "no spill file outlives the plan");
}

/// Disk is used exactly when host memory is full: with room for everything in host
/// memory nothing is written, with none everything moved off the device goes to disk.
#[test]
fn disk_is_used_only_when_host_memory_is_full() {
    if let Err(reason) = host_shim::compiler() {
        skip("disk_is_used_only_when_host_memory_is_full", &reason);
        return;
    }
    let dir = spill_dir("host-room");
    let roomy = host_tiers(
        "roomy",
        1,
        TierLimits {
            device: Some(MIB),
            host: Some(8 * MIB),
            spill_dir: Some(dir.clone()),
        },
    );
    array_backend("cuda-tiers-roomy", &roomy);
    let held = big("cuda-tiers-roomy").persist().unwrap();
    let (u, m) = (roomy.usage(), roomy.moves());
    assert_eq!((u.disk, m.to_disk.0), (0, 0), "{u:?} {m:?}");
    assert!(u.host > 0 && u.total() == 1000 * 655 * 8, "{u:?}");
    assert!(empty(&dir));
    drop(held);

    let none = host_tiers(
        "no-host",
        1,
        TierLimits {
            device: Some(MIB),
            host: Some(0),
            spill_dir: Some(dir.clone()),
        },
    );
    array_backend("cuda-tiers-no-host", &none);
    let held = big("cuda-tiers-no-host").persist().unwrap();
    let (u, m) = (none.usage(), none.moves());
    assert_eq!((u.host, m.device_to_host.0), (0, 0), "{u:?} {m:?}");
    assert_eq!(u.device[0] + u.disk, 1000 * 655 * 8, "{u:?}");
    drop(held);
    assert!(empty(&dir));
}

fn frame_backend(name: &str, tiers: &Arc<Tiers<HostDevice>>) -> FrameBackendRef {
    let b: Arc<CudaFrameBackend<Tiered<HostDevice>>> =
        Arc::new(CudaFrameBackend::with_devices(name, tiers.devices()).unwrap());
    let r: FrameBackendRef = b;
    tessera_core::registry::register_dataframe_backend(r.clone()).unwrap();
    r
}

/// `rows` rows: a key with `keys` distinct values (each its own group), two values.
fn table(rows: usize, keys: i64, seed: u64) -> arrow_array::RecordBatch {
    use arrow_array::{Float64Array, Int64Array};
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let k: Int64Array = (0..rows).map(|_| (next() % keys as u64) as i64).collect();
    let v: Float64Array = (0..rows).map(|_| (next() % 1000) as f64 / 8.0).collect();
    let w: Int64Array = (0..rows).map(|_| (next() % 100) as i64).collect();
    arrow_array::RecordBatch::try_from_iter([
        ("k", Arc::new(k) as arrow_array::ArrayRef),
        ("v", Arc::new(v) as _),
        ("w", Arc::new(w) as _),
    ])
    .unwrap()
}

/// The rows of a computed frame of numeric columns, sorted (as f64 bits, every column
/// cast to f64: exact for these values): the answer without the order of its partitions.
pub(crate) fn sorted_rows(df: &tessera_frame::DataFrame) -> Vec<Vec<u64>> {
    let c = df.compute().unwrap();
    let mut rows = Vec::new();
    for b in &c.batches {
        let cols: Vec<arrow_array::Float64Array> = b
            .columns()
            .iter()
            .map(|a| {
                let f = arrow_cast::cast(a, &arrow_schema::DataType::Float64).unwrap();
                arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Float64Type>(&f)
                    .clone()
            })
            .collect();
        for r in 0..b.num_rows() {
            rows.push(cols.iter().map(|c| c.value(r).to_bits()).collect());
        }
    }
    rows.sort_unstable();
    rows
}

/// A groupby whose tables together exceed the device limit and a join whose build side is
/// three times it: the answers of unlimited devices, and nothing left behind.
#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn frames_over_the_device_limit_group_and_join_through_the_tiers() {
    use tessera_frame::DataFrame;
    if let Err(reason) = host_shim::compiler() {
        skip(
            "frames_over_the_device_limit_group_and_join_through_the_tiers",
            &reason,
        );
        return;
    }
    let free = host_tiers("free-frames", 2, TierLimits::default());
    frame_backend("cuda-tiers-frames-free", &free);
    let limit = 96 << 10;
    let dir = spill_dir("frames");
    let small = host_tiers(
        "small-frames",
        2,
        TierLimits {
            device: Some(limit),
            host: Some(2 * limit),
            spill_dir: Some(dir.clone()),
        },
    );
    frame_backend("cuda-tiers-frames-small", &small);

    let run = |backend: &str| {
        // 16,000 rows (384 kB, 4 x the device limit) in 16 partitions, 8,000 keys: the
        // groupby's tables hold about as many groups as rows.
        let left =
            DataFrame::from_record_batch(table(16_000, 8_000, 1), 16, Some(backend)).unwrap();
        let grouped = left
            .groupby(&["k"])
            .unwrap()
            .agg(&[
                ("v", AggFunc::Sum),
                ("w", AggFunc::Max),
                ("v", AggFunc::Count),
            ])
            .unwrap();
        // A build side of 12,288 rows x 24 bytes = 3 x the device limit.
        let right =
            DataFrame::from_record_batch(table(12_288, 12_000, 2), 8, Some(backend)).unwrap();
        let joined = left
            .merge(&right, &["k"], tessera_core::frame::JoinType::Inner)
            .unwrap();
        let explained = joined.explain().unwrap();
        (sorted_rows(&grouped), sorted_rows(&joined), explained)
    };
    let (want_g, want_j, free_plan) = run("cuda-tiers-frames-free");
    let (got_g, got_j, small_plan) = run("cuda-tiers-frames-small");
    assert!(!free_plan.contains("device memory:"), "{free_plan}");
    assert!(
        small_plan.contains(
            "device memory: backend 'cuda-tiers-frames-small' holds at most 96.00 kiB per device"
        ) && small_plan.contains("over one device's limit spills"),
        "{small_plan}"
    );
    assert!(
        want_g.len() > 5_000 && want_j.len() > 5_000,
        "{} {}",
        want_g.len(),
        want_j.len()
    );
    assert_eq!(got_g, want_g);
    assert_eq!(got_j, want_j);
    let m = small.moves();
    assert!(
        m.device_to_host.0 > 0 && m.to_disk.0 > 0,
        "the limit was reached: {m:?}"
    );
    let u = small.usage();
    assert_eq!((u.total(), u.buffers), (0, 0), "{u:?}");
    assert!(empty(&dir));
}
