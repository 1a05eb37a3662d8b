//! Backend plugins loaded from shared libraries: each way loading can fail has a typed
//! error, and a plugin that panics or returns malformed data is refused while the host
//! keeps running. The libraries are the workspace's `plugins/` crates, built on demand.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use ndarray::{ArrayD, IxDyn};
use tessera::plugin::load_plugin;
use tessera::program::{BinaryOp, UnaryOp};
use tessera::{Array, BackendRef, DType, Error, HostArray, Scalar};
use tessera_conformance::cdylib;

fn lib(package: &str) -> PathBuf {
    cdylib::build(package).unwrap_or_else(|e| panic!("{e}"))
}

/// The example plugin (`loops`), loaded once for this test binary.
fn loops() -> &'static BackendRef {
    static B: OnceLock<BackendRef> = OnceLock::new();
    B.get_or_init(|| load_plugin(lib("tessera-plugin-example")).expect("example plugin loads"))
}

/// The deliberately faulty plugin, loaded once for this test binary.
fn faulty() -> &'static BackendRef {
    static B: OnceLock<BackendRef> = OnceLock::new();
    B.get_or_init(|| {
        load_plugin(lib("tessera-plugin-fixture-faulty")).expect("faulty plugin loads")
    })
}

fn f64_host(n: usize) -> HostArray {
    HostArray::F64(ArrayD::from_shape_vec(IxDyn(&[n]), (0..n).map(|i| i as f64).collect()).unwrap())
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-plugins-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_missing_file_is_a_load_error_naming_it() {
    let e = load_plugin("/nonexistent/dir/libnothing.so").unwrap_err();
    assert!(matches!(e, Error::PluginLoad { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("/nonexistent/dir/libnothing.so: no such file"),
        "{e}"
    );
}

#[test]
fn a_file_that_is_not_a_shared_library_is_refused() {
    let dir = temp_dir("notlib");
    let path = dir.join("libfake.so");
    std::fs::write(&path, "this is a text file, not ELF\n").unwrap();
    let e = load_plugin(&path).unwrap_err();
    assert!(matches!(e, Error::PluginLoad { .. }), "{e:?}");
    assert!(
        e.to_string().contains("not a loadable shared library"),
        "{e}"
    );
    std::fs::remove_dir_all(dir).ok();
}

/// The C library this process runs on: a real shared library that is no tessera plugin.
#[cfg(target_os = "linux")]
fn libc_path() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            let name = p.rsplit('/').next().unwrap_or("");
            name.starts_with("libc.so") || name.starts_with("libc-")
        })
        .map(PathBuf::from)
}

#[cfg(target_os = "linux")]
#[test]
fn a_library_without_the_plugin_symbols_is_refused() {
    let Some(libc) = libc_path() else {
        tessera_conformance::skip::skip(
            "a_library_without_the_plugin_symbols_is_refused",
            "this process maps no dynamic libc",
        );
        return;
    };
    let e = load_plugin(&libc).unwrap_err();
    assert!(matches!(e, Error::PluginLoad { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("does not export `tessera_plugin_abi_version`"),
        "{text}"
    );
}

#[test]
fn an_abi_version_mismatch_states_both_versions_and_calls_nothing() {
    // The fixture's entry point aborts the process if called: surviving this test is
    // the proof that the host checked the version first.
    let e = load_plugin(lib("tessera-plugin-fixture-old-abi")).unwrap_err();
    match &e {
        Error::PluginAbi {
            found, expected, ..
        } => {
            assert_eq!(*found, 0);
            assert_eq!(*expected, tessera_plugin_abi::ABI_VERSION);
        }
        other => panic!("expected PluginAbi, got {other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("ABI version 0") && text.contains("speaks version 1"),
        "{text}"
    );
}

#[test]
fn a_name_clash_is_an_error_not_an_override() {
    let first = loops();
    let e = load_plugin(lib("tessera-plugin-example")).unwrap_err();
    assert!(
        matches!(e, Error::DuplicateBackend { ref name } if name == "loops"),
        "{e:?}"
    );
    // The registered backend is still the first one.
    let registered = tessera::registry::array_backend("loops").unwrap();
    let x = registered.full(&[2], Scalar::F64(1.0)).unwrap();
    assert_eq!(
        first.to_host(&x).unwrap(),
        HostArray::full(&[2], Scalar::F64(1.0), DType::F64)
    );
}

#[test]
fn a_panicking_plugin_reports_the_panic_and_the_host_keeps_running() {
    let b = faulty();
    let x = b.from_host(&f64_host(4)).unwrap();
    for _ in 0..2 {
        let e = b.unary(UnaryOp::Neg, &x).unwrap_err();
        assert!(matches!(e, Error::Plugin { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("panicked") && text.contains("faulty: deliberate panic in negative"),
            "{text}"
        );
        // Later calls still work, on the same chunk.
        let y = b.binary(BinaryOp::Add, &x, &x).unwrap();
        assert_eq!(
            b.to_host(&y).unwrap().to_f64_vec(),
            vec![0.0, 2.0, 4.0, 6.0]
        );
    }
    // Through the user API: the computation fails with the panic message.
    let a = Array::from_host(f64_host(4), 2, Some("faulty")).unwrap();
    let e = (-&a).and_then(|n| n.compute()).unwrap_err();
    assert!(e.to_string().contains("deliberate panic"), "{e}");
}

#[test]
fn malformed_arrow_data_from_a_plugin_is_refused() {
    let b = faulty();
    let cases = [
        (7, "length 8"),
        (11, "format 'i'"),
        (13, "null data buffer"),
        (17, "null count"),
    ];
    for (n, why) in cases {
        let x = b.from_host(&f64_host(n)).unwrap();
        let e = b.to_host(&x).unwrap_err();
        assert!(matches!(e, Error::Plugin { .. }), "{n}: {e:?}");
        let text = e.to_string();
        assert!(
            text.contains("malformed Arrow C data") && text.contains(why),
            "{n}: {text}"
        );
    }
    // Well-formed exports still come through.
    let x = b.from_host(&f64_host(5)).unwrap();
    assert_eq!(b.to_host(&x).unwrap(), f64_host(5));
}

#[test]
fn a_chunk_that_breaks_the_protocol_is_refused() {
    let e = faulty().full(&[2, 3], Scalar::F64(13.0)).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("shape [1]") && text.contains("requires float64 of shape [2, 3]"),
        "{text}"
    );
}

#[test]
fn chunks_of_other_backends_are_refused_before_crossing() {
    let cpu = tessera::registry::array_backend("cpu").unwrap();
    let c = cpu.from_host(&f64_host(3)).unwrap();
    let e = loops().unary(UnaryOp::Neg, &c).unwrap_err();
    assert!(matches!(e, Error::ForeignChunk { .. }), "{e:?}");
}

#[test]
fn the_plugin_computes_what_the_cpu_computes() {
    loops();
    let job = |backend: &str| -> tessera::Result<f64> {
        let x = Array::arange(0.0, 1000.0, 1.0, DType::F64, 128, Some(backend))?;
        ((&x * &x)? - 3.0)?.sum(None, false)?.compute_f64()
    };
    assert_eq!(job("loops").unwrap(), job("cpu").unwrap());
}

fn tessera_cli(args: &[&str], dir: &PathBuf, env: &[(&str, &std::ffi::OsStr)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args(args).current_dir(dir).env("XDG_CONFIG_HOME", dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("TESSERA_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run tessera");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn plugins_load_from_the_config_file_and_from_the_environment() {
    let path = lib("tessera-plugin-example");
    let dir = temp_dir("config");
    std::fs::create_dir_all(dir.join("tessera")).unwrap();
    let toml = format!("plugins = [{:?}]\n", path.display().to_string());
    std::fs::write(dir.join("tessera").join("tessera.toml"), toml).unwrap();
    let (ok, text) = tessera_cli(&["backends"], &dir, &[]);
    assert!(ok, "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("loops"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("Plugin(") && line.contains("available"),
        "{line}"
    );

    // The environment wins over the file: a broken path there is a loud error.
    let bogus = dir.join("libmissing.so");
    let (ok, text) = tessera_cli(
        &["backends"],
        &dir,
        &[("TESSERA_PLUGINS", bogus.as_os_str())],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("configured plugin could not be loaded") && text.contains("libmissing.so"),
        "{text}"
    );

    // The environment alone (no file).
    std::fs::remove_file(dir.join("tessera").join("tessera.toml")).unwrap();
    let (ok, text) = tessera_cli(
        &["backends"],
        &dir,
        &[("TESSERA_PLUGINS", path.as_os_str())],
    );
    assert!(ok && text.lines().any(|l| l.starts_with("loops")), "{text}");
    std::fs::remove_dir_all(dir).ok();
}

/// `target/<profile>/examples/NAME` of the facade crate (see [`example_binary_of`]).
pub(crate) fn example_binary(name: &str) -> PathBuf {
    example_binary_of("tessera", name)
}

/// `target/<profile>/examples/NAME` of `package`: built by `cargo test` next to this test
/// binary, or here when this test runs alone.
pub(crate) fn example_binary_of(package: &str, name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>");
    let path = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", package, "--example", name])
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo build --example {name} failed");
    }
    path
}

#[test]
fn backend_switch_runs_unchanged_on_the_plugin_backend() {
    let path = lib("tessera-plugin-example");
    let exe = example_binary("backend_switch");
    assert!(
        exe.exists(),
        "cargo test builds examples; {} is missing",
        exe.display()
    );
    let dir = temp_dir("switch");
    let run = |env: &[(&str, &std::ffi::OsStr)]| {
        let mut cmd = Command::new(&exe);
        cmd.current_dir(&dir).env("XDG_CONFIG_HOME", &dir);
        for (k, _) in std::env::vars() {
            if k.starts_with("TESSERA_") {
                cmd.env_remove(k);
            }
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run backend_switch");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix("threads: "))
            .unwrap_or_else(|| panic!("no result in:\n{text}"))
            .to_string();
        (text, value)
    };
    let (text, on_plugin) = run(&[
        ("TESSERA_PLUGINS", path.as_os_str()),
        ("TESSERA_ARRAY_BACKEND", std::ffi::OsStr::new("loops")),
    ]);
    assert!(
        text.contains("array.backend = loops (env TESSERA_ARRAY_BACKEND)"),
        "{text}"
    );
    assert!(text.contains("backend=loops"), "{text}");
    let (_, on_cpu) = run(&[]);
    // `loops` sums with its own loops, in another order than the CPU's pairwise tiles:
    // the same value up to float reassociation.
    let (p, c): (f64, f64) = (on_plugin.parse().unwrap(), on_cpu.parse().unwrap());
    assert!((p - c).abs() <= 1e-12 * c.abs(), "{on_plugin} vs {on_cpu}");
    std::fs::remove_dir_all(dir).ok();
}

/// A project-local `tessera.toml` (the working directory) cannot load native code on its
/// own: the user's config or the environment must allow it, and the project file cannot
/// set that permission itself.
#[test]
fn a_project_config_may_not_name_plugins_unless_the_user_allows_it() {
    let path = lib("tessera-plugin-example");
    let dir = temp_dir("project");
    let toml = format!("plugins = [{:?}]\n", path.display().to_string());
    std::fs::write(dir.join("tessera.toml"), &toml).unwrap();
    let (ok, text) = tessera_cli(&["backends"], &dir, &[]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("may not load native code on its own")
            && text.contains("TESSERA_ALLOW_PROJECT_PLUGINS"),
        "{text}"
    );
    let yes = std::ffi::OsStr::new("true");
    let (ok, text) = tessera_cli(
        &["backends"],
        &dir,
        &[("TESSERA_ALLOW_PROJECT_PLUGINS", yes)],
    );
    assert!(ok && text.lines().any(|l| l.starts_with("loops")), "{text}");
    // The user-level config may allow it too.
    std::fs::create_dir_all(dir.join("tessera")).unwrap();
    std::fs::write(
        dir.join("tessera").join("tessera.toml"),
        "allow-project-plugins = true\n",
    )
    .unwrap();
    let (ok, text) = tessera_cli(&["backends"], &dir, &[]);
    assert!(ok, "{text}");
    // The project file cannot vouch for itself.
    std::fs::remove_file(dir.join("tessera").join("tessera.toml")).unwrap();
    std::fs::write(
        dir.join("tessera.toml"),
        format!("allow-project-plugins = true\n{toml}"),
    )
    .unwrap();
    let (ok, text) = tessera_cli(&["backends"], &dir, &[]);
    assert!(!ok && text.contains("cannot vouch"), "{text}");
    std::fs::remove_dir_all(dir).ok();
}

/// A bare file name is the file in the working directory, loaded by its absolute path —
/// never a library of that name from the system's search path.
#[test]
fn a_bare_plugin_name_loads_exactly_that_file() {
    let path = lib("tessera-plugin-example");
    let dir = temp_dir("bare");
    let name = "libmine.so";
    std::fs::copy(&path, dir.join(name)).unwrap();
    let (ok, text) = tessera_cli(
        &["backends"],
        &dir,
        &[("TESSERA_PLUGINS", std::ffi::OsStr::new(name))],
    );
    assert!(ok, "{text}");
    let resolved = std::fs::canonicalize(dir.join(name)).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("loops"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(&resolved.display().to_string()), "{line}");
    // A name that exists only on the system's library path is not found here.
    let (ok, text) = tessera_cli(
        &["backends"],
        &dir,
        &[("TESSERA_PLUGINS", std::ffi::OsStr::new("libm.so.6"))],
    );
    assert!(!ok && text.contains("no such file"), "{text}");
    std::fs::remove_dir_all(dir).ok();
}

/// `tessera backends` with the plugin `target` configured: refused with a message saying
/// `says` and how to opt in, then loaded once `TESSERA_PLUGINS_ALLOW_WRITABLE` opts in.
#[cfg(unix)]
fn refused_unless_allowed(dir: &PathBuf, target: &std::path::Path, says: &str) {
    let (ok, text) = tessera_cli(
        &["backends"],
        dir,
        &[("TESSERA_PLUGINS", target.as_os_str())],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains(says) && text.contains("TESSERA_PLUGINS_ALLOW_WRITABLE"),
        "{text}"
    );
    let yes = std::ffi::OsStr::new("true");
    let (ok, text) = tessera_cli(
        &["backends"],
        dir,
        &[
            ("TESSERA_PLUGINS", target.as_os_str()),
            ("TESSERA_PLUGINS_ALLOW_WRITABLE", yes),
        ],
    );
    assert!(ok && text.lines().any(|l| l.starts_with("loops")), "{text}");
}

/// A plugin in a directory others can write to is refused unless the user opts in.
#[cfg(unix)]
#[test]
fn a_plugin_others_could_replace_is_refused_with_how_to_opt_in() {
    use std::os::unix::fs::PermissionsExt;
    let path = lib("tessera-plugin-example");
    let dir = temp_dir("writable");
    let shared = dir.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let target = shared.join("libloops.so");
    std::fs::copy(&path, &target).unwrap();
    refused_unless_allowed(&dir, &target, "writable by everyone");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(dir).ok();
}

/// A plugin library owned by another user (who could replace it) is refused even when no
/// permission bit lets others write to it, as ssh refuses such keys; the opt-out still
/// works. Needs root, to give the file away.
#[cfg(unix)]
#[test]
fn a_plugin_owned_by_another_user_is_refused() {
    use std::os::unix::fs::{chown, MetadataExt};
    let path = lib("tessera-plugin-example");
    let dir = temp_dir("owner");
    let target = dir.join("libloops.so");
    std::fs::copy(&path, &target).unwrap();
    if chown(&target, Some(4242), None).is_err() {
        tessera_conformance::skip::skip(
            "a_plugin_owned_by_another_user_is_refused",
            "cannot chown (not root)",
        );
        std::fs::remove_dir_all(dir).ok();
        return;
    }
    assert_eq!(std::fs::metadata(&target).unwrap().uid(), 4242);
    refused_unless_allowed(&dir, &target, "is owned by user 4242");
    std::fs::remove_dir_all(dir).ok();
}

/// A panic caught at a task boundary is reported once, as the typed error that carries its
/// message, and not also printed to stderr by the panic hook (a Parquet decoder's panic
/// reached stderr before). Run in a child process, whose stderr is this test's to read.
#[test]
fn a_caught_panic_is_an_error_and_not_also_printed() {
    let out = crate::common::run_child("plugins::caught_panic_child", &[]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("decoder blew up: boom in the decoder"),
        "{stdout}"
    );
    assert!(
        !stderr.contains("boom in the decoder"),
        "printed too:\n{stderr}"
    );
}

/// The child of the test above (skipped unless it is run as that child).
#[test]
#[ignore = "run by a_caught_panic_is_an_error_and_not_also_printed"]
fn caught_panic_child() {
    if !crate::common::is_child() {
        return;
    }
    let r: tessera::Result<()> = tessera_core::error::catch_panic(
        || panic!("boom in the decoder"),
        |m| tessera::Error::Internal(format!("decoder blew up: {m}")),
    );
    println!("error: {}", r.unwrap_err());
}

/// The example plugin reads nothing for an empty slice of an expanded, reversed array
/// (the cases of `arrays.rs`).
#[test]
fn empty_slices_of_expanded_and_reversed_arrays_read_nothing_through_a_plugin() {
    let name = loops().name().to_string();
    crate::arrays::empty_slices_of_expanded_and_reversed_arrays_read_nothing(&name);
}
