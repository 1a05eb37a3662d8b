//! The backend registry: static backends (via `inventory`), run-time registrations.
//!
//! A backend crate registers a factory with [`inventory::submit!`]:
//! ```ignore
//! inventory::submit! { tessera_core::registry::ArrayBackendFactory::new("cpu", make_cpu) }
//! ```
//! and the registry is built from every submitted factory the first time it is used. The
//! linker drops a crate nobody names, so binaries must name each backend crate
//! (`use tessera_cpu as _;`) — the facade crate does this for the default backends.
//!
//! A factory that fails (no driver, no device) registers the backend as *unavailable*
//! with its reason; selecting it returns [`Error::Unavailable`] with that reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, RwLock};

use crate::backend::{ArrayBackend, Availability, BackendRef};
use crate::error::{Error, Result};
use crate::frame::FrameBackendRef;

/// A statically registered array backend: a name and a constructor that either builds
/// the backend or says why it is unavailable here.
pub struct ArrayBackendFactory {
    name: &'static str,
    make: fn() -> std::result::Result<BackendRef, String>,
}

impl ArrayBackendFactory {
    /// A factory for `inventory::submit!`.
    pub const fn new(
        name: &'static str,
        make: fn() -> std::result::Result<BackendRef, String>,
    ) -> Self {
        ArrayBackendFactory { name, make }
    }
}

inventory::collect!(ArrayBackendFactory);

/// A statically registered dataframe backend: a name and a constructor that either
/// builds the backend or says why it is unavailable here.
pub struct DataFrameBackendFactory {
    name: &'static str,
    make: fn() -> std::result::Result<FrameBackendRef, String>,
}

impl DataFrameBackendFactory {
    /// A factory for `inventory::submit!`.
    pub const fn new(
        name: &'static str,
        make: fn() -> std::result::Result<FrameBackendRef, String>,
    ) -> Self {
        DataFrameBackendFactory { name, make }
    }
}

inventory::collect!(DataFrameBackendFactory);

/// The kind of data a backend holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BackendKind {
    /// n-d arrays.
    Array,
    /// Partitioned dataframes.
    DataFrame,
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BackendKind::Array => "array",
            BackendKind::DataFrame => "dataframe",
        })
    }
}

/// How a backend got into the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `inventory::submit!` in a linked crate.
    Static,
    /// [`register_array_backend`] at run time.
    Runtime,
    /// Loaded from a plugin library (`tessera-plugin-host`'s `load_plugin`).
    Plugin(PathBuf),
}

/// One registry entry, as listed by [`backends`].
#[derive(Debug, Clone)]
pub struct BackendInfo {
    /// Registered name.
    pub name: String,
    /// Array or dataframe.
    pub kind: BackendKind,
    /// Available, or why not.
    pub availability: Availability,
    /// Static or run-time.
    pub origin: Origin,
    /// The array backend, when available and `kind` is [`BackendKind::Array`].
    pub backend: Option<BackendRef>,
}

struct FrameEntry {
    availability: Availability,
    backend: Option<FrameBackendRef>,
    origin: Origin,
}

struct Registry {
    array: BTreeMap<String, BackendInfo>,
    frame: BTreeMap<String, FrameEntry>,
}

static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(|| {
    let mut array = BTreeMap::new();
    for f in inventory::iter::<ArrayBackendFactory> {
        let info = match (f.make)() {
            Ok(b) => {
                let availability = b.availability();
                BackendInfo {
                    name: f.name.to_string(),
                    kind: BackendKind::Array,
                    backend: matches!(availability, Availability::Available).then_some(b),
                    availability,
                    origin: Origin::Static,
                }
            }
            Err(reason) => BackendInfo {
                name: f.name.to_string(),
                kind: BackendKind::Array,
                availability: Availability::Unavailable(reason),
                origin: Origin::Static,
                backend: None,
            },
        };
        if array.contains_key(f.name) {
            log::error!(
                "two static backends are named '{}'; keeping the first",
                f.name
            );
            continue;
        }
        array.insert(f.name.to_string(), info);
    }
    let mut frame = BTreeMap::new();
    for f in inventory::iter::<DataFrameBackendFactory> {
        let entry = match (f.make)() {
            Ok(b) => {
                let availability = b.availability();
                FrameEntry {
                    backend: matches!(availability, Availability::Available).then_some(b),
                    availability,
                    origin: Origin::Static,
                }
            }
            Err(reason) => FrameEntry {
                availability: Availability::Unavailable(reason),
                backend: None,
                origin: Origin::Static,
            },
        };
        if frame.contains_key(f.name) {
            log::error!(
                "two static dataframe backends are named '{}'; keeping the first",
                f.name
            );
            continue;
        }
        frame.insert(f.name.to_string(), entry);
    }
    RwLock::new(Registry { array, frame })
});

fn read() -> std::sync::RwLockReadGuard<'static, Registry> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

/// Registers an array backend at run time under its own name. A name clash is an error.
pub fn register_array_backend(backend: BackendRef) -> Result<()> {
    register(backend, Origin::Runtime)
}

/// Registers a backend loaded from the plugin library at `path`.
/// Registers `backend`, loaded from the plugin library at `path`, under its own name (the
/// plugin host calls this once a library has passed its checks).
///
/// # Errors
/// [`Error::DuplicateBackend`] when a backend of that name is registered.
pub fn register_plugin_backend(backend: BackendRef, path: &Path) -> Result<()> {
    register(backend, Origin::Plugin(path.to_path_buf()))
}

fn register(backend: BackendRef, origin: Origin) -> Result<()> {
    let name = backend.name().to_string();
    let mut reg = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if reg.array.contains_key(&name) {
        return Err(Error::DuplicateBackend { name });
    }
    let availability = backend.availability();
    reg.array.insert(
        name.clone(),
        BackendInfo {
            name,
            kind: BackendKind::Array,
            backend: matches!(availability, Availability::Available).then_some(backend),
            availability,
            origin,
        },
    );
    Ok(())
}

/// The hook through which the plugin host loads configured plugin libraries.
///
/// The registry depends on no loader: `tessera-plugin-host` submits one of these with
/// [`inventory::submit!`], and every lookup first runs the submitted loaders, which
/// register what they load through [`register_plugin_backend`]. A program linked without
/// a plugin host that is configured to load plugins gets an error saying so, never a
/// silent skip.
pub struct PluginLoader {
    load_configured: fn() -> Result<()>,
}

impl PluginLoader {
    /// A loader for `inventory::submit!`: `load_configured` loads every configured plugin
    /// not tried yet and fails with the first that failed.
    pub const fn new(load_configured: fn() -> Result<()>) -> Self {
        PluginLoader { load_configured }
    }
}

inventory::collect!(PluginLoader);

/// Runs every submitted [`PluginLoader`]; with none linked, a configured plugin list is
/// an error naming what to link.
fn load_configured_plugins() -> Result<()> {
    let mut loaders = inventory::iter::<PluginLoader>.into_iter().peekable();
    if loaders.peek().is_none() {
        let configured = crate::config::plugins()?;
        if !configured.trim().is_empty() {
            return Err(Error::Config(format!(
                "plugins are configured ({configured}) but this program was built without the \
                 plugin host; enable the `plugins` feature of `tessera` or link \
                 `tessera-plugin-host` (`use tessera_plugin_host as _;`)"
            )));
        }
        return Ok(());
    }
    for loader in loaders {
        (loader.load_configured)()?;
    }
    Ok(())
}

/// Registers `backend` unless a backend of that name exists; returns the registered one.
pub fn ensure_array_backend(backend: BackendRef) -> Result<BackendRef> {
    let name = backend.name().to_string();
    match register_array_backend(backend) {
        Ok(()) | Err(Error::DuplicateBackend { .. }) => array_backend(&name),
        Err(e) => Err(e),
    }
}

/// Looks up an array backend by name (loading configured plugins first).
///
/// # Errors
/// [`Error::WrongCpu`] when this binary was compiled for instructions the CPU lacks
/// (checked once, before any backend runs a kernel); [`Error::UnknownBackend`],
/// [`Error::Unavailable`], or a plugin's load error.
pub fn array_backend(name: &str) -> Result<BackendRef> {
    tessera_kernels::target::check()?;
    load_configured_plugins()?;
    lookup(BackendKind::Array, name, &read().array)
}

/// One registry entry as the lookups see it: its availability and, when available, its
/// instance. Array and dataframe entries are looked up by the one function [`lookup`].
trait Entry {
    /// The shared handle the lookup returns.
    type Backend: Clone;
    fn availability(&self) -> &Availability;
    fn instance(&self) -> Option<&Self::Backend>;
}

impl Entry for BackendInfo {
    type Backend = BackendRef;
    fn availability(&self) -> &Availability {
        &self.availability
    }
    fn instance(&self) -> Option<&BackendRef> {
        self.backend.as_ref()
    }
}

impl Entry for FrameEntry {
    type Backend = FrameBackendRef;
    fn availability(&self) -> &Availability {
        &self.availability
    }
    fn instance(&self) -> Option<&FrameBackendRef> {
        self.backend.as_ref()
    }
}

/// The names `dask.config` gives the backends (`array.backend = "cupy"`,
/// `dataframe.backend = "cudf"`, and the defaults `numpy` and `pandas`), and the
/// tessera backend each selects, so a Dask user's setting means here what it means there.
pub const DASK_NAMES: [(BackendKind, &str, &str); 4] = [
    (BackendKind::Array, "numpy", "cpu"),
    (BackendKind::Array, "cupy", "cuda"),
    (BackendKind::DataFrame, "pandas", "cpu"),
    (BackendKind::DataFrame, "cudf", "cuda"),
];

/// `name`, or the backend it names in Dask's spelling ([`DASK_NAMES`]) when no backend
/// is registered under it.
fn canonical<'a, E>(kind: BackendKind, name: &'a str, entries: &BTreeMap<String, E>) -> &'a str {
    if entries.contains_key(name) {
        return name;
    }
    DASK_NAMES
        .iter()
        .find(|(k, dask, _)| *k == kind && *dask == name)
        .map_or(name, |(_, _, ours)| ours)
}

/// The backend `name` of `kind` among `entries` (a Dask name such as `cupy` selecting
/// its tessera backend): unavailable ones with their reason, unknown ones with the names
/// that exist.
fn lookup<E: Entry>(
    kind: BackendKind,
    name: &str,
    entries: &BTreeMap<String, E>,
) -> Result<E::Backend> {
    let name = canonical(kind, name, entries);
    match entries.get(name) {
        Some(e) => match (e.availability(), e.instance()) {
            (Availability::Unavailable(reason), _) => Err(Error::Unavailable {
                name: name.to_string(),
                reason: reason.clone(),
            }),
            (Availability::Available, Some(b)) => Ok(b.clone()),
            (Availability::Available, None) => Err(Error::Internal(format!(
                "{kind} backend '{name}' has no instance"
            ))),
        },
        None => Err(Error::UnknownBackend {
            kind: kind.to_string(),
            name: name.to_string(),
            available: describe_names(entries),
        }),
    }
}

fn describe_names<E: Entry>(entries: &BTreeMap<String, E>) -> String {
    if entries.is_empty() {
        return "none (link a backend crate, e.g. `use tessera_cpu as _;`)".to_string();
    }
    entries
        .iter()
        .map(|(name, e)| match e.availability() {
            Availability::Available => name.clone(),
            Availability::Unavailable(_) => format!("{name} (unavailable)"),
        })
        .collect::<Vec<_>>()
        .join(", ")
        + "; a backend from a plugin library is loaded with `plugins = [...]` in tessera.toml or TESSERA_PLUGINS"
}

/// Every registered backend with its kind and availability (loading configured plugins
/// first; one that fails to load is an error): array backends, then dataframe backends.
pub fn backends() -> Result<Vec<BackendInfo>> {
    tessera_kernels::target::check()?;
    load_configured_plugins()?;
    let reg = read();
    let mut out: Vec<BackendInfo> = reg.array.values().cloned().collect();
    out.extend(reg.frame.iter().map(|(name, e)| BackendInfo {
        name: name.clone(),
        kind: BackendKind::DataFrame,
        availability: e.availability.clone(),
        origin: e.origin.clone(),
        backend: None,
    }));
    Ok(out)
}

/// Registers a dataframe backend at run time under its own name. A name clash is an error.
pub fn register_dataframe_backend(backend: FrameBackendRef) -> Result<()> {
    let name = backend.name().to_string();
    let mut reg = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if reg.frame.contains_key(&name) {
        return Err(Error::DuplicateBackend { name });
    }
    let availability = backend.availability();
    reg.frame.insert(
        name,
        FrameEntry {
            backend: matches!(availability, Availability::Available).then_some(backend),
            availability,
            origin: Origin::Runtime,
        },
    );
    Ok(())
}

/// Looks up a dataframe backend by name (loading configured plugins first, as
/// [`array_backend`] does, after the same CPU check).
///
/// # Errors
/// As [`array_backend`].
pub fn dataframe_backend(name: &str) -> Result<FrameBackendRef> {
    tessera_kernels::target::check()?;
    load_configured_plugins()?;
    lookup(BackendKind::DataFrame, name, &read().frame)
}

/// The dataframe backend `name`, or the configured `dataframe.backend` when `None`.
pub fn resolve_dataframe_backend(name: Option<&str>) -> Result<FrameBackendRef> {
    match name {
        Some(n) => dataframe_backend(n),
        None => dataframe_backend(&crate::config::dataframe_backend()?),
    }
}

/// Names of the registered array backends.
pub fn array_backend_names() -> Vec<String> {
    read().array.keys().cloned().collect()
}

/// The backend `name`, or the configured `array.backend` when `None`.
pub fn resolve_array_backend(name: Option<&str>) -> Result<BackendRef> {
    match name {
        Some(n) => array_backend(n),
        None => array_backend(&crate::config::array_backend()?),
    }
}

impl dyn ArrayBackend {
    /// True when two handles are the same backend (by name).
    pub fn same_as(&self, other: &dyn ArrayBackend) -> bool {
        self.name() == other.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dask_names_map_to_backends_of_their_kind_unless_one_is_registered_so() {
        let none: BTreeMap<String, ()> = BTreeMap::new();
        assert_eq!(canonical(BackendKind::Array, "cupy", &none), "cuda");
        assert_eq!(canonical(BackendKind::DataFrame, "cudf", &none), "cuda");
        assert_eq!(canonical(BackendKind::Array, "numpy", &none), "cpu");
        assert_eq!(canonical(BackendKind::DataFrame, "cupy", &none), "cupy");
        assert_eq!(canonical(BackendKind::Array, "sparse", &none), "sparse");
        let mut own = BTreeMap::new();
        own.insert("cupy".to_string(), ());
        assert_eq!(canonical(BackendKind::Array, "cupy", &own), "cupy");
    }

    /// This crate's own test binary links no plugin host: a configured plugin list must
    /// then be an error that says what to link, never a silent skip.
    #[test]
    fn configured_plugins_without_a_plugin_host_are_an_error() {
        assert!(inventory::iter::<PluginLoader>.into_iter().next().is_none());
        let e = {
            let _g = crate::config::set(&[("plugins", "/nonexistent/libx.so")]).unwrap();
            array_backend("cpu").unwrap_err()
        };
        let msg = e.to_string();
        assert!(matches!(e, Error::Config(_)), "{e:?}");
        assert!(msg.contains("without the plugin host"), "{msg}");
        assert!(msg.contains("tessera-plugin-host"), "{msg}");
        // With nothing configured, lookups go on (here: no backend is linked at all).
        let e = array_backend("cpu").unwrap_err();
        assert!(matches!(e, Error::UnknownBackend { .. }), "{e:?}");
    }
}
