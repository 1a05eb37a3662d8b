//! Partitioned dataframes: the protocol, the lazy plan, the distributed algorithms, IO.
//!
//! - [`expr`]: column expressions (`col("tip") / col("fare")`) and their typing rules;
//! - [`backend`]: the object-safe [`DataFrameBackend`] trait over type-erased partitions —
//!   the partition-level primitives a backend implements;
//! - [`plan`]: the logical plan and its optimizer (fusion, projection and predicate
//!   pushdown), printed by `explain`;
//! - [`exec`]: groupby (tree or shuffle), joins (broadcast, sorted merge, hash shuffle),
//!   sample sort, built from the primitives;
//! - [`io`]: `read_csv`, `read_parquet`, `to_csv`, `to_parquet`;
//! - [`DataFrame`]: the user API.
//!
//! The backend is chosen like the array one: an explicit name, else `dataframe.backend`
//! in config (`TESSERA_DATAFRAME_BACKEND`, `tessera.toml`, or a scoped override).

pub mod backend;
mod dataframe;
pub mod display;
pub mod exec;
pub mod expr;
pub mod io;
pub mod plan;

pub use backend::{
    downcast_partition, AggFunc, AggSpec, DataFrameBackend, FrameBackendRef, FrameCapabilities,
    FrameProgram, FrameStep, JoinAlgorithm, JoinSpec, JoinType, Partition, PartitionData, SortKey,
};
pub use dataframe::{batch_from_columns, Computed, DataFrame, GroupBy};
pub use display::Value;
pub use expr::{col, lit, BinaryOp, DatePart, Expr, Literal};
pub use io::{read_csv, read_parquet, CsvOptions};
pub use plan::{GroupStrategy, JoinStrategy};

/// Arrow, as tessera uses it: batches, arrays and schemas of frames.
pub use arrow_array;
/// Arrow schemas and data types.
pub use arrow_schema;
