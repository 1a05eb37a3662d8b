//! The distributed executor on ranks that are threads of this process
//! (`tessera::cluster::local`): the same owner rule, messages and failure handling as
//! under `mpirun`, on every machine. Every workload is compared with the single-process
//! result for 1 to 4 ranks (uneven splits of the chunk grid); the MPI runs themselves are
//! `tests/mpi`.

use std::sync::Arc;

use crate::common::workloads::{
    close, compressed_svd, headline, moments, tall_svd, trips_over_five,
};
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
fn an_axis_reduction_folds_each_ranks_partials_before_any_cross_the_network() {
    // 2000 × 300 in 20 × 20 blocks: 100 row blocks per column of blocks, dealt over the
    // ranks. Summing over axis 0, each rank folds its own blocks of a column first; then
    // every rank receives the other ranks' one partial per column (an all-reduce), so
    // what moves is P × (P - 1) partials per column, whatever the number of row blocks.
    let x = || {
        RandomState::new(3)
            .normal(0.0, 1.0, &[2000, 300], 20, Some("cpu"))
            .unwrap()
    };
    let want = x()
        .sum(Some(&[0]), false)
        .unwrap()
        .compute()
        .unwrap()
        .to_f64_vec();
    for p in [2usize, 3, 4] {
        let out = local::run(p, |_| {
            let s = x().sum(Some(&[0]), false).unwrap();
            let stats = run_plan_stats(&s).unwrap();
            let cluster = tessera::cluster::current().unwrap().unwrap();
            let before = cluster.traffic();
            let got = s.compute().unwrap().to_f64_vec();
            (got, stats, cluster.traffic().since(&before))
        });
        let mut first: Option<Vec<f64>> = None;
        for (rank, (got, stats, traffic)) in out.into_iter().enumerate() {
            close(&got, &want, &format!("P={p} rank {rank}"));
            match &first {
                // The last fold runs on every rank, in rank order: the same bits.
                Some(f) => assert_eq!(&got, f, "P={p}: rank {rank} differs from rank 0"),
                None => first = Some(got),
            }
            // 15 columns of blocks, each one partial of 20 float64 per other rank.
            let partials = 15 * (p as u64 - 1);
            assert!(
                traffic.sent_messages <= partials,
                "P={p} rank {rank}: {traffic:?}, {partials} partials expected"
            );
            assert!(
                stats.sent_bytes <= partials * (20 * 8 + 256),
                "P={p} rank {rank}: {stats:?}"
            );
        }
    }
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
        // Four columns of blocks, each summed over its four row blocks.
        assert!(plan.contains("all-reduce: 4 reduction block(s)"), "{plan}");
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
    // 2000 × 100 float64 is 1.6 MB in 10 row blocks; each rank sends O(n l), not
    // O(row blocks × n l).
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
        // One 100 × 10 partial of `xᵀ x Ω` per rank (8 kB; the ranks sum their own row
        // blocks' parts first), R factors and results: not a part per row block (5 here).
        assert!(moved.sent_bytes < 4 * 100 * 10 * 8, "{moved:?}");
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
        let projected = g.projected_traffic().unwrap().unwrap();
        let plan = g.explain().unwrap();
        let cluster = tessera::cluster::current().unwrap().unwrap();
        let before = cluster.traffic();
        let rows = g.compute().unwrap().num_rows();
        (rows, cluster.traffic().since(&before), projected, plan)
    });
    for (rank, (rows, moved, projected, plan)) in out.iter().enumerate() {
        // explain() projects what the run moves: the shuffle of the states and the
        // gather of the result, from the scan's estimated sizes (within a factor of 2 of
        // the bytes counted, which include Arrow IPC framing).
        assert!(
            plan.contains("partial states (shuffle): all-to-all")
                && plan.contains("the result, gathered by every rank"),
            "{plan}"
        );
        let (sent, received) = projected[rank];
        assert!(
            sent * 2 > moved.sent_bytes && sent < moved.sent_bytes * 2,
            "rank {rank}: projected {sent} B sent, moved {moved:?}"
        );
        assert!(
            received * 2 > moved.received_bytes && received < moved.received_bytes * 2,
            "rank {rank}: projected {received} B received, moved {moved:?}"
        );
        assert_eq!(*rows, 20_000);
        // 20,000 groups of (id, fare sum state): about half the states change rank in the
        // shuffle, then the results are gathered by both ranks.
        assert!(moved.sent_bytes > 100_000, "{moved:?}");
        assert!(moved.sent_bytes < 2_000_000, "{moved:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Hidden siblings (staging, set-aside directories, temporary files) left in `dir`.
#[test]
fn frame_explain_projects_every_exchange_and_bounds_what_moves() {
    let dir = std::env::temp_dir().join(format!("tessera-dist-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::common::workloads::write_frame_inputs(&dir);
    let out = local::run(3, |_| {
        use tessera::frame::{read_csv, AggFunc, CsvOptions, JoinStrategy, JoinType};
        let options = || CsvOptions {
            partition_bytes: 48 << 10,
            ..CsvOptions::default()
        };
        let trips = crate::common::workloads::trips_over_five(&dir);
        let zones = read_csv(dir.join("zones.csv").to_str().unwrap(), options()).unwrap();
        let frames = [
            trips
                .merge_on(
                    &zones,
                    &["zone"],
                    &["zone"],
                    JoinType::Left,
                    JoinStrategy::Shuffle,
                )
                .unwrap()
                .groupby(&["borough"])
                .unwrap()
                .agg_named(&[("fare", AggFunc::Sum, "fares")])
                .unwrap(),
            trips
                .merge_on(
                    &zones,
                    &["zone"],
                    &["zone"],
                    JoinType::Inner,
                    JoinStrategy::Broadcast,
                )
                .unwrap()
                .sort_values(&["fare", "id"], &[false, true])
                .unwrap(),
        ];
        let cluster = tessera::cluster::current().unwrap().unwrap();
        frames
            .iter()
            .map(|f| {
                let plan = f.explain().unwrap();
                let projected = f.projected_traffic().unwrap().unwrap();
                let before = cluster.traffic();
                f.compute().unwrap();
                (plan, projected, cluster.traffic().since(&before))
            })
            .collect::<Vec<_>>()
    });
    for (rank, runs) in out.iter().enumerate() {
        let (shuffled, sorted) = (&runs[0].0, &runs[1].0);
        for step in [
            "left side (shuffle)",
            "right side (shuffle)",
            "groupby [borough]",
        ] {
            assert!(shuffled.contains(step), "{step}: {shuffled}");
        }
        for step in ["right side (broadcast)", "sort: ranges (sample sort)"] {
            assert!(sorted.contains(step), "{step}: {sorted}");
        }
        // Filters are projected to keep every row, so the projection bounds what moves
        // (Arrow IPC framing aside).
        for (plan, projected, moved) in runs {
            let (sent, received) = projected[rank];
            assert!(
                sent * 2 >= moved.sent_bytes,
                "rank {rank}: {sent} < {moved:?}\n{plan}"
            );
            assert!(
                received * 2 >= moved.received_bytes,
                "rank {rank}: {received} < {moved:?}\n{plan}"
            );
            assert!(moved.sent_bytes > 0, "rank {rank} sent nothing\n{plan}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

#[test]
fn frames_written_over_ranks_read_back_as_one_process_wrote_them() {
    use tessera::frame::read_parquet;
    let dir = std::env::temp_dir().join(format!("tessera-dist-fwrite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::common::workloads::write_frame_inputs(&dir);
    let one = dir.join("one-process.csv");
    trips_over_five(&dir).to_csv(one.to_str().unwrap()).unwrap();
    let want_csv = std::fs::read(&one).unwrap();
    let want_rows = crate::common::workloads::frame_rows(&trips_over_five(&dir).compute().unwrap());

    for p in 1..=4 {
        let out = dir.join(format!("p{p}"));
        let parts = out.join("parts").join("part-*.parquet");
        let single = out.join("all.csv");
        let csv_parts = out.join("csv").join("part-*.csv");
        let written = local::run(p, |_| {
            std::fs::create_dir_all(&out).unwrap();
            let trips = trips_over_five(&dir);
            (
                trips.to_parquet(parts.to_str().unwrap()).unwrap(),
                trips.to_csv(single.to_str().unwrap()).unwrap(),
                trips.to_csv(csv_parts.to_str().unwrap()).unwrap(),
            )
        });
        for w in &written[1..] {
            assert_eq!(w, &written[0], "P={p}: every rank returns the same files");
        }
        let (parquet_files, csv_file, csv_files) = &written[0];
        assert_eq!(csv_file, &vec![single.clone()]);
        assert!(parquet_files.len() >= p, "P={p}: {parquet_files:?}");
        assert!(parquet_files.iter().all(|f| f.exists()), "P={p}");
        assert_eq!(csv_files.len(), parquet_files.len());

        // One file gathered to rank 0: byte for byte what one process writes.
        assert_eq!(std::fs::read(&single).unwrap(), want_csv, "P={p}");
        // Parts written by their owners: the same rows in the same order.
        let back = read_parquet(parts.to_str().unwrap())
            .unwrap()
            .compute()
            .unwrap();
        assert_eq!(
            crate::common::workloads::frame_rows(&back),
            want_rows,
            "P={p}"
        );
        let mut joined = Vec::new();
        for (k, f) in csv_files.iter().enumerate() {
            let text = std::fs::read(f).unwrap();
            let body = if k == 0 {
                &text[..]
            } else {
                &text[text.iter().position(|&b| b == b'\n').unwrap() + 1..]
            };
            joined.extend_from_slice(body);
        }
        assert_eq!(joined, want_csv, "P={p}: the CSV parts, headers dropped");
        for d in [&out, &out.join("parts"), &out.join("csv")] {
            assert!(
                leftovers(d).is_empty(),
                "P={p} {}: {:?}",
                d.display(),
                leftovers(d)
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_write_that_fails_on_one_rank_fails_on_every_rank_and_keeps_the_old_dataset() {
    let dir = std::env::temp_dir().join(format!("tessera-dist-fwfail-{}", std::process::id()));
    let parts = dir.join("out");
    std::fs::create_dir_all(&parts).unwrap();
    crate::common::workloads::write_frame_inputs(&dir);
    std::fs::write(parts.join("part-0.csv"), b"old\n").unwrap();
    let pattern = parts.join("part-*.csv");
    let got = local::run(3, |_| {
        // Trip 15000 is in one partition, owned by one rank: only that rank fails.
        let failing = trips_over_five(&dir)
            .map_partitions(|b| {
                let ids = b
                    .column_by_name("id")
                    .unwrap()
                    .as_any()
                    .downcast_ref::<arrow_array::Int64Array>()
                    .unwrap();
                if ids.values().contains(&15_000) {
                    return Err(Error::invalid("test", "trip 15000 is refused"));
                }
                Ok(b)
            })
            .unwrap();
        failing.to_csv(pattern.to_str().unwrap()).map(|_| ())
    });
    let own: Vec<_> = got
        .iter()
        .filter(|g| matches!(g, Err(e) if !matches!(e, Error::Distributed { .. })))
        .collect();
    assert_eq!(own.len(), 1, "one rank failed itself: {got:?}");
    for g in &got {
        let message = g.as_ref().unwrap_err().to_string();
        assert!(message.contains("trip 15000 is refused"), "{message}");
    }
    let names: Vec<_> = std::fs::read_dir(&parts)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        names,
        vec![std::ffi::OsString::from("part-0.csv")],
        "the old dataset stays"
    );
    assert_eq!(std::fs::read(parts.join("part-0.csv")).unwrap(), b"old\n");
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn arrays_written_over_ranks_are_the_files_one_process_writes() {
    use tessera::io::npy::{from_npy, to_npy};
    use tessera::io::zarr::{from_zarr, to_zarr, ZarrStore, ZarrWriteOptions};
    let dir = std::env::temp_dir().join(format!("tessera-dist-awrite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 7 × 5 blocks of an uneven grid: every rank count splits it unevenly.
    let x = || {
        let r = RandomState::new(3)
            .normal(0.0, 1.0, &[130, 47], [20usize, 10].as_slice(), Some("cpu"))
            .unwrap();
        (&r + 1.0).unwrap()
    };
    to_npy(&x(), dir.join("one.npy")).unwrap();
    let want = std::fs::read(dir.join("one.npy")).unwrap();
    let values = crate::common::workloads::f64s(x().compute().unwrap());
    let store = ZarrStore::open(dir.join("zarr").to_str().unwrap()).unwrap();
    for p in [2, 3, 4] {
        let npy = dir.join(format!("p{p}.npy"));
        let summaries = local::run(p, |_| {
            let options = ZarrWriteOptions::default();
            (
                to_npy(&x(), &npy).unwrap(),
                to_zarr(&x(), &store, &format!("p{p}"), &options).unwrap(),
            )
        });
        for s in &summaries {
            assert_eq!(s.0.blocks, 35);
            assert_eq!(s, &summaries[0], "P={p}: every rank reports the same write");
        }
        assert_eq!(std::fs::read(&npy).unwrap(), want, "P={p}: the same bytes");
        let back = from_npy(&npy, [130usize, 47].as_slice(), None).unwrap();
        assert_eq!(
            crate::common::workloads::f64s(back.compute().unwrap()),
            values
        );
        let z = from_zarr(&store, &format!("p{p}"), None, None).unwrap();
        assert_eq!(
            crate::common::workloads::f64s(z.compute().unwrap()),
            values,
            "P={p}"
        );
    }
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));

    // An array already there without `overwrite`: refused on every rank, before a chunk
    // is written; a store in one process's memory cannot take blocks from every rank.
    let refused = local::run(2, |_| {
        let there = to_zarr(&x(), &store, "p2", &ZarrWriteOptions::default()).unwrap_err();
        let memory = to_zarr(
            &x(),
            &ZarrStore::memory(),
            "m",
            &ZarrWriteOptions::default(),
        )
        .unwrap_err();
        (there.to_string(), memory.to_string())
    });
    for (rank, (there, memory)) in refused.iter().enumerate() {
        assert!(there.contains("set `overwrite`"), "rank {rank}: {there}");
        assert!(
            memory.contains("belongs to one process"),
            "rank {rank}: {memory}"
        );
    }
    assert!(refused[1].0.contains("rank 0"), "{}", refused[1].0);

    // A store every rank opens by the same name but on its own disk (a node-local path on
    // a multi-node job; here a directory per rank): refused on every rank, naming the rank
    // that does not see rank 0's store, before a block is written.
    let local_paths = local::run(2, |rank| {
        let own = ZarrStore::open(dir.join(format!("node{rank}")).to_str().unwrap()).unwrap();
        to_zarr(&x(), &own, "a", &ZarrWriteOptions::default())
            .unwrap_err()
            .to_string()
    });
    for (rank, e) in local_paths.iter().enumerate() {
        assert!(
            e.contains("rank 1 does not see the store") && e.contains("node-local"),
            "rank {rank}: {e}"
        );
    }
    for rank in 0..2 {
        let array = dir.join(format!("node{rank}")).join("a");
        assert!(
            !array.join("zarr.json").exists() && !array.join(".tessera-rank-probe").exists(),
            "rank {rank}: an array was committed, or the probe was left"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_frame_persisted_over_ranks_stays_spread_and_gives_one_process_answers() {
    use tessera::frame::AggFunc;
    let dir = std::env::temp_dir().join(format!("tessera-dist-fpersist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::common::workloads::write_frame_inputs(&dir);
    let by_passengers = |f: &tessera::frame::DataFrame| {
        let g = f
            .groupby(&["passengers"])
            .unwrap()
            .agg_named(&[("fare", AggFunc::Sum, "fares")])
            .unwrap();
        let mut rows = crate::common::workloads::frame_rows(&g.compute().unwrap());
        rows.sort();
        rows
    };
    let want = by_passengers(&trips_over_five(&dir));
    let out = local::run(3, |_| {
        let kept = trips_over_five(&dir).persist().unwrap();
        let plan = kept.explain().unwrap();
        // Two plans over the persisted frame: both read the partitions where they stay.
        (by_passengers(&kept), by_passengers(&kept), plan, kept)
    });
    for (rank, (first, second, plan, _)) in out.iter().enumerate() {
        assert_eq!(first, &want, "rank {rank}");
        assert_eq!(second, &want, "rank {rank}");
        assert_eq!(plan, &out[0].2, "every rank plans alike");
    }
    // Outside the job a rank's frame lacks the partitions the other ranks hold.
    for (rank, (_, _, _, kept)) in out.into_iter().enumerate() {
        let e = kept.compute().unwrap_err().to_string();
        let other = if rank == 0 { "rank 1" } else { "rank 0" };
        assert!(
            e.contains("persisted over the ranks") && e.contains(other),
            "rank {rank}: {e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concat_over_ranks_keeps_each_partition_where_it_is_and_matches_one_process() {
    let dir = std::env::temp_dir().join(format!("tessera-dist-concat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::common::workloads::write_frame_inputs(&dir);
    let rows = || {
        let trips = trips_over_five(&dir);
        let few = trips
            .filter(tessera::frame::col("passengers").lt(2))
            .unwrap();
        let all = tessera::frame::DataFrame::concat(&[few, trips]).unwrap();
        crate::common::workloads::frame_rows(&all.compute().unwrap())
    };
    let want = rows();
    for p in 2..=3 {
        for (rank, got) in local::run(p, |_| rows()).into_iter().enumerate() {
            assert_eq!(got, want, "P={p} rank {rank}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
