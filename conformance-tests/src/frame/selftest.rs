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
//! [`wrong_reference`] is the same wrapper with other plants, for the other direction: a
//! *reference* that is wrong, which only the oracle can see (a backend compared with it
//! looks wrong instead). It drops negation from expressions (`-x` evaluates as `x`),
//! computes `max` as `min`, and runs inner joins as left joins.
//!
//! [`expected_failures`] says which cases must fail; the crate's tests assert that the
//! suite reports exactly those.

use std::any::Any;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use tessera_core::frame::expr::{col, Expr};
use tessera_core::frame::{
    downcast_partition, AggFunc, AggSpec, DataFrameBackend, FrameBackendRef, FrameCapabilities,
    FrameProgram, FrameStep, JoinSpec, JoinType, Partition, PartitionData, SortKey, WindowSpec,
};
use tessera_core::registry::dataframe_backend;
use tessera_core::{Error, Result};

use super::FrameCase;

/// The broken backend's registered name.
pub const BROKEN_FRAME: &str = "selftest-broken-frame";

/// The wrong reference's registered name.
pub const WRONG_REFERENCE: &str = "selftest-wrong-reference";

/// Which faults a wrapper plants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plants {
    /// Null join keys dropped, a combine state lost, a capability that lies.
    Broken,
    /// Negation dropped, `max` as `min`, inner joins as left joins.
    WrongReference,
}

impl Plants {
    fn name(self) -> &'static str {
        match self {
            Plants::Broken => BROKEN_FRAME,
            Plants::WrongReference => WRONG_REFERENCE,
        }
    }
}

/// A CPU partition owned by a wrapper.
#[derive(Debug)]
struct Wrapped(Partition, &'static str);

impl PartitionData for Wrapped {
    fn backend(&self) -> &str {
        self.1
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
    plants: Plants,
}

impl BrokenFrameBackend {
    /// The broken backend over the registered CPU backend.
    ///
    /// # Errors
    /// When the CPU dataframe backend is not registered.
    pub fn new() -> Result<BrokenFrameBackend> {
        Ok(BrokenFrameBackend {
            inner: dataframe_backend("cpu")?,
            plants: Plants::Broken,
        })
    }

    fn open(&self, p: &Partition, op: &str) -> Result<Partition> {
        Ok(downcast_partition::<Wrapped>(p, self.plants.name(), op)?
            .0
            .clone())
    }

    /// Plant of the wrong reference: `max` computed as `min`.
    fn specs(&self, aggs: &[AggSpec]) -> Vec<AggSpec> {
        aggs.iter()
            .map(|a| match (self.plants, a.func) {
                (Plants::WrongReference, AggFunc::Max) => AggSpec {
                    func: AggFunc::Min,
                    ..a.clone()
                },
                _ => a.clone(),
            })
            .collect()
    }

    fn open_all(&self, ps: &[Partition], op: &str) -> Result<Vec<Partition>> {
        ps.iter().map(|p| self.open(p, op)).collect()
    }

    fn wrap(&self, p: Partition) -> Partition {
        Arc::new(Wrapped(p, self.plants.name()))
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
        self.plants.name()
    }

    fn capabilities(&self) -> FrameCapabilities {
        if self.plants == Plants::WrongReference {
            return self.inner.capabilities();
        }
        // Plant: declared missing, but computed anyway.
        FrameCapabilities {
            missing_aggregations: vec![AggFunc::NUnique],
            ..self.inner.capabilities()
        }
    }

    fn import_batch(&self, batch: RecordBatch) -> Result<Partition> {
        Ok(self.wrap(self.inner.import_batch(batch)?))
    }

    fn export_batch(&self, part: &Partition) -> Result<RecordBatch> {
        self.inner.export_batch(&self.open(part, "export_batch")?)
    }

    fn evaluate(&self, part: &Partition, program: &FrameProgram) -> Result<Partition> {
        let program = match self.plants {
            Plants::WrongReference => FrameProgram {
                steps: program.steps.iter().map(drop_negation).collect(),
            },
            Plants::Broken => program.clone(),
        };
        Ok(self.wrap(
            self.inner
                .evaluate(&self.open(part, "evaluate")?, &program)?,
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
        Ok(outs.into_iter().map(|p| self.wrap(p)).collect())
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
        Ok(outs.into_iter().map(|p| self.wrap(p)).collect())
    }

    fn aggregate_partial(
        &self,
        part: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        Ok(self.wrap(self.inner.aggregate_partial(
            &self.open(part, "aggregate_partial")?,
            keys,
            &self.specs(aggs),
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
        if inner.len() > 1 && self.plants == Plants::Broken {
            inner.pop();
        }
        Ok(self.wrap(
            self.inner
                .aggregate_combine(&inner, keys, &self.specs(aggs))?,
        ))
    }

    fn aggregate_finalize(
        &self,
        state: &Partition,
        keys: &[String],
        aggs: &[AggSpec],
    ) -> Result<Partition> {
        Ok(self.wrap(self.inner.aggregate_finalize(
            &self.open(state, "aggregate_finalize")?,
            keys,
            &self.specs(aggs),
        )?))
    }

    fn join(&self, left: &Partition, right: &Partition, spec: &JoinSpec) -> Result<Partition> {
        let (l, r) = (self.open(left, "join")?, self.open(right, "join")?);
        if self.plants == Plants::WrongReference {
            // Plant: inner joins keep the unmatched left rows.
            let mut spec = spec.clone();
            if spec.how == JoinType::Inner {
                spec.how = JoinType::Left;
            }
            return Ok(self.wrap(self.inner.join(&l, &r, &spec)?));
        }
        let l = self.drop_null_keys(&l, &spec.left_on)?;
        let r = self.drop_null_keys(&r, &spec.right_on)?;
        Ok(self.wrap(self.inner.join(&l, &r, spec)?))
    }

    fn sort(&self, part: &Partition, by: &[SortKey]) -> Result<Partition> {
        Ok(self.wrap(self.inner.sort(&self.open(part, "sort")?, by)?))
    }

    fn concat(&self, parts: &[Partition]) -> Result<Partition> {
        Ok(self.wrap(self.inner.concat(&self.open_all(parts, "concat")?)?))
    }

    fn slice(&self, part: &Partition, offset: usize, len: usize) -> Result<Partition> {
        Ok(self.wrap(self.inner.slice(&self.open(part, "slice")?, offset, len)?))
    }

    fn take(&self, part: &Partition, indices: &[u64]) -> Result<Partition> {
        Ok(self.wrap(self.inner.take(&self.open(part, "take")?, indices)?))
    }

    fn window(
        &self,
        part: &Partition,
        spec: &WindowSpec,
        carry: Option<&Partition>,
    ) -> Result<Partition> {
        let carry = carry.map(|c| self.open(c, "window")).transpose()?;
        Ok(self.wrap(
            self.inner
                .window(&self.open(part, "window")?, spec, carry.as_ref())?,
        ))
    }

    fn window_carry(&self, part: &Partition, spec: &WindowSpec) -> Result<Partition> {
        Ok(self.wrap(
            self.inner
                .window_carry(&self.open(part, "window_carry")?, spec)?,
        ))
    }
}

/// Plant of the wrong reference: every `-x` in a step evaluates as `x`.
fn drop_negation(step: &FrameStep) -> FrameStep {
    match step {
        FrameStep::Filter(e) => FrameStep::Filter(without_negation(e)),
        FrameStep::Project(list) => FrameStep::Project(
            list.iter()
                .map(|(n, e)| (n.clone(), without_negation(e)))
                .collect(),
        ),
    }
}

fn without_negation(e: &Expr) -> Expr {
    let b = |x: &Expr| Box::new(without_negation(x));
    match e {
        Expr::Negate(x) => without_negation(x),
        Expr::Binary { op, left, right } => Expr::Binary {
            op: *op,
            left: b(left),
            right: b(right),
        },
        Expr::Not(x) => Expr::Not(b(x)),
        Expr::Coalesce(xs) => Expr::Coalesce(xs.iter().map(without_negation).collect()),
        other => other.clone(),
    }
}

/// The wrong reference (see the module docs), for checking the suite with
/// [`check_frame_backend_against`](super::check_frame_backend_against) the way a
/// reference with a bug would be checked.
///
/// # Errors
/// When the CPU dataframe backend is not registered.
pub fn wrong_reference() -> Result<FrameBackendRef> {
    Ok(Arc::new(BrokenFrameBackend {
        inner: dataframe_backend("cpu")?,
        plants: Plants::WrongReference,
    }))
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
