//! A failed call's status and the plugin's last error, as a typed [`Error`]: shared by the
//! array and dataframe tables, whose `last_error` functions have the same signature.

use std::ffi::c_void;

use tessera_plugin_abi as abi;

use tessera_core::error::{Error, Result};
use tessera_plugin_ffi::convert::{dtype_from_code, str_from_raw};

/// The `last_error` function of a table.
pub(crate) type LastErrorFn =
    unsafe extern "C" fn(instance: *const c_void, out: *mut abi::RawError);

/// [`Error::Plugin`] for backend `name` in `op`.
pub(crate) fn fault(name: &str, op: &str, detail: impl Into<String>) -> Error {
    Error::Plugin {
        backend: name.to_string(),
        op: op.to_string(),
        detail: detail.into(),
    }
}

/// The error behind a non-zero `status` of `op` on plugin backend `name`, read through its
/// `last_error` on the calling thread (the thread that failed).
pub(crate) fn read_error(
    name: &str,
    last_error: LastErrorFn,
    instance: *const c_void,
    op: &str,
    status: i32,
) -> Error {
    let mut raw = abi::RawError::default();
    // SAFETY: `last_error` writes into our struct; called on the thread that failed.
    #[allow(unsafe_code)]
    unsafe {
        last_error(instance, &mut raw)
    };
    // SAFETY: the strings are the plugin's, valid until its next call on this thread.
    #[allow(unsafe_code)]
    let message = unsafe { str_from_raw(raw.message, "message") }
        .unwrap_or("(no message)")
        .to_string();
    // SAFETY: as above.
    #[allow(unsafe_code)]
    let raw_op = unsafe { str_from_raw(raw.op, "op") }
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or(op)
        .to_string();
    let dtype = dtype_from_code(raw.dtype);
    match status {
        abi::STATUS_PANIC => fault(name, op, format!("the plugin panicked: {message}")),
        abi::STATUS_ERROR => match (raw.kind, dtype) {
            (abi::error_kind::SHAPE, _) => Error::shape(raw_op, message),
            (abi::error_kind::DTYPE, Some(d)) => Error::dtype(raw_op, d, message),
            (abi::error_kind::UNSUPPORTED, Some(d)) => Error::Unsupported {
                backend: name.to_string(),
                op: raw_op,
                dtype: d,
            },
            (abi::error_kind::UNSUPPORTED, None) => Error::FrameUnsupported {
                backend: name.to_string(),
                op: raw_op,
            },
            (abi::error_kind::INVALID, _) => Error::invalid(raw_op, message),
            _ => fault(name, op, message),
        },
        other => fault(
            name,
            op,
            format!("returned unknown status {other}: {message}"),
        ),
    }
}

/// `Ok` for a zero status, else the error.
pub(crate) fn check(
    name: &str,
    last_error: LastErrorFn,
    instance: *const c_void,
    op: &str,
    status: i32,
) -> Result<()> {
    if status == abi::STATUS_OK {
        Ok(())
    } else {
        Err(read_error(name, last_error, instance, op, status))
    }
}
