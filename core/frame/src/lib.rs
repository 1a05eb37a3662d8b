//! # tessera-frame: lazy partitioned dataframes
//!
//! The dataframe engine above the protocol (`tessera-core`, whose [`backend`] and [`expr`]
//! modules this crate re-exports, so `tessera::frame` is one place for users):
//!
//! - [`plan`]: the logical plan and its optimizer (fusion, projection and predicate
//!   pushdown), printed by `explain`;
//! - [`algorithms`]: groupby (tree or shuffle), joins (broadcast, sorted merge, hash
//!   shuffle), sample sort, built from a backend's partition-level primitives; under
//!   `scheduler = "mpi"` the same algorithms over the ranks of a job (`distributed`);
//! - [`io`]: `read_csv`, `to_csv`, and with the `parquet` feature (on by default)
//!   `read_parquet`, `to_parquet`;
//! - [`DataFrame`]: the user API.
//!
//! A dataframe backend author implements [`DataFrameBackend`] from `tessera-core` and
//! needs nothing from this crate.
//!
//! The backend is chosen like the array one: an explicit name, else `dataframe.backend`
//! in config (`TESSERA_DATAFRAME_BACKEND`, `tessera.toml`, or a scoped override).

mod count_rows;
mod cse;
mod dataframe;
mod describe;
pub mod display;
pub mod exec;
pub mod io;
mod join_guess;
mod join_order;
mod merge;
mod null_keys;
pub mod plan;
mod pushdown;
mod reshape;
mod sample;
mod swap_join;

pub use tessera_core::frame::{backend, expr, temporal, window};

pub use backend::{
    downcast_partition, program_schema, AggFunc, AggSpec, DataFrameBackend, FrameBackendRef,
    FrameCapabilities, FrameProgram, FrameStep, JoinAlgorithm, JoinSpec, JoinType, Partition,
    PartitionData, Quantile, SortKey,
};
pub use dataframe::{batch_from_columns, Computed, DataFrame, DropHow, GroupBy};
pub use display::Value;
pub use expr::{coalesce, col, lit, when, BinaryOp, DatePart, Expr, Literal, MathFunc, StrFunc};
#[cfg(feature = "parquet")]
pub use io::read_parquet;
pub use io::{read_csv, CsvOptions};
pub use merge::MergeOptions;
pub use null_keys::Keep;
pub use plan::{GroupStrategy, JoinStrategy};
pub use reshape::RankMethod;
pub use temporal::{DateUnit, Interval};
pub use window::{RollingAgg, WindowFunc, WindowSpec};

/// Arrow, as tessera uses it: batches, arrays and schemas of frames.
pub use arrow_array;
/// Arrow schemas and data types.
pub use arrow_schema;

// The protocol's modules under the names this crate's code uses (`crate::error`, ...).
use tessera_core::{config, error, registry};
