//! Backends loaded from shared libraries at run time (`.so`, `.dylib`, `.dll`).
//!
//! A plugin is a `cdylib` that exports the C ABI of `tessera-plugin-abi` (the Rust SDK
//! `tessera-plugin` writes that for any `ArrayBackend`). Plugins come from three places,
//! all ending in [`load_plugin`]:
//!
//! * `plugins = ["path/libx.so", ...]` in `tessera.toml`,
//! * `TESSERA_PLUGINS=path/libx.so:path/liby.so` (the platform's path-list separator),
//! * a direct call to [`load_plugin`].
//!
//! Configured plugins are loaded the first time the registry is asked for a backend, and
//! again whenever the configured list names a path not yet tried; a configured plugin
//! that fails to load makes that lookup fail with the reason (a broken plugin in the
//! configuration is a configuration error, not something to skip silently).
//!
//! Loading checks, in order, before calling into the library: the file exists; it is a
//! loadable shared library; it exports the version symbol; the version equals this
//! host's [`tessera_plugin_abi::ABI_VERSION`]; it exports the entry symbol. Then it calls
//! the entry, checks the declaration's and the table's sizes, the declared name, and
//! registers a [`ForeignBackend`]. A name clash is [`Error::DuplicateBackend`]. Libraries
//! are never unloaded: chunks and Arrow release callbacks may point into them until the
//! process ends.

//!
//! The registry knows nothing of this crate: linking it submits a
//! [`tessera_core::registry::PluginLoader`] that every registry lookup runs
//! first (the `tessera` facade links it with its `plugins` feature, on by default).

#![allow(unsafe_code)] // the FFI boundary: every block below carries its SAFETY argument

mod foreign;
mod foreign_frame;
mod status;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tessera_plugin_abi as abi;

pub use foreign::{ForeignBackend, ForeignChunk};
pub use foreign_frame::{ForeignFrameBackend, ForeignPartition};

use foreign::PluginLib;
use foreign_frame::FrameLib;
use tessera_core::backend::BackendRef;
use tessera_core::backend::Capabilities;
use tessera_core::error::{Error, Result};
use tessera_core::frame::FrameBackendRef;
use tessera_core::registry::{register_plugin_backend, PluginLoader};
use tessera_plugin_ffi::convert::{self, dtype_from_code, str_from_raw};

fn load_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::PluginLoad {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Loads the plugin at `path`, registers its backend, and returns it.
///
/// Errors: the file is missing, is not a shared library, lacks a symbol, was built for
/// another ABI version, failed to initialise, declared a bad table, or its name is taken.
pub fn load_plugin(path: impl AsRef<Path>) -> Result<BackendRef> {
    match load_any_plugin(path.as_ref())? {
        LoadedPlugin::Array(b) => Ok(b),
        LoadedPlugin::Frame(b) => Err(load_error(
            path.as_ref(),
            format!(
                "'{}' is a dataframe backend plugin (registered as a dataframe backend); select it with dataframe.backend",
                b.name()
            ),
        )),
    }
}

/// What a plugin library provided, registered under its name.
pub enum LoadedPlugin {
    /// An array backend.
    Array(BackendRef),
    /// A dataframe backend.
    Frame(FrameBackendRef),
}

/// Loads a plugin library of either kind and registers its backend: an array backend in
/// the array registry, a dataframe backend in the dataframe registry.
///
/// # Errors
/// As [`load_plugin`].
pub fn load_any_plugin(path: impl AsRef<Path>) -> Result<LoadedPlugin> {
    let (opened, resolved) = open(path.as_ref())?;
    match opened {
        Opened::Array(backend) => {
            let backend: BackendRef = Arc::new(backend);
            register_plugin_backend(backend.clone(), &resolved)?;
            Ok(LoadedPlugin::Array(backend))
        }
        Opened::Frame(backend) => {
            // Loading the same library again gives the backend registered the first time.
            static LOADED: Mutex<BTreeMap<PathBuf, FrameBackendRef>> = Mutex::new(BTreeMap::new());
            let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(b) = loaded.get(&resolved) {
                return Ok(LoadedPlugin::Frame(b.clone()));
            }
            let backend: FrameBackendRef = Arc::new(backend);
            tessera_core::registry::register_dataframe_backend(backend.clone()).map_err(|e| {
                load_error(
                    &resolved,
                    format!("cannot register its dataframe backend: {e}"),
                )
            })?;
            loaded.insert(resolved, backend.clone());
            Ok(LoadedPlugin::Frame(backend))
        }
    }
}

/// Loads a dataframe backend plugin library and registers its backend.
///
/// # Errors
/// As [`load_plugin`]; also when the library holds an array backend instead.
pub fn load_frame_plugin(path: impl AsRef<Path>) -> Result<FrameBackendRef> {
    match load_any_plugin(path.as_ref())? {
        LoadedPlugin::Frame(b) => Ok(b),
        LoadedPlugin::Array(b) => Err(load_error(
            path.as_ref(),
            format!(
                "'{}' is an array backend plugin, not a dataframe one",
                b.name()
            ),
        )),
    }
}

/// A validated plugin backend of either kind.
enum Opened {
    Array(ForeignBackend),
    Frame(ForeignFrameBackend),
}

/// Opens and checks a plugin library without registering it.
/// Loads and validates the library at `path`; returns the backend and the absolute path
/// that was loaded.
fn open(path: &Path) -> Result<(Opened, PathBuf)> {
    if !path.exists() {
        return Err(load_error(path, "no such file"));
    }
    if path.is_dir() {
        return Err(load_error(path, "is a directory, not a shared library"));
    }
    // Load exactly the file the user named: a bare name handed to the dynamic loader
    // would be searched for in the system's library paths instead.
    let resolved = std::fs::canonicalize(path)
        .map_err(|e| load_error(path, format!("cannot resolve the path: {e}")))?;
    check_trusted(&resolved)?;
    let path = resolved.as_path();
    // SAFETY: loading a library runs its initialisers; loading a plugin is an explicit
    // request to run its code. The handle is leaked below, so it is never unloaded.
    let lib = unsafe { libloading::Library::new(path) }
        .map_err(|e| load_error(path, format!("not a loadable shared library: {e}")))?;
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    let symbol_error = |sym: &[u8], e: libloading::Error| {
        let name = String::from_utf8_lossy(&sym[..sym.len() - 1]).into_owned();
        load_error(
            path,
            format!(
                "does not export `{name}` ({e}); is it a tessera plugin built with tessera-plugin?"
            ),
        )
    };
    // SAFETY: the version symbol is a `u32` static by the ABI; we only read it.
    let version: u32 = unsafe {
        let sym = lib
            .get::<*const u32>(abi::VERSION_SYMBOL)
            .map_err(|e| symbol_error(abi::VERSION_SYMBOL, e))?;
        let ptr: *const u32 = *sym;
        if ptr.is_null() {
            return Err(load_error(path, "version symbol is null"));
        }
        ptr.read_unaligned()
    };
    if version != abi::ABI_VERSION {
        return Err(Error::PluginAbi {
            path: path.display().to_string(),
            found: version,
            expected: abi::ABI_VERSION,
        });
    }
    // SAFETY: the entry symbol has type `EntryFn` by the ABI, whose version we checked.
    let entry: abi::EntryFn = unsafe {
        *lib.get::<abi::EntryFn>(abi::ENTRY_SYMBOL)
            .map_err(|e| symbol_error(abi::ENTRY_SYMBOL, e))?
    };
    // SAFETY: calling the checked entry point; it must not unwind (the SDK catches).
    let decl_ptr = unsafe { entry() };
    if decl_ptr.is_null() {
        return Err(load_error(path, "entry returned no declaration"));
    }
    // SAFETY: non-null; reading `size` first, which every version has at offset 0.
    let decl_size = unsafe { decl_ptr.cast::<usize>().read_unaligned() };
    if decl_size < abi::PLUGIN_DECL_MIN_SIZE {
        return Err(load_error(
            path,
            format!(
                "declaration is {decl_size} bytes; ABI {} needs at least {}",
                abi::ABI_VERSION,
                abi::PLUGIN_DECL_MIN_SIZE
            ),
        ));
    }
    // SAFETY: non-null and at least as large as our struct; it lives forever.
    let decl: &'static abi::PluginDecl = unsafe { &*decl_ptr };
    if decl.abi_version != abi::ABI_VERSION {
        return Err(Error::PluginAbi {
            path: path.display().to_string(),
            found: decl.abi_version,
            expected: abi::ABI_VERSION,
        });
    }
    if !decl.init_error.is_null() {
        // SAFETY: a NUL-terminated string owned by the plugin.
        let why = unsafe { str_from_raw(decl.init_error, "init_error") }.unwrap_or("?");
        return Err(load_error(path, format!("failed to initialise: {why}")));
    }
    // SAFETY: a NUL-terminated string owned by the plugin.
    let name = unsafe { str_from_raw(decl.name, "name") }
        .map_err(|_| load_error(path, "declares no valid UTF-8 backend name"))?;
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(load_error(
            path,
            format!("declares the backend name '{name}'; names are non-empty without spaces"),
        ));
    }
    if decl.capability_bits & abi::CAP_ARRAY == 0 || decl.array.is_null() {
        if decl.capability_bits & abi::CAP_DATAFRAME != 0 && !decl.dataframe.is_null() {
            return open_frame(path, name, decl.dataframe);
        }
        return Err(load_error(
            path,
            format!("'{name}' provides neither an array nor a dataframe backend table"),
        ));
    }
    // SAFETY: non-null; `size` is at offset 0 of every version of the table.
    let table_size = unsafe { decl.array.cast::<usize>().read_unaligned() };
    if table_size < abi::ARRAY_TABLE_MIN_SIZE {
        return Err(load_error(
            path,
            format!(
                "array table is {table_size} bytes; ABI {} needs at least {}",
                abi::ABI_VERSION,
                abi::ARRAY_TABLE_MIN_SIZE
            ),
        ));
    }
    // SAFETY: non-null, large enough, immutable and never unloaded.
    let table: &'static abi::ArrayTable = unsafe { &*decl.array };
    // SAFETY: a NUL-terminated string owned by the plugin, or null.
    let device = unsafe { str_from_raw(table.device, "device") }.unwrap_or("host");
    // SAFETY: the table declares `n_unsupported` entries at `unsupported`.
    let raw = unsafe { convert::raw_slice(table.unsupported, table.n_unsupported) };
    let mut gaps = Vec::with_capacity(raw.len());
    for gap in raw {
        // SAFETY: a NUL-terminated string owned by the plugin.
        let op = unsafe { str_from_raw(gap.op, "capability") }
            .map_err(|e| load_error(path, format!("bad capability entry: {e}")))?;
        gaps.push((op, gap.dtype));
    }
    let caps = declared_capabilities(device, &gaps).map_err(|e| load_error(path, e))?;
    let backend = ForeignBackend::new(
        PluginLib {
            name: name.to_string(),
            path: path.to_path_buf(),
            table,
        },
        caps,
    );
    Ok((Opened::Array(backend), path.to_path_buf()))
}

/// The capabilities a plugin's array table declares: its device and its gaps as
/// `(op name, dtype code)`. The ABI carries no block QR/SVD entries, so a plugin never
/// implements them.
///
/// # Errors
/// A gap naming an op the protocol does not have, or an unknown dtype code (the message
/// names the entry and what would be right).
fn declared_capabilities(
    device: &str,
    gaps: &[(&str, u32)],
) -> std::result::Result<Capabilities, String> {
    let mut caps = Capabilities::all(device).without_ops(Capabilities::BLOCK_LINALG);
    for &(op, code) in gaps {
        let known = tessera_core::ArrayOp::parse(op).ok_or_else(|| {
            format!(
                "capability '{op}' is not an op of the protocol; the ops are: {}",
                Capabilities::op_names().join(", ")
            )
        })?;
        let dtype = dtype_from_code(code)
            .ok_or_else(|| format!("capability '{op}' names dtype code {code}"))?;
        caps = caps.without(known, &[dtype]);
    }
    Ok(caps)
}

/// The dataframe half of [`open`]: checks the table's size and reads its capabilities.
fn open_frame(
    path: &Path,
    name: &str,
    table: *const abi::DataFrameTable,
) -> Result<(Opened, PathBuf)> {
    // SAFETY: non-null (checked by the caller), plugin memory that lives as long as the
    // process; the size is read before anything else.
    let table_size = unsafe { table.cast::<usize>().read_unaligned() };
    if table_size < abi::DATAFRAME_TABLE_MIN_SIZE {
        return Err(load_error(
            path,
            format!(
                "dataframe table is {table_size} bytes; ABI {} needs at least {}",
                abi::ABI_VERSION,
                abi::DATAFRAME_TABLE_MIN_SIZE
            ),
        ));
    }
    // SAFETY: large enough for every field of this version (checked above).
    let table: &'static abi::DataFrameTable = unsafe { &*table };
    // SAFETY: a NUL-terminated string owned by the plugin for the life of the process.
    let caps_text = unsafe { str_from_raw(table.capabilities, "capabilities") }
        .map_err(|e| load_error(path, format!("bad capabilities: {e}")))?;
    let caps = tessera_plugin_ffi::wire::parse_message(caps_text)
        .and_then(|m| {
            tessera_plugin_ffi::wire::capabilities_from(tessera_plugin_ffi::wire::field(
                &m,
                "capabilities",
            )?)
        })
        .map_err(|e| load_error(path, format!("bad capabilities: {e}")))?;
    let backend = ForeignFrameBackend::new(FrameLib {
        name: name.to_string(),
        path: path.to_path_buf(),
        table,
        caps,
    });
    Ok((Opened::Frame(backend), path.to_path_buf()))
}

tessera_core::inventory::submit! { PluginLoader::new(load_configured) }

/// Refuses a plugin that users other than its owner could have replaced, as ssh refuses
/// such keys: the file or a directory above it owned by a user other than root and the
/// current one, or writable by group or others (a directory with the sticky bit, such as
/// `/tmp`, is safe for entries its users own). Setting `plugins-allow-writable = true`
/// (`TESSERA_PLUGINS_ALLOW_WRITABLE`) opts out.
fn check_trusted(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if tessera_core::config::plugins_allow_writable()? {
            return Ok(());
        }
        // SAFETY: geteuid takes no arguments, has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        for p in path.ancestors() {
            let Ok(meta) = std::fs::metadata(p) else {
                continue;
            };
            if meta.uid() != 0 && meta.uid() != me {
                return Err(load_error(
                    path,
                    format!(
                        "refusing to load: {} is owned by user {} (not root, not you: user {me}),                          who could replace the library; load a copy you own, or set                          plugins-allow-writable = true (TESSERA_PLUGINS_ALLOW_WRITABLE=true) to                          load it anyway",
                        p.display(),
                        meta.uid()
                    ),
                ));
            }
            let mode = meta.permissions().mode();
            let sticky_dir = meta.is_dir() && mode & 0o1000 != 0;
            if mode & 0o022 != 0 && !sticky_dir {
                return Err(load_error(
                    path,
                    format!(
                        "refusing to load: {} is writable by {} (mode {:o}), so another user \
                         could have replaced the library; fix the permissions (chmod go-w), or \
                         set plugins-allow-writable = true (TESSERA_PLUGINS_ALLOW_WRITABLE=true) \
                         to load it anyway",
                        p.display(),
                        if mode & 0o002 != 0 {
                            "everyone"
                        } else {
                            "its group"
                        },
                        mode & 0o7777
                    ),
                ));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Results of configured plugin paths already tried (success, or the error text).
static TRIED: Mutex<BTreeMap<PathBuf, std::result::Result<String, String>>> =
    Mutex::new(BTreeMap::new());

/// The plugin paths from `plugins` / `TESSERA_PLUGINS`.
pub fn configured_paths() -> Result<Vec<PathBuf>> {
    let value = tessera_core::config::plugins()?;
    Ok(std::env::split_paths(&value)
        .filter(|p| !p.as_os_str().is_empty())
        .collect())
}

/// Loads every configured plugin not tried yet; fails with the first that failed (now or
/// earlier) so a broken configured plugin is never silently skipped.
pub fn load_configured() -> Result<()> {
    let paths = configured_paths()?;
    if paths.is_empty() {
        return Ok(());
    }
    let mut tried = TRIED.lock().unwrap_or_else(|e| e.into_inner());
    for p in paths {
        let result = match tried.get(&p) {
            Some(r) => r.clone(),
            None => {
                let r = load_any_plugin(&p)
                    .map(|b| match b {
                        LoadedPlugin::Array(b) => b.name().to_string(),
                        LoadedPlugin::Frame(b) => b.name().to_string(),
                    })
                    .map_err(|e| e.to_string());
                tried.insert(p.clone(), r.clone());
                r
            }
        };
        if let Err(reason) = result {
            return Err(Error::Config(format!(
                "configured plugin could not be loaded (fix or remove it from `plugins` / TESSERA_PLUGINS): {reason}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_core::program::UnaryOp;
    use tessera_core::DType;
    use tessera_plugin_ffi::convert::dtype_code;

    #[test]
    fn declared_gaps_are_ops_of_the_protocol_or_the_library_is_refused() {
        let f32 = dtype_code(DType::F32);
        let caps = declared_capabilities("gpu:0", &[("cos", f32), ("where", f32)]).unwrap();
        assert_eq!(caps.device, "gpu:0");
        assert!(!caps.supports(UnaryOp::Cos, DType::F32));
        assert!(caps.supports(UnaryOp::Cos, DType::F64));
        assert!(!caps.supports(tessera_core::ArrayOp::Where, DType::F32));
        assert!(!caps.supports(tessera_core::ArrayOp::Qr, DType::F64));
        // A misspelt op would have been a gap nobody asks about: refused, naming the ops.
        let e = declared_capabilities("host", &[("cosine", f32)]).unwrap_err();
        assert!(
            e.contains("'cosine' is not an op of the protocol") && e.contains("cos, "),
            "{e}"
        );
        let e = declared_capabilities("host", &[("cos", 999)]).unwrap_err();
        assert!(e.contains("dtype code 999"), "{e}");
    }
}
