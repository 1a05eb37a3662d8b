//! The dataframe backend protocol: partitions, partition-level primitives, expressions.
//!
//! - [`backend`]: the object-safe [`DataFrameBackend`] trait over type-erased partitions,
//!   and the fused filter/projection [`FrameProgram`] a backend evaluates in one pass;
//! - [`expr`]: column expressions (`col("tip") / col("fare")`), and [`expr_schema`]: their
//!   typing rules;
//! - [`temporal`]: calendar arithmetic in expressions (intervals, elapsed time, truncation);
//! - [`digest`]: the t-digest behind `approx_quantile`, shared so that every backend's
//!   states merge the same way;
//! - [`window`]: window functions (`shift`, `cumsum`, `ffill`, `rolling`) and the carry
//!   that takes them across partitions;
//!
//! The lazy `DataFrame`, its optimizer and the distributed algorithms built from these
//! primitives live in `tessera-frame`; a dataframe backend author needs only this module (and a plugin's, the wire form of
//! `tessera-plugin-ffi`, which the plugin SDK speaks for it).

pub mod backend;
pub use tessera_kernels::digest;
pub mod expr;
pub mod expr_schema;
pub mod instant_text;
pub mod temporal;
pub mod window;

pub use backend::{
    downcast_partition, program_schema, AggFunc, AggSpec, DataFrameBackend, FrameBackendRef,
    FrameCapabilities, FrameProgram, FrameStep, JoinAlgorithm, JoinSpec, JoinType, Partition,
    PartitionData, PlanStep, Quantile, SortKey, StoredForms,
};
pub use expr::{
    categorical_type, coalesce, col, lit, when, BinaryOp, DatePart, Expr, Literal, MathFunc,
    StrFunc,
};
pub use temporal::{DateUnit, Interval};
pub use window::{RollingAgg, WindowFunc, WindowSpec};
