//! `scheduler = "mpi"` under a real `mpirun`: the workloads on 1 to 4 ranks (uneven splits
//! of every chunk grid) against the single-process answers — the seed headline, mean/std
//! over axes, `svd`, `svd_compressed`, and a CSV → filter → groupby (tree and shuffle) →
//! merge (broadcast and shuffle) → sort pipeline, row for row, and Parquet parts and a
//! `.npy` written by every rank and read back — once with TCP forced between the ranks; a
//! message over 2 GiB (MPI's `int` counts) broadcast intact; a failing task, a rank killed
//! mid-computation, and launches without a launcher or with the wrong one.
//!
//! On two nodes made of namespaces ([`nodes`]: each its own network and its own `/tmp`),
//! the workloads again over TCP between the nodes, writes into a node-local `/tmp` refused
//! on every rank with nothing left behind, and a node killed mid-plan ending the job.
//!
//! The ranks are this test binary itself: a test launches `mpirun -np P <this binary>
//! --exact rank_entry_point` with `TESSERA_MPI_TEST_CHILD` naming what the ranks run, and
//! reads one JSON line per rank from their output. Built without the `mpi` feature, or
//! where `mpirun` is not on the path, every test says "skipped: <reason>" and passes.

#[path = "../common/mod.rs"]
mod common;
mod nodes;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::workloads::{
    close, compressed_svd, frame_pipeline, headline, moments, tall_svd, write_and_read_back,
    write_frame_inputs,
};

/// What the ranks of a launch run.
const CHILD: &str = "TESSERA_MPI_TEST_CHILD";

/// The ranks' entry point (not a test of its own): does nothing unless this process is a
/// rank of a launch below.
#[test]
fn rank_entry_point() {
    let Ok(what) = std::env::var(CHILD) else {
        return;
    };
    #[cfg(feature = "mpi")]
    let _ = &tessera::mpi::launch::LAUNCHER_VARIABLES;
    let result = match what.as_str() {
        "workloads" => rank_workloads(),
        "fail" => rank_fail(),
        "frame_fail" => rank_frame_fail(),
        "frame_fail_blocked" => rank_frame_fail_blocked(),
        "kill" => rank_kill(),
        "big" => rank_big(),
        "node_local" => rank_node_local(),
        "node_kill" => rank_node_kill(),
        other => panic!("unknown {CHILD} = {other}"),
    };
    if let Err(e) = result {
        println!("ERROR {e}");
        // mpirun ends the job when the first rank exits non-zero: give the others time to
        // say their error too.
        std::thread::sleep(Duration::from_millis(500));
        std::process::exit(3);
    }
}

fn rank_workloads() -> tessera::Result<()> {
    let before = tessera::exec::run_plan_stats(
        &tessera::RandomState::new(9)
            .normal(0.0, 1.0, &[2000, 2000], 250, Some("cpu"))?
            .sum(None, false)?,
    )?;
    let line = serde_json::json!({
        "rank": tessera::cluster::rank(),
        "size": tessera::cluster::size(),
        "headline": headline(),
        "moments": moments(),
        "svd": tall_svd(),
        "svd_compressed": compressed_svd(),
        "frames": frame_pipeline(&out_dir_of_launch()),
        "written": write_and_read_back(&out_dir_of_launch()),
        "sum_sent_bytes": before.sent_bytes,
        "sum_received_bytes": before.received_bytes,
        "sum_tasks": before.tasks,
    });
    write_result(&line.to_string());
    Ok(())
}

/// The directory the launching test named (inputs and results).
fn out_dir_of_launch() -> PathBuf {
    PathBuf::from(std::env::var("TESSERA_MPI_TEST_OUT").expect("TESSERA_MPI_TEST_OUT"))
}

/// Writes this rank's result line where the launching test reads it (`TESSERA_MPI_TEST_OUT`):
/// mpirun interleaves the ranks' long stdout lines.
fn write_result(line: &str) {
    let dir = out_dir_of_launch();
    let rank = tessera::cluster::rank();
    let tmp = dir.join(format!("rank-{rank}.tmp"));
    std::fs::write(&tmp, line).expect("write result");
    std::fs::rename(&tmp, dir.join(format!("rank-{rank}.json"))).expect("commit result");
}

/// Sums `f` over the blocks of an 80 × 10 array in 10-row blocks, on every rank, and
/// prints the total.
fn sum_of_blocks(f: tessera::array::HostBlockFn) -> tessera::Result<()> {
    let x = tessera::RandomState::new(2).uniform(
        0.0,
        1.0,
        &[80, 10],
        &[10usize, 10][..],
        Some("cpu"),
    )?;
    let total = tessera::Array::map_blocks(&[&x], f, tessera::DType::F64, None)?
        .sum(None, false)?
        .compute_f64()?;
    println!("rank {} total {total}", tessera::cluster::rank());
    Ok(())
}

/// A block function that fails on rank 1: every rank must stop with the error.
fn rank_fail() -> tessera::Result<()> {
    sum_of_blocks(std::sync::Arc::new(|b: &[tessera::HostArray]| {
        if tessera::cluster::rank() == 1 {
            return Err(tessera::Error::invalid(
                "block function",
                "refused on rank 1",
            ));
        }
        Ok(b[0].clone())
    }))
}

/// A frame plan whose partition function fails on rank 1's partitions, followed by a
/// shuffled groupby (every rank waits for every other's buckets): every rank must stop
/// with the error, naming rank 1.
fn rank_frame_fail() -> tessera::Result<()> {
    shuffle_groupby_failing_on_rank_1(50, |_, i| i % 7, Duration::ZERO)
}

/// A shuffle groupby whose partials are megabytes (one group per row): ranks 0 and 2 send
/// rank 1 its share while rank 1 is still in its partition function, which fails after a
/// second — so their sends are blocked (more than the channel holds, and nobody receiving)
/// when the failure comes, and the abort must end them there.
fn rank_frame_fail_blocked() -> tessera::Result<()> {
    const ROWS: i64 = 400_000;
    shuffle_groupby_failing_on_rank_1(ROWS, |p, i| p * ROWS + i, Duration::from_millis(1500))
}

/// A shuffle groupby over 6 partitions of `rows` rows (partition `p`, row `i`: key
/// `key(p, i)`) whose partition function fails on rank 1 after `delay`.
fn shuffle_groupby_failing_on_rank_1(
    rows: i64,
    key: fn(i64, i64) -> i64,
    delay: Duration,
) -> tessera::Result<()> {
    use tessera::frame::{AggFunc, DataFrame, GroupStrategy};
    let batch = |p: i64| {
        let k: arrow_array::ArrayRef = std::sync::Arc::new(
            arrow_array::Int64Array::from_iter_values((0..rows).map(|i| key(p, i))),
        );
        let v: arrow_array::ArrayRef = std::sync::Arc::new(
            arrow_array::Float64Array::from_iter_values((0..rows).map(|i| (i + p) as f64)),
        );
        arrow_array::RecordBatch::try_from_iter([("k", k), ("v", v)]).expect("a batch")
    };
    let df = DataFrame::from_record_batches((0..6).map(batch).collect(), Some("cpu"))?;
    let schema = df.schema();
    let failing = df.map_partitions_with_schema(
        move |b| {
            if tessera::cluster::rank() == 1 {
                std::thread::sleep(delay);
                return Err(tessera::Error::invalid(
                    "partition function",
                    "refused on rank 1",
                ));
            }
            Ok(b)
        },
        schema,
    )?;
    let out = failing
        .groupby(&["k"])?
        .strategy(GroupStrategy::Shuffle)
        .agg(&[("v", AggFunc::Sum)])?
        .compute()?;
    println!(
        "rank {} groups {}",
        tessera::cluster::rank(),
        out.concat()?.num_rows()
    );
    Ok(())
}

/// Rank 1 dies (SIGABRT) inside a task; the others are waiting for its chunks.
fn rank_kill() -> tessera::Result<()> {
    sum_of_blocks(std::sync::Arc::new(|b: &[tessera::HostArray]| {
        if tessera::cluster::rank() == 1 {
            std::thread::sleep(Duration::from_millis(200));
            std::process::abort();
        }
        Ok(b[0].clone())
    }))
}

/// Every rank writes a `.npy`, a Zarr array and a Parquet dataset under `/tmp`, the same
/// path on every node but a different disk on each, and records the errors and what stayed
/// on its node's `/tmp`.
fn rank_node_local() -> tessera::Result<()> {
    use tessera::io::zarr::{to_zarr, ZarrStore, ZarrWriteOptions};
    let local = PathBuf::from("/tmp/tessera-node-local");
    std::fs::create_dir_all(&local).map_err(|e| tessera::Error::io(&local, e))?;
    let x = tessera::RandomState::new(3).normal(
        0.0,
        1.0,
        &[40, 10],
        &[10usize, 10][..],
        Some("cpu"),
    )?;
    let message = |r: tessera::Result<()>| r.err().map(|e| e.to_string());
    let npy = message(tessera::io::npy::to_npy(&x, local.join("x.npy")).map(|_| ()));
    let zarr = message(
        ZarrStore::open(local.join("zarr").to_str().expect("a UTF-8 path"))
            .and_then(|store| to_zarr(&x, &store, "x", &ZarrWriteOptions::default()))
            .map(|_| ()),
    );
    let parts = local.join("trips").join("part-*.parquet");
    let frame = message(
        common::workloads::trips_over_five(&out_dir_of_launch())
            .to_parquet(parts.to_str().expect("a UTF-8 path"))
            .map(|_| ()),
    );
    // Rank 0 removes what it staged before it returns; list after every rank is past that.
    let cluster = tessera::cluster::current()?.expect("a cluster under mpirun");
    cluster.begin()?.agree(Ok(()))?;
    let left: Vec<String> = walkdir(&local)
        .into_iter()
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    write_result(
        &serde_json::json!({
            "rank": tessera::cluster::rank(),
            "host": std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim(),
            "npy": npy, "zarr": zarr, "frame": frame, "left": left,
        })
        .to_string(),
    );
    Ok(())
}

/// Every path under `dir`, depth first.
fn walkdir(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        }
        out.push(path);
    }
    out
}

/// Every rank says it started; the last rank then stays inside a task until its node is
/// killed, while the others wait for its chunks.
fn rank_node_kill() -> tessera::Result<()> {
    let (rank, size) = (tessera::cluster::rank(), tessera::cluster::size());
    let started = out_dir_of_launch().join(format!("started-{rank}"));
    std::fs::write(&started, b"").map_err(|e| tessera::Error::io(&started, e))?;
    sum_of_blocks(std::sync::Arc::new(move |b: &[tessera::HostArray]| {
        if rank + 1 == size {
            std::thread::sleep(Duration::from_secs(300));
        }
        Ok(b[0].clone())
    }))
}

/// Bytes of the message [`rank_big`] broadcasts: over 2^31, past MPI's `int` counts.
const BIG: usize = (1 << 31) + (1 << 28) + 12_345;

/// The big message in 1 MiB blocks: block `k` is a fixed pattern stamped with `k`, so a
/// piece delivered out of place or twice differs from what is checked.
struct BigBlocks {
    pattern: Vec<u8>,
}

impl BigBlocks {
    const MIB: usize = 1 << 20;

    fn new() -> BigBlocks {
        BigBlocks {
            pattern: (0..Self::MIB).map(|i| (i * 31 % 251) as u8).collect(),
        }
    }

    /// The whole message.
    fn message(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(BIG);
        for k in 0..BIG.div_ceil(Self::MIB) {
            let len = Self::MIB.min(BIG - k * Self::MIB);
            v.extend_from_slice(&(k as u64).to_le_bytes());
            v.extend_from_slice(&self.pattern[8..len]);
        }
        v
    }

    /// Whether `got` is the whole message.
    fn matches(&self, got: &[u8]) -> bool {
        got.len() == BIG
            && got.chunks(Self::MIB).enumerate().all(|(k, c)| {
                c[..8] == (k as u64).to_le_bytes() && c[8..] == self.pattern[8..c.len()]
            })
    }
}

/// Rank 0 broadcasts [`BIG`] bytes; every rank checks every MiB of what it holds.
fn rank_big() -> tessera::Result<()> {
    let cluster = tessera::cluster::current()?.expect("a cluster under mpirun");
    let ex = cluster.begin()?;
    let blocks = BigBlocks::new();
    let mine = if cluster.rank() == 0 {
        blocks.message()
    } else {
        Vec::new()
    };
    let got = ex.broadcast(0, mine)?;
    write_result(
        &serde_json::json!({
            "rank": cluster.rank(),
            "len": got.len(),
            "intact": blocks.matches(&got),
        })
        .to_string(),
    );
    Ok(())
}

/// `mpirun`, or why the test is skipped.
fn mpirun() -> Result<PathBuf, String> {
    if !cfg!(feature = "mpi") {
        return Err("built without the `mpi` feature (cargo test --features mpi)".into());
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("mpirun"))
        .find(|p| p.is_file())
        .ok_or_else(|| "mpirun not found (apt-get install openmpi-bin; .ci/run installs it)".into())
}

/// `mpirun`, or returns from the test after reporting the skip and why.
macro_rules! mpirun_or_skip {
    ($test:expr) => {
        match mpirun() {
            Ok(p) => p,
            Err(why) => {
                tessera_conformance::skip::skip($test, &why);
                return;
            }
        }
    };
}

/// Runs `cmd` to its end, killing it after `limit`; the output and the time it took.
/// The output is drained while it runs (ranks print more than a pipe holds).
fn run_bounded(mut cmd: Command, limit: Duration) -> (Output, Duration) {
    let start = Instant::now();
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("launch");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => (out.expect("output"), start.elapsed()),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            let out = rx.recv().expect("output").expect("output");
            panic!(
                "still running after {limit:?}: a hang\nstdout:\n{}\nstderr:\n{}",
                tail(&out.stdout),
                tail(&out.stderr)
            );
        }
    }
}

/// The last 4000 bytes of some output, as text.
fn tail(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let cut = s.len().saturating_sub(4000);
    let cut = (cut..s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    s[cut..].to_string()
}

/// A fresh directory for the ranks' result files of one launch.
fn out_dir() -> PathBuf {
    out_dir_under(&std::env::temp_dir())
}

/// A fresh directory for the ranks' result files of one launch, under `base`.
fn out_dir_under(base: &std::path::Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = base.join(format!("tessera-mpi-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("result directory");
    write_frame_inputs(&dir);
    dir
}

/// `mpirun -np p` of this binary's ranks running `what`, with `extra` mpirun options;
/// the ranks write their results under `out`.
fn launch(
    mpirun: &PathBuf,
    p: usize,
    what: &str,
    extra: &[&str],
    out: &std::path::Path,
) -> (Output, Duration) {
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = Command::new(mpirun);
    cmd.args(["--oversubscribe", "-np", &p.to_string()])
        .args(extra)
        .args([
            "-x",
            "TESSERA_SCHEDULER=mpi",
            "-x",
            "TESSERA_NUM_THREADS=2",
            "-x",
            CHILD,
        ])
        .args(["-x", "TESSERA_MPI_TEST_OUT"])
        .env("TESSERA_MPI_TEST_OUT", out)
        .arg(exe)
        .args([
            "--exact",
            "rank_entry_point",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, what)
        .env("TESSERA_SCHEDULER", "mpi")
        .env("TESSERA_DISTRIBUTED_TIMEOUT", "60s");
    // Open MPI refuses to start ranks as root unless told; a CI container runs as root.
    if is_root() {
        cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    run_bounded(cmd, Duration::from_secs(180))
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// The result of every rank, in rank order.
fn rank_lines(out: &Output, dir: &std::path::Path, p: usize) -> Vec<serde_json::Value> {
    (0..p)
        .map(|r| {
            let text =
                std::fs::read_to_string(dir.join(format!("rank-{r}.json"))).unwrap_or_else(|e| {
                    panic!(
                        "no result from rank {r} of {p} ({e})\nstdout:\n{}\nstderr:\n{}",
                        tail(&out.stdout),
                        tail(&out.stderr)
                    )
                });
            serde_json::from_str(&text).expect("a rank's JSON")
        })
        .collect()
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn check_workloads(out: &Output, dir: &std::path::Path, p: usize) {
    assert!(
        out.status.success(),
        "mpirun failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (h, m, s, c) = (headline(), moments(), tall_svd(), compressed_svd());
    let frames = serde_json::to_value(frame_pipeline(dir)).expect("rows as JSON");
    // The same writes from this process, into a directory of its own.
    let alone = dir.join("one-process");
    std::fs::create_dir_all(&alone).expect("a directory for the one-process writes");
    for name in ["trips.csv", "zones.csv"] {
        std::fs::copy(dir.join(name), alone.join(name)).expect("copy the inputs");
    }
    let (written_rows, written_sum) = write_and_read_back(&alone);
    let npy = |d: &std::path::Path| std::fs::read(d.join("written").join("x.npy")).expect("x.npy");
    assert!(
        npy(dir) == npy(&alone),
        "the .npy the {p} ranks wrote differs from the one-process file"
    );
    let lines = rank_lines(out, dir, p);
    for (rank, l) in lines.iter().enumerate() {
        assert_eq!(
            (l["rank"].as_u64(), l["size"].as_u64()),
            (Some(rank as u64), Some(p as u64))
        );
        close(
            &[l["headline"].as_f64().unwrap()],
            &[h],
            &format!("headline P={p}"),
        );
        for (got, want) in l["moments"].as_array().unwrap().iter().zip(&m) {
            close(&floats(got), want, &format!("moments P={p}"));
        }
        close(&floats(&l["svd"]), &s, &format!("svd P={p}"));
        close(
            &floats(&l["svd_compressed"]),
            &c,
            &format!("svd_compressed P={p}"),
        );
        assert_eq!(
            l["frames"], frames,
            "the frame pipeline at P={p}, rank {rank}"
        );
        // Written by every rank, committed by rank 0, read back by every rank.
        assert_eq!(
            l["written"][0],
            serde_json::to_value(&written_rows).unwrap(),
            "Parquet parts written at P={p}, rank {rank}"
        );
        close(
            &[l["written"][1].as_f64().unwrap()],
            &[written_sum],
            &format!(".npy written at P={p}"),
        );
        // A sum of 32 MB moves partial sums only: a few hundred bytes per rank.
        let moved =
            l["sum_sent_bytes"].as_u64().unwrap() + l["sum_received_bytes"].as_u64().unwrap();
        assert!(
            moved < 64 * 1024,
            "rank {rank} of {p} moved {moved} bytes for a sum"
        );
        if p > 1 {
            assert!(moved > 0, "rank {rank} of {p} exchanged nothing");
        }
    }
}

#[test]
fn workloads_under_mpirun_match_one_process_on_1_to_4_ranks() {
    let mpirun = mpirun_or_skip!("mpi::workloads_under_mpirun_match_one_process_on_1_to_4_ranks");
    for p in 1..=4 {
        let dir = out_dir();
        let (out, _) = launch(&mpirun, p, "workloads", &[], &dir);
        check_workloads(&out, &dir, p);
    }
}

#[test]
fn workloads_match_with_tcp_forced_between_ranks() {
    let mpirun = mpirun_or_skip!("mpi::workloads_match_with_tcp_forced_between_ranks");
    let tcp = [
        "--mca",
        "btl",
        "tcp,self",
        "--mca",
        "btl_tcp_if_include",
        "lo",
    ];
    let dir = out_dir();
    let (out, _) = launch(&mpirun, 3, "workloads", &tcp, &dir);
    check_workloads(&out, &dir, 3);
}

#[test]
fn a_message_over_2_gib_crosses_ranks_intact() {
    let mpirun = mpirun_or_skip!("mpi::a_message_over_2_gib_crosses_ranks_intact");
    let dir = out_dir();
    let (out, _) = launch(&mpirun, 2, "big", &[], &dir);
    assert!(out.status.success(), "mpirun failed: {}", tail(&out.stderr));
    for (rank, l) in rank_lines(&out, &dir, 2).iter().enumerate() {
        assert_eq!(l["len"].as_u64(), Some(BIG as u64), "rank {rank}");
        assert_eq!(l["intact"].as_bool(), Some(true), "rank {rank}");
    }
}

#[test]
fn a_failing_task_stops_every_rank_with_an_error_naming_rank_and_task() {
    let mpirun =
        mpirun_or_skip!("mpi::a_failing_task_stops_every_rank_with_an_error_naming_rank_and_task");
    let (out, took) = launch(&mpirun, 3, "fail", &[], &out_dir());
    for e in every_rank_errors(&out, 3) {
        assert!(
            e.contains("rank 1: task ") && e.contains("refused on rank 1"),
            "{e}"
        );
        assert_eq!(e.matches("rank 1:").count(), 1, "{e}");
    }
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn a_failing_frame_plan_stops_every_rank_with_an_error_naming_the_rank() {
    let mpirun =
        mpirun_or_skip!("mpi::a_failing_frame_plan_stops_every_rank_with_an_error_naming_the_rank");
    let (out, took) = launch(&mpirun, 3, "frame_fail", &[], &out_dir());
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("groups"),
        "a rank finished:\n{}",
        tail(&out.stdout)
    );
    for e in every_rank_errors(&out, 3) {
        assert!(
            e.contains("rank 1") && e.contains("refused on rank 1"),
            "{e}"
        );
    }
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

/// The failure of `a_failing_frame_plan_stops_every_rank_with_an_error_naming_the_rank`
/// while the other ranks' sends are blocked (megabytes of partials each, to a rank that is
/// not receiving): every rank still ends, with the error naming rank 1, within the bound.
#[test]
fn a_failure_while_other_ranks_sends_are_blocked_ends_every_rank() {
    let mpirun =
        mpirun_or_skip!("mpi::a_failure_while_other_ranks_sends_are_blocked_ends_every_rank");
    let (out, took) = launch(&mpirun, 3, "frame_fail_blocked", &[], &out_dir());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "mpirun succeeded:\n{}",
        tail(&out.stdout)
    );
    assert!(
        !stdout.contains("groups"),
        "a rank finished:\n{}",
        tail(&out.stdout)
    );
    // Rank 1 says why; a rank whose send was still blocked after the grace time is ended
    // by the job's abort, and may not get to say anything.
    let errors: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.find("ERROR").map(|i| &l[i..]))
        .collect();
    assert!(
        errors.iter().any(|e| e.contains("refused on rank 1")),
        "no rank named the failure:\n{stdout}\n{}",
        tail(&out.stderr)
    );
    for e in &errors {
        assert!(e.contains("rank 1"), "{e}");
    }
    assert!(
        took < Duration::from_secs(60),
        "took {took:?}: a rank hung in its send"
    );
}

#[test]
fn a_killed_rank_ends_every_rank_within_a_bounded_time() {
    let mpirun = mpirun_or_skip!("mpi::a_killed_rank_ends_every_rank_within_a_bounded_time");
    let (out, took) = launch(&mpirun, 3, "kill", &[], &out_dir());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "mpirun succeeded: {stderr}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("total"),
        "a rank finished"
    );
    // tessera's own words, from the rank that aborted (the launcher's message, which also
    // names rank 1, is not enough: it would pass without tessera saying anything).
    assert!(
        stderr.contains("tessera: rank 1 of 3 aborted (SIGABRT) while running a plan"),
        "{stderr}"
    );
    let stopped = (0..3)
        .filter(|r| stderr.contains(&format!("tessera: rank {r} of 3 stopped by SIGTERM")))
        .count();
    println!("ranks that said the launcher stopped them: {stopped} of 2");
    assert!(took < Duration::from_secs(90), "took {took:?}");
}

/// The `ERROR` line of each of the `p` ranks of a launch that must have failed on every
/// rank (the test fails with the launch's output otherwise).
fn every_rank_errors(out: &Output, p: usize) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "mpirun succeeded:\n{}",
        tail(&out.stdout)
    );
    let errors: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.find("ERROR").map(|i| l[i..].to_string()))
        .collect();
    assert_eq!(
        errors.len(),
        p,
        "every rank reports:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    errors
}

/// This binary run directly (no mpirun) as a rank: `env` added.
fn direct(env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("test binary");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "rank_entry_point",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "workloads")
    .env("TESSERA_SCHEDULER", "mpi");
    for v in tessera_mpi_launcher_variables() {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_bounded(cmd, Duration::from_secs(60)).0
}

fn tessera_mpi_launcher_variables() -> Vec<&'static str> {
    #[cfg(feature = "mpi")]
    return tessera::mpi::launch::LAUNCHER_VARIABLES
        .iter()
        .map(|(v, _)| *v)
        .collect();
    #[cfg(not(feature = "mpi"))]
    Vec::new()
}

#[test]
fn a_launch_without_a_launcher_or_by_another_mpis_launcher_is_refused() {
    let _ =
        mpirun_or_skip!("mpi::a_launch_without_a_launcher_or_by_another_mpis_launcher_is_refused");
    let out = direct(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("no MPI launcher started this process"),
        "{stdout}"
    );
    // MPICH's launcher says 2 ranks; this Open MPI binary sees a world of one.
    let out = direct(&[("PMI_SIZE", "2")]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("PMI_SIZE=2") && stdout.contains("world of 1"),
        "{stdout}"
    );
}

/// Nodes made of namespaces are made one test at a time.
static NODES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Two nodes of two slots and a launch directory both see (`/tmp` is each node's own),
/// held for one test; dropped, the nodes go before the next test may make its own.
struct TwoNodes {
    mpirun: PathBuf,
    dir: PathBuf,
    nodes: nodes::Nodes,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl TwoNodes {
    /// Three ranks running `what`: ranks 0 and 1 on node 1, rank 2 on node 2.
    fn launch(&self, what: &str) -> (Output, Duration) {
        let options = self.nodes.mpirun_options();
        let options: Vec<&str> = options.iter().map(String::as_str).collect();
        launch(&self.mpirun, 3, what, &options, &self.dir)
    }
}

/// [`TwoNodes`], or returns from the test after reporting the skip and why.
macro_rules! two_nodes_or_skip {
    ($test:expr) => {{
        let mpirun = mpirun_or_skip!($test);
        let serial = NODES.lock().unwrap_or_else(|e| e.into_inner());
        let dir = out_dir_under(std::path::Path::new(env!("CARGO_TARGET_TMPDIR")));
        match nodes::Nodes::new(2, 2, &dir) {
            Ok(nodes) => TwoNodes {
                mpirun,
                dir,
                nodes,
                _serial: serial,
            },
            Err(why) => {
                tessera_conformance::skip::skip($test, &why);
                return;
            }
        }
    }};
}

#[test]
fn workloads_on_two_nodes_over_tcp_match_one_process() {
    let two = two_nodes_or_skip!("mpi::workloads_on_two_nodes_over_tcp_match_one_process");
    let (out, _) = two.launch("workloads");
    check_workloads(&out, &two.dir, 3);
}

#[test]
fn a_node_local_output_path_is_refused_on_every_rank_and_nothing_is_left() {
    let two = two_nodes_or_skip!(
        "mpi::a_node_local_output_path_is_refused_on_every_rank_and_nothing_is_left"
    );
    let (out, _) = two.launch("node_local");
    assert!(out.status.success(), "mpirun failed: {}", tail(&out.stderr));
    let lines = rank_lines(&out, &two.dir, 3);
    let hosts: Vec<&str> = lines.iter().map(|l| l["host"].as_str().unwrap()).collect();
    assert!(
        hosts[0] == hosts[1] && hosts[1] != hosts[2],
        "ranks 0 and 1 share a node, rank 2 is on another: {hosts:?}"
    );
    for (rank, l) in lines.iter().enumerate() {
        for (writer, refusal) in [
            ("npy", "not a node-local path"),
            ("zarr", "not a node-local path"),
            ("frame", "not a node-local path"),
        ] {
            let error = l[writer].as_str().unwrap_or_else(|| {
                panic!("rank {rank}: the {writer} write into a node-local /tmp succeeded")
            });
            assert!(error.contains(refusal), "rank {rank}, {writer}: {error}");
        }
        assert_eq!(
            l["left"],
            serde_json::json!([]),
            "rank {rank}: files left on its node's /tmp"
        );
    }
}

#[test]
fn a_killed_node_ends_the_job_within_a_bounded_time() {
    let two = two_nodes_or_skip!("mpi::a_killed_node_ends_the_job_within_a_bounded_time");
    let killed = std::thread::scope(|s| {
        let killer = s.spawn(|| {
            let started = two.dir.join("started-2");
            let deadline = Instant::now() + Duration::from_secs(120);
            while !started.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            std::thread::sleep(Duration::from_millis(500));
            two.nodes.kill(2);
            Instant::now()
        });
        let (out, _) = two.launch("node_kill");
        (
            out,
            killer.join().expect("the killer thread"),
            Instant::now(),
        )
    });
    let (out, at, ended) = killed;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "mpirun succeeded: {stderr}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("total"),
        "a rank finished"
    );
    // The ranks on node 1 say in tessera's words that the launcher stopped them.
    for r in [0, 1] {
        assert!(
            stderr.contains(&format!("tessera: rank {r} of 3 stopped by SIGTERM")),
            "{stderr}"
        );
    }
    let took = ended.duration_since(at);
    println!("the job ended {took:?} after node 2 was killed");
    assert!(
        took < Duration::from_secs(45),
        "took {took:?} after the kill"
    );
}
