//! Reading and writing frames: CSV (byte-range parallel reader, atomic writer) and
//! Parquet (row groups as partitions, statistics pruning; the `parquet` feature). Readers produce Arrow batches
//! on the host that the frame's backend then takes over; a backend with its own reader
//! (a GPU CSV parser) can plug in as another [`crate::plan::FileSource`].

pub mod csv_read;
mod csv_write;
pub(crate) mod dataset;
#[cfg(feature = "parquet")]
mod hive;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod parse;

pub use csv_read::{read_csv, CsvOptions};
#[cfg(feature = "parquet")]
pub use parquet::read_parquet;
