//! Array API devices (`x.device`, `x.to_device(...)`, the namespace's `devices()`): a
//! device names where a backend keeps its chunks, as its capabilities say it.
//!
//! Host backends (`cpu`, `sparse`, host plugins) are the device `"cpu"`; the CUDA backend
//! is `"cuda:0"` (its devices `cuda:0..N` when several cards share the work). Moving to a
//! device is moving to the backend that lives there (`to_backend`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use tessera::Array;

use crate::errors::IntoPy;

/// The device of a backend's placement string (`host`, `host (sparse)`, `cuda:0`).
pub fn device_of_place(place: &str) -> String {
    if place.starts_with("host") {
        "cpu".to_string()
    } else {
        place.split("..").next().unwrap_or(place).to_string()
    }
}

/// The Array API device of `a`.
pub fn device_of(a: &Array) -> String {
    device_of_place(&a.backend().capabilities().device)
}

/// `a` on `device`: itself when it is there, else moved to the backend of that device
/// (`cpu`, or `cuda` for `cuda`/`cuda:N`).
///
/// # Errors
/// `ValueError` for a device tessera has no backend for, or a `stream` (tessera orders
/// its own transfers); `TypeError` when `device` is not a string.
pub fn to_device(
    a: &Array,
    device: &Bound<'_, PyAny>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<Array> {
    if stream.is_some_and(|s| !s.is_none()) {
        return Err(PyValueError::new_err(
            "to_device(stream=...) is not supported: tessera orders its own transfers",
        ));
    }
    let name: String = device.str().and_then(|s| s.extract()).map_err(|_| {
        PyTypeError::new_err(format!(
            "a device is a string such as 'cpu' or 'cuda:0', got {device}"
        ))
    })?;
    if name == device_of(a) {
        return Ok(a.clone());
    }
    let backend = if name == "cpu" {
        "cpu"
    } else if name == "cuda" || name.starts_with("cuda:") {
        "cuda"
    } else {
        return Err(PyValueError::new_err(format!(
            "unknown device '{name}': tessera's devices are 'cpu' and 'cuda:N'"
        )));
    };
    a.to_backend(backend).py_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_name_their_devices() {
        assert_eq!(device_of_place("host"), "cpu");
        assert_eq!(device_of_place("host (sparse)"), "cpu");
        assert_eq!(device_of_place("cuda:0"), "cuda:0");
        assert_eq!(device_of_place("cuda:0..2"), "cuda:0");
    }
}
