//! # tessera-config
//!
//! The keys every layer of tessera reads (`array.backend`, `scheduler`, `memory-limit`,
//! ...), in a crate of their own beneath the protocol: they know nothing of arrays, frames
//! or backends, only names, defaults, validators and where a value came from. Errors are
//! [`ConfigError`]s, which `tessera-core` turns into its `Error` (so `?` works anywhere);
//! `tessera_core::config` re-exports this crate.
//!
//! Layered configuration, later layers win:
//!
//! 1. built-in defaults;
//! 2. `tessera.toml` in the working directory;
//! 3. the user's config file (`$XDG_CONFIG_HOME/tessera/tessera.toml`, else
//!    `~/.config/tessera/tessera.toml`; `TESSERA_CONFIG` names another file);
//! 4. environment variables (`TESSERA_ARRAY_BACKEND`, `TESSERA_SCHEDULER`, ...);
//! 5. scoped overrides in code ([`set`]), undone when the returned guard drops.
//!
//! Files are read once per process (call [`reload`] after changing them); the environment
//! and overrides are read at every lookup. Unknown keys in a file or in [`set`] are errors
//! that list the valid keys, and every value is validated — its TOML type too — with a
//! message naming where it came from. A `TESSERA_*` variable that is not a key is an error
//! with "did you mean" when it is a near miss of one (a typo would otherwise be ignored),
//! and a logged warning otherwise (other tools may use the prefix). A file named by
//! `TESSERA_CONFIG` must exist; files are read up to [`MAX_CONFIG_BYTES`].
//!
//! ## Scoped overrides across threads
//! Like `dask.config.set`, an override is **process-wide**: while a guard lives, every
//! thread (including the scheduler's workers) sees the value. Guards nest; dropping one
//! removes exactly its own layer even when guards are dropped out of order, and later
//! layers win. Tests that run in parallel and change config should therefore pass an
//! explicit backend or scheduler instead, or serialise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, RwLock};

/// What can go wrong reading or setting configuration; the protocol turns it into its
/// `Error::Config` or `Error::Io` (so `?` works in every tessera function).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// An unknown key, a bad value, an unreadable file: the message names what and where.
    #[error("config: {0}")]
    Invalid(String),
    /// A config file that could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl ConfigError {
    fn io(path: &Path, source: std::io::Error) -> ConfigError {
        ConfigError::Io {
            path: path.display().to_string(),
            source,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// Parses a byte size such as `128MiB`, `1 GB`, `4096`, `2.5GiB`.
pub fn parse_bytes(s: &str) -> Option<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.trim().parse().ok()?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" | "k" => 1024.0,
        "mib" | "m" => 1024.0 * 1024.0,
        "gib" | "g" => 1024.0 * 1024.0 * 1024.0,
        "tib" | "t" => 1024.0f64.powi(4),
        _ => return None,
    };
    if value < 0.0 || !value.is_finite() {
        return None;
    }
    Some((value * mult).round() as u64)
}

/// A configuration key: its name, environment variable, default and meaning.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// Dotted name as in `tessera.toml` (`array.backend`).
    pub name: &'static str,
    /// The environment variable.
    pub env: &'static str,
    /// Default value (text).
    pub default: &'static str,
    /// One-line description.
    pub doc: &'static str,
}

/// Every configuration key tessera understands.
pub const KEYS: &[Key] = &[
    Key {
        name: "array.backend",
        env: "TESSERA_ARRAY_BACKEND",
        default: "cpu",
        doc: "backend new arrays are created on (see `tessera backends`)",
    },
    Key {
        name: "dataframe.backend",
        env: "TESSERA_DATAFRAME_BACKEND",
        default: "cpu",
        doc: "backend new dataframes are created on (see `tessera backends`)",
    },
    Key {
        name: "dataframe.fallback",
        env: "TESSERA_DATAFRAME_FALLBACK",
        default: "allow",
        doc: "what a dataframe backend does with a step it cannot run natively (the `cuda` backend's host fallbacks, which `explain()` lists): `allow` runs it on the host, recorded and logged; `error` refuses it with the reason",
    },
    Key {
        name: "scheduler",
        env: "TESSERA_SCHEDULER",
        default: "threads",
        doc: "`threads` (parallel, rayon), `single-threaded` (debugging, deterministic order) or `mpi` (every rank of an `mpirun`/`srun` job runs the program; needs the `mpi` feature)",
    },
    Key {
        name: "distributed.timeout",
        env: "TESSERA_DISTRIBUTED_TIMEOUT",
        default: "600s",
        doc: "under `scheduler = \"mpi\"`, how long a rank waits for another rank's data with nothing else happening before it reports the wait and stops the job",
    },
    Key {
        name: "num-threads",
        env: "TESSERA_NUM_THREADS",
        default: "0",
        doc: "worker threads of the threaded scheduler; 0 = one per core",
    },
    Key {
        name: "tune-allocator",
        env: "TESSERA_TUNE_ALLOCATOR",
        default: "true",
        doc: "on Linux with glibc, keep freed column buffers in the process for reuse (malloc's mmap threshold fixed at 64 MiB, trimming past 256 MiB), set when the first worker pool starts; `false` leaves malloc as the program set it",
    },
    Key {
        name: "array.chunk-size",
        env: "TESSERA_ARRAY_CHUNK_SIZE",
        default: "128MiB",
        doc: "byte target of `auto` chunks",
    },
    Key {
        name: "array.split-every",
        env: "TESSERA_ARRAY_SPLIT_EVERY",
        default: "16",
        doc: "fan-in of tree reductions (chunks combined per task, at least 2)",
    },
    Key {
        name: "memory-limit",
        env: "TESSERA_MEMORY_LIMIT",
        default: "none",
        doc: "the memory budget in bytes (`none` = no limit): a plan over it spills what it keeps to `spill-dir`, and is refused before it starts when even that cannot fit",
    },
    Key {
        name: "spill-dir",
        env: "TESSERA_SPILL_DIR",
        default: "",
        doc: "where plans over `memory-limit` spill (empty = the system temp dir; `none` = never spill, refuse instead)",
    },
    Key {
        name: "device.memory-limit",
        env: "TESSERA_DEVICE_MEMORY_LIMIT",
        default: "80%",
        doc: "device memory each GPU of the `cuda` backends may hold: a share of the card such as `80%`, a byte size such as `20GiB`, or `none`; past it the least recently used buffers spill to host memory (`device.host-limit`), then to `spill-dir`, and come back when a kernel reads them (read when the backend opens)",
    },
    Key {
        name: "device.host-limit",
        env: "TESSERA_DEVICE_HOST_LIMIT",
        default: "memory-limit",
        doc: "host memory that buffers spilled from GPUs may hold together before the least recently used go on to `spill-dir`: a byte size, `memory-limit` (as much as `memory-limit`; no bound when that is `none`) or `none` (read when the backend opens)",
    },
    Key {
        name: "device.ordinal",
        env: "TESSERA_DEVICE_ORDINAL",
        default: "auto",
        doc: "which GPUs the `cuda` backends open: `auto` (under `scheduler = \"mpi\"` each rank the one of its local rank on its node, modulo the devices it sees; otherwise every visible device), `all`, or one device's index (read when the backend opens)",
    },
    Key {
        name: "progress",
        env: "TESSERA_PROGRESS",
        default: "auto",
        doc: "progress on stderr: `auto` (a bar after a second, when stderr is a terminal), `always` (plain lines when it is not), `never`",
    },
    Key {
        name: "optimize",
        env: "TESSERA_OPTIMIZE",
        default: "true",
        doc: "fuse blockwise chains and push slices into sources; for frames, prune columns, push predicates and joins down and read columns in their stored forms; `false` materialises every intermediate chunk and runs frame plans as written, as Dask does (for comparisons and debugging)",
    },
    Key {
        name: "plugins",
        env: "TESSERA_PLUGINS",
        default: "",
        doc: "backend plugins (shared libraries) to load: a TOML list of paths, or a path list in the environment (`:`-separated on Unix)",
    },
    Key {
        name: "allow-project-plugins",
        env: "TESSERA_ALLOW_PROJECT_PLUGINS",
        default: "false",
        doc: "let a `tessera.toml` in the working directory name plugins (native code); only your user config or the environment can set this",
    },
    Key {
        name: "plugins-allow-writable",
        env: "TESSERA_PLUGINS_ALLOW_WRITABLE",
        default: "false",
        doc: "load plugin libraries that users other than their owner could replace (the file or a directory above it group- or world-writable); only your user config or the environment can set this",
    },
    Key {
        name: "storage.endpoint",
        env: "TESSERA_STORAGE_ENDPOINT",
        default: "",
        doc: "object-store endpoint URL for s3:// (an S3-compatible server such as MinIO); empty = AWS_ENDPOINT_URL, else the provider's own",
    },
    Key {
        name: "storage.region",
        env: "TESSERA_STORAGE_REGION",
        default: "",
        doc: "object-store region; empty = AWS_REGION / AWS_DEFAULT_REGION, else us-east-1",
    },
    Key {
        name: "storage.allow-http",
        env: "TESSERA_STORAGE_ALLOW_HTTP",
        default: "false",
        doc: "allow plain-http object-store endpoints (local test servers); AWS_ALLOW_HTTP=true does too",
    },
    Key {
        name: "storage.retries",
        env: "TESSERA_STORAGE_RETRIES",
        default: "5",
        doc: "retries of a failed object-store request (transient errors, with exponential backoff from 100 ms)",
    },
    Key {
        name: "storage.timeout",
        env: "TESSERA_STORAGE_TIMEOUT",
        default: "30s",
        doc: "time limit of one object-store request; one request and all its retries get (retries + 1) times this",
    },
];

/// Keys a project-local `tessera.toml` may not set: they decide whether native code a
/// project names is trusted, and a project cannot vouch for itself.
const TRUST_KEYS: &[&str] = &["allow-project-plugins", "plugins-allow-writable"];

/// The most worker threads `num-threads` accepts: beyond this a pool only thrashes, and an
/// accidental huge value would start a thread storm that never finishes.
pub const MAX_THREADS: usize = 1024;

/// The largest config file read (1 MiB): a config is a few lines, and a name such as
/// `/dev/zero` must fail, not read forever.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in default.
    Default,
    /// A config file.
    File(PathBuf),
    /// An environment variable.
    Env(&'static str),
    /// A scoped override in code.
    Override,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Env(v) => write!(f, "env {v}"),
            Source::Override => f.write_str("override in code"),
        }
    }
}

fn key(name: &str) -> Result<&'static Key> {
    KEYS.iter().find(|k| k.name == name).ok_or_else(|| {
        ConfigError::Invalid(format!(
            "unknown key '{name}'; valid keys: {}",
            KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
        ))
    })
}

/// Validates a value for a key; `origin` names where it came from in the error.
fn validate(k: &Key, value: &str, origin: &str) -> Result<()> {
    let bad = |what: &str| {
        Err(ConfigError::Invalid(format!(
            "{origin}: {} = '{value}': expected {what}",
            k.name
        )))
    };
    let expected = match k.name {
        "scheduler" if parse_scheduler(value).is_none() => "`threads`, `single-threaded` or `mpi`",
        "distributed.timeout" if parse_seconds(value).is_none() => {
            "a positive duration such as `600s`, `500ms` or `10m`"
        }
        "num-threads"
            if value
                .trim()
                .parse::<usize>()
                .map_or(true, |n| n > MAX_THREADS) =>
        {
            "an integer from 0 (one per core) to 1024 (more workers than that only thrash)"
        }
        "array.chunk-size" if parse_bytes(value).is_none_or(|b| b == 0) => {
            "a byte size such as `128MiB` or `64MB`"
        }
        "array.split-every" if value.trim().parse::<usize>().map_or(true, |v| v < 2) => {
            "an integer of at least 2"
        }
        "memory-limit"
            if !matches!(value.trim(), "none" | "")
                && parse_bytes(value).is_none_or(|b| b == 0) =>
        {
            // 0 would refuse every plan; "no limit" is `none`.
            "a byte size above 0 such as `8GiB`, or `none` for no limit"
        }
        "device.memory-limit" if parse_device_limit(value).is_none() => {
            "a share of the card such as `80%` (above 0, at most 100), a byte size above 0 such as `20GiB`, or `none`"
        }
        "device.ordinal" if parse_device_ordinal(value).is_none() => {
            "`auto`, `all` or a device index such as `0`"
        }
        "device.host-limit"
            if !matches!(value.trim(), "none" | "memory-limit")
                && parse_bytes(value).is_none() =>
        {
            "a byte size such as `16GiB`, `memory-limit` or `none`"
        }
        "array.backend" | "dataframe.backend" if value.trim().is_empty() => "a backend name",
        "dataframe.fallback" if parse_fallback(value).is_none() => "`allow` or `error`",
        "progress" if !matches!(value.trim(), "auto" | "always" | "never") => {
            "`auto`, `always` or `never`"
        }
        "storage.retries" if value.trim().parse::<u32>().map_or(true, |n| n > 100) => {
            "an integer from 0 to 100"
        }
        "storage.timeout" if parse_seconds(value).is_none() => {
            "a duration such as `30s`, `500ms` or `2m`"
        }
        "storage.endpoint"
            if !(value.trim().is_empty()
                || value.starts_with("http://")
                || value.starts_with("https://")) =>
        {
            "an http:// or https:// URL, or nothing"
        }
        "optimize"
        | "tune-allocator"
        | "allow-project-plugins"
        | "plugins-allow-writable"
        | "storage.allow-http"
            if parse_bool(value).is_none() =>
        {
            "`true` or `false`"
        }
        _ if value.starts_with("<a TOML ") => {
            return Err(ConfigError::Invalid(format!(
                "{origin}: {} = {}",
                k.name,
                value.trim_start_matches('<').trim_end_matches('>')
            )))
        }
        "plugins" if value.starts_with('<') => "a list of paths to plugin libraries",
        _ => return Ok(()),
    };
    bad(expected)
}

struct FileLayer {
    path: PathBuf,
    values: BTreeMap<String, String>,
    /// The project-local `tessera.toml` (working directory), which is not trusted to
    /// name plugins on its own.
    project: bool,
}

/// The TOML types a key's value may have in a file.
fn toml_type_ok(name: &str, v: &toml::Value) -> Option<&'static str> {
    use toml::Value::*;
    let (ok, expected) = match name {
        "num-threads" | "array.split-every" => (matches!(v, Integer(_)), "an integer"),
        "optimize"
        | "tune-allocator"
        | "allow-project-plugins"
        | "plugins-allow-writable"
        | "storage.allow-http" => (matches!(v, Boolean(_)), "a boolean (true or false)"),
        "storage.retries" => (matches!(v, Integer(_)), "an integer"),
        "array.chunk-size" | "memory-limit" | "device.memory-limit" | "device.host-limit" => (
            matches!(v, String(_) | Integer(_)),
            "a string such as \"8GiB\" or an integer number of bytes",
        ),
        "plugins" => (
            matches!(v, String(_)) || matches!(v, Array(a) if a.iter().all(|i| i.is_str())),
            "a list of paths",
        ),
        _ => (matches!(v, String(_)), "a string"),
    };
    (!ok).then_some(expected)
}

fn flatten(prefix: &str, table: &toml::Table, out: &mut BTreeMap<String, String>) {
    for (k, v) in table {
        let name = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if !v.is_table() && key(&name).is_ok() {
            if let Some(expected) = toml_type_ok(&name, v) {
                out.insert(
                    name,
                    format!("<a TOML {} where {expected} is expected>", v.type_str()),
                );
                continue;
            }
        }
        match v {
            toml::Value::Table(t) => flatten(&name, t, out),
            toml::Value::String(s) => {
                out.insert(name, s.clone());
            }
            toml::Value::Integer(i) => {
                out.insert(name, i.to_string());
            }
            toml::Value::Float(f) => {
                out.insert(name, f.to_string());
            }
            toml::Value::Boolean(b) => {
                out.insert(name, b.to_string());
            }
            // A list of strings (`plugins = [...]`) becomes a platform path list.
            toml::Value::Array(items) if name == "plugins" && items.iter().all(|i| i.is_str()) => {
                let paths = items.iter().filter_map(|i| i.as_str());
                match std::env::join_paths(paths) {
                    Ok(joined) => {
                        out.insert(name, joined.to_string_lossy().into_owned());
                    }
                    Err(_) => {
                        out.insert(name, format!("<a path in {k} contains the list separator>"));
                    }
                }
            }
            // Other arrays and datetimes are invalid for every key; `validate` reports them.
            _ => {
                out.insert(name, format!("<unsupported TOML value for {k}>"));
            }
        }
    }
}

/// Reads a config file: `None` when it does not exist and `required` is false (the
/// default locations); an error when a file named explicitly (`TESSERA_CONFIG`) is missing,
/// is larger than [`MAX_CONFIG_BYTES`], or is not UTF-8 TOML.
fn read_file(path: &Path, required: bool, project: bool) -> Result<Option<FileLayer>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ConfigError::Invalid(format!(
            "TESSERA_CONFIG names {}, which does not exist; point it at a tessera.toml or unset it",
            path.display()
        )))
        }
        Err(e) => return Err(ConfigError::io(path, e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ConfigError::io(path, e))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::Invalid(format!(
            "{}: larger than {MAX_CONFIG_BYTES} bytes; a tessera config file is a few lines of TOML",
            path.display()
        )));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| ConfigError::Invalid(format!("{}: not UTF-8 text", path.display())))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| ConfigError::Invalid(format!("{}: not valid TOML: {e}", path.display())))?;
    let mut values = BTreeMap::new();
    flatten("", &table, &mut values);
    for (name, value) in &values {
        let k = key(name).map_err(|e| match e {
            ConfigError::Invalid(m) => ConfigError::Invalid(format!("{}: {m}", path.display())),
            other => other,
        })?;
        validate(k, value, &path.display().to_string())?;
    }
    if project {
        if let Some(k) = TRUST_KEYS.iter().find(|k| values.contains_key(**k)) {
            return Err(ConfigError::Invalid(format!(
                "{}: {k} may only be set in your user config or the environment: a project \
                 file cannot vouch for the native code it names",
                path.display()
            )));
        }
    }
    Ok(Some(FileLayer {
        path: path.to_path_buf(),
        values,
        project,
    }))
}

/// The user config file, and whether it was named explicitly (`TESSERA_CONFIG`).
fn user_config_path() -> Option<(PathBuf, bool)> {
    if let Ok(p) = std::env::var("TESSERA_CONFIG") {
        return Some((PathBuf::from(p), true));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some((base.join("tessera").join("tessera.toml"), false))
}

fn load_files() -> Result<Vec<FileLayer>> {
    let mut layers = Vec::new();
    if let Some(l) = read_file(Path::new("tessera.toml"), false, true)? {
        layers.push(l);
    }
    if let Some((p, named)) = user_config_path() {
        if let Some(l) = read_file(&p, named, false)? {
            layers.push(l);
        }
    }
    Ok(layers)
}

/// The parsed config files, or why they could not be read; `None` until first use.
type FileCache = Option<std::result::Result<Vec<FileLayer>, String>>;

static FILES: LazyLock<RwLock<FileCache>> = LazyLock::new(|| RwLock::new(None));

/// Re-reads the config files on the next lookup.
pub fn reload() {
    *FILES.write().unwrap_or_else(|e| e.into_inner()) = None;
}

fn with_files<T>(f: impl FnOnce(&[FileLayer]) -> T) -> Result<T> {
    {
        let guard = FILES.read().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = guard.as_ref() {
            return r
                .as_ref()
                .map(|l| f(l))
                .map_err(|e| ConfigError::Invalid(e.clone()));
        }
    }
    let mut guard = FILES.write().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        *guard = Some(load_files().map_err(|e| match e {
            ConfigError::Invalid(m) => m,
            other => other.to_string(),
        }));
    }
    guard
        .as_ref()
        .expect("just set")
        .as_ref()
        .map(|l| f(l))
        .map_err(|e| ConfigError::Invalid(e.clone()))
}

struct OverrideLayer {
    id: u64,
    values: BTreeMap<String, String>,
}

static OVERRIDES: RwLock<Vec<OverrideLayer>> = RwLock::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Restores the configuration when dropped (see [`set`]).
#[must_use = "the override is undone as soon as the guard is dropped"]
#[derive(Debug)]
pub struct ConfigGuard {
    id: u64,
}

impl Drop for ConfigGuard {
    fn drop(&mut self) {
        let mut layers = OVERRIDES.write().unwrap_or_else(|e| e.into_inner());
        layers.retain(|l| l.id != self.id);
    }
}

/// Overrides keys until the guard drops (process-wide, like `dask.config.set`).
///
/// ```
/// let _g = tessera_config::set(&[("scheduler", "single-threaded")]).unwrap();
/// assert_eq!(tessera_config::get("scheduler").unwrap().0, "single-threaded");
/// ```
pub fn set(values: &[(&str, &str)]) -> Result<ConfigGuard> {
    let mut map = BTreeMap::new();
    for (name, value) in values {
        let k = key(name)?;
        validate(k, value, "config::set")?;
        map.insert(k.name.to_string(), value.to_string());
    }
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    OVERRIDES
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(OverrideLayer { id, values: map });
    Ok(ConfigGuard { id })
}

/// Checks the `TESSERA_*` environment variables against the keys tessera knows.
///
/// Other tools may set variables with this prefix, so an unknown name is not an error in
/// itself: a near miss of a real key (at most two edits, e.g. `TESSERA_SHEDULER`) is an
/// error with "did you mean", because it is almost certainly a typo whose setting would
/// otherwise be ignored; any other unknown name is logged once as a warning and ignored.
///
/// [`get`] runs this on every call, so each unknown name is judged once per process: the
/// edit distances to every key, computed on every call, made a conformance run 8x slower
/// (43 s instead of 5 s) once a variable of another tool's, such as the CUDA backend's
/// `TESSERA_NVRTC_DIR`, was set.
fn check_env() -> Result<()> {
    /// Unknown names seen so far, each with the key it nearly spells (or none).
    static JUDGED: std::sync::Mutex<Vec<(String, Option<&'static str>)>> =
        std::sync::Mutex::new(Vec::new());
    for (var, _) in std::env::vars_os() {
        let Some(var) = var.to_str() else { continue };
        if !var.starts_with("TESSERA_")
            || var == "TESSERA_CONFIG"
            || KEYS.iter().any(|k| k.env == var)
        {
            continue;
        }
        let mut judged = JUDGED.lock().unwrap_or_else(|e| e.into_inner());
        let near = match judged.iter().find(|(seen, _)| seen == var) {
            Some(&(_, near)) => near,
            None => {
                let near = KEYS
                    .iter()
                    .map(|k| k.env)
                    .chain(["TESSERA_CONFIG"])
                    .map(|n| (edit_distance(var, n), n))
                    .filter(|&(d, _)| d <= 2)
                    .min()
                    .map(|(_, n)| n);
                if near.is_none() {
                    log::warn!(
                        "ignoring environment variable {var}: not a tessera setting (valid: TESSERA_CONFIG, {})",
                        KEYS.iter().map(|k| k.env).collect::<Vec<_>>().join(", ")
                    );
                }
                judged.push((var.to_string(), near));
                near
            }
        };
        if let Some(near) = near {
            return Err(ConfigError::Invalid(format!(
                "unknown environment variable {var}; did you mean {near}? valid: TESSERA_CONFIG, {}",
                KEYS.iter().map(|k| k.env).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(())
}

/// Levenshtein distance between two ASCII-ish strings (by `char`).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The effective value of `name` and where it came from.
pub fn get(name: &str) -> Result<(String, Source)> {
    let k = key(name)?;
    {
        let layers = OVERRIDES.read().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = layers.iter().rev().find_map(|l| l.values.get(k.name)) {
            return Ok((v.clone(), Source::Override));
        }
    }
    check_env()?;
    if let Ok(v) = std::env::var(k.env) {
        validate(k, &v, k.env)?;
        return Ok((v, Source::Env(k.env)));
    }
    let from_file = with_files(|layers| {
        layers.iter().rev().find_map(|l| {
            l.values
                .get(k.name)
                .map(|v| (v.clone(), Source::File(l.path.clone()), l.project))
        })
    })?;
    match from_file {
        Some((v, source, true)) if k.name == "plugins" && !v.trim().is_empty() => {
            if !allow_project_plugins()? {
                return Err(ConfigError::Invalid(format!(
                    "{source} names plugins ({v}), and a tessera.toml in the working directory \
                     may not load native code on its own; allow it with \
                     allow-project-plugins = true in your user config \
                     ($XDG_CONFIG_HOME/tessera/tessera.toml) or TESSERA_ALLOW_PROJECT_PLUGINS=true, \
                     or name the plugins there or in TESSERA_PLUGINS instead"
                )));
            }
            Ok((v, source))
        }
        Some((v, source, _)) => Ok((v, source)),
        None => Ok((k.default.to_string(), Source::Default)),
    }
}

/// Every key's effective value, source and doc (what `tessera config` prints).
pub fn effective() -> Result<Vec<(&'static Key, String, Source)>> {
    KEYS.iter()
        .map(|k| get(k.name).map(|(v, s)| (k, v, s)))
        .collect()
}

/// The scheduler choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerKind {
    /// One thread, deterministic order.
    SingleThreaded,
    /// A rayon pool.
    Threads,
    /// Every rank of an MPI job runs the program; a rank's own tasks run on its rayon
    /// pool (see `tessera_runtime::cluster`).
    Mpi,
}

impl SchedulerKind {
    /// True when a plan's tasks are spread over the ranks of a job.
    pub fn is_distributed(self) -> bool {
        self == SchedulerKind::Mpi
    }
}

fn parse_scheduler(s: &str) -> Option<SchedulerKind> {
    match s.trim() {
        "threads" | "threaded" => Some(SchedulerKind::Threads),
        "single-threaded" | "sync" | "synchronous" => Some(SchedulerKind::SingleThreaded),
        "mpi" => Some(SchedulerKind::Mpi),
        _ => None,
    }
}

/// `array.backend`.
pub fn array_backend() -> Result<String> {
    Ok(get("array.backend")?.0.trim().to_string())
}

/// `dataframe.backend`.
pub fn dataframe_backend() -> Result<String> {
    Ok(get("dataframe.backend")?.0.trim().to_string())
}

/// What `dataframe.fallback` asks of a backend that cannot run a step natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackPolicy {
    /// Run it another way (on the host), recorded and logged.
    Allow,
    /// Refuse it with the reason.
    Error,
}

fn parse_fallback(s: &str) -> Option<FallbackPolicy> {
    match s.trim() {
        "allow" => Some(FallbackPolicy::Allow),
        "error" => Some(FallbackPolicy::Error),
        _ => None,
    }
}

/// `dataframe.fallback`.
pub fn dataframe_fallback() -> Result<FallbackPolicy> {
    let (v, _) = get("dataframe.fallback")?;
    parse_fallback(&v).ok_or_else(|| ConfigError::Invalid(format!("bad dataframe.fallback '{v}'")))
}

/// `scheduler`.
pub fn scheduler() -> Result<SchedulerKind> {
    let (v, _) = get("scheduler")?;
    parse_scheduler(&v).ok_or_else(|| ConfigError::Invalid(format!("bad scheduler '{v}'")))
}

/// `num-threads` (0 means one per core).
pub fn num_threads() -> Result<usize> {
    let (v, _) = get("num-threads")?;
    v.trim()
        .parse()
        .map_err(|_| ConfigError::Invalid(format!("bad num-threads '{v}'")))
}

/// `array.chunk-size` in bytes.
pub fn chunk_size_bytes() -> Result<usize> {
    let (v, _) = get("array.chunk-size")?;
    parse_bytes(&v)
        .map(|b| b as usize)
        .ok_or_else(|| ConfigError::Invalid(format!("bad array.chunk-size '{v}'")))
}

/// `array.split-every`.
pub fn split_every() -> Result<usize> {
    let (v, _) = get("array.split-every")?;
    v.trim()
        .parse()
        .map_err(|_| ConfigError::Invalid(format!("bad array.split-every '{v}'")))
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `optimize`: whether lowering fuses and pushes slices down.
pub fn optimize() -> Result<bool> {
    let (v, _) = get("optimize")?;
    parse_bool(&v).ok_or_else(|| ConfigError::Invalid(format!("bad optimize '{v}'")))
}

/// `tune-allocator`: whether the first worker pool tunes glibc's malloc (`tessera_runtime::allocator`).
pub fn tune_allocator() -> Result<bool> {
    let (v, _) = get("tune-allocator")?;
    parse_bool(&v).ok_or_else(|| ConfigError::Invalid(format!("bad tune-allocator '{v}'")))
}

/// `allow-project-plugins`: whether a project-local `tessera.toml` may name plugins.
pub fn allow_project_plugins() -> Result<bool> {
    let (v, _) = get("allow-project-plugins")?;
    parse_bool(&v).ok_or_else(|| ConfigError::Invalid(format!("bad allow-project-plugins '{v}'")))
}

/// `plugins-allow-writable`: whether plugin libraries others could replace may load.
pub fn plugins_allow_writable() -> Result<bool> {
    let (v, _) = get("plugins-allow-writable")?;
    parse_bool(&v).ok_or_else(|| ConfigError::Invalid(format!("bad plugins-allow-writable '{v}'")))
}

/// `plugins`: the plugin library paths as one platform path list (may be empty).
pub fn plugins() -> Result<String> {
    Ok(get("plugins")?.0)
}

/// A duration such as `30s`, `500ms`, `2m` or a bare number of seconds.
pub fn parse_seconds(s: &str) -> Option<std::time::Duration> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then(|| std::time::Duration::from_secs_f64(v * scale))
}

/// `distributed.timeout`: how long a rank waits for another with no progress.
pub fn distributed_timeout() -> Result<std::time::Duration> {
    let (v, _) = get("distributed.timeout")?;
    parse_seconds(&v).ok_or_else(|| ConfigError::Invalid(format!("bad distributed.timeout '{v}'")))
}

/// The object-store settings (`storage.*`), validated.
#[derive(Debug, Clone, PartialEq)]
pub struct StorageConfig {
    /// `storage.endpoint`, when set.
    pub endpoint: Option<String>,
    /// `storage.region`, when set.
    pub region: Option<String>,
    /// `storage.allow-http`.
    pub allow_http: bool,
    /// `storage.retries`.
    pub retries: u32,
    /// `storage.timeout`.
    pub timeout: std::time::Duration,
}

/// The `storage.*` keys.
///
/// # Errors
/// A key set to an invalid value (named, with what is expected).
pub fn storage() -> Result<StorageConfig> {
    let text = |k: &str| -> Result<Option<String>> {
        let v = get(k)?.0;
        Ok((!v.trim().is_empty()).then(|| v.trim().to_string()))
    };
    Ok(StorageConfig {
        endpoint: text("storage.endpoint")?,
        region: text("storage.region")?,
        allow_http: parse_bool(&get("storage.allow-http")?.0).unwrap_or(false),
        retries: get("storage.retries")?.0.trim().parse().unwrap_or(5),
        timeout: parse_seconds(&get("storage.timeout")?.0)
            .unwrap_or(std::time::Duration::from_secs(30)),
    })
}

/// `spill-dir`: the directory spill files go under, `None` when spilling is off (`none`).
pub fn spill_dir() -> Result<Option<PathBuf>> {
    let (v, _) = get("spill-dir")?;
    Ok(match v.trim() {
        "none" => None,
        "" => Some(std::env::temp_dir()),
        s => Some(PathBuf::from(s)),
    })
}

/// How much memory each device may hold (`device.memory-limit`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DeviceMemoryLimit {
    /// No limit: buffers stay on the device until an allocation fails.
    Unlimited,
    /// This many bytes per device.
    Bytes(u64),
    /// This share of each device's memory (in (0, 1]).
    Share(f64),
}

impl DeviceMemoryLimit {
    /// The limit in bytes of a device holding `capacity` bytes (`None` when its capacity
    /// is unknown and the limit is a share, or when unlimited).
    pub fn bytes_of(self, capacity: Option<u64>) -> Option<u64> {
        match self {
            DeviceMemoryLimit::Unlimited => None,
            DeviceMemoryLimit::Bytes(b) => Some(b),
            DeviceMemoryLimit::Share(s) => capacity.map(|c| (c as f64 * s) as u64),
        }
    }
}

fn parse_device_limit(v: &str) -> Option<DeviceMemoryLimit> {
    match v.trim() {
        "none" => Some(DeviceMemoryLimit::Unlimited),
        s if s.ends_with('%') => {
            let p: f64 = s.trim_end_matches('%').trim().parse().ok()?;
            (p > 0.0 && p <= 100.0).then_some(DeviceMemoryLimit::Share(p / 100.0))
        }
        s => parse_bytes(s)
            .filter(|&b| b > 0)
            .map(DeviceMemoryLimit::Bytes),
    }
}

/// `device.memory-limit`: how much memory each device of the `cuda` backends may hold.
///
/// # Errors
/// A value that is neither a share, a byte size nor `none`.
pub fn device_memory_limit() -> Result<DeviceMemoryLimit> {
    let (v, _) = get("device.memory-limit")?;
    parse_device_limit(&v).ok_or_else(|| {
        ConfigError::Invalid(format!(
            "bad device.memory-limit '{v}': give a share of the card such as `80%`, a byte size such as `20GiB`, or `none`"
        ))
    })
}

/// `device.host-limit` in bytes: what buffers spilled from devices may hold in host memory
/// together, `None` when unbounded (`memory-limit` follows that key).
///
/// # Errors
/// A value that is not a byte size, `memory-limit` or `none`; a bad `memory-limit`.
pub fn device_host_limit() -> Result<Option<u64>> {
    let (v, _) = get("device.host-limit")?;
    match v.trim() {
        "none" => Ok(None),
        "memory-limit" => memory_limit(),
        s => parse_bytes(s).map(Some).ok_or_else(|| {
            ConfigError::Invalid(format!(
                "bad device.host-limit '{v}': give a byte size such as `16GiB`, `memory-limit` or `none`"
            ))
        }),
    }
}

/// Which devices a device backend opens (`device.ordinal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceOrdinal {
    /// Under `scheduler = "mpi"` the device of the rank's local rank; else all of them.
    Auto,
    /// Every visible device.
    All,
    /// This one.
    One(usize),
}

fn parse_device_ordinal(v: &str) -> Option<DeviceOrdinal> {
    match v.trim() {
        "auto" => Some(DeviceOrdinal::Auto),
        "all" => Some(DeviceOrdinal::All),
        s => s.parse().ok().map(DeviceOrdinal::One),
    }
}

/// `device.ordinal`: which devices the `cuda` backends open.
///
/// # Errors
/// A value that is not `auto`, `all` or an index.
pub fn device_ordinal() -> Result<DeviceOrdinal> {
    let (v, _) = get("device.ordinal")?;
    parse_device_ordinal(&v).ok_or_else(|| {
        ConfigError::Invalid(format!(
            "bad device.ordinal '{v}': give `auto`, `all` or a device index such as `0`"
        ))
    })
}

/// `memory-limit` in bytes, `None` when unlimited.
pub fn memory_limit() -> Result<Option<u64>> {
    let (v, _) = get("memory-limit")?;
    match v.trim() {
        "none" | "" => Ok(None),
        s => parse_bytes(s).filter(|&b| b > 0).map(Some).ok_or_else(|| {
            ConfigError::Invalid(format!(
                "bad memory-limit '{v}': give a byte size above 0 such as `8GiB`, or `none`"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_list_valid_ones() {
        let err = set(&[("array.backnd", "cpu")]).unwrap_err().to_string();
        assert!(err.contains("unknown key 'array.backnd'"), "{err}");
        assert!(err.contains("array.backend"), "{err}");
    }

    #[test]
    fn bad_values_say_what_is_expected() {
        let err = set(&[("array.split-every", "1")]).unwrap_err().to_string();
        assert!(err.contains("at least 2"), "{err}");
        let err = set(&[("array.chunk-size", "lots")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("byte size"), "{err}");
        // A limit of 0 would accept the key and then refuse every plan.
        for zero in ["0", "0B", "0GiB"] {
            let err = set(&[("memory-limit", zero)]).unwrap_err().to_string();
            assert!(
                err.contains("above 0") && err.contains("none"),
                "{zero}: {err}"
            );
        }
    }

    #[test]
    fn device_limits_are_shares_sizes_or_none() {
        // Only this test touches the `device.*` overrides.
        assert_eq!(
            device_memory_limit().unwrap(),
            DeviceMemoryLimit::Share(0.8)
        );
        assert_eq!(
            DeviceMemoryLimit::Share(0.8).bytes_of(Some(1000)),
            Some(800)
        );
        assert_eq!(DeviceMemoryLimit::Share(0.8).bytes_of(None), None);
        let g = set(&[
            ("device.memory-limit", "2GiB"),
            ("device.host-limit", "1MiB"),
        ])
        .unwrap();
        assert_eq!(
            device_memory_limit().unwrap(),
            DeviceMemoryLimit::Bytes(2 << 30)
        );
        assert_eq!(device_host_limit().unwrap(), Some(1 << 20));
        drop(g);
        let g = set(&[("memory-limit", "3GiB")]).unwrap();
        assert_eq!(
            device_host_limit().unwrap(),
            Some(3 << 30),
            "follows memory-limit"
        );
        drop(g);
        for bad in ["0%", "101%", "lots", "0"] {
            let err = set(&[("device.memory-limit", bad)])
                .unwrap_err()
                .to_string();
            assert!(err.contains("`80%`"), "{bad}: {err}");
        }
        let err = set(&[("device.host-limit", "half")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`memory-limit` or `none`"), "{err}");
    }

    #[test]
    fn the_fallback_policy_is_allow_or_error() {
        // Only this test touches `dataframe.fallback` overrides.
        assert_eq!(dataframe_fallback().unwrap(), FallbackPolicy::Allow);
        let g = set(&[("dataframe.fallback", "error")]).unwrap();
        assert_eq!(dataframe_fallback().unwrap(), FallbackPolicy::Error);
        drop(g);
        let err = set(&[("dataframe.fallback", "never")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("`allow` or `error`"), "{err}");
    }

    #[test]
    fn overrides_nest_and_restore_out_of_order() {
        // Only this test touches `array.chunk-size` overrides.
        let base = get("array.chunk-size").unwrap();
        let g1 = set(&[("array.chunk-size", "1MiB")]).unwrap();
        let g2 = set(&[("array.chunk-size", "2MiB")]).unwrap();
        assert_eq!(
            get("array.chunk-size").unwrap(),
            ("2MiB".to_string(), Source::Override)
        );
        drop(g1);
        assert_eq!(get("array.chunk-size").unwrap().0, "2MiB");
        drop(g2);
        assert_eq!(get("array.chunk-size").unwrap(), base);
    }

    #[test]
    fn toml_files_flatten_and_validate() {
        let dir = std::env::temp_dir().join(format!("tessera-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.toml");
        std::fs::write(
            &good,
            "scheduler = \"threads\"\n[array]\nbackend = \"cpu\"\nsplit-every = 8\n",
        )
        .unwrap();
        let layer = read_file(&good, true, false).unwrap().unwrap();
        assert_eq!(layer.values["array.backend"], "cpu");
        assert_eq!(layer.values["array.split-every"], "8");
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[array]\nbakend = \"cpu\"\n").unwrap();
        let err = read_file(&bad, true, false).err().unwrap().to_string();
        assert!(
            err.contains("bad.toml") && err.contains("unknown key 'array.bakend'"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
