//! The one error type of tessera.
//!
//! Every variant names what was asked (the op), where (the backend) and what was wrong
//! with the input (shapes, dtypes, names), and where it can, what would be right. Library
//! code returns these instead of panicking on user input.

use crate::dtype::DType;

/// Result alias used across tessera.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in tessera.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Two shapes do not fit an operation.
    #[error("{op}: shape mismatch: {detail}")]
    Shape {
        /// The operation.
        op: String,
        /// What is wrong, with the shapes.
        detail: String,
    },

    /// A dtype is not accepted by an operation.
    #[error("{op}: unsupported dtype {dtype}: {detail}")]
    DType {
        /// The operation.
        op: String,
        /// The offending dtype.
        dtype: DType,
        /// What would be accepted.
        detail: String,
    },

    /// A backend declares that it does not support an op for a dtype.
    #[error("backend '{backend}' does not support {op} for {dtype} (declared in its capabilities); choose another backend with `to_backend`")]
    Unsupported {
        /// The backend's name.
        backend: String,
        /// The operation.
        op: String,
        /// The dtype asked for.
        dtype: DType,
    },

    /// A dataframe backend declares that it does not support an operation (an
    /// aggregation, a join algorithm) in its `FrameCapabilities`.
    #[error("dataframe backend '{backend}' does not support {op} (declared in its capabilities); choose another dataframe backend")]
    FrameUnsupported {
        /// The backend's name.
        backend: String,
        /// The operation (`aggregate nunique`, `join sorted_merge`).
        op: String,
    },

    /// An invalid argument (axis out of range, bad slice, bad chunk spec, ...).
    #[error("{op}: invalid argument: {detail}")]
    Invalid {
        /// The operation.
        op: String,
        /// What was wrong and what would be right.
        detail: String,
    },

    /// No backend of that name is registered.
    #[error("unknown {kind} backend '{name}'; registered: {available}")]
    UnknownBackend {
        /// `array` or `dataframe`.
        kind: String,
        /// The name asked for.
        name: String,
        /// Comma-separated list of registered backends.
        available: String,
    },

    /// The backend is registered but cannot run here (no driver, no device).
    #[error("backend '{name}' is unavailable: {reason}")]
    Unavailable {
        /// The backend's name.
        name: String,
        /// Why it cannot run.
        reason: String,
    },

    /// This program was compiled for instructions this CPU lacks (a `-C target-cpu` build
    /// carried to an older CPU); refused before a kernel stops with an illegal
    /// instruction.
    #[error(transparent)]
    WrongCpu(#[from] tessera_kernels::target::TargetMismatch),

    /// A backend of that name is already registered.
    #[error("a backend named '{name}' is already registered; backend names must be unique")]
    DuplicateBackend {
        /// The clashing name.
        name: String,
    },

    /// A chunk was handed to a backend that does not own it.
    #[error("{op}: backend '{backend}' was given a chunk owned by backend '{owner}'; convert with `to_backend` first")]
    ForeignChunk {
        /// The operation.
        op: String,
        /// The backend that was called.
        backend: String,
        /// The backend owning the chunk.
        owner: String,
    },

    /// A frame partition was handed to a dataframe backend that does not own it.
    #[error("{op}: dataframe backend '{backend}' was given a partition owned by backend '{owner}'; move the frame with `to_backend` first")]
    ForeignPartition {
        /// The operation.
        op: String,
        /// The backend that was called.
        backend: String,
        /// The backend owning the partition.
        owner: String,
    },

    /// A configuration problem: unknown key, bad value, unreadable file.
    #[error("config: {0}")]
    Config(String),

    /// A plan exceeds the memory budget.
    #[error(
        "plan needs about {projected} bytes at peak but memory-limit is {limit} bytes: {advice}"
    )]
    MemoryLimit {
        /// Projected peak bytes.
        projected: u64,
        /// The configured limit.
        limit: u64,
        /// What to change.
        advice: String,
    },

    /// A user callback (`map_blocks`, `map_partitions`) failed, panicked, or returned the
    /// wrong shape, dtype or schema.
    #[error("{op}: {detail}")]
    UserFunction {
        /// `map_blocks` or `map_partitions`.
        op: String,
        /// What went wrong, naming the block or partition.
        detail: String,
    },

    /// An invariant inside tessera broke; this is a bug, please report it.
    #[error("internal error (a tessera bug): {0}")]
    Internal(String),

    /// A plugin library could not be loaded (missing, not a library, no entry symbol, bad
    /// declaration).
    #[error("plugin {path}: {reason}")]
    PluginLoad {
        /// The library path.
        path: String,
        /// What was wrong.
        reason: String,
    },

    /// A plugin was built for another version of the plugin ABI.
    #[error("plugin {path} was built for tessera plugin ABI version {found}, but this tessera speaks version {expected}; rebuild the plugin against tessera-plugin-abi with ABI version {expected}")]
    PluginAbi {
        /// The library path.
        path: String,
        /// The plugin's ABI version.
        found: u32,
        /// This host's ABI version.
        expected: u32,
    },

    /// A plugin broke the protocol at run time: it panicked, or returned malformed data
    /// or a chunk that does not match the operation. The host refuses the result and
    /// keeps running.
    #[error("plugin backend '{backend}' failed in {op}: {detail}")]
    Plugin {
        /// The plugin backend's name.
        backend: String,
        /// The operation.
        op: String,
        /// What went wrong.
        detail: String,
    },

    /// An Arrow kernel or Arrow data error, with the op and what it was working on.
    #[error("{op}: {}{source}", context.as_deref().map(|c| format!("{c}: ")).unwrap_or_default())]
    Arrow {
        /// The operation.
        op: String,
        /// What it was working on (a column, a file), when known.
        context: Option<String>,
        /// The Arrow error.
        source: Box<arrow_schema::ArrowError>,
    },

    /// A Parquet file could not be read or written (corrupt, truncated, unsupported
    /// encoding), with the op and the file.
    #[error("{op}: {path}: {source}")]
    Parquet {
        /// `read_parquet`, `to_parquet`, ...
        op: String,
        /// The file.
        path: String,
        /// The parquet crate's error (boxed: the protocol does not depend on parquet).
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },

    /// A task panicked — a backend kernel, a file decoder — and the panic was caught at
    /// the task boundary: the computation stopped with this error instead of unwinding
    /// through the caller. (A user function's panic is [`Error::UserFunction`].)
    #[error("{task} panicked: {message}")]
    Panicked {
        /// Which task: its number and what it was doing.
        task: String,
        /// The panic's message.
        message: String,
    },

    /// Under the `mpi` scheduler: a rank failed a task, stopped answering, or the job was
    /// launched wrongly. Every rank stops with this error instead of waiting; `rank` is the
    /// rank where it happened (or the one that was waited for).
    #[error("distributed run, rank {rank}: {detail}")]
    Distributed {
        /// The rank that failed or was waited for.
        rank: usize,
        /// What happened, naming the task and, for a wait, how long.
        detail: String,
    },

    /// A file a plan reads is not the file it was when the plan was made (replaced,
    /// rewritten, appended to): the compute stops rather than mix two versions.
    #[error("{path} changed since it was planned ({detail}); build the frame or array again to read the new version")]
    FileChanged {
        /// The file.
        path: String,
        /// What differs.
        detail: String,
    },

    /// Stored data that is not what its format requires (a corrupt header, a chunk that
    /// does not decode, metadata tessera cannot read), or a storage service's refusal.
    #[error("{location}: {detail}")]
    Storage {
        /// The file, store or URL.
        location: String,
        /// What was wrong, and what would be right.
        detail: String,
    },

    /// A device call failed: out of device memory, a kernel launch or copy refused, a
    /// device lost. Names the backend, the op and the driver's words.
    #[error("backend '{backend}': {op} failed on the device: {detail}")]
    Device {
        /// The backend (`cuda`).
        backend: String,
        /// The operation.
        op: String,
        /// The driver's error and what it was doing.
        detail: String,
    },

    /// The computation was cancelled from outside (Ctrl-C in Python, a caller's
    /// `CancelToken`) before it finished; nothing it computed was kept.
    #[error("the computation was cancelled before it finished; nothing it computed was kept")]
    Cancelled,

    /// An I/O error with the path it happened on.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl From<tessera_config::ConfigError> for Error {
    fn from(e: tessera_config::ConfigError) -> Error {
        match e {
            tessera_config::ConfigError::Invalid(message) => Error::Config(message),
            tessera_config::ConfigError::Io { path, source } => Error::Io { path, source },
        }
    }
}

impl Error {
    /// Shorthand for [`Error::Shape`].
    pub fn shape(op: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::Shape {
            op: op.into(),
            detail: detail.into(),
        }
    }

    /// Shorthand for [`Error::Invalid`].
    pub fn invalid(op: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::Invalid {
            op: op.into(),
            detail: detail.into(),
        }
    }

    /// Shorthand for [`Error::DType`].
    pub fn dtype(op: impl Into<String>, dtype: DType, detail: impl Into<String>) -> Error {
        Error::DType {
            op: op.into(),
            dtype,
            detail: detail.into(),
        }
    }

    /// Shorthand for [`Error::Io`] on `path`.
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }

    /// Shorthand for [`Error::UserFunction`].
    pub fn user_function(op: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::UserFunction {
            op: op.into(),
            detail: detail.into(),
        }
    }

    /// An [`Error::Arrow`] from `source` in `op`.
    pub fn arrow(op: impl Into<String>, source: arrow_schema::ArrowError) -> Error {
        Error::Arrow {
            op: op.into(),
            context: None,
            source: Box::new(source),
        }
    }

    /// An [`Error::Arrow`] from `source` in `op`, working on `context` (a column, a file).
    pub fn arrow_in(
        op: impl Into<String>,
        context: impl Into<String>,
        source: arrow_schema::ArrowError,
    ) -> Error {
        Error::Arrow {
            op: op.into(),
            context: Some(context.into()),
            source: Box::new(source),
        }
    }

    /// An [`Error::Parquet`] from `source` in `op` on the file at `path`.
    pub fn parquet(
        op: impl Into<String>,
        path: impl AsRef<std::path::Path>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Parquet {
            op: op.into(),
            path: path.as_ref().display().to_string(),
            source: Box::new(source),
        }
    }

    /// True for [`Error::Unsupported`]: the conformance suite and fallbacks test for it.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, Error::Unsupported { .. })
    }
}

/// The text of a caught panic's payload (`&str` or `String`; other payloads are named as
/// such).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string())
}

thread_local! {
    /// How many [`catch_panic`] boundaries this thread is inside.
    static CATCHING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Wraps the panic hook once, so that a panic inside a [`catch_panic`] boundary is not
/// printed: it becomes a typed error that carries its message, and a second report on
/// stderr (for a decoder's panic the caller already handles) is noise. Outside a
/// boundary, and whenever `RUST_BACKTRACE` asks for detail, the previous hook runs as
/// before; a caught panic is still logged at debug level with its location.
fn quiet_caught_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        let verbose = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
        std::panic::set_hook(Box::new(move |info| {
            if verbose || CATCHING.with(std::cell::Cell::get) == 0 {
                previous(info);
            } else {
                log::debug!("caught a panic at a task boundary: {info}");
            }
        }));
    });
}

/// Leaves a [`catch_panic`] boundary, also when its closure unwinds.
struct Boundary;

impl Boundary {
    fn enter() -> Boundary {
        CATCHING.with(|c| c.set(c.get() + 1));
        Boundary
    }
}

impl Drop for Boundary {
    fn drop(&mut self) {
        CATCHING.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// Runs `f` at a task boundary: a panic inside it becomes the error `on_panic` makes from
/// the panic's message, so third-party code (a decoder, a kernel, a user function) cannot
/// unwind through tessera into the caller. The panic is reported once, as that error, not
/// also printed to stderr by the default panic hook (set `RUST_BACKTRACE=1` to have both).
///
/// # Errors
/// What `f` returns, or `on_panic(message)` when it panicked.
pub fn catch_panic<T>(
    f: impl FnOnce() -> Result<T>,
    on_panic: impl FnOnce(String) -> Error,
) -> Result<T> {
    quiet_caught_panics();
    let boundary = Boundary::enter();
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    drop(boundary);
    out.unwrap_or_else(|payload| Err(on_panic(panic_message(payload.as_ref()))))
}

impl From<arrow_schema::ArrowError> for Error {
    /// An Arrow error with no op known; prefer [`Error::arrow`], which names the op.
    fn from(source: arrow_schema::ArrowError) -> Error {
        Error::arrow("arrow", source)
    }
}

impl From<tessera_kernels::digest::MalformedDigest> for Error {
    fn from(e: tessera_kernels::digest::MalformedDigest) -> Error {
        Error::invalid("approx_quantile", e.to_string())
    }
}
