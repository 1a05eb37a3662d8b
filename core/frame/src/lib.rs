//! # tessera-frame: lazy partitioned dataframes
//!
//! The dataframe engine above the protocol (`tessera-core`, whose [`backend`] and [`expr`]
//! modules this crate re-exports, so `tessera::frame` is one place for users):
//!
//! - [`DataFrame`] and the rest of the user API (`api/`: groupby, merge, reshape, null
//!   keys, describe, sample, [`display`]): methods that only build plan nodes;
//! - [`plan`]: the logical plan (a typed [`plan::Node`] tree, the file sources a scan
//!   reads), printed by `explain`, with its projected memory;
//! - [`optimize`]: the rewrites before a plan runs, as rules a driver applies in order
//!   (joins first, then columns pruned into the scans), each checked to keep the schema;
//! - [`exec`]: the executor, one file per operator — scan, groupby (tree or shuffle),
//!   joins (broadcast, sorted merge, hash shuffle), sample sort, repartition, windows —
//!   built from a backend's partition-level primitives; under `scheduler = "mpi"` the
//!   same operators over the ranks of a job (`exec/ranks/`);
//! - [`io`]: `read_csv`, `to_csv`, and with the `parquet` feature (on by default)
//!   `read_parquet`, `to_parquet`.
//!
//! A dataframe backend author implements [`DataFrameBackend`] from `tessera-core` and
//! needs nothing from this crate.
//!
//! The backend is chosen like the array one: an explicit name, else `dataframe.backend`
//! in config (`TESSERA_DATAFRAME_BACKEND`, `tessera.toml`, or a scoped override).

mod api;
pub mod exec;
pub mod io;
pub mod optimize;
pub mod plan;

pub use tessera_core::frame::{backend, expr, temporal, window};

pub use api::computed::Computed;
pub use api::dataframe::{batch_from_columns, DataFrame, DropHow};
pub use api::display;
pub use api::groupby::GroupBy;
pub use api::io::read_csv;
#[cfg(feature = "parquet")]
pub use api::io::read_parquet;
pub use api::merge::MergeOptions;
pub use api::null_keys::Keep;
pub use api::reshape::RankMethod;
pub use backend::{
    downcast_partition, program_schema, AggFunc, AggSpec, DataFrameBackend, FrameBackendRef,
    FrameCapabilities, FrameProgram, FrameStep, JoinAlgorithm, JoinSpec, JoinType, Partition,
    PartitionData, Quantile, SortKey, StoredForms,
};
pub use display::Value;
pub use expr::{
    categorical_type, coalesce, col, lit, when, BinaryOp, DatePart, Expr, Literal, MathFunc,
    StrFunc,
};
pub use io::CsvOptions;
pub use plan::{GroupStrategy, JoinStrategy};
pub use temporal::{DateUnit, Interval};
pub use window::{RollingAgg, WindowFunc, WindowSpec};

/// Arrow, as tessera uses it: batches, arrays and schemas of frames.
pub use arrow_array;
/// Arrow schemas and data types.
pub use arrow_schema;

// The protocol's modules under the names this crate's code uses (`crate::error`, ...).
use tessera_core::{config, error, registry};
