//! One device per rank: ranks as threads of this process (`cluster::local`, the same
//! owner rule and messages as under `mpirun`), each with its own host device under the
//! CUDA backends, run the seed headline, `svd_compressed` and a shuffle join with the
//! single-process answers. What crosses ranks is host bytes, uploaded to the receiving
//! rank's device.

use std::sync::{Arc, OnceLock};

use tessera_array::{Array, Index, RandomState};
use tessera_conformance::skip::skip;
use tessera_core::frame::{FrameBackendRef, JoinType};
use tessera_core::BackendRef;
use tessera_cuda::device::{CudaBackend, TierLimits, Tiers};
use tessera_cuda::host::shim as host_shim;
use tessera_cuda::host::HostDevice;
use tessera_cuda_frame::CudaFrameBackend;
use tessera_frame::{DataFrame, JoinStrategy};
use tessera_runtime::cluster::local;

const RANKS: usize = 3;

/// Registers `cuda-rank-{r}` (arrays) and `cuda-rank-frame-{r}` (frames) for every rank,
/// each over one host device of its own, once.
fn register_rank_backends() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        for r in 0..RANKS {
            let tiers = Tiers::new(
                &format!("rank-{r}"),
                vec![HostDevice::new(crate::frame::kernels())],
                TierLimits::default(),
            );
            let a: BackendRef = Arc::new(
                CudaBackend::with_devices(&format!("cuda-rank-{r}"), tiers.devices()).unwrap(),
            );
            tessera_core::registry::register_array_backend(a).unwrap();
            let f: FrameBackendRef = Arc::new(
                CudaFrameBackend::with_devices(&format!("cuda-rank-frame-{r}"), tiers.devices())
                    .unwrap(),
            );
            tessera_core::registry::register_dataframe_backend(f).unwrap();
        }
    });
}

fn close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let tol = 1e-9 * x.abs().max(y.abs()).max(1.0);
        assert!((x - y).abs() <= tol, "{what}[{i}]: {x} vs {y}");
    }
}

/// The seed headline `(x + 1)[::2, ::2].sum()` on 300 x 300 in 45-wide (uneven) chunks.
fn headline(backend: &str) -> f64 {
    let x = RandomState::new(42)
        .normal(10.0, 1.0, &[300, 300], 45, Some(backend))
        .unwrap();
    (&x + 1.0)
        .unwrap()
        .slice(&[Index::step(2), Index::step(2)])
        .unwrap()
        .sum(None, false)
        .unwrap()
        .compute_f64()
        .unwrap()
}

/// The singular values of `svd_compressed` (rank 4) of a 260 x 90 array.
fn compressed_svd(backend: &str) -> Vec<f64> {
    let x: Array = RandomState::new(5)
        .normal(0.0, 1.0, &[260, 90], 50, Some(backend))
        .unwrap();
    tessera_array::linalg::svd_compressed(&x, 4, 1, 4, 11)
        .unwrap()
        .s
        .compute()
        .unwrap()
        .to_f64_vec()
}

/// An inner join of 3,000 rows with 600 by hash shuffle; its rows sorted.
fn shuffle_join(backend: &str) -> Vec<Vec<u64>> {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    let side = |rows: i64, keys: i64, mult: i64| {
        let k: Int64Array = (0..rows).map(|i| (i * mult) % keys).collect();
        let v: Int64Array = (0..rows).map(|i| i * 7 + mult).collect();
        RecordBatch::try_from_iter([("k", Arc::new(k) as ArrayRef), ("v", Arc::new(v) as _)])
            .unwrap()
    };
    let left = DataFrame::from_record_batch(side(3000, 997, 13), 6, Some(backend)).unwrap();
    let right = DataFrame::from_record_batch(side(600, 997, 7), 4, Some(backend)).unwrap();
    let joined = left
        .merge_on(
            &right,
            &["k"],
            &["k"],
            JoinType::Inner,
            JoinStrategy::Shuffle,
        )
        .unwrap();
    crate::tiers::sorted_rows(&joined)
}

#[test]
#[ignore = "tens of seconds: compiles its kernels as C++ on host devices; run by .ci/run, or with cargo test -p tessera-cuda --test cuda -- --ignored"]
fn ranks_with_a_device_each_give_the_single_process_answers() {
    if let Err(reason) = host_shim::compiler() {
        skip(
            "ranks_with_a_device_each_give_the_single_process_answers",
            &reason,
        );
        return;
    }
    register_rank_backends();
    let (want_h, want_s, want_j) = (headline("cpu"), compressed_svd("cpu"), shuffle_join("cpu"));
    assert!(want_j.len() > 1000, "{} rows joined", want_j.len());
    let got = local::run(RANKS, |rank| {
        // Each rank plans on its own device's backend, as one of a job of three.
        let name = format!("cuda-rank-{rank}");
        let x = RandomState::new(1)
            .normal(0.0, 1.0, &[90, 90], 30, Some(&name))
            .unwrap();
        assert_eq!(x.backend().name(), name);
        let plan = x.sum(None, false).unwrap().explain().unwrap();
        assert!(
            plan.contains("distributed over threads of one process, 3 ranks"),
            "{plan}"
        );
        (
            headline(&name),
            compressed_svd(&format!("cuda-rank-{rank}")),
            shuffle_join(&format!("cuda-rank-frame-{rank}")),
        )
    });
    for (rank, (h, s, j)) in got.into_iter().enumerate() {
        close(&[h], &[want_h], &format!("headline, rank {rank}"));
        close(&s, &want_s, &format!("svd_compressed, rank {rank}"));
        assert_eq!(j, want_j, "shuffle join, rank {rank}");
    }
}
