//! The dataframe backend protocol: type-erased partitions and partition-level primitives.
//!
//! A partition is a horizontal slice of a frame, owned by one backend
//! (`Arc<dyn PartitionData>`; the backend downcasts its own with [`downcast_partition`]).
//! Its schema is an Arrow schema whatever the storage, so plans are typed the same way
//! on every backend, and host interchange is an Arrow `RecordBatch`.
//!
//! A backend implements the **partition-level primitives** below: evaluate a
//! [`FrameProgram`] (filters and projections fused into one pass), hash- and
//! range-partition, partial/combine/finalize aggregation with the state layout core defines
//! ([`AggFunc::state_fields`]), join two partitions, sort, concatenate, slice and take.
//! The distributed algorithms built from them — tree and shuffle groupbys, broadcast,
//! shuffle and sorted-merge joins, sample sorts — live in core
//! (`tessera-frame`), so a new backend gets them all by implementing this trait.
//!
//! What a backend cannot do it declares in [`FrameCapabilities`]; core reports it as
//! [`Error::Unsupported`]-style errors naming backend and op instead of converting data
//! behind the user's back.

mod aggregate;
mod capabilities;
mod join;
mod program;
mod sort;

use crate::backend::Availability;
use crate::error::{Error, Result};
use crate::frame::window::WindowSpec;
pub use aggregate::{AggFunc, AggSpec, Quantile};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
pub use capabilities::{FrameCapabilities, StoredForms};
pub use join::{JoinAlgorithm, JoinSpec, JoinType};
pub use program::{program_schema, FrameProgram, FrameStep};
pub use sort::SortKey;
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A partition of a dataframe owned by one backend.
pub trait PartitionData: Any + Send + Sync + fmt::Debug {
    /// Name of the owning backend.
    fn backend(&self) -> &str;
    /// Number of rows.
    fn num_rows(&self) -> usize;
    /// The Arrow schema of the partition.
    fn schema(&self) -> SchemaRef;
    /// Bytes held (an estimate is fine; used for memory projections and broadcast choice).
    fn nbytes(&self) -> usize;
    /// For downcasting by the owning backend.
    fn as_any(&self) -> &dyn Any;
}

/// A shared, type-erased partition.
pub type Partition = Arc<dyn PartitionData>;

/// Downcasts a partition to the backend's own type, or names the owner in the error.
pub fn downcast_partition<'a, T: PartitionData>(
    part: &'a Partition,
    backend: &str,
    op: &str,
) -> Result<&'a T> {
    part.as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| Error::ForeignPartition {
            op: op.to_string(),
            backend: backend.to_string(),
            owner: part.backend().to_string(),
        })
}

/// A step of a plan as the engine asks a backend about it before the plan runs
/// ([`DataFrameBackend::fallback_note`]): each names the primitives it calls.
#[derive(Debug, Clone, Copy)]
pub enum PlanStep<'a> {
    /// A fused program ([`DataFrameBackend::evaluate`]) over partitions of `schema`.
    Evaluate {
        /// The partitions' schema.
        schema: &'a SchemaRef,
        /// The program.
        program: &'a FrameProgram,
    },
    /// A groupby-aggregation: partial, combine and finalize, hash partitioning for a
    /// shuffle.
    Aggregate {
        /// The input partitions' schema.
        schema: &'a SchemaRef,
        /// Key columns.
        keys: &'a [String],
        /// Aggregations.
        aggs: &'a [AggSpec],
    },
    /// A join, with the hash partitioning of a shuffle join.
    Join {
        /// The left partitions' schema.
        left: &'a SchemaRef,
        /// The right partitions' schema.
        right: &'a SchemaRef,
        /// The join.
        spec: &'a JoinSpec,
    },
    /// A sort (range partitioning, sorts, concatenation) or a top-k (each partition's
    /// first rows, concatenated, then the first of those).
    Sort {
        /// The partitions' schema.
        schema: &'a SchemaRef,
        /// The sort keys.
        by: &'a [SortKey],
        /// A top-k rather than a full sort.
        top: bool,
    },
    /// Rows moved between partitions: repartitioning (slices, concatenation).
    Repartition {
        /// The partitions' schema.
        schema: &'a SchemaRef,
    },
    /// A window function.
    Window(&'a WindowSpec),
}

/// A dataframe backend: the partition-level primitives of the protocol.
///
/// All methods are required except where a default is given. Inputs are this backend's
/// own partitions (check with [`downcast_partition`]); every method returns new
/// partitions and never mutates its inputs.
pub trait DataFrameBackend: Send + Sync {
    /// Registered name (`cpu`, ...).
    fn name(&self) -> &str;

    /// Whether it can run here.
    fn availability(&self) -> Availability {
        Availability::Available
    }

    /// What it lacks.
    fn capabilities(&self) -> FrameCapabilities {
        FrameCapabilities::default()
    }

    /// Optional: the bytes one step of a plan may hold at once on this backend, where it
    /// has a bound of its own below the process's `memory-limit` — a device backend's
    /// `device.memory-limit`, past which it spills to the host itself. The engine then
    /// sizes shuffle buckets, broadcast join sides and groupby combines to a quarter of
    /// it. The default is `None`: tasks are sized by `memory-limit` alone.
    fn memory_budget(&self) -> Option<u64> {
        None
    }

    /// Optional: how this backend will run `step` when not natively — what it does
    /// instead (e.g. copies the partitions to the host and runs the CPU kernels) and why —
    /// or `None` when it runs it natively. `explain()` lists every such step of a plan
    /// before it runs, and `dataframe.fallback = "error"` refuses the plan with that list.
    /// The default is `None`: a backend without fallbacks runs everything it accepts.
    fn fallback_note(&self, step: PlanStep<'_>) -> Option<String> {
        let _ = step;
        None
    }

    /// Wraps a host batch as a partition.
    fn import_batch(&self, batch: RecordBatch) -> Result<Partition>;

    /// Copies a partition to the host.
    fn export_batch(&self, part: &Partition) -> Result<RecordBatch>;

    /// Runs a fused program of filters and projections over one partition.
    fn evaluate(&self, part: &Partition, program: &FrameProgram) -> Result<Partition>;

    /// Splits a partition into `n` by the hash of the key columns: equal keys land in the
    /// same output index for every partition of this backend (rows keep their order
    /// within each output).
    fn hash_partition(&self, part: &Partition, keys: &[String], n: usize)
        -> Result<Vec<Partition>>;

    /// Splits a partition into `bounds.num_rows() + 1` by the sort keys: output `i` holds
    /// the rows whose key is `> bounds[i-1]` and `<= bounds[i]` in the sort order of `by`
    /// (nulls last). `bounds` has one column per key.
    fn range_partition(
        &self,
        part: &Partition,
        by: &[SortKey],
        bounds: &RecordBatch,
    ) -> Result<Vec<Partition>>;

    /// Partial aggregation of one partition: one row per group with the key columns
    /// followed by every spec's state columns ([`AggFunc::state_fields`]). With no keys,
    /// exactly one row. Rows whose key has a null are dropped (pandas' `dropna=True`).
    fn aggregate_partial(
        &self,
        part: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition>;

    /// [`Self::aggregate_partial`] of [`Self::evaluate`]`(part, program)`: the partial
    /// aggregation of a filtered and projected partition, which the engine asks for when
    /// a groupby reads a fused program. Provided: evaluates, then aggregates. A backend
    /// may fuse the two — the CPU backend aggregates the rows a program's last filter keeps
    /// without copying them out first — as long as the result equals the provided one.
    ///
    /// # Errors
    /// As `evaluate` and `aggregate_partial`.
    fn aggregate_partial_of(
        &self,
        part: &Partition,
        program: &FrameProgram,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        let evaluated = self.evaluate(part, program)?;
        self.aggregate_partial(&evaluated, keys, aggs)
    }

    /// Merges states (outputs of `aggregate_partial` or of this method) into one state
    /// partition with one row per group. Order matters for `first`/`last`: `parts` are in
    /// partition order.
    fn aggregate_combine(
        &self,
        parts: &[Partition],
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition>;

    /// Turns a state partition into results: the key columns then one column per spec,
    /// sorted by the keys.
    fn aggregate_finalize(
        &self,
        state: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition>;

    /// Joins two partitions ([`JoinSpec::output_schema`] gives the result's schema).
    fn join(&self, left: &Partition, right: &Partition, spec: &JoinSpec) -> Result<Partition>;

    /// Optional: prepares the small side of a broadcast join once — a backend may attach
    /// its hash table to the returned partition, which is then passed as `right` to
    /// [`join`](Self::join) for every partition of the large side. The default returns
    /// the partition unchanged (each `join` builds its own table).
    fn prepare_broadcast(&self, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        let _ = spec;
        Ok(right.clone())
    }

    /// Sorts a partition (stable; nulls last).
    fn sort(&self, part: &Partition, by: &[SortKey]) -> Result<Partition>;

    /// Optional: the first `n` rows of the partition in [`sort`](Self::sort)'s order (a
    /// top-k). The default sorts the whole partition and slices it; a backend may select
    /// the `n` first rows without ordering the rest.
    fn sort_limit(&self, part: &Partition, by: &[SortKey], n: usize) -> Result<Partition> {
        self.slice(&self.sort(part, by)?, 0, n)
    }

    /// Concatenates partitions of the same schema.
    fn concat(&self, parts: &[Partition]) -> Result<Partition>;

    /// Rows `offset .. offset + len` (clamped to the partition).
    fn slice(&self, part: &Partition, offset: usize, len: usize) -> Result<Partition>;

    /// The rows at `indices`, in that order.
    fn take(&self, part: &Partition, indices: &[u64]) -> Result<Partition>;

    /// Optional (declare [`FrameCapabilities::windows`]): the partition with the window
    /// function's column ([`WindowSpec::output_schema`]), where `carry` — rows in
    /// [`WindowSpec::carry_schema`] — precedes the partition's rows (follows them, for a
    /// [`backward`](crate::frame::WindowFunc::backward) function). The default reports it unsupported.
    fn window(
        &self,
        part: &Partition,
        spec: &WindowSpec,
        carry: Option<&Partition>,
    ) -> Result<Partition> {
        let _ = (part, carry);
        Err(Error::FrameUnsupported {
            backend: self.name().to_string(),
            op: format!("window {}", spec.func.name()),
        })
    }

    /// Optional (declare [`FrameCapabilities::windows`]): the carry a partition passes on
    /// ([`window`](super::window)'s table), in [`WindowSpec::carry_schema`]. `part` is a
    /// partition of the frame or a carry itself (the carry of carries in order is the
    /// carry of their concatenation). The default reports it unsupported.
    fn window_carry(&self, part: &Partition, spec: &WindowSpec) -> Result<Partition> {
        let _ = part;
        Err(Error::FrameUnsupported {
            backend: self.name().to_string(),
            op: format!("window {}", spec.func.name()),
        })
    }
}

/// A shared handle to a dataframe backend.
pub type FrameBackendRef = Arc<dyn DataFrameBackend>;
