//! The user config file, end to end: the `tessera config` CLI run in a clean directory
//! with `XDG_CONFIG_HOME` pointing at a temporary config dir.

use std::path::PathBuf;
use std::process::Command;

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(d.join("tessera")).unwrap();
    d
}

fn tessera_config(xdg: &PathBuf, extra_env: &[(&str, &str)]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.arg("config")
        .current_dir(xdg) // no ./tessera.toml there
        .env("XDG_CONFIG_HOME", xdg)
        .env_remove("TESSERA_CONFIG");
    for (k, _) in std::env::vars() {
        if k.starts_with("TESSERA_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run tessera config");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no line for {key} in:\n{text}"))
}

#[test]
fn the_user_file_is_read_and_env_wins_over_it() {
    let dir = temp_dir("xdg");
    let file = dir.join("tessera").join("tessera.toml");
    std::fs::write(
        &file,
        "scheduler = \"single-threaded\"\n[array]\nchunk-size = \"64MiB\"\n",
    )
    .unwrap();
    let (ok, text) = tessera_config(&dir, &[]);
    assert!(ok, "{text}");
    let sched = line(&text, "scheduler");
    assert!(sched.contains("single-threaded"), "{sched}");
    assert!(sched.contains(&file.display().to_string()), "{sched}");
    assert!(line(&text, "array.chunk-size").contains("64MiB"));
    assert!(line(&text, "num-threads").contains("(default)"));

    let (ok, text) = tessera_config(&dir, &[("TESSERA_SCHEDULER", "threads")]);
    assert!(ok, "{text}");
    let sched = line(&text, "scheduler");
    assert!(
        sched.contains("threads") && sched.contains("env TESSERA_SCHEDULER"),
        "{sched}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_unknown_key_in_the_user_file_names_the_file_and_the_valid_keys() {
    let dir = temp_dir("xdg-bad");
    let file = dir.join("tessera").join("tessera.toml");
    std::fs::write(&file, "bogus = 1\n").unwrap();
    let (ok, text) = tessera_config(&dir, &[]);
    assert!(!ok);
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains("unknown key 'bogus'"), "{text}");
    assert!(text.contains("array.backend"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_near_miss_of_a_tessera_variable_is_an_error_and_other_tessera_variables_are_ignored() {
    let dir = temp_dir("env-typo");
    let (ok, text) = tessera_config(&dir, &[("TESSERA_SHEDULER", "threads")]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("TESSERA_SHEDULER") && text.contains("did you mean TESSERA_SCHEDULER"),
        "{text}"
    );
    // Another tool's variable with our prefix must not break every program.
    let (ok, text) = tessera_config(&dir, &[("TESSERA_DEPLOYMENT_COLOUR", "blue")]);
    assert!(ok, "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn num_threads_outside_its_range_is_refused_naming_the_range() {
    let dir = temp_dir("threads");
    for n in ["100000", "18446744073709551615", "-1"] {
        let (ok, text) = tessera_config(&dir, &[("TESSERA_NUM_THREADS", n)]);
        assert!(!ok, "{n}: {text}");
        assert!(
            text.contains("num-threads") && text.contains("1024"),
            "{text}"
        );
    }
    let (ok, text) = tessera_config(&dir, &[("TESSERA_NUM_THREADS", "1024")]);
    assert!(ok, "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_config_file_named_explicitly_must_exist_and_be_small() {
    let dir = temp_dir("named");
    let missing = dir.join("nope.toml");
    let (ok, text) = tessera_config(&dir, &[("TESSERA_CONFIG", missing.to_str().unwrap())]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("does not exist") && text.contains("nope.toml"),
        "{text}"
    );
    if std::path::Path::new("/dev/zero").exists() {
        // Finishes (bounded read) and says why.
        let (ok, text) = tessera_config(&dir, &[("TESSERA_CONFIG", "/dev/zero")]);
        assert!(!ok, "{text}");
        assert!(text.contains("larger than"), "{text}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_value_of_the_wrong_toml_type_is_refused() {
    let dir = temp_dir("toml-type");
    let file = dir.join("tessera").join("tessera.toml");
    for (body, want) in [
        (
            "num-threads = \"4\"\n",
            "a TOML string where an integer is expected",
        ),
        ("optimize = \"no\"\n", "a TOML string where a boolean"),
        (
            "scheduler = 1\n",
            "a TOML integer where a string is expected",
        ),
    ] {
        std::fs::write(&file, body).unwrap();
        let (ok, text) = tessera_config(&dir, &[]);
        assert!(!ok, "{body}: {text}");
        assert!(text.contains(want), "{body}: {text}");
    }
    std::fs::write(&file, "num-threads = 4\nmemory-limit = 1000000\n").unwrap();
    let (ok, text) = tessera_config(&dir, &[]);
    assert!(ok, "{text}");
    std::fs::remove_dir_all(&dir).ok();
}
