//! The examples the README points to, run with small arguments as a user would, each
//! checked by what it prints: a JSON line's fields where it prints one, its closing
//! sentence otherwise. (`custom_backend`, `custom_frame_backend`, `backend_switch` and
//! `tpch` run elsewhere: as test targets, in `plugins`, and in `.ci/run` against DuckDB.)

use std::path::Path;
use std::process::Command;

use crate::plugins::{example_binary, example_binary_of};

/// Runs `exe` with `args` in `dir`; its standard output, or the test fails with both
/// streams.
fn run(exe: &Path, args: &[&str], dir: &Path) -> String {
    let out = Command::new(exe)
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", exe.display()));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "{} {args:?}:\n{stdout}\n{stderr}",
        exe.display()
    );
    stdout
}

/// Every JSON object line of `text`.
fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-examples-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn seed_headline_answers_the_expected_sum() {
    let d = scratch("headline");
    let out = run(
        &example_binary_of("tessera-array", "seed_headline"),
        &["2000", "500"],
        &d,
    );
    let line = &json_lines(&out)[0];
    assert_eq!(line["workload"], "seed_headline");
    assert_eq!(line["backend"], "cpu");
    // (x + 1)[::2, ::2].sum() of N(10, 1): about 11 per kept element.
    let rel = line["rel_error"].as_f64().unwrap();
    assert!(rel < 1e-3, "{line}");
    assert_eq!(line["expected"].as_f64().unwrap(), 11.0 * 1000.0 * 1000.0);
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn taxi_groups_trips_by_passengers_and_hours() {
    let d = scratch("taxi");
    let out = run(&example_binary("taxi"), &["--rows", "2000", "--quiet"], &d);
    let lines = json_lines(&out);
    let by = |q: &str| {
        lines
            .iter()
            .find(|l| l["query"] == q)
            .unwrap_or_else(|| panic!("{q}: {out}"))
    };
    assert_eq!(by("len")["rows"], 2000);
    assert_eq!(by("groupby_passenger_count_mean_distance")["groups"], 7);
    assert_eq!(by("tip_fraction_by_hour")["groups"], 24);
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn trips_analytics_runs_its_five_steps() {
    let d = scratch("trips");
    let out = run(&example_binary("trips_analytics"), &["--rows", "2000"], &d);
    assert!(out.contains("5. a 1% sample: 20 of 2000 trips"), "{out}");
    assert!(
        out.contains("distinct (passenger count, weekday) pairs:"),
        "{out}"
    );
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn genotype_pca_gets_the_same_singular_values_from_its_compressed_copy() {
    let d = scratch("genotype");
    let out = run(&example_binary("genotype_pca"), &["200", "100"], &d);
    assert!(
        out.contains("same singular values from the Zarr-compressed copy"),
        "{out}"
    );
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn profile_writes_a_trace_and_a_report_per_workload() {
    let d = scratch("profile");
    let dir = d.join("out");
    let args = [
        "--n",
        "1000",
        "--chunk",
        "250",
        "--rows",
        "2000",
        "--out",
        dir.to_str().unwrap(),
    ];
    let out = run(&example_binary("profile"), &args, &d);
    let lines = json_lines(&out);
    assert!(lines.len() >= 2, "{out}");
    for l in &lines {
        assert!(l["tasks"].as_u64().unwrap() > 0, "{l}");
        for key in ["trace", "html"] {
            let path = l[key].as_str().unwrap();
            assert!(
                Path::new(path).metadata().unwrap().len() > 0,
                "{key} of {l}"
            );
        }
    }
    std::fs::remove_dir_all(d).ok();
}

#[test]
fn zarr_svd_agrees_with_the_exact_svd() {
    let d = scratch("zarr-svd");
    let store = d.join("svd.zarr");
    let args = [
        "--rows",
        "2000",
        "--cols",
        "20",
        "--store",
        store.to_str().unwrap(),
    ];
    let out = run(&example_binary("zarr_svd"), &args, &d);
    let lines = json_lines(&out);
    let top = |step: &str| -> Vec<f64> {
        let l = lines
            .iter()
            .find(|l| l["step"] == step)
            .unwrap_or_else(|| panic!("{step}: {out}"));
        l["top"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    };
    let (exact, sketched) = (top("svd"), top("svd_compressed"));
    assert_eq!(exact.len(), 5);
    for (a, b) in exact.iter().zip(&sketched) {
        assert!((a - b).abs() <= 1e-9 * a.abs(), "{exact:?} vs {sketched:?}");
    }
    std::fs::remove_dir_all(d).ok();
}
