//! # tessera for Python
//!
//! The extension module `tessera._tessera` behind the `tessera` package: chunked arrays
//! shaped like `dask.array` ([`array`](mod@array), [`creation`], [`linalg`], [`storage`]),
//! partitioned dataframes shaped like `dask.dataframe` with Polars-style expressions
//! ([`frame`], [`expr`]), configuration like `dask.config` ([`config`]), and errors as
//! typed Python exceptions ([`errors`]).
//!
//! Two rules hold everywhere. Every computation runs without the GIL on a thread of its
//! own and stops on Ctrl-C ([`run`]). Results cross into Python without a copy: arrays
//! as NumPy arrays owning the engine's buffer ([`convert`]), frames through the Arrow
//! PyCapsule interface ([`arrow_ffi`]).
//!
//! Built with PyO3 on the stable ABI (`abi3-py310`): one wheel serves every CPython from
//! 3.10. `pip install ./python` builds it with maturin.

use pyo3::prelude::*;

pub mod array;
pub mod array_device;
pub mod arrow_ffi;
pub mod axes;
pub mod block_sink;
pub mod block_source;
pub mod chunking;
pub mod config;
pub mod convert;
pub mod creation;
pub mod errors;
pub mod expr;
pub mod frame;
pub mod html;
pub mod index_array;
pub mod linalg;
pub mod quantile;
pub mod run;
pub mod scan;
pub mod search;
pub mod sort;
pub mod storage;
pub mod take;
pub mod ufunc;

/// The extension module.
#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // A wheel compiled for a newer CPU than this one refuses to import with the reason,
    // rather than stopping the interpreter with an illegal instruction later.
    tessera::target::check()
        .map_err(|e| pyo3::exceptions::PyImportError::new_err(e.to_string()))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<array::PyArray>()?;
    m.add_class::<creation::PyRandomState>()?;
    m.add_class::<frame::PyDataFrame>()?;
    m.add_class::<frame::PyGroupBy>()?;
    m.add_class::<frame::PyComputed>()?;
    m.add_class::<expr::PyExpr>()?;
    m.add_class::<expr::PyWhen>()?;
    m.add_class::<config::ConfigScope>()?;
    m.add_function(wrap_pyfunction!(creation::ones, m)?)?;
    m.add_function(wrap_pyfunction!(creation::zeros, m)?)?;
    m.add_function(wrap_pyfunction!(creation::empty, m)?)?;
    m.add_function(wrap_pyfunction!(creation::full, m)?)?;
    m.add_function(wrap_pyfunction!(creation::arange, m)?)?;
    m.add_function(wrap_pyfunction!(creation::linspace, m)?)?;
    m.add_function(wrap_pyfunction!(creation::eye, m)?)?;
    m.add_function(wrap_pyfunction!(creation::from_array, m)?)?;
    m.add_function(wrap_pyfunction!(chunking::normalize_chunks, m)?)?;
    m.add_function(wrap_pyfunction!(chunking::chunk_size_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(block_sink::store_plan_py, m)?)?;
    m.add_function(wrap_pyfunction!(creation::concatenate, m)?)?;
    m.add_function(wrap_pyfunction!(creation::stack, m)?)?;
    m.add_function(wrap_pyfunction!(creation::where_, m)?)?;
    m.add_function(wrap_pyfunction!(creation::broadcast_to, m)?)?;
    m.add_function(wrap_pyfunction!(creation::broadcast_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(creation::map_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(creation::compute, m)?)?;
    m.add_function(wrap_pyfunction!(creation::cumulative, m)?)?;
    m.add_function(wrap_pyfunction!(sort::sort, m)?)?;
    m.add_function(wrap_pyfunction!(quantile::quantile, m)?)?;
    m.add_function(wrap_pyfunction!(quantile::median, m)?)?;
    m.add_function(wrap_pyfunction!(sort::argsort, m)?)?;
    m.add_function(wrap_pyfunction!(take::take, m)?)?;
    m.add_function(wrap_pyfunction!(search::searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(search::isin, m)?)?;
    m.add_function(wrap_pyfunction!(take::take_along_axis, m)?)?;
    m.add_function(wrap_pyfunction!(linalg::svd, m)?)?;
    m.add_function(wrap_pyfunction!(linalg::svd_compressed, m)?)?;
    m.add_function(wrap_pyfunction!(linalg::qr, m)?)?;
    m.add_function(wrap_pyfunction!(linalg::lstsq, m)?)?;
    m.add_function(wrap_pyfunction!(linalg::norm, m)?)?;
    m.add_function(wrap_pyfunction!(storage::from_npy, m)?)?;
    m.add_function(wrap_pyfunction!(storage::to_npy, m)?)?;
    m.add_function(wrap_pyfunction!(storage::from_zarr, m)?)?;
    m.add_function(wrap_pyfunction!(storage::to_zarr, m)?)?;
    m.add_function(wrap_pyfunction!(frame::io::read_csv, m)?)?;
    m.add_function(wrap_pyfunction!(frame::io::read_parquet, m)?)?;
    m.add_function(wrap_pyfunction!(frame::io::from_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(frame::io::concat_frames, m)?)?;
    m.add_function(wrap_pyfunction!(expr::col_, m)?)?;
    m.add_function(wrap_pyfunction!(expr::lit_, m)?)?;
    m.add_function(wrap_pyfunction!(expr::when_, m)?)?;
    m.add_function(wrap_pyfunction!(config::config_get, m)?)?;
    m.add_function(wrap_pyfunction!(config::config_set, m)?)?;
    m.add_function(wrap_pyfunction!(config::config_keys, m)?)?;
    m.add_function(wrap_pyfunction!(config::backends, m)?)?;
    #[cfg(feature = "plugins")]
    m.add_function(wrap_pyfunction!(config::load_plugin, m)?)?;
    Ok(())
}
