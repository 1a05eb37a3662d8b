//! `tessera-conformance`: run the conformance suite against a registered backend.
//!
//! ```text
//! tessera-conformance [--plugin LIB]... --backend NAME [--filter OP[,OP...]] [--seed N] [--json FILE] [--list] [--quiet]
//! tessera-conformance --frame-backend NAME [--frame-reference NAME] [--filter ...] [--seed N] [--json FILE] [--list] [--quiet]
//! ```
//!
//! `--plugin` loads a backend plugin library first (as `TESSERA_PLUGINS` would); with
//! one plugin and no `--backend`, the plugin's backend is checked.
//!
//! Prints the op x dtype matrix, every failure with its rerun line, and a summary; exits 0
//! when every case passed or was declared unsupported, 1 when any failed or errored, and 2
//! on a usage error. `--backend selftest-broken` and `--frame-backend selftest-broken-frame`
//! check the suites' own planted-fault backends (they must fail);
//! `--frame-reference selftest-wrong-reference` checks a backend against a reference with
//! planted faults, which the oracle reports as `suite`.

use std::process::ExitCode;

use tessera_conformance::frame::{frame_cases, selftest as frame_selftest};
use tessera_conformance::{
    cases, check_array_backend, check_frame_backend, check_frame_backend_against, selftest,
    Options, Report, DEFAULT_SEED,
};
use tessera_plugin_host::LoadedPlugin;
// Linked so `--backend sparse` finds it (its `inventory` registration survives linking).
use tessera_sparse as _;
// Linked so that `--backend cuda` reports why it is unavailable instead of "unknown".
use tessera_cuda as _;
use tessera_cuda_frame as _;

const USAGE: &str = "usage: tessera-conformance [--plugin LIB]... --backend NAME [--filter OP[,OP...]] [--seed N] [--json FILE] [--list] [--quiet]
       tessera-conformance --frame-backend NAME [--frame-reference NAME] [--filter SPEC] [--seed N] [--json FILE] [--list] [--quiet]

  --plugin LIB     load a backend plugin library, array or dataframe (repeatable); with
                   one plugin, --backend or --frame-backend defaults to its backend
  --backend NAME   a registered backend (`tessera backends` lists them), or selftest-broken
  --frame-backend NAME
                   run the dataframe suite (frame.* cases) on a registered dataframe
                   backend, or selftest-broken-frame
  --frame-reference NAME
                   the dataframe reference (default cpu); selftest-wrong-reference is
                   cpu with planted faults, which the oracle must report as `suite`
  --filter SPEC    ops (add, api.var), op/dtype (add/float32), case ids (add/float32/2),
                   or prefixes ending in * (api.*); comma-separated
  --seed N         the generation seed (default 1)
  --json FILE      also write the machine-readable report (schema: tessera-conformance/1)
  --list           print the selected case ids and exit
  --quiet          print only failures and the summary";

struct Args {
    plugins: Vec<String>,
    backend: Option<String>,
    frame_backend: Option<String>,
    frame_reference: Option<String>,
    filter: Option<String>,
    seed: u64,
    json: Option<String>,
    list: bool,
    quiet: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        plugins: Vec::new(),
        backend: None,
        frame_backend: None,
        frame_reference: None,
        filter: None,
        seed: DEFAULT_SEED,
        json: None,
        list: false,
        quiet: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--plugin" => a.plugins.push(value("--plugin")?),
            "--backend" => a.backend = Some(value("--backend")?),
            "--frame-backend" => a.frame_backend = Some(value("--frame-backend")?),
            "--frame-reference" => a.frame_reference = Some(value("--frame-reference")?),
            "--filter" => a.filter = Some(value("--filter")?),
            "--seed" => {
                let v = value("--seed")?;
                a.seed = v
                    .parse()
                    .map_err(|_| format!("--seed needs a non-negative integer, got '{v}'"))?;
            }
            "--json" => a.json = Some(value("--json")?),
            "--list" => a.list = true,
            "--quiet" => a.quiet = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument '{other}'")),
        }
    }
    Ok(a)
}

/// Writes `text` to `path` through a temporary file and a rename.
fn write_atomically(path: &str, text: &str) -> std::io::Result<()> {
    let tmp = format!("{path}.tmp{}", std::process::id());
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("error: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.frame_backend.is_some() && args.backend.is_some() {
        eprintln!("error: --backend and --frame-backend: one suite at a time\n{USAGE}");
        return ExitCode::from(2);
    }
    if args.list && args.frame_backend.is_none() {
        for c in cases(args.filter.as_deref()) {
            println!("{}", c.id);
        }
        return ExitCode::SUCCESS;
    }
    let (mut loaded, mut frames) = (Vec::new(), Vec::new());
    for path in &args.plugins {
        match tessera_plugin_host::load_any_plugin(path) {
            Ok(LoadedPlugin::Array(b)) => loaded.push(b.name().to_string()),
            Ok(LoadedPlugin::Frame(b)) => frames.push(b.name().to_string()),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let frame_backend = match (&args.frame_backend, frames.as_slice()) {
        (Some(n), _) => Some(n.clone()),
        (None, [only]) if args.backend.is_none() && loaded.is_empty() => Some(only.clone()),
        _ => None,
    };
    if let Some(name) = frame_backend {
        return run_frames(&name, &args);
    }
    let backend = match (args.backend.clone(), loaded.as_slice()) {
        (Some(b), _) => Some(b),
        (None, [only]) => Some(only.clone()),
        (None, _) => None,
    };
    let Some(name) = backend else {
        eprintln!("error: --backend is required\n{USAGE}");
        return ExitCode::from(2);
    };
    let backend = if name == selftest::NAME {
        Ok(selftest::broken())
    } else {
        tessera_core::registry::array_backend(&name)
    };
    let backend = match backend {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let options = run_options(&args, "--backend", &name);
    if cases(options.filter.as_deref()).is_empty() {
        eprintln!(
            "error: no case matches filter '{}' (try --list)",
            options.filter.as_deref().unwrap_or("")
        );
        return ExitCode::from(2);
    }
    let report = check_array_backend(&backend, &options);
    finish(&report, &args)
}

/// The suite's options from the arguments; with plugins loaded, the rerun line loads them
/// too and names the backend with `flag`.
fn run_options(args: &Args, flag: &str, name: &str) -> Options {
    let plugin_args: String = args
        .plugins
        .iter()
        .map(|p| format!("--plugin {p} "))
        .collect();
    Options {
        seed: args.seed,
        filter: args.filter.clone(),
        rerun: (!plugin_args.is_empty()).then(|| {
            format!(
                "tessera-conformance {plugin_args}{flag} {name} --filter {{id}} --seed {{seed}}"
            )
        }),
    }
}

/// The dataframe suite on backend `name`.
fn run_frames(name: &str, args: &Args) -> ExitCode {
    if args.list {
        for c in frame_cases(args.filter.as_deref()) {
            println!("{}", c.id);
        }
        return ExitCode::SUCCESS;
    }
    let backend = if name == frame_selftest::BROKEN_FRAME {
        frame_selftest::broken_frame_backend()
    } else {
        tessera_core::registry::dataframe_backend(name)
    };
    let backend = match backend {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let options = run_options(args, "--frame-backend", name);
    if frame_cases(options.filter.as_deref()).is_empty() {
        eprintln!(
            "error: no frame case matches filter '{}' (try --list)",
            options.filter.as_deref().unwrap_or("")
        );
        return ExitCode::from(2);
    }
    let report = match args.frame_reference.as_deref() {
        None => check_frame_backend(&backend, &options),
        Some(r) => {
            let reference = if r == frame_selftest::WRONG_REFERENCE {
                frame_selftest::wrong_reference()
            } else {
                tessera_core::registry::dataframe_backend(r)
            };
            match reference {
                Ok(reference) => check_frame_backend_against(&backend, &reference, &options),
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            }
        }
    };
    finish(&report, args)
}

/// Prints `report` as asked, writes its JSON, and gives the exit code.
fn finish(report: &Report, args: &Args) -> ExitCode {
    if !args.quiet {
        print!("{}", report.matrix());
    }
    for c in report.problems() {
        println!("{}", c.describe());
    }
    if let Some(e) = &report.setup_error {
        println!("suite could not run: {e}");
    }
    println!("{}", report.summary());
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report.to_json()).unwrap_or_default();
        if let Err(e) = write_atomically(path, &text) {
            eprintln!("error: cannot write {path}: {e}");
            return ExitCode::from(2);
        }
    }
    if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
