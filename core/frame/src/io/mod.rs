//! Reading and writing frames: CSV (byte-range parallel reader, atomic writer) and
//! Parquet (row groups as partitions, statistics pruning; the `parquet` feature). Readers produce Arrow batches
//! on the host that the frame's backend then takes over; a backend with its own reader
//! (a GPU CSV parser) can plug in as another [`crate::plan::FileSource`].
//!
//! This layer knows files, not frames: a reader is a [`crate::plan::FileSource`] and a
//! writer a `write::FileFormat` fed batches; `read_csv`, `read_parquet`, `to_csv` and
//! `to_parquet` — the frame's side — are in `crate::api::io`, and the executor
//! (`crate::exec::run`) feeds the writers.

#[cfg(feature = "parquet")]
mod coded_columns;
pub mod csv_read;
pub(crate) mod csv_write;
pub(crate) mod dataset;
#[cfg(feature = "parquet")]
mod dictionary_filter;
#[cfg(feature = "parquet")]
mod hive;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod parse;
pub(crate) mod write;

pub use csv_read::CsvOptions;

/// A writer of local files (`to_csv`, `to_parquet`) aimed at an object URL: the files are
/// written locally, then uploaded whole (feature `object-store`; see
/// `tessera_io::object::write_via_local`). Without the feature, an error that says so.
pub(crate) fn write_object(
    op: &str,
    url: &str,
    write: impl FnOnce(&str) -> crate::error::Result<Vec<std::path::PathBuf>>,
) -> crate::error::Result<Vec<std::path::PathBuf>> {
    #[cfg(feature = "object-store")]
    {
        let _ = op;
        tessera_io::object::write_via_local(url, write)
    }
    #[cfg(not(feature = "object-store"))]
    {
        let _ = write;
        Err(crate::error::Error::invalid(
            op,
            format!(
                "'{url}': object-store URLs need tessera built with the `object-store` feature"
            ),
        ))
    }
}
