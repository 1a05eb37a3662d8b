//! Configuration as `dask.config` has it, over tessera's layered config: `config.get`,
//! `config.set` (applied at once; undone on leaving a `with` block), the keys with their
//! sources and docs, the backends with availability, and loading a plugin library.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tessera::config;
use tessera::registry::BackendKind;

use crate::errors::IntoPy;

/// The value of a key and where it came from (default, file, environment, override).
#[pyfunction]
pub fn config_get(key: &str) -> PyResult<(String, String)> {
    let (value, source) = config::get(key).py_err()?;
    Ok((value, source.to_string()))
}

/// A scope of overrides: alive while the Python object lives (the package keeps one
/// alive until `__exit__`, or forever when `set` is not used as a context manager).
#[pyclass(name = "ConfigScope", module = "tessera.config")]
pub struct ConfigScope {
    guard: Option<config::ConfigGuard>,
}

#[pymethods]
impl ConfigScope {
    /// Undoes exactly these overrides (idempotent).
    fn close(&mut self) {
        self.guard = None;
    }
}

/// Applies overrides, process-wide (every thread sees them, as with `dask.config.set`);
/// validated at once, so an unknown key or a bad value raises here.
#[pyfunction]
pub fn config_set(values: &Bound<'_, PyDict>) -> PyResult<ConfigScope> {
    let pairs: Vec<(String, String)> = values
        .iter()
        .map(|(k, v)| {
            let value = match v.extract::<bool>() {
                Ok(b) if v.is_instance_of::<pyo3::types::PyBool>() => b.to_string(),
                _ => v.str()?.to_string(),
            };
            Ok((k.extract()?, value))
        })
        .collect::<PyResult<_>>()?;
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    Ok(ConfigScope {
        guard: Some(config::set(&refs).py_err()?),
    })
}

/// A key as Python sees it: `(name, environment variable, value, source, doc)`.
pub type KeyRow = (String, String, String, String, String);

/// Every key: `(name, environment variable, value, source, doc)`.
#[pyfunction]
pub fn config_keys() -> PyResult<Vec<KeyRow>> {
    Ok(config::effective()
        .py_err()?
        .into_iter()
        .map(|(k, v, s)| {
            (
                k.name.to_string(),
                k.env.to_string(),
                v,
                s.to_string(),
                k.doc.to_string(),
            )
        })
        .collect())
}

/// Every registered backend: `(name, kind, available, reason)`, plugins named by
/// `plugins`/`TESSERA_PLUGINS` included.
#[pyfunction]
pub fn backends() -> PyResult<Vec<(String, String, bool, String)>> {
    Ok(tessera::backends()
        .py_err()?
        .into_iter()
        .map(|b| {
            let kind = match b.kind {
                BackendKind::Array => "array",
                BackendKind::DataFrame => "dataframe",
            };
            let (ok, why) = match b.availability {
                tessera::backend::Availability::Available => (true, String::new()),
                tessera::backend::Availability::Unavailable(why) => (false, why),
            };
            (b.name, kind.to_string(), ok, why)
        })
        .collect())
}

/// Loads a backend plugin library (array or dataframe) and returns its name.
#[cfg(feature = "plugins")]
#[pyfunction]
pub fn load_plugin(path: &str) -> PyResult<String> {
    use tessera::plugin::LoadedPlugin;
    Ok(match tessera::plugin::load_any_plugin(path).py_err()? {
        LoadedPlugin::Array(b) => b.name().to_string(),
        LoadedPlugin::Frame(b) => b.name().to_string(),
    })
}
