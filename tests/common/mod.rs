//! Helpers the integration test binaries share: reproducible data from the counter-based
//! generator, an element-wise comparison, and a naive reduction reference.

#![allow(dead_code)] // each binary uses its own subset

pub mod workloads;

use ndarray::{ArrayD, IxDyn};
use tessera::random::{Distribution, RandomSpec};
use tessera::{Array, DType};
use tessera_conformance::r#gen::Gen;

/// Quarter-rounded normal data (exact in sums of modest size) from the case stream.
pub fn data(g: &mut Gen, shape: &[usize]) -> ArrayD<f64> {
    let seed = g.next_u64();
    let n: usize = shape.iter().product();
    let s = RandomSpec {
        seed,
        stream: 0,
        dist: Distribution::Normal {
            mean: 0.0,
            std: 3.0,
        },
        dtype: DType::F64,
    };
    ArrayD::from_shape_vec(
        IxDyn(shape),
        (0..n as u64)
            .map(|i| (s.sample_f64(i) * 4.0).round() / 4.0)
            .collect(),
    )
    .unwrap()
}

pub fn close(a: &ArrayD<f64>, b: &ArrayD<f64>, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        let ok = (x.is_nan() && y.is_nan())
            || x == y
            || (x - y).abs() <= 1e-9 * (x.abs() + y.abs()).max(1.0);
        assert!(ok, "{what}: element {i}: got {x}, want {y}");
    }
}

pub fn f64s(a: &Array) -> ArrayD<f64> {
    let h = a.compute().unwrap();
    ArrayD::from_shape_vec(IxDyn(h.shape()), h.to_f64_vec()).unwrap()
}

pub fn naive_reduce(a: &ArrayD<f64>, axes: &[usize], f: impl Fn(&[f64]) -> f64) -> ArrayD<f64> {
    let shape: Vec<usize> = a
        .shape()
        .iter()
        .enumerate()
        .map(|(i, &n)| if axes.contains(&i) { 1 } else { n })
        .collect();
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); shape.iter().product()];
    let strides = tessera::chunks::c_strides(&shape);
    for (idx, &v) in a.indexed_iter() {
        let t: usize = (0..shape.len())
            .map(|i| {
                if axes.contains(&i) {
                    0
                } else {
                    idx[i] * strides[i]
                }
            })
            .sum();
        groups[t].push(v);
    }
    ArrayD::from_shape_vec(IxDyn(&shape), groups.iter().map(|g| f(g)).collect()).unwrap()
}

/// The Python interpreter (`$PYTHON`, else `python3`) when it can import every module in
/// `modules`; otherwise records that `test` was skipped, with the reason, and returns None.
pub fn python_with(test: &str, modules: &str) -> Option<String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = std::process::Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python);
    }
    tessera_conformance::skip::skip(
        test,
        &format!(
            "{python} cannot import {modules} (set PYTHON to an interpreter that can; .ci/run installs one)"
        ),
    );
    None
}

/// Runs `python script args...`, failing the test with its output when it fails; returns
/// its standard output.
pub fn run_python(python: &str, script: &str, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new(python)
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Writes `files` (name and text) into a fresh temporary folder named after `tag`, runs
/// `python script` with their paths as arguments, removes the folder, and returns the
/// JSON the script printed: the reference answers a test compares with.
pub fn python_json(
    python: &str,
    script: &str,
    tag: &str,
    files: &[(&str, String)],
) -> serde_json::Value {
    let dir = std::env::temp_dir().join(format!("tessera-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths: Vec<String> = files
        .iter()
        .map(|(name, text)| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p.to_string_lossy().into_owned()
        })
        .collect();
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let out = run_python(python, script, &args);
    std::fs::remove_dir_all(&dir).unwrap();
    serde_json::from_slice(&out).unwrap()
}

/// The ignored test `child` of this test binary, run as a process of its own with
/// `CHILD_TEST=1` and `env` set, the caller's `TESSERA_*` variables and `RUST_BACKTRACE`
/// removed (so the child's configuration and stderr are the test's alone). The child test
/// returns at once unless `CHILD_TEST` is set ([`is_child`]).
pub fn run_child(child: &str, env: &[(&str, &std::ffi::OsStr)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["--exact", child, "--ignored", "--nocapture"]);
    for (k, _) in std::env::vars() {
        if k.starts_with("TESSERA_") {
            cmd.env_remove(k);
        }
    }
    cmd.env_remove("RUST_BACKTRACE").env("CHILD_TEST", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the child test")
}

/// True in a process [`run_child`] started.
pub fn is_child() -> bool {
    std::env::var_os("CHILD_TEST").is_some()
}
