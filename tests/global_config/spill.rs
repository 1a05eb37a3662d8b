//! Spilling: plans over `memory-limit` write what they keep to `spill-dir` and finish,
//! with the results of the unlimited run (arrays) or of the data's definition worked out
//! by plain loops (frames), within the limit plus a stated slack of peak RSS, and leave
//! no spill files behind — also when they fail.
//!
//! Peak RSS is a process-wide figure, so each scenario runs alone in a child process (this
//! test binary again, running only [`spill_scenario`]) whose `VmHWM` is compared with its
//! resident size before the scenario started.

use std::path::{Path, PathBuf};
use std::process::Command;

use std::sync::Arc;

use tessera::frame::arrow_array::{ArrayRef, Float64Array, Int64Array};
use tessera::frame::{read_parquet, AggFunc, DataFrame, JoinType, Value};
use tessera::{Array, Index, RandomState};

/// Environment variable naming the scenario a child process runs.
const SCENARIO: &str = "TESSERA_TEST_SPILL_SCENARIO";

/// What the allocator, the thread stacks and the codec may add to the limit: glibc keeps
/// freed memory in per-thread arenas, and a value being spilled or read back is in memory
/// with the codec's buffers. Measured growth with the 32 MiB limits here: 42.8–44.6 MB.
const SLACK: u64 = 24 << 20;

/// A resident-set figure of this process from `/proc/self/status` (`VmRSS`, `VmHWM`).
fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Files and directories left under `dir`.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            out.push(e.path());
        }
    }
    out
}

/// Sets `memory-limit` to `limit`, spilling to `dir`, on two workers, until the guard
/// drops.
fn spill_under(limit: impl ToString, dir: &Path) -> tessera::config::ConfigGuard {
    let limit = limit.to_string();
    tessera::config::set(&[
        ("memory-limit", limit.as_str()),
        ("spill-dir", dir.to_str().unwrap()),
        ("num-threads", "2"),
    ])
    .unwrap()
}

/// A fresh spill directory for one test.
fn spill_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-spill-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The figures a child reports: `key=value` pairs on a `SPILL-REPORT` line.
#[derive(Debug, Default)]
struct Report {
    pairs: Vec<(String, String)>,
}

impl Report {
    fn get(&self, key: &str) -> &str {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("the child reported no {key}: {:?}", self.pairs))
    }

    fn num(&self, key: &str) -> f64 {
        self.get(key).parse().unwrap()
    }
}

/// Runs `scenario` in a child process under `limit` bytes on two workers, spilling to
/// `dir`.
fn run_child(scenario: &str, limit: u64, dir: &Path) -> Report {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        "spill::spill_scenario",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(SCENARIO, scenario)
    .env(DATA, data_dir())
    .env("TESSERA_MEMORY_LIMIT", limit.to_string())
    .env("TESSERA_SPILL_DIR", dir)
    .env("TESSERA_PROGRESS", "never")
    .env("TESSERA_NUM_THREADS", "2");
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scenario {scenario} failed:\n{stdout}\n{stderr}"
    );
    let line = stdout
        .split_once("SPILL-REPORT ")
        .and_then(|(_, rest)| rest.lines().next())
        .unwrap_or_else(|| panic!("no report from {scenario}:\n{stdout}\n{stderr}"));
    Report {
        pairs: line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

/// Checks what every scenario must show: it spilled, stayed within the limit plus
/// [`SLACK`], and left nothing in the spill directory.
fn check_spilled_within_limit(scenario: &str, r: &Report, limit: u64, dir: &Path) {
    eprintln!("{scenario}: {:?}", r.pairs);
    assert!(
        r.num("spilled_values") > 0.0,
        "{scenario}: nothing spilled, so the test proves nothing: {r:?}"
    );
    assert!(
        r.num("read_back") > 0.0,
        "{scenario}: nothing was read back: {r:?}"
    );
    match r.get("peak_over_baseline") {
        "unknown" => tessera_conformance::skip::skip(
            &format!("peak RSS check of {scenario}"),
            "it needs /proc (Linux)",
        ),
        v => {
            let peak: u64 = v.parse().unwrap();
            assert!(
                peak <= limit + SLACK,
                "{scenario}: peak RSS grew by {peak} bytes, over the limit {limit} plus slack {SLACK}"
            );
        }
    }
    assert_eq!(
        leftovers(dir),
        Vec::<PathBuf>::new(),
        "{scenario}: spill files left"
    );
}

/// The child: runs the scenario named in [`SCENARIO`] and prints its figures.
#[test]
#[ignore = "a child process of the spill tests, which run it alone to measure its peak RSS"]
fn spill_scenario() {
    let scenario = std::env::var(SCENARIO).expect("run by the spill tests, which set the scenario");
    let baseline = proc_status_bytes("VmRSS");
    let mut pairs = match scenario.as_str() {
        "persist" => persist_scenario(),
        "groupby" => groupby_scenario(),
        "join" => join_scenario(),
        "sort" => sort_scenario(),
        "abort" => {
            let p = persist_input().persist().unwrap();
            assert!(
                tessera::spill::stats().values > 0,
                "the abort scenario must spill"
            );
            println!("\nSPILL-ABORTING {}", p.shape()[0]);
            std::process::abort();
        }
        other => panic!("unknown scenario {other}"),
    };
    let peak = proc_status_bytes("VmHWM");
    let stats = tessera::spill::stats();
    pairs.push((
        "peak_over_baseline".into(),
        match (peak, baseline) {
            (Some(p), Some(b)) => p.saturating_sub(b).to_string(),
            _ => "unknown".into(),
        },
    ));
    pairs.push(("spilled_values".into(), stats.values.to_string()));
    pairs.push(("spilled_bytes".into(), stats.bytes_written.to_string()));
    pairs.push(("read_back".into(), stats.bytes_read.to_string()));
    let line: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("SPILL-REPORT {}", line.join(" "));
}

/// Shape of the persisted array: 5x the 32 MiB limit of f64 (160 MiB) in 2 MiB blocks.
const PERSIST_SHAPE: [usize; 2] = [4000, 5000];
const PERSIST_CHUNK: usize = 500;
const PERSIST_LIMIT: u64 = 32 << 20;

fn persist_input() -> Array {
    RandomState::new(11)
        .normal(0.0, 1.0, &PERSIST_SHAPE, PERSIST_CHUNK, None)
        .unwrap()
}

/// `persist()` of an array 5x the limit, then plans that read every spilled chunk back.
fn persist_scenario() -> Vec<(String, String)> {
    let x = persist_input();
    let explain = x.explain().unwrap();
    let p = x.persist().unwrap();
    // Every element against the lazy definition (regenerated, counter-based): exact.
    let max_diff = (&p - &x).unwrap().abs().unwrap().max(None, false).unwrap();
    let max_diff = max_diff.compute().unwrap().to_f64_vec()[0];
    let sum = p.sum(None, false).unwrap().compute().unwrap().to_f64_vec()[0];
    let corner = p
        .slice(&[
            Index::slice(Some(3990), None, 1),
            Index::slice(Some(4990), None, 1),
        ])
        .unwrap()
        .compute()
        .unwrap()
        .to_f64_vec();
    let corner_sum: f64 = corner.iter().sum();
    vec![
        ("max_diff".into(), max_diff.to_string()),
        ("sum".into(), format!("{sum:e}")),
        ("corner_sum".into(), format!("{corner_sum:e}")),
        (
            "explain_mentions_spill".into(),
            explain.contains("spills the rest").to_string(),
        ),
    ]
}

#[test]
fn persist_of_an_array_five_times_the_limit_spills_and_reads_back() {
    let _serial = crate::serial();
    let dir = spill_dir("persist");
    let r = run_child("persist", PERSIST_LIMIT, &dir);
    check_spilled_within_limit("persist", &r, PERSIST_LIMIT, &dir);
    assert_eq!(r.num("max_diff"), 0.0, "{r:?}");
    // The unlimited run, here in the parent.
    let x = persist_input();
    let sum = x.sum(None, false).unwrap().compute().unwrap().to_f64_vec()[0];
    assert_eq!(r.num("sum"), sum, "{r:?}");
    let corner: f64 = x
        .slice(&[
            Index::slice(Some(3990), None, 1),
            Index::slice(Some(4990), None, 1),
        ])
        .unwrap()
        .compute()
        .unwrap()
        .to_f64_vec()
        .iter()
        .sum();
    assert_eq!(r.num("corner_sum"), corner, "{r:?}");
    assert_eq!(r.get("explain_mentions_spill"), "true", "{r:?}");
    assert!(
        r.num("spilled_bytes") >= (5 * PERSIST_LIMIT - PERSIST_LIMIT) as f64 * 0.8,
        "{r:?}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// The limit of the dataframe scenarios: with the children's two workers, partitions of
/// 64Ki rows (1 MiB) leave room to spill (see `explain`).
const FRAME_LIMIT: u64 = 32 << 20;

/// Environment variable passing the test data directory to a child process.
const DATA: &str = "TESSERA_TEST_SPILL_DATA";

/// Where the dataframe scenarios' data lives: one directory in the system temp dir shared
/// by every test process (and passed to the children), so that repeated runs reuse it
/// instead of each leaving its own hundred megabytes behind. Bump the version when a
/// dataset's contents change.
fn data_dir() -> PathBuf {
    std::env::var_os(DATA)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("tessera-spill-test-data-v1"))
}

/// A Parquet dataset of `rows` rows of `k` (i64) and `v` (f64) under the test data
/// directory, one file per 64Ki rows. It is written once into a directory of this
/// process's own and renamed into place whole, so a concurrent run never reads half of
/// one; a run that loses the race uses the winner's.
fn dataset(name: &str, rows: usize, k: impl Fn(i64) -> i64, v: impl Fn(i64) -> f64) -> String {
    let dir = data_dir().join(format!("{name}-{rows}"));
    let pattern = dir.join(format!("{name}-*.parquet"));
    let pattern = pattern.to_str().unwrap().to_string();
    if dir.exists() {
        return pattern;
    }
    let partial = data_dir().join(format!("{name}-{rows}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir_all(&partial).unwrap();
    let ks: ArrayRef = Arc::new(Int64Array::from_iter_values((0..rows as i64).map(k)));
    let vs: ArrayRef = Arc::new(Float64Array::from_iter_values((0..rows as i64).map(v)));
    let df = DataFrame::from_columns(vec![("k", ks), ("v", vs)], rows.div_ceil(1 << 16)).unwrap();
    df.to_parquet(partial.join(format!("{name}-*.parquet")).to_str().unwrap())
        .unwrap();
    if std::fs::rename(&partial, &dir).is_err() {
        // Another run put the same dataset in place first.
        assert!(dir.exists(), "cannot move {partial:?} to {dir:?}");
        let _ = std::fs::remove_dir_all(&partial);
    }
    pattern
}

/// The groupby dataset: 4Mi rows, 2Mi groups of two rows spread over all 64 partitions,
/// so that every partition's groupby state is about as large as the partition, 100 MB of
/// states in all.
const GROUPBY_ROWS: usize = 4 << 20;
const GROUPS: i64 = 2 << 20;
fn groupby_key(i: i64) -> i64 {
    (i * 7919) % GROUPS
}
fn groupby_value(i: i64) -> f64 {
    i as f64 * 0.5
}

fn groupby_input() -> DataFrame {
    read_parquet(&dataset(
        "groupby",
        GROUPBY_ROWS,
        groupby_key,
        groupby_value,
    ))
    .unwrap()
}

/// Figures of a frame of one row, as `key=value` pairs.
fn one_row(df: &DataFrame) -> Vec<(String, String)> {
    let c = df.compute().unwrap();
    df.columns()
        .into_iter()
        .map(|name| {
            let v = figure_text(&c.value(&name, 0).unwrap());
            (name, v)
        })
        .collect()
}

/// One figure as a report prints it: floats as `{:e}`, integers in full.
fn figure_text(v: &Value) -> String {
    match v {
        Value::Float(f) => format!("{f:e}"),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        other => format!("{other:?}").replace(' ', "_"),
    }
}

/// A groupby with 2Mi groups, then figures of the groups that show a group split or
/// merged by mistake (counts, key sums).
fn groupby_query(df: &DataFrame) -> DataFrame {
    df.groupby(&["k"])
        .unwrap()
        .agg_named(&[("v", AggFunc::Sum, "s"), ("v", AggFunc::Count, "c")])
        .unwrap()
        .agg(&[
            ("k", AggFunc::Count),
            ("k", AggFunc::Sum),
            ("s", AggFunc::Sum),
            ("s", AggFunc::Max),
            ("c", AggFunc::Min),
            ("c", AggFunc::Max),
        ])
        .unwrap()
}

fn groupby_scenario() -> Vec<(String, String)> {
    let q = groupby_query(&groupby_input());
    let mut out = one_row(&q);
    out.push((
        "explain_mentions_spill".into(),
        q.explain().unwrap().contains("are spilled to").to_string(),
    ));
    out
}

/// The join's sides: the build side 6Mi rows (96 MiB, three times the limit), each key
/// twice; the probe side 1Mi rows matching one key in three.
const BUILD_ROWS: usize = 6 << 20;
const PROBE_ROWS: usize = 1 << 20;
const KEYS: i64 = 3 << 20;
fn build_key(i: i64) -> i64 {
    i % KEYS
}
fn build_value(i: i64) -> f64 {
    (i % 1000) as f64
}
fn probe_key(i: i64) -> i64 {
    i * 3
}

fn join_inputs() -> (DataFrame, DataFrame) {
    let build = read_parquet(&dataset("build", BUILD_ROWS, build_key, build_value)).unwrap();
    let probe = read_parquet(&dataset("probe", PROBE_ROWS, probe_key, |_| 1.0))
        .unwrap()
        .rename(&[("v", "x")])
        .unwrap();
    (probe, build)
}

fn join_query(probe: &DataFrame, build: &DataFrame) -> DataFrame {
    probe
        .merge(build, &["k"], JoinType::Inner)
        .unwrap()
        .agg(&[
            ("k", AggFunc::Count),
            ("k", AggFunc::Sum),
            ("x", AggFunc::Sum),
            ("v", AggFunc::Sum),
            ("v", AggFunc::Max),
        ])
        .unwrap()
}

fn join_scenario() -> Vec<(String, String)> {
    let (probe, build) = join_inputs();
    one_row(&join_query(&probe, &build))
}

/// `columns` paired with `values` in the form [`one_row`] prints them.
fn figures(columns: Vec<String>, values: &[Value]) -> Vec<(String, String)> {
    assert_eq!(columns.len(), values.len(), "columns {columns:?}");
    columns
        .into_iter()
        .zip(values.iter().map(figure_text))
        .collect()
}

/// The groupby's figures worked out from the dataset's definition by plain loops, not by
/// the engine: the oracle the spilled run is held to. Every value is a multiple of 0.5
/// far below 2^52, so any order of summation gives these sums exactly.
fn groupby_expected() -> Vec<Value> {
    let mut sum = vec![0.0f64; GROUPS as usize];
    let mut count = vec![0i64; GROUPS as usize];
    for i in 0..GROUPBY_ROWS as i64 {
        let k = groupby_key(i) as usize;
        sum[k] += groupby_value(i);
        count[k] += 1;
    }
    let groups: Vec<usize> = (0..GROUPS as usize).filter(|&k| count[k] > 0).collect();
    let s = |k: &usize| sum[*k];
    let c = |k: &usize| count[*k];
    vec![
        Value::Int(groups.len() as i64),
        Value::Int(groups.iter().map(|&k| k as i64).sum()),
        Value::Float(groups.iter().map(s).sum()),
        Value::Float(groups.iter().map(s).fold(f64::MIN, f64::max)),
        Value::Int(groups.iter().map(c).min().unwrap()),
        Value::Int(groups.iter().map(c).max().unwrap()),
    ]
}

/// The inner join's figures from the datasets' definitions by plain loops (each build
/// key's row count, value sum and maximum, looked up per probe row). Every value is an
/// integer, so the sums are exact in any order.
fn join_expected() -> Vec<Value> {
    let mut count = vec![0i64; KEYS as usize];
    let mut vsum = vec![0.0f64; KEYS as usize];
    let mut vmax = vec![f64::MIN; KEYS as usize];
    for j in 0..BUILD_ROWS as i64 {
        let k = build_key(j) as usize;
        count[k] += 1;
        vsum[k] += build_value(j);
        vmax[k] = vmax[k].max(build_value(j));
    }
    let (mut rows, mut key_sum, mut x_sum, mut v_sum, mut v_max) = (0i64, 0i64, 0.0, 0.0, f64::MIN);
    for i in 0..PROBE_ROWS as i64 {
        let k = probe_key(i);
        let Some(&c) = usize::try_from(k).ok().and_then(|k| count.get(k)) else {
            continue;
        };
        if c == 0 {
            continue;
        }
        rows += c;
        key_sum += k * c;
        x_sum += c as f64;
        v_sum += vsum[k as usize];
        v_max = v_max.max(vmax[k as usize]);
    }
    vec![
        Value::Int(rows),
        Value::Int(key_sum),
        Value::Float(x_sum),
        Value::Float(v_sum),
        Value::Float(v_max),
    ]
}

/// Runs a frame scenario in a child under [`FRAME_LIMIT`] and compares its figures with
/// `expected`, the figures of the dataset worked out without the engine.
fn frame_scenario_matches(scenario: &str, expected: Vec<(String, String)>) {
    let dir = spill_dir(scenario);
    let r = run_child(scenario, FRAME_LIMIT, &dir);
    check_spilled_within_limit(scenario, &r, FRAME_LIMIT, &dir);
    for (k, v) in expected {
        assert_eq!(
            r.get(&k),
            v,
            "{scenario}: {k} differs from the figures of the data's definition: {r:?}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_groupby_with_more_groups_than_fit_spills_its_states() {
    let _serial = crate::serial();
    let columns = groupby_query(&groupby_input()).columns();
    frame_scenario_matches("groupby", figures(columns, &groupby_expected()));
}

#[test]
fn a_join_whose_build_side_is_three_times_the_limit_spills_its_buckets() {
    let _serial = crate::serial();
    let (probe, build) = join_inputs();
    let columns = join_query(&probe, &build).columns();
    frame_scenario_matches("join", figures(columns, &join_expected()));
}

#[test]
fn spill_files_are_removed_when_a_plan_fails_midway() {
    let _serial = crate::serial();
    let dir = spill_dir("failing");
    let df = groupby_input();
    let _g = spill_under(FRAME_LIMIT, &dir);
    let before = tessera::spill::stats().values;
    let failing = df
        .map_partitions(|b| {
            let ks = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            if ks.len() == (1 << 16) && ks.value(0) == (60 << 16) * 7919 % (2 << 20) {
                return Err(tessera::Error::user_function("test", "partition 60 fails"));
            }
            Ok(b)
        })
        .unwrap();
    let err = groupby_query(&failing).compute().unwrap_err();
    assert!(err.to_string().contains("partition 60 fails"), "{err}");
    assert!(
        tessera::spill::stats().values > before,
        "the plan spilled before it failed"
    );
    assert_eq!(
        leftovers(&dir),
        Vec::<PathBuf>::new(),
        "spill files left after the error"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn spill_files_are_removed_when_a_panic_unwinds_past_a_persisted_array() {
    let _serial = crate::serial();
    let dir = spill_dir("panic");
    let _g = spill_under(PERSIST_LIMIT, &dir);
    let before = tessera::spill::stats().values;
    let caught = std::panic::catch_unwind(|| {
        let _p = persist_input().persist().unwrap();
        assert!(!leftovers(&dir).is_empty(), "spilled chunks are on disk");
        panic!("the application fails while holding a spilled array");
    });
    assert!(caught.is_err());
    assert!(tessera::spill::stats().values > before);
    assert_eq!(
        leftovers(&dir),
        Vec::<PathBuf>::new(),
        "spill files left after the panic"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_killed_process_leaves_files_the_next_run_removes() {
    let _serial = crate::serial();
    let dir = spill_dir("killed");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "spill::spill_scenario",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(SCENARIO, "abort")
        .env("TESSERA_MEMORY_LIMIT", PERSIST_LIMIT.to_string())
        .env("TESSERA_SPILL_DIR", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && stdout.contains("SPILL-ABORTING"),
        "{stdout}"
    );
    let left = leftovers(&dir);
    assert_eq!(left.len(), 1, "the killed process's directory: {left:?}");
    // The next run that spills here removes it.
    let _g = spill_under(PERSIST_LIMIT, &dir);
    let p = persist_input().persist().unwrap();
    assert!(!left[0].exists(), "the orphaned directory was cleaned up");
    drop(p);
    assert_eq!(leftovers(&dir), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn profiles_show_spill_and_unspill_spans() {
    use tessera::observe::profile::record;
    let _serial = crate::serial();
    let dir = spill_dir("profile");
    let small = dataset("small", 1 << 18, |i| i, |i| i as f64);
    let _g = spill_under("4MiB", &dir);
    let kinds = |p: &tessera::observe::Profile| -> Vec<String> {
        p.spans.iter().map(|s| s.kind.clone()).collect()
    };
    // Arrays: 16 MB persisted in 0.5 MB blocks, then read back.
    let x = RandomState::new(3)
        .normal(0.0, 1.0, &[1000, 2000], 250, None)
        .unwrap();
    let (p, profile) = record(|| x.persist().unwrap());
    assert!(
        kinds(&profile).iter().any(|k| k == "spill"),
        "{:?}",
        kinds(&profile)
    );
    let (_, profile) = record(|| p.sum(None, false).unwrap().compute().unwrap());
    assert!(
        kinds(&profile).iter().any(|k| k == "unspill"),
        "{:?}",
        kinds(&profile)
    );
    drop(p);
    drop(_g);
    // Dataframes: a groupby whose states (5 MB) are over half of 8 MiB.
    let _g = spill_under("8MiB", &dir);
    let df = read_parquet(&small).unwrap();
    let (_, profile) = df
        .groupby(&["k"])
        .unwrap()
        .sum("v")
        .unwrap()
        .agg(&[("v", AggFunc::Sum)])
        .unwrap()
        .compute_with_profile()
        .unwrap();
    let k = kinds(&profile);
    assert!(
        k.iter().any(|k| k == "spill") && k.iter().any(|k| k == "unspill"),
        "{k:?}"
    );
    assert_eq!(leftovers(&dir), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn what_can_never_fit_is_still_refused_with_the_reason() {
    let _serial = crate::serial();
    let dir = spill_dir("refused");
    // One 8 MB chunk against a 1 MB limit: no spilling helps.
    let big = Array::ones(&[2000, 2000], tessera::DType::F64, 1000, Some("cpu")).unwrap();
    let _g = spill_under("1MB", &dir);
    let err = big.persist().unwrap_err().to_string();
    assert!(err.contains("no spilling makes that fit"), "{err}");
    assert!(big.explain().unwrap().contains("refused before running"));
    drop(_g);
    // Spilling off: a plan that could spill is refused, as before spilling existed.
    let small = Array::ones(&[2000, 2000], tessera::DType::F64, 100, Some("cpu")).unwrap();
    let _g = tessera::config::set(&[("memory-limit", "4MiB"), ("spill-dir", "none")]).unwrap();
    let err = small.persist().unwrap_err();
    assert!(matches!(err, tessera::Error::MemoryLimit { .. }), "{err}");
    // And compute() needs its result in memory: refused, with persist() suggested.
    drop(_g);
    let _g = spill_under("4MiB", &dir);
    let err = small.compute().unwrap_err().to_string();
    assert!(err.contains("persist() instead of computing"), "{err}");
    assert_eq!(leftovers(&dir), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn writers_stream_a_frame_larger_than_the_limit_a_partition_at_a_time() {
    use tessera::frame::col;
    let _serial = crate::serial();
    let src = groupby_input(); // 64 MiB of Parquet
    let out_dir = spill_dir("write");
    let pattern = out_dir.join("doubled-*.parquet");
    let doubled = src.with_column("w", col("v") * 2.0).unwrap();
    let guard = tessera::config::set(&[
        ("memory-limit", &FRAME_LIMIT.to_string()),
        ("num-threads", "2"),
    ])
    .unwrap();
    let err = doubled.compute().unwrap_err();
    assert!(matches!(err, tessera::Error::MemoryLimit { .. }), "{err}");
    let files = doubled.to_parquet(pattern.to_str().unwrap()).unwrap();
    assert_eq!(files.len(), 64);
    let single = out_dir.join("doubled.csv");
    doubled
        .select(&["w"])
        .unwrap()
        .to_csv(single.to_str().unwrap())
        .unwrap();
    drop(guard);
    let back = read_parquet(pattern.to_str().unwrap()).unwrap();
    let want = src.reduce("v", AggFunc::Sum).unwrap();
    let Value::Float(want) = want else {
        panic!("{want:?}")
    };
    assert_eq!(
        back.reduce("w", AggFunc::Sum).unwrap(),
        Value::Float(2.0 * want)
    );
    let csv = tessera::frame::read_csv(single.to_str().unwrap(), Default::default()).unwrap();
    assert_eq!(csv.len().unwrap(), 4 << 20);
    assert_eq!(
        csv.reduce("w", AggFunc::Sum).unwrap(),
        Value::Float(2.0 * want)
    );
    std::fs::remove_dir_all(&out_dir).ok();
}

#[test]
fn a_frame_over_the_limit_persists_to_the_spill_directory() {
    use tessera::frame::col;
    let _serial = crate::serial();
    let dir = spill_dir("frame-persist");
    let src = groupby_input(); // 64 MiB
    let doubled = src.with_column("w", col("v") * 2.0).unwrap();
    let want = doubled.reduce("w", AggFunc::Sum).unwrap();
    let guard = spill_under(FRAME_LIMIT, &dir);
    let persisted = doubled.persist().unwrap();
    assert!(!leftovers(&dir).is_empty(), "the partitions are on disk");
    let explain = persisted.explain().unwrap();
    assert!(
        explain.contains("persisted to the spill directory"),
        "{explain}"
    );
    // Later plans stream it back, with projection pushdown.
    assert_eq!(persisted.reduce("w", AggFunc::Sum).unwrap(), want);
    assert_eq!(persisted.select(&["k"]).unwrap().len().unwrap(), 4 << 20);
    drop(guard);
    drop(persisted);
    assert_eq!(
        leftovers(&dir),
        Vec::<PathBuf>::new(),
        "its files go with the frame"
    );
    // Spilling off: refused, as before.
    let _g = tessera::config::set(&[
        ("memory-limit", &FRAME_LIMIT.to_string()),
        ("spill-dir", "none"),
    ])
    .unwrap();
    let err = doubled.persist().unwrap_err();
    assert!(matches!(err, tessera::Error::MemoryLimit { .. }), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A frame the plan projects within the limit but larger than a quarter of it is not
/// kept in memory whole: its partitions stay in memory up to that quarter (8 MiB of the
/// 32 MiB limit) and the rest go to the spill directory — a persisted frame holds a
/// bounded share of the limit, whatever the projection said — and it reads back whole.
#[test]
fn a_persisted_frame_keeps_at_most_a_quarter_of_the_limit_in_memory() {
    let _serial = crate::serial();
    let dir = spill_dir("frame-persist-share");
    let (probe, _) = join_inputs(); // 16 MiB
    let want = probe.reduce("k", AggFunc::Sum).unwrap();
    let guard = spill_under(FRAME_LIMIT, &dir);
    let persisted = probe.persist().unwrap();
    assert!(!leftovers(&dir).is_empty(), "part of it is on disk");
    let explain = persisted.explain().unwrap();
    let line = explain
        .lines()
        .find(|l| l.contains("persisted to the spill directory"))
        .unwrap_or_else(|| panic!("{explain}"));
    // 16 partitions of 1 MiB: at most 8 in memory, the others on disk.
    let in_memory: usize = line
        .split("; ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((1..=8).contains(&in_memory), "{line}");
    assert_eq!(persisted.reduce("k", AggFunc::Sum).unwrap(), want);
    drop(guard);
    drop(persisted);
    assert_eq!(leftovers(&dir), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(&dir).ok();
}

/// A semi (and an anti) join of a left side within a task's bytes with a right side
/// three times the limit: the left keys are hashed and the right side streams through
/// them, each partition keeping its distinct matched keys within the budget. The left
/// keys are the multiples of 3 below 300,000, all of which the build side holds.
#[test]
fn a_semi_join_with_a_small_left_side_streams_its_right_side_within_the_budget() {
    let _serial = crate::serial();
    let (probe, build) = join_inputs();
    let dir = spill_dir("semi");
    let _guard = spill_under(FRAME_LIMIT, &dir);
    let small = probe.filter(tessera::frame::col("k").lt(300_000)).unwrap();
    let figures_of = |how| {
        one_row(
            &small
                .merge(&build, &["k"], how)
                .unwrap()
                .agg(&[("k", AggFunc::Count), ("k", AggFunc::Sum)])
                .unwrap(),
        )
    };
    let keys = 100_000i64;
    assert_eq!(
        figures_of(JoinType::Semi),
        vec![
            ("k_count".to_string(), keys.to_string()),
            ("k_sum".to_string(), (3 * keys * (keys - 1) / 2).to_string()),
        ]
    );
    assert_eq!(figures_of(JoinType::Anti)[0].1, "0");
    drop(_guard);
    std::fs::remove_dir_all(&dir).ok();
}

/// Where the sort scenario writes its sorted files (beside the spill directory `dir`).
fn sorted_dir(dir: &Path) -> PathBuf {
    dir.with_extension("sorted")
}

/// The groupby input (64 MiB, twice the limit) sorted by key, descending, and written to
/// Parquet a range at a time.
fn sort_scenario() -> Vec<(String, String)> {
    let dir = PathBuf::from(std::env::var("TESSERA_SPILL_DIR").unwrap());
    let pattern = sorted_dir(&dir).join("sorted-*.parquet");
    let files = groupby_input()
        .sort_values(&["k"], &[false])
        .unwrap()
        .to_parquet(pattern.to_str().unwrap())
        .unwrap();
    vec![("files".into(), files.len().to_string())]
}

/// A sort of twice the limit, written out: its partitions and ranges spill and the
/// written files hold every row, in order.
#[test]
fn a_sort_of_twice_the_limit_spills_its_ranges_and_writes_them_in_order() {
    let _serial = crate::serial();
    let dir = spill_dir("sort");
    let out = sorted_dir(&dir);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let r = run_child("sort", FRAME_LIMIT, &dir);
    check_spilled_within_limit("sort", &r, FRAME_LIMIT, &dir);
    let files: usize = r.get("files").parse().unwrap();
    assert!(files > 1, "{r:?}");
    // The files in order: keys never increase, within a file or from one to the next.
    let mut previous = i64::MAX;
    let mut rows = 0usize;
    let mut sum = 0i64;
    for i in 0..files {
        let path = out.join(format!("sorted-{i}.parquet"));
        let c = read_parquet(path.to_str().unwrap())
            .unwrap()
            .compute()
            .unwrap();
        for batch in &c.batches {
            let k = batch
                .column_by_name("k")
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            for &v in k.values() {
                assert!(v <= previous, "file {i}: {v} after {previous}");
                previous = v;
                sum += v;
            }
            rows += batch.num_rows();
        }
    }
    assert_eq!(rows, GROUPBY_ROWS);
    let want: i64 = (0..GROUPBY_ROWS as i64).map(groupby_key).sum();
    assert_eq!(sum, want);
    std::fs::remove_dir_all(&out).ok();
    std::fs::remove_dir_all(&dir).ok();
}

/// Under a limit, `explain()` names each blocking operator with its share of what the
/// plan is projected to hold and the course it takes at the guessed sizes: the join of
/// the join scenario (its probe side guessed smaller than its build side, both over a 2
/// MiB task) is a grace hash join built on its left side, and a plan without a limit
/// says nothing of it.
#[test]
fn explain_names_each_blocking_operator_and_where_it_spills() {
    let _serial = crate::serial();
    let (probe, build) = join_inputs();
    let join = join_query(&probe, &build);

    let unlimited = join.explain().unwrap();
    assert!(!unlimited.contains("share ≈"), "{unlimited}");
    let dir = spill_dir("explain");
    let _guard = spill_under(FRAME_LIMIT, &dir);
    let joined = join.explain().unwrap();
    let line = |text: &str, what: &str| {
        text.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no line with {what:?} in:\n{text}"))
            .to_string()
    };
    // The notes follow the plan, after its memory-limit line.
    let notes = &joined[joined.find("memory-limit:").expect("a memory-limit note")..];
    let j = line(notes, "inner join on [k]: left");
    assert!(j.contains("grace hash join: the left side cut into"), "{j}");
    // The probe side's file reports about 10 MiB, the build side's about 68: in buckets
    // of two thirds of a 2 MiB task, which the 16 MiB the budget keeps holds.
    assert!(j.contains("all kept in memory with their tables"), "{j}");
    assert!(j.contains("streamed through them, never held"), "{j}");
    assert!(j.contains("% of the"), "{j}");
    let a = line(notes, "aggregate (no keys)");
    assert!(a.contains("never spilled"), "{a}");
    // The aggregation's line comes first, the join it reads from indented below it.
    assert!(
        notes.find("aggregate (no keys)") < notes.find("    inner join"),
        "{notes}"
    );
    drop(_guard);
    std::fs::remove_dir_all(&dir).ok();
}
