//! tessera's errors as Python exceptions.
//!
//! Every [`Error`] variant maps to one exception class of `tessera.exceptions` (defined in
//! Python, so that each subclasses both `tessera.TesseraError` and the builtin a Python
//! user would catch for that kind of failure: `ValueError` for bad arguments (and also
//! `TypeError` for dtypes an op does not take, as NumPy),
//! `MemoryError` for a plan over `memory-limit`, `OSError` for files); a cancelled compute
//! raises `KeyboardInterrupt`.
//! The message is the Rust error's, which names the op, the shapes and what would be right.
//!
//! A Python exception raised inside a user function (`map_blocks`, `map_partitions`)
//! crosses the Rust engine as an [`Error::UserFunction`] whose text carries a ticket; the
//! exception itself waits in a table of pending exceptions and is re-raised unchanged when the error comes
//! back to Python, so `except ZeroDivisionError` works around a `compute()`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::PyType;
use tessera::Error;

/// Python exceptions raised inside user functions, waiting to be re-raised by the
/// `compute()` that ran them (see the module docs), by ticket.
static PENDING: LazyLock<Mutex<HashMap<u64, PyErr>>> = LazyLock::new(Default::default);
static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);
const TICKET: &str = "[python exception #";

/// Keeps `err` (raised by the user function `op` on `what`) for the caller of
/// `compute()` and returns the engine error that carries its ticket.
pub fn park_python_error(op: &str, what: &str, err: PyErr) -> Error {
    let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
    let text = Python::attach(|py| {
        format!(
            "{}: {}",
            err.get_type(py)
                .name()
                .map_or_else(|_| "exception".into(), |n| n.to_string()),
            err.value(py)
        )
    });
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(ticket, err);
    Error::user_function(op, format!("{what} raised {text} {TICKET}{ticket}]"))
}

/// The parked exception whose ticket `message` carries, taken out of [`PENDING`].
fn unpark(message: &str) -> Option<PyErr> {
    let start = message.find(TICKET)? + TICKET.len();
    let end = start + message[start..].find(']')?;
    let ticket: u64 = message[start..end].parse().ok()?;
    PENDING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&ticket)
}

/// The class of `tessera.exceptions` that `e` raises as.
fn class_name(e: &Error) -> &'static str {
    match e {
        Error::DType { .. } => "DTypeError",
        Error::Shape { .. } | Error::Invalid { .. } => "InvalidArgumentError",
        Error::Unsupported { .. } | Error::FrameUnsupported { .. } => "UnsupportedError",
        Error::UnknownBackend { .. }
        | Error::Unavailable { .. }
        | Error::DuplicateBackend { .. }
        | Error::ForeignChunk { .. }
        | Error::ForeignPartition { .. }
        | Error::WrongCpu(_) => "BackendUnavailableError",
        Error::Config(_) => "ConfigError",
        Error::MemoryLimit { .. } => "MemoryLimitError",
        Error::FileChanged { .. } => "FileChangedError",
        Error::Storage { .. } | Error::Io { .. } | Error::Parquet { .. } | Error::Arrow { .. } => {
            "StorageError"
        }
        Error::UserFunction { .. } => "UserFunctionError",
        Error::PluginLoad { .. } | Error::PluginAbi { .. } | Error::Plugin { .. } => "PluginError",
        Error::Distributed { .. } => "DistributedError",
        Error::Device { .. } => "DeviceError",
        Error::Internal(_) | Error::Panicked { .. } => "InternalError",
        _ => "TesseraError",
    }
}

/// The Python exception for `e`: a parked user exception as it was raised, a cancelled
/// compute as `KeyboardInterrupt`, anything else as its `tessera.exceptions` class with
/// the Rust message.
pub fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    if let Error::UserFunction { .. } = e {
        if let Some(original) = unpark(&msg) {
            return original;
        }
    }
    if let Error::Cancelled = e {
        return PyKeyboardInterrupt::new_err(msg);
    }
    let name = class_name(&e);
    Python::attach(|py| {
        match py
            .import("tessera.exceptions")
            .and_then(|m| m.getattr(name))
            .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from))
        {
            Ok(class) => PyErr::from_type(class, msg),
            Err(import_failed) => import_failed,
        }
    })
}

/// `Result<T, Error>` into `PyResult<T>`.
pub trait IntoPy<T> {
    /// The Python exception for an error (see [`to_py`]).
    fn py_err(self) -> PyResult<T>;
}

impl<T, E: Into<Error>> IntoPy<T> for Result<T, E> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(|e| to_py(e.into()))
    }
}
