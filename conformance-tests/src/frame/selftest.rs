//! A deliberately broken dataframe backend the frame suite must catch, exactly where its
//! faults are planted: a suite that passes everything proves nothing.
//!
//! [`BrokenFrameBackend`] is the CPU backend behind a wrapper that owns its partitions
//! (so ownership checks see a backend of its own) with three plants:
//!
//! - **null keys**: `join` drops the rows whose key is null before joining — harmless for
//!   inner joins (null keys never match), wrong for left, right and outer joins, which
//!   must keep them;
//! - **lost state**: `aggregate_combine` of more than one state loses the last one;
//! - **a lying capability**: it declares `nunique` missing but computes it anyway instead
//!   of raising `Unsupported`.
//!
//! Everything else, the window functions included, is the CPU backend's.
//!
//! [`expected_failures`] says which cases must fail; the crate's tests assert that the
//! suite reports exactly those.

use std::any::Any;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tessera_core::frame::expr::col;
use tessera_core::frame::{
    downcast_partition, AggFunc, AggSpec, DataFrameBackend, FrameBackendRef, FrameCapabilities,
    FrameProgram, FrameStep, JoinSpec, JoinType, Partition, PartitionData, SortKey, WindowSpec,
};
use tessera_core::registry::dataframe_backend;
use tessera_core::{Error, Result};

use super::FrameCase;

/// The broken backend's registered name.
pub const BROKEN_FRAME: &str = "selftest-broken-frame";

/// A CPU partition owned by the broken backend.
#[derive(Debug)]
struct Wrapped(Partition);

impl PartitionData for Wrapped {
    fn backend(&self) -> &str {
        BROKEN_FRAME
    }
    fn num_rows(&self) -> usize {
        self.0.num_rows()
    }
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }
    fn nbytes(&self) -> usize {
        self.0.nbytes()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The CPU backend with planted faults (see the module docs).
pub struct BrokenFrameBackend {
    inner: FrameBackendRef,
}

impl BrokenFrameBackend {
    /// The broken backend over the registered CPU backend.
    ///
    /// # Errors
    /// When the CPU dataframe backend is not registered.
    pub fn new() -> Result<BrokenFrameBackend> {
        Ok(BrokenFrameBackend {
            inner: dataframe_backend("cpu")?,
        })
    }

    fn open(&self, p: &Partition, op: &str) -> Result<Partition> {
        Ok(downcast_partition::<Wrapped>(p, BROKEN_FRAME, op)?
            .0
            .clone())
    }

    fn open_all(&self, ps: &[Partition], op: &str) -> Result<Vec<Partition>> {
        ps.iter().map(|p| self.open(p, op)).collect()
    }

    fn wrap(p: Partition) -> Partition {
        Arc::new(Wrapped(p))
    }

    /// Plant: rows with a null key dropped before joining.
    fn drop_null_keys(&self, p: &Partition, keys: &[String]) -> Result<Partition> {
        let keep = keys
            .iter()
            .map(|k| col(k.as_str()).is_not_null())
            .reduce(|a, b| a & b)
            .ok_or_else(|| Error::invalid("join", "no keys"))?;
        self.inner.evaluate(
            p,
            &FrameProgram {
                steps: vec![FrameStep::Filter(keep)],
            },
        )
    }
}

impl DataFrameBackend for BrokenFrameBackend {
    fn name(&self) -> &str {
        BROKEN_FRAME
    }

    fn capabilities(&self) -> FrameCapabilities {
        // Plant: declared missing, but computed anyway.
        FrameCapabilities {
            missing_aggregations: vec![AggFunc::NUnique],
            ..self.inner.capabilities()
        }
    }

    fn import_batch(&self, batch: RecordBatch) -> Result<Partition> {
        Ok(Self::wrap(self.inner.import_batch(batch)?))
    }

    fn groups_dictionary_keys(&self) -> bool {
        self.inner.groups_dictionary_keys()
    }

    fn reads_narrow_decimals(&self) -> bool {
        self.inner.reads_narrow_decimals()
    }

    fn export_batch(&self, part: &Partition) -> Result<RecordBatch> {
        self.inner.export_batch(&self.open(part, "export_batch")?)
    }

    fn evaluate(&self, part: &Partition, program: &FrameProgram) -> Result<Partition> {
        Ok(Self::wrap(
            self.inner
                .evaluate(&self.open(part, "evaluate")?, program)?,
        ))
    }

    fn hash_partition(
        &self,
        part: &Partition,
        keys: &[String],
        n: usize,
    ) -> Result<Vec<Partition>> {
        let outs = self
            .inner
            .hash_partition(&self.open(part, "hash_partition")?, keys, n)?;
        Ok(outs.into_iter().map(Self::wrap).collect())
    }

    fn range_partition(
        &self,
        part: &Partition,
        by: &[SortKey],
        bounds: &RecordBatch,
    ) -> Result<Vec<Partition>> {
        let outs = self
            .inner
            .range_partition(&self.open(part, "range_partition")?, by, bounds)?;
        Ok(outs.into_iter().map(Self::wrap).collect())
    }

    fn aggregate_partial(
        &self,
        part: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        Ok(Self::wrap(self.inner.aggregate_partial(
            &self.open(part, "aggregate_partial")?,
            keys,
            aggs,
        )?))
    }

    fn aggregate_combine(
        &self,
        parts: &[Partition],
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        let mut inner = self.open_all(parts, "aggregate_combine")?;
        // Plant: the last state is lost.
        if inner.len() > 1 {
            inner.pop();
        }
        Ok(Self::wrap(
            self.inner.aggregate_combine(&inner, keys, aggs)?,
        ))
    }

    fn aggregate_finalize(
        &self,
        state: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        Ok(Self::wrap(self.inner.aggregate_finalize(
            &self.open(state, "aggregate_finalize")?,
            keys,
            aggs,
        )?))
    }

    fn join(&self, left: &Partition, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        let l = self.drop_null_keys(&self.open(left, "join")?, &spec.left_on)?;
        let r = self.drop_null_keys(&self.open(right, "join")?, &spec.right_on)?;
        Ok(Self::wrap(self.inner.join(&l, &r, spec)?))
    }

    fn sort(&self, part: &Partition, by: &[SortKey]) -> Result<Partition> {
        Ok(Self::wrap(self.inner.sort(&self.open(part, "sort")?, by)?))
    }

    fn concat(&self, parts: &[Partition]) -> Result<Partition> {
        Ok(Self::wrap(
            self.inner.concat(&self.open_all(parts, "concat")?)?,
        ))
    }

    fn slice(&self, part: &Partition, offset: usize, len: usize) -> Result<Partition> {
        Ok(Self::wrap(self.inner.slice(
            &self.open(part, "slice")?,
            offset,
            len,
        )?))
    }

    fn take(&self, part: &Partition, indices: &[u64]) -> Result<Partition> {
        Ok(Self::wrap(
            self.inner.take(&self.open(part, "take")?, indices)?,
        ))
    }

    fn window(
        &self,
        part: &Partition,
        spec: &WindowSpec,
        carry: Option<&Partition>,
    ) -> Result<Partition> {
        let carry = carry.map(|c| self.open(c, "window")).transpose()?;
        Ok(Self::wrap(self.inner.window(
            &self.open(part, "window")?,
            spec,
            carry.as_ref(),
        )?))
    }

    fn window_carry(&self, part: &Partition, spec: &WindowSpec) -> Result<Partition> {
        Ok(Self::wrap(
            self.inner
                .window_carry(&self.open(part, "window_carry")?, spec)?,
        ))
    }
}

/// The broken backend, shared.
///
/// # Errors
/// As [`BrokenFrameBackend::new`].
pub fn broken_frame_backend() -> Result<FrameBackendRef> {
    Ok(Arc::new(BrokenFrameBackend::new()?))
}

/// Whether `case` must fail on [`BrokenFrameBackend`]: where a plant changes the answer by
/// construction of the case's data (see the variants in [`super`]).
pub fn expected_failure(case: &FrameCase) -> bool {
    let op = case.family.op.as_str();
    let several = case.variant >= 2;
    if op == "frame.aggregate.nunique" {
        return true;
    }
    // The semi and anti joins: this backend does not declare them, so core composes them
    // from the right side's distinct keys (an aggregation, whose combine loses a state)
    // and a left join (which loses the null keys an anti join keeps).
    if op.starts_with("frame.aggregate.")
        || op.starts_with("frame.aggregate_of.")
        || op == "frame.api.groupby"
        || op == "frame.api.value_counts"
        || op == "frame.api.semi_anti_join"
    {
        return several;
    }
    let preserving = [JoinType::Left, JoinType::Right, JoinType::Outer]
        .iter()
        .any(|h| {
            op == format!("frame.join.{}", h.name())
                || op == format!("frame.join_sorted.{}", h.name())
        });
    if preserving {
        return several;
    }
    // The API merge is an outer join in variant 2 (see `api::merge`).
    op == "frame.api.merge" && case.variant == 2
}

/// The ids of every case that must fail on the broken backend, among `cases`.
pub fn expected_failures(cases: &[FrameCase]) -> Vec<String> {
    cases
        .iter()
        .filter(|c| expected_failure(c))
        .map(|c| c.id.clone())
        .collect()
}
