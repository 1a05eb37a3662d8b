//! The distributed executor on ranks that are threads of this process
//! (`tessera::cluster::local`): the same owner rule, messages and failure handling as
//! under `mpirun`, on every machine. Every workload is compared with the single-process
//! result for 1 to 4 ranks (uneven splits of the chunk grid); the MPI runs themselves are
//! `tests/mpi`.

use std::sync::Arc;

use crate::common::workloads::{close, compressed_svd, headline, moments, tall_svd};
use tessera::cluster::local;
use tessera::exec::run_plan_stats;
use tessera::{Array, DType, Error, HostArray, RandomState};

#[test]
fn the_headline_gives_the_single_process_answer_on_1_to_4_ranks() {
    let want = headline();
    for p in 1..=4 {
        for (rank, got) in local::run(p, |_| headline()).into_iter().enumerate() {
            close(&[got], &[want], &format!("P={p} rank {rank}"));
        }
    }
}

#[test]
fn mean_and_std_over_axes_match_on_1_to_4_ranks() {
    let want = moments();
    for p in [2, 3, 4] {
        for got in local::run(p, |_| moments()) {
            for (g, w) in got.iter().zip(&want) {
                close(g, w, &format!("P={p}"));
            }
        }
    }
}

#[test]
fn svd_and_svd_compressed_match_on_1_to_4_ranks() {
    let (want_tall, want_compressed) = (tall_svd(), compressed_svd());
    for p in [1, 3, 4] {
        for got in local::run(p, |_| (tall_svd(), compressed_svd())) {
            close(&got.0, &want_tall, &format!("svd P={p}"));
            close(&got.1, &want_compressed, &format!("svd_compressed P={p}"));
        }
    }
}

#[test]
fn a_reduction_moves_partial_sums_not_the_data() {
    // 400 × 400 float64 (1.28 MB) in 100 blocks: each rank sends a few partial sums.
    let stats = local::run(4, |_| {
        let x = RandomState::new(1)
            .normal(0.0, 1.0, &[400, 400], 40, Some("cpu"))
            .unwrap();
        run_plan_stats(&x.sum(None, false).unwrap()).unwrap()
    });
    let total_sent: u64 = stats.iter().map(|s| s.sent_bytes).sum();
    let total_received: u64 = stats.iter().map(|s| s.received_bytes).sum();
    assert_eq!(total_sent, total_received);
    assert!(total_sent > 0, "four ranks exchanged nothing");
    assert!(
        total_sent < 20_000,
        "{total_sent} bytes moved for a sum of 1.28 MB"
    );
    let tasks: usize = stats.iter().map(|s| s.tasks).sum();
    assert!(
        stats.iter().all(|s| s.tasks < tasks),
        "one rank ran everything"
    );
}

#[test]
fn explain_gives_each_rank_its_projected_traffic() {
    let out = local::run(2, |_| {
        let x = RandomState::new(1)
            .normal(0.0, 1.0, &[100, 100], 25, Some("cpu"))
            .unwrap();
        x.sum(Some(&[0]), false).unwrap().explain().unwrap()
    });
    for plan in out {
        assert!(
            plan.contains("distributed over threads of one process, 2 ranks"),
            "{plan}"
        );
        assert!(
            plan.contains("rank 0: sends") && plan.contains("rank 1: sends"),
            "{plan}"
        );
    }
}

#[test]
fn a_failing_task_stops_every_rank_with_an_error_naming_the_rank_and_task() {
    let out = local::run(3, |_| {
        let x = RandomState::new(2)
            .uniform(0.0, 1.0, &[60, 10], &[10usize, 10][..], Some("cpu"))
            .unwrap();
        let f: tessera::array::HostBlockFn =
            Arc::new(|_: &[HostArray]| Err(Error::invalid("user block", "this block is refused")));
        Array::map_blocks(&[&x], f, DType::F64, None)
            .unwrap()
            .sum(None, false)
            .unwrap()
            .compute_f64()
            .unwrap_err()
    });
    for e in &out {
        let msg = e.to_string();
        assert!(matches!(e, Error::Distributed { .. }), "{msg}");
        assert!(
            msg.contains("this block is refused") && msg.contains("task "),
            "{msg}"
        );
    }
}

#[test]
fn persisted_blocks_stay_on_their_rank_and_later_plans_run_there() {
    let want = RandomState::new(4)
        .normal(0.0, 1.0, &[90, 40], 20, Some("cpu"))
        .unwrap()
        .sum(Some(&[1]), false)
        .unwrap()
        .compute()
        .unwrap();
    let out = local::run(3, |_| {
        let x = RandomState::new(4)
            .normal(0.0, 1.0, &[90, 40], 20, Some("cpu"))
            .unwrap()
            .persist()
            .unwrap();
        let cluster = tessera::cluster::current().unwrap().unwrap();
        let before = cluster.traffic();
        let got = x.sum(Some(&[1]), false).unwrap().compute().unwrap();
        (got, cluster.traffic().since(&before))
    });
    for (got, traffic) in out {
        assert_eq!(got, want);
        // Row sums of 10 persisted blocks: the partial sums (a few hundred bytes) and the
        // 90-element result move, never the 28.8 kB of blocks.
        assert!(traffic.received_bytes < 8_000, "{traffic:?}");
    }
}

#[test]
fn svd_factors_each_row_block_where_it_is_and_u_matches_one_process() {
    let x = || {
        RandomState::new(3)
            .normal(0.0, 1.0, &[700, 6], &[100usize, 6][..], Some("cpu"))
            .unwrap()
    };
    let want = tessera::linalg::svd(&x()).unwrap().u.compute().unwrap();
    let out = local::run(3, |_| {
        let cluster = tessera::cluster::current().unwrap().unwrap();
        let before = cluster.traffic();
        let d = tessera::linalg::svd(&x()).unwrap();
        let moved = cluster.traffic().since(&before);
        (d.u.compute().unwrap(), moved)
    });
    for (u, moved) in out {
        assert_eq!(u, want, "U differs from one process's");
        // The factorisation moves R factors (6 × 6 per block), not the 33.6 kB input.
        assert!(moved.sent_bytes < 4_000, "{moved:?}");
    }
}

#[test]
fn svd_compressed_moves_sketch_partials_not_the_matrix() {
    // 2000 × 100 float64 is 1.6 MB; each rank sends O(n l) partials and R factors.
    let out = local::run(2, |_| {
        let x = RandomState::new(8)
            .normal(0.0, 1.0, &[2000, 100], &[200usize, 100][..], Some("cpu"))
            .unwrap();
        let cluster = tessera::cluster::current().unwrap().unwrap();
        let before = cluster.traffic();
        let s = svd_compressed_s(&x);
        (s, cluster.traffic().since(&before))
    });
    let x = RandomState::new(8)
        .normal(0.0, 1.0, &[2000, 100], &[200usize, 100][..], Some("cpu"))
        .unwrap();
    let want = svd_compressed_s(&x);
    for (s, moved) in out {
        close(&s, &want, "svd_compressed s");
        assert!(moved.sent_bytes < 200_000, "{moved:?}");
    }
}

fn svd_compressed_s(x: &Array) -> Vec<f64> {
    crate::common::workloads::f64s(
        tessera::linalg::svd_compressed(x, 5, 0, 5, 1)
            .unwrap()
            .s
            .compute()
            .unwrap(),
    )
}

#[test]
fn the_csv_filter_groupby_merge_sort_pipeline_matches_one_process_on_1_to_4_ranks() {
    let dir = std::env::temp_dir().join(format!("tessera-dist-frames-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::common::workloads::write_frame_inputs(&dir);
    let want = crate::common::workloads::frame_pipeline(&dir);
    assert!(want.iter().all(|rows| !rows.is_empty()));
    assert_eq!(want[1].len(), 400, "every zone has trips");
    for p in 1..=4 {
        for (rank, got) in local::run(p, |_| crate::common::workloads::frame_pipeline(&dir))
            .into_iter()
            .enumerate()
        {
            assert_eq!(got, want, "P={p} rank {rank}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_shuffle_groupby_moves_about_the_partial_states_once() {
    let dir = std::env::temp_dir().join(format!("tessera-dist-shuffle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::common::workloads::write_frame_inputs(&dir);
    let out = local::run(2, |_| {
        use tessera::frame::{read_csv, AggFunc, CsvOptions, GroupStrategy};
        let trips = read_csv(
            dir.join("trips.csv").to_str().unwrap(),
            CsvOptions {
                partition_bytes: 48 << 10,
                ..CsvOptions::default()
            },
        )
        .unwrap();
        let g = trips
            .groupby(&["id"])
            .unwrap()
            .strategy(GroupStrategy::Shuffle)
            .agg_named(&[("fare", AggFunc::Sum, "fare")])
            .unwrap();
        let cluster = tessera::cluster::current().unwrap().unwrap();
        let before = cluster.traffic();
        let rows = g.compute().unwrap().num_rows();
        (rows, cluster.traffic().since(&before))
    });
    for (rows, moved) in &out {
        assert_eq!(*rows, 20_000);
        // 20,000 groups of (id, fare sum state): about half the states change rank in the
        // shuffle, then the results are gathered by both ranks.
        assert!(moved.sent_bytes > 100_000, "{moved:?}");
        assert!(moved.sent_bytes < 2_000_000, "{moved:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writes_over_ranks_are_refused_before_touching_the_destination() {
    let dir = std::env::temp_dir().join(format!("tessera-dist-writes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = local::run(2, |_| {
        let x = RandomState::new(1)
            .normal(0.0, 1.0, &[20, 20], 10, Some("cpu"))
            .unwrap();
        let npy = tessera::io::npy::to_npy(&x, dir.join("x.npy")).unwrap_err();
        let frame = tessera::frame::DataFrame::from_columns(
            vec![(
                "a",
                std::sync::Arc::new(arrow_array::Int64Array::from(vec![1, 2, 3])) as _,
            )],
            2,
        )
        .unwrap();
        let csv = frame
            .to_csv(dir.join("f.csv").to_str().unwrap())
            .unwrap_err();
        (npy.to_string(), csv.to_string())
    });
    for (npy, csv) in out {
        assert!(
            npy.contains("not supported yet") && npy.contains("2 ranks"),
            "{npy}"
        );
        assert!(
            csv.contains("to_csv") && csv.contains("rank() == 0"),
            "{csv}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
