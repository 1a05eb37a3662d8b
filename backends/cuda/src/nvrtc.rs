//! Compiling kernel texts to PTX with NVRTC, found at run time, cached by the text's hash.
//!
//! NVRTC needs no GPU and no driver, so kernels compile on any machine that has the
//! library: the GPU machines' CUDA image ships `libnvrtc.so.13`, and elsewhere the PyPI
//! wheel `nvidia-cuda-nvrtc` (13.x) or `nvidia-cuda-nvrtc-cu12` provides it. cudarc opens
//! the library by its bare name, so it must be on the loader's path, or named by
//! `TESSERA_NVRTC_DIR` (the folder holding `libnvrtc.so.13` or `.12`, such as the wheel's
//! `nvidia/cu13/lib`): [`load`] opens it from there first, and the loader then finds the
//! already-open library by its soname.
//!
//! Options: `--fmad=false` (no contraction of `a * b + c`, so the device gives the bits
//! the CPU gives), `--std=c++17`, `--device-int128` (the exact decimals of the dataframe
//! kernels), and the target architecture. PTX is cached in memory and
//! on disk under `$XDG_CACHE_HOME/tessera/kernels` (or `~/.cache/...`), one file per
//! (text, architecture, NVRTC version), written atomically.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use tessera_core::{Error, Result};

use crate::codegen::stable_hash;

/// The env var naming the folder that holds `libnvrtc.so.N`.
pub const NVRTC_DIR_VAR: &str = "TESSERA_NVRTC_DIR";

/// The library names tried, newest first.
const SONAMES: [&str; 2] = ["libnvrtc.so.13", "libnvrtc.so.12"];

/// Opens NVRTC (from [`NVRTC_DIR_VAR`] first, then the loader's path) and returns its
/// version, `(major, minor)`. Never panics; the result is computed once.
///
/// # Errors
/// A sentence saying where NVRTC was looked for and how to provide it.
pub fn load() -> std::result::Result<(i32, i32), String> {
    static LOADED: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    LOADED.get_or_init(load_once).clone()
}

#[allow(unsafe_code)]
fn load_once() -> std::result::Result<(i32, i32), String> {
    let dir = std::env::var_os(NVRTC_DIR_VAR).map(PathBuf::from);
    if let Some(dir) = &dir {
        for name in SONAMES {
            let path = dir.join(name);
            if path.exists() {
                // SAFETY: loading NVRTC runs its initialisers, which have no preconditions.
                // The handle is leaked on purpose: the library stays loaded for the life
                // of the process, so cudarc's later open by soname finds it.
                match unsafe { libloading::Library::new(&path) } {
                    Ok(lib) => std::mem::forget(lib),
                    Err(e) => return Err(format!("{} could not be loaded: {e}", path.display())),
                }
                break;
            }
        }
    }
    // SAFETY: `is_culib_present` only tries to dlopen NVRTC and reports whether it could.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(format!(
            "NVRTC not found: no libnvrtc.so.13 or .12 on the loader's path{}; install the \
             CUDA toolkit's NVRTC or `pip install nvidia-cuda-nvrtc` and set {NVRTC_DIR_VAR} \
             to its lib folder",
            match &dir {
                Some(d) => format!(" or in {NVRTC_DIR_VAR}={}", d.display()),
                None => String::new(),
            }
        ));
    }
    let version = std::panic::catch_unwind(|| {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: NVRTC is loaded (checked above); `nvrtcVersion` writes two ints through
        // valid pointers to locals.
        let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
        (r, major, minor)
    })
    .map_err(|p| {
        format!(
            "NVRTC loaded but failed: {}",
            tessera_core::error::panic_message(p.as_ref())
        )
    })?;
    match version {
        (cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS, major, minor) => Ok((major, minor)),
        (r, _, _) => Err(format!("NVRTC loaded but nvrtcVersion failed: {r:?}")),
    }
}

/// PTX by (text hash, architecture).
type PtxCache = HashMap<(u64, &'static str), Arc<String>>;

/// A compiled kernel.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The PTX text.
    pub ptx: Arc<String>,
    /// Whether it came from a cache (memory or disk) rather than a compile.
    pub cached: bool,
}

/// Compiles `source` for `arch` (e.g. `compute_90`), through the memory and disk caches.
///
/// # Errors
/// [`Error::Unavailable`] when NVRTC cannot be loaded; [`Error::Internal`] with NVRTC's log
/// when the text does not compile (a bug in the code generator, since every text it makes
/// is meant to compile).
pub fn compile(source: &str, arch: &'static str) -> Result<Compiled> {
    static MEMORY: OnceLock<Mutex<PtxCache>> = OnceLock::new();
    let (major, minor) = load().map_err(|reason| Error::Unavailable {
        name: "cuda".to_string(),
        reason,
    })?;
    let key = stable_hash(source.as_bytes());
    let memory = MEMORY.get_or_init(Default::default);
    if let Some(ptx) = memory.lock().map_err(poisoned)?.get(&(key, arch)) {
        return Ok(Compiled {
            ptx: ptx.clone(),
            cached: true,
        });
    }
    let file = cache_dir().map(|d| d.join(format!("{key:016x}-{arch}-nvrtc{major}.{minor}.ptx")));
    if let Some(text) = file.as_ref().and_then(|f| std::fs::read_to_string(f).ok()) {
        let ptx = Arc::new(text);
        memory
            .lock()
            .map_err(poisoned)?
            .insert((key, arch), ptx.clone());
        return Ok(Compiled { ptx, cached: true });
    }
    let ptx = compile_uncached(source, arch)?;
    if let Some(f) = &file {
        // Best effort: a cache that cannot be written only costs a compile next time.
        let _ = write_atomically(f, &ptx);
    }
    let ptx = Arc::new(ptx);
    memory
        .lock()
        .map_err(poisoned)?
        .insert((key, arch), ptx.clone());
    Ok(Compiled { ptx, cached: false })
}

/// Compiles `source` for `arch` with NVRTC, bypassing both caches (what the cache stores;
/// tests use it so that a cached PTX cannot stand in for a compile).
///
/// # Errors
/// As [`compile`].
pub fn compile_uncached(source: &str, arch: &'static str) -> Result<String> {
    load().map_err(|reason| Error::Unavailable {
        name: "cuda".to_string(),
        reason,
    })?;
    let key = stable_hash(source.as_bytes());
    let opts = cudarc::nvrtc::CompileOptions {
        fmad: Some(false),
        arch: Some(arch),
        // 128-bit integers: the dataframe kernels' exact decimals.
        options: vec!["--std=c++17".to_string(), "--device-int128".to_string()],
        ..Default::default()
    };
    let src = source.to_string();
    let ptx = std::panic::catch_unwind(move || cudarc::nvrtc::compile_ptx_with_opts(src, opts))
        .map_err(|p| {
            Error::Internal(format!(
                "NVRTC panicked: {}",
                tessera_core::error::panic_message(p.as_ref())
            ))
        })?
        .map_err(|e| match e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => Error::Internal(format!(
                "NVRTC rejected kernel {key:016x}:\n{}",
                log.to_string_lossy()
            )),
            other => Error::Internal(format!("NVRTC failed on kernel {key:016x}: {other:?}")),
        })?;
    std::panic::catch_unwind(move || ptx.to_src()).map_err(|p| {
        Error::Internal(format!(
            "NVRTC's PTX for kernel {key:016x} is not text: {}",
            tessera_core::error::panic_message(p.as_ref())
        ))
    })
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> Error {
    Error::Internal("the kernel cache's lock was poisoned by a panic".to_string())
}

/// `$XDG_CACHE_HOME/tessera/kernels`, else `$HOME/.cache/tessera/kernels`.
fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let dir = base.join("tessera").join("kernels");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir)
}

fn write_atomically(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}
