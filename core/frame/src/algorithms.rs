//! Running a dataframe plan: the distributed algorithms, built from a backend's
//! partition-level primitives.
//!
//! Blockwise nodes (scans, fused programs, `map_partitions`) become a `Pipeline`: a
//! function from partition index to partition. Nothing between a scan and the next
//! blocking node is materialised for the whole frame — a groupby runs "read range *i*,
//! filter, project, aggregate partially" as one task per partition and keeps only the small
//! partial result. Blocking nodes:
//!
//! - **groupby**: partial aggregation per partition, then a tree combine (fan-in
//!   `array.split-every`) into one partition when the partial results are small, or a hash
//!   shuffle of the partial results into one bucket per input partition when they are large
//!   (many groups) — the choice is made on the measured size of the partial results unless
//!   the user forces one;
//! - **join**: broadcast the small side (its hash table built once, the other side's
//!   pipeline streamed through it partition by partition, so a broadcast join is as
//!   blockwise as a filter), a sorted merge of aligned ranges when both sides are sorted
//!   on the keys, else a hash shuffle of both sides into matching buckets;
//! - **sort**: sample sort — evenly spaced samples give range boundaries, every partition is
//!   split by them, each range is sorted;
//! - **head** runs partitions in order until it has enough rows.
//!
//! Every stage runs under the configured scheduler (`threads` or `single-threaded`).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::DataType;

use crate::backend::{
    AggFunc, AggSpec, DataFrameBackend, FrameProgram, FrameStep, JoinAlgorithm, JoinSpec, JoinType,
    Partition, SortKey,
};
use crate::error::{Error, Result};
use crate::expr::{col, BinaryOp, Expr};
use crate::plan::{empty_batch, GroupStrategy, JoinStrategy, Node, ScanFilter};
use crate::spill::{stash, Spill, Stashed};
use crate::window::WindowSpec;
use tessera_runtime::pool::parallel_map;

/// What a stage's task produced, in bytes, for progress and profiles.
trait TaskOutput {
    /// Bytes of the partitions held.
    fn bytes(&self) -> u64;
}

impl TaskOutput for Partition {
    fn bytes(&self) -> u64 {
        self.nbytes() as u64
    }
}

impl TaskOutput for Stashed {
    fn bytes(&self) -> u64 {
        self.nbytes() as u64
    }
}

impl<T: TaskOutput> TaskOutput for Vec<T> {
    fn bytes(&self) -> u64 {
        self.iter().map(|p| p.bytes()).sum()
    }
}

thread_local! {
    /// Bytes the task running on this thread has read from outside itself.
    static READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `bytes` a task reads from outside itself — a file range, a partition held in
/// memory, a stash read back — as its profile's bytes in.
pub(crate) fn note_read(bytes: u64) {
    READ.with(|r| r.set(r.get().saturating_add(bytes)));
}

/// `f(0..n)` on the worker pool as one progress stage named `stage` (`tessera-observe`).
fn staged<T, F>(stage: &str, n: usize, f: F) -> Result<Vec<T>>
where
    T: Send + TaskOutput,
    F: Fn(usize) -> Result<T> + Send + Sync,
{
    let progress = tessera_observe::Stage::start(stage, n)?;
    let kind = match stage.split(':').next().unwrap_or("") {
        "partitions" => "scan",
        "aggregate" => "aggregate",
        "shuffle" | "repartition" | "join: partition left" | "join: partition right" => "shuffle",
        "join" => "join",
        "sort" | "top-k" => "sort",
        _ => "other",
    };
    let out = parallel_map(n, |i| {
        let start = std::time::Instant::now();
        READ.with(|r| r.set(0));
        let r = f(i);
        progress.task_finished(tessera_observe::TaskTiming {
            kind,
            start,
            bytes_in: READ.with(|r| r.get()),
            bytes_out: r.as_ref().map_or(0, |out| out.bytes()),
            held_bytes: None,
        });
        r
    });
    progress.finish();
    out
}

/// Partial results with more rows than this (in total) are combined by shuffle instead of
/// a tree: a tree would funnel them all through one task.
pub const SHUFFLE_ROWS: usize = 1 << 20;

/// In one process, a side of a join at most this many bytes is broadcast to every
/// partition of the other: it is hashed once and shared, and the other side streams
/// through it. The shuffle it replaces holds both sides too, and copies both into
/// buckets: TPC-H Q9 at scale factor 10 shuffled its 300 MB `partsupp` and `orders` sides
/// at a 256 MiB bound, 8.5 s at a 2.2 GB peak, against 3.5 s at 1.5 GB broadcast. (Across
/// the ranks of a job, where a broadcast side is sent to every rank, the bound is 256
/// MiB.)
pub const BROADCAST_BYTES: usize = 1 << 30;

/// A join side computed first (the one `join_guess` expects smaller) is broadcast while
/// the other side streams only when it measures at most this many bytes. The guess knows
/// no statistics, so it can pick the larger side: past this
/// size the other side is computed too and the smaller of the two measured is broadcast,
/// which bounds what a wrong guess costs to hashing this much. It is the broadcast bound
/// itself: at 64 MiB, TPC-H Q5 at scale factor 10 (whose customers-with-orders side
/// measures past it) computed all 60 million line items before choosing, 4.0 s at a 3 GB
/// peak, against 2.5 s at 254 MB streamed through the hashed side.
pub const STREAMED_BROADCAST_BYTES: usize = BROADCAST_BYTES;

/// A lazily computed sequence of partitions: `task(i)` produces partition `i`.
pub(crate) struct Pipeline {
    /// Number of partitions.
    pub n: usize,
    /// Produces one partition.
    pub task: Arc<dyn Fn(usize) -> Result<Partition> + Send + Sync>,
}

impl Pipeline {
    fn ready(parts: Vec<Partition>) -> Pipeline {
        let parts = Arc::new(parts);
        Pipeline {
            n: parts.len(),
            task: Arc::new(move |i| {
                note_read(parts[i].nbytes() as u64);
                Ok(parts[i].clone())
            }),
        }
    }

    /// Partitions kept between stages (see [`crate::spill`]).
    fn stashed(parts: Vec<Stashed>, backend: &Arc<dyn DataFrameBackend>) -> Pipeline {
        let parts = Arc::new(parts);
        let backend = backend.clone();
        Pipeline {
            n: parts.len(),
            task: Arc::new(move |i| parts[i].load(&backend)),
        }
    }

    /// Runs every task.
    pub fn materialize(&self) -> Result<Vec<Partition>> {
        let task = self.task.clone();
        staged("partitions", self.n, move |i| task(i))
    }

    /// Runs every task, keeping the partitions within the spill budget.
    fn materialize_stashed(
        &self,
        spill: &Spill,
        backend: &Arc<dyn DataFrameBackend>,
    ) -> Result<Vec<Stashed>> {
        let task = self.task.clone();
        staged("partitions", self.n, move |i| {
            stash(spill, backend, task(i)?)
        })
    }
}

/// The conjunction of the filters `program` starts with (`None` when it starts with a
/// projection).
fn leading_filter(program: &FrameProgram) -> Option<Expr> {
    program
        .steps
        .iter()
        .map_while(|s| match s {
            FrameStep::Filter(e) => Some(e.clone()),
            FrameStep::Project(_) => None,
        })
        .reduce(|a, b| a.and(b))
}

/// The pipeline of a scan node: a task per selected partition reads it (through
/// [`crate::plan::FileSource::read_filtered`] when `filter` follows the scan, through
/// [`crate::plan::FileSource::read_coded`] when `coded` names group keys to read as
/// dictionaries) and hands it to `backend`.
fn scan(
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    filter: Option<Expr>,
    coded: Vec<usize>,
) -> Pipeline {
    let Node::Scan {
        source,
        projection,
        selected,
        ..
    } = node
    else {
        unreachable!("scan() is called on scan nodes")
    };
    let ids: Vec<usize> = selected
        .clone()
        .unwrap_or_else(|| (0..source.partitions()).collect());
    let source = source.clone();
    let projection = projection.clone();
    let backend = backend.clone();
    Pipeline {
        n: ids.len(),
        task: Arc::new(move |i| {
            let batch = match &filter {
                None if !coded.is_empty() => {
                    source.read_coded(ids[i], projection.as_deref(), &coded)?
                }
                None => source.read(ids[i], projection.as_deref())?,
                Some(predicate) => {
                    let evaluate = |batch: &RecordBatch, e: &Expr| {
                        let part = backend.import_batch(batch.clone())?;
                        let program = FrameProgram {
                            steps: vec![FrameStep::Project(vec![("value".into(), e.clone())])],
                        };
                        let out = backend.export_batch(&backend.evaluate(&part, &program)?)?;
                        Ok(out.column(0).clone())
                    };
                    let filter = ScanFilter {
                        predicate,
                        evaluate: &evaluate,
                    };
                    source.read_filtered(ids[i], projection.as_deref(), &filter)?
                }
            };
            note_read(batch.get_array_memory_size() as u64);
            backend.import_batch(batch)
        }),
    }
}

/// Builds the pipeline of `node` on `backend`, running blocking nodes below it; what they
/// keep between stages goes through `spill`'s budget.
pub(crate) fn pipeline(
    node: &Node,
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
) -> Result<Pipeline> {
    match node {
        Node::Concat { inputs, .. } => {
            let pipes = inputs
                .iter()
                .map(|i| pipeline(i, backend, spill))
                .collect::<Result<Vec<_>>>()?;
            // Partition i of the concat: (input, its partition), by the inputs' counts.
            let mut index = Vec::new();
            for (k, p) in pipes.iter().enumerate() {
                index.extend((0..p.n).map(|j| (k, j)));
            }
            let index = Arc::new(index);
            Ok(Pipeline {
                n: index.len(),
                task: Arc::new(move |i| {
                    let (k, j) = index[i];
                    (pipes[k].task)(j)
                }),
            })
        }
        Node::Partitions { parts, .. } => {
            match parts.iter().find_map(crate::on_rank::held_elsewhere) {
                Some(e) => Err(e),
                None => Ok(Pipeline::ready(parts.clone())),
            }
        }
        Node::Scan { .. } => Ok(scan(node, backend, None, Vec::new())),
        Node::Map { input, program, .. } => {
            // The filters a program over a scan starts with go to the reader too, which
            // may drop rows early; the program still runs whole.
            let inner = match (&**input, leading_filter(program)) {
                (Node::Scan { .. }, Some(filter)) => scan(input, backend, Some(filter), Vec::new()),
                _ => pipeline(input, backend, spill)?,
            };
            let program = program.clone();
            let backend = backend.clone();
            let task = inner.task.clone();
            Ok(Pipeline {
                n: inner.n,
                task: Arc::new(move |i| backend.evaluate(&task(i)?, &program)),
            })
        }
        Node::MapPartitions {
            input,
            func,
            schema,
        } => {
            let inner = pipeline(input, backend, spill)?;
            let func = func.clone();
            let schema = schema.clone();
            let backend = backend.clone();
            let task = inner.task.clone();
            Ok(Pipeline {
                n: inner.n,
                task: Arc::new(move |i| {
                    let batch = backend.export_batch(&task(i)?)?;
                    let out = tessera_core::error::catch_panic(
                        || func(batch),
                        |m| {
                            Error::user_function(
                                "map_partitions",
                                format!("the function panicked on partition {i}: {m}"),
                            )
                        },
                    )
                    .map_err(|e| match e {
                        e @ Error::UserFunction { .. } => e,
                        e => Error::user_function("map_partitions", format!("partition {i}: {e}")),
                    })?;
                    if out.schema().fields() != schema.fields() {
                        return Err(Error::user_function("map_partitions", format!(
                            "partition {i} returned schema {:?} but the declared/inferred schema is {:?}",
                            out.schema(),
                            schema
                        )));
                    }
                    backend.import_batch(out)
                }),
            })
        }
        Node::Aggregate {
            input,
            keys,
            aggs,
            strategy,
            ..
        } => Ok(Pipeline::stashed(
            aggregate(backend, spill, input, keys, aggs, *strategy)?,
            backend,
        )),
        Node::Join {
            left,
            right,
            spec,
            strategy,
            ..
        } => join(backend, spill, left, right, spec, *strategy),
        Node::Sort { input, by } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            Ok(Pipeline::ready(sort(backend, parts, by, &input.schema())?))
        }
        Node::Repartition { input, n } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            Ok(Pipeline::ready(repartition(backend, parts, *n)?))
        }
        Node::TopK { input, by, n } => {
            let inner = pipeline(input, backend, spill)?;
            let task = inner.task.clone();
            let tops = {
                let backend = backend.clone();
                staged("top-k", inner.n, move |i| {
                    backend.sort_limit(&task(i)?, by, *n)
                })?
            };
            // A stable top-k of the partitions' winners in partition order: ties keep the
            // order a full sort would give them.
            let all = concat_or_empty(backend, &tops, &input.schema())?;
            Ok(Pipeline::ready(vec![backend.sort_limit(&all, by, *n)?]))
        }
        Node::Window { input, spec, .. } => {
            let parts = pipeline(input, backend, spill)?.materialize()?;
            let carries = window_carries(backend, &parts, spec)?;
            let (backend, spec) = (backend.clone(), spec.clone());
            let parts = Arc::new(parts);
            Ok(Pipeline {
                n: parts.len(),
                task: Arc::new(move |i| backend.window(&parts[i], &spec, carries[i].as_ref())),
            })
        }
        Node::Tail { input, n } => Ok(Pipeline::ready(first_rows(
            &pipeline(input, backend, spill)?,
            backend,
            *n,
            true,
            &input.schema(),
        )?)),
        Node::Head { input, n } => Ok(Pipeline::ready(first_rows(
            &pipeline(input, backend, spill)?,
            backend,
            *n,
            false,
            &input.schema(),
        )?)),
    }
}

/// The carry each partition of a window receives: every partition's own carry in
/// parallel, then folded in partition order (from the last partition for a backward
/// function), where the carry of carries is the carry of their concatenation. The
/// conformance suite runs backends through this same fold.
///
/// # Errors
/// What the backend's `window_carry` or `concat` returns.
pub fn window_carries(
    backend: &Arc<dyn DataFrameBackend>,
    parts: &[Partition],
    spec: &WindowSpec,
) -> Result<Vec<Option<Partition>>> {
    let own = {
        let backend = backend.clone();
        staged("window: carry", parts.len(), move |i| {
            backend.window_carry(&parts[i], spec)
        })?
    };
    let n = parts.len();
    let mut carries: Vec<Option<Partition>> = vec![None; n];
    let order: Vec<usize> = if spec.func.backward() {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    let mut running: Option<Partition> = None;
    for (step, &i) in order.iter().enumerate() {
        carries[i] = running.clone();
        if step + 1 == n {
            break;
        }
        let mine = &own[i];
        running = Some(match running {
            None => mine.clone(),
            Some(r) if mine.num_rows() == 0 => r,
            Some(r) => {
                // Earlier rows first: the running carry precedes this partition's going
                // forward, and follows it going backward.
                let pair = if spec.func.backward() {
                    [mine.clone(), r]
                } else {
                    [r, mine.clone()]
                };
                backend.window_carry(&backend.concat(&pair)?, spec)?
            }
        });
    }
    Ok(carries)
}

/// The first `n` rows of `inner` (the last `n` with `from_end`), in order, running only
/// the partitions it needs; one empty partition of `schema` when there are none.
fn first_rows(
    inner: &Pipeline,
    backend: &Arc<dyn DataFrameBackend>,
    n: usize,
    from_end: bool,
    schema: &arrow_schema::SchemaRef,
) -> Result<Vec<Partition>> {
    let order: Box<dyn Iterator<Item = usize>> = if from_end {
        Box::new((0..inner.n).rev())
    } else {
        Box::new(0..inner.n)
    };
    let mut out = Vec::new();
    let mut have = 0;
    for i in order {
        if have >= n {
            break;
        }
        let p = (inner.task)(i)?;
        let take = (n - have).min(p.num_rows());
        have += take;
        out.push(if take == p.num_rows() {
            p
        } else if from_end {
            backend.slice(&p, p.num_rows() - take, take)?
        } else {
            backend.slice(&p, 0, take)?
        });
    }
    if from_end {
        out.reverse();
    }
    if out.is_empty() {
        out.push(backend.import_batch(empty_batch(schema))?);
    }
    Ok(out)
}

/// The columns a scan under a groupby may read in their stored forms
/// ([`crate::plan::FileSource::read_coded`]), as indices into the scan's file schema:
///
/// - string group keys, when the backend groups dictionary keys by their codes, and only
///   keys the program passes through unchanged under their own name and no aggregation
///   but a count or other expression reads (the backend then sees a dictionary only where
///   it groups or counts);
/// - decimals of at most 18 digits, when the backend reads them in 64 bits, and only
///   columns whose values reach nothing but arithmetic and sums ([`summed_only`]):
///   everything the backend computes from them is then in the plan's types.
fn coded_columns(
    backend: &dyn DataFrameBackend,
    below: &Node,
    program: Option<&FrameProgram>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Coded {
    let Node::Scan {
        source, projection, ..
    } = below
    else {
        return Coded::default();
    };
    let schema = source.schema();
    let passed_through = |k: &str| {
        program.is_none_or(|p| {
            p.steps.iter().all(|step| match step {
                FrameStep::Filter(e) => !reads(e, k),
                FrameStep::Project(list) => {
                    list.iter()
                        .filter(|(name, e)| name == k || reads(e, k))
                        .map(|(name, e)| name == k && *e == col(k))
                        .collect::<Vec<_>>()
                        == [true]
                }
            })
        })
    };
    let in_scan = |i: &usize| projection.as_ref().is_none_or(|p| p.contains(i));
    let strings = keys
        .iter()
        .filter(|_| backend.groups_dictionary_keys())
        // A count reads only a column's nulls, which a dictionary keeps (the plan counts
        // rows on a non-nullable key column).
        .filter(|k| {
            aggs.iter()
                .all(|a| a.column != **k || a.func == AggFunc::Count)
                && passed_through(k)
        })
        .filter_map(|k| schema.index_of(k).ok())
        .filter(|i| {
            matches!(
                schema.field(*i).data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            )
        });
    let decimals = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|_| backend.reads_narrow_decimals())
        .filter(|(_, f)| matches!(f.data_type(), DataType::Decimal128(p, _) if *p <= 18))
        .filter(|(_, f)| summed_only(f.name(), program, keys, aggs))
        .map(|(i, _)| i);
    let strings: Vec<usize> = strings.filter(in_scan).collect();
    Coded {
        keys: !strings.is_empty(),
        columns: strings
            .into_iter()
            .chain(decimals.filter(in_scan))
            .collect(),
    }
}

/// What [`coded_columns`] found.
#[derive(Default)]
struct Coded {
    /// The columns to read in their stored forms (file schema indices).
    columns: Vec<usize>,
    /// Whether some are group keys: their partial states come back as dictionaries, to
    /// be cast back to the plan's type ([`planned_key_types`]).
    keys: bool,
}

/// Whether the values of column `k` reach only arithmetic and sums: through the program
/// (under `k` or under names a projection gives them unchanged), no filter reads them and
/// every other expression reads them only as operands of `+`, `-` or `*`
/// ([`read_as_operand`]); no group key is one of those names, and no aggregation but
/// `sum`, `mean` and `count` reads one.
fn summed_only(k: &str, program: Option<&FrameProgram>, keys: &[String], aggs: &[AggSpec]) -> bool {
    // The names holding `k`'s values after each step.
    let mut names = vec![k.to_string()];
    for step in program.map_or(&[][..], |p| &p.steps[..]) {
        match step {
            FrameStep::Filter(e) => {
                if names.iter().any(|n| reads(e, n)) {
                    return false;
                }
            }
            FrameStep::Project(list) => {
                let mut next = Vec::new();
                for (name, e) in list {
                    match e {
                        Expr::Column(c) if names.contains(c) => next.push(name.clone()),
                        _ if names.iter().all(|n| read_as_operand(e, n)) => {}
                        _ => return false,
                    }
                }
                names = next;
            }
        }
    }
    let summed = [AggFunc::Sum, AggFunc::Mean, AggFunc::Count];
    names.iter().all(|n| !keys.contains(n))
        && aggs
            .iter()
            .all(|a| !names.contains(&a.column) || summed.contains(&a.func))
}

/// Whether every read of column `k` in `e` is an operand of `+`, `-` or `*` (whose
/// result is a new column: a backend computes it in the plan's type whatever the width
/// of the decimal it reads).
fn read_as_operand(e: &Expr, k: &str) -> bool {
    match e {
        Expr::Binary {
            op: BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul,
            left,
            right,
        } => [left, right]
            .into_iter()
            .all(|side| matches!(&**side, Expr::Column(c) if c == k) || read_as_operand(side, k)),
        _ => !reads(e, k),
    }
}

/// Whether `e` reads column `k`.
fn reads(e: &Expr, k: &str) -> bool {
    let mut read = std::collections::BTreeSet::new();
    e.columns_into(&mut read);
    read.contains(k)
}

/// `state` with each key column that came as a dictionary cast back to its type in
/// `planned` (a few rows: one per group).
fn planned_key_types(
    backend: &Arc<dyn DataFrameBackend>,
    state: Partition,
    keys: &[String],
    planned: &arrow_schema::SchemaRef,
) -> Result<Partition> {
    let batch = backend.export_batch(&state)?;
    let schema = batch.schema();
    let mut changed = false;
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (f, c) in schema.fields().iter().zip(batch.columns()) {
        // A key that came as a dictionary, and the plan's type for it.
        let want = match (c.data_type(), planned.field_with_name(f.name())) {
            (DataType::Dictionary(..), Ok(p)) if keys.contains(f.name()) => Some(p.data_type()),
            _ => None,
        };
        match want {
            Some(t) => {
                changed = true;
                columns.push(arrow_cast::cast(c, t).map_err(|e| Error::arrow("groupby", e))?);
                fields.push(Arc::new(f.as_ref().clone().with_data_type(t.clone())));
            }
            None => {
                columns.push(c.clone());
                fields.push(f.clone());
            }
        }
    }
    if !changed {
        return Ok(state);
    }
    let batch = RecordBatch::try_new(Arc::new(arrow_schema::Schema::new(fields)), columns)
        .map_err(|e| Error::arrow("groupby", e))?;
    backend.import_batch(batch)
}

/// Partial aggregation fused with the input pipeline, then a tree or shuffle combine.
/// Over a spill budget, states that do not fit it are spilled and combined by shuffle into
/// buckets sized for one worker each.
fn aggregate(
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    input: &Node,
    keys: &[String],
    aggs: &[AggSpec],
    strategy: Option<GroupStrategy>,
) -> Result<Vec<Stashed>> {
    // A fused program under the groupby goes to the backend with the aggregation, which
    // may aggregate what the program's filter keeps without materialising it.
    let (below, program) = match input {
        Node::Map {
            input: below,
            program,
            ..
        } => (&**below, Some(program)),
        _ => (input, None),
    };
    // Columns a scan may hand over in their stored forms (see `coded_columns`).
    let Coded {
        columns: coded,
        keys: coded_keys,
    } = coded_columns(backend.as_ref(), below, program, keys, aggs);
    let inner = match below {
        Node::Scan { .. } if !coded.is_empty() => scan(below, backend, None, coded),
        _ => pipeline(below, backend, spill)?,
    };
    let planned = input.schema();
    let task = inner.task.clone();
    let mut partials = {
        let backend = backend.clone();
        staged("aggregate: partial", inner.n, move |i| {
            let part = task(i)?;
            let state = match program {
                Some(program) => backend.aggregate_partial_of(&part, program, keys, aggs)?,
                None => backend.aggregate_partial(&part, keys, aggs)?,
            };
            let state = if coded_keys {
                planned_key_types(&backend, state, keys, &planned)?
            } else {
                state
            };
            stash(spill, &backend, state)
        })?
    };
    if partials.is_empty() {
        let empty = backend.import_batch(empty_batch(&input.schema()))?;
        partials.push(stash(
            spill,
            backend,
            backend.aggregate_partial(&empty, keys, aggs)?,
        )?);
    }
    let rows: usize = partials.iter().map(|p| p.num_rows()).sum();
    let bytes: u64 = partials.iter().map(|p| p.nbytes() as u64).sum();
    let too_big = spill.as_ref().is_some_and(|b| bytes > b.task_bytes);
    let strategy = strategy.unwrap_or(if keys.is_empty() || (rows <= SHUFFLE_ROWS && !too_big) {
        GroupStrategy::Tree
    } else {
        GroupStrategy::Shuffle
    });
    if keys.is_empty() || strategy == GroupStrategy::Tree || partials.len() == 1 && !too_big {
        let states = partials
            .iter()
            .map(|p| p.load(backend))
            .collect::<Result<Vec<_>>>()?;
        drop(partials);
        let state = tree_combine(backend, states, keys, aggs)?;
        let out = backend.aggregate_finalize(&state, keys, aggs)?;
        return Ok(vec![stash(spill, backend, out)?]);
    }
    let n = spill
        .as_ref()
        .map_or(partials.len(), |b| b.buckets(bytes, partials.len()));
    let buckets = {
        let backend = backend.clone();
        let partials = &partials;
        staged("shuffle: hash partition", partials.len(), move |i| {
            let state = partials[i].load(&backend)?;
            backend
                .hash_partition(&state, keys, n)?
                .into_iter()
                .map(|b| stash(spill, &backend, b))
                .collect::<Result<Vec<_>>>()
        })?
    };
    drop(partials);
    let backend2 = backend.clone();
    staged("aggregate: combine", n, move |j| {
        let pieces = buckets
            .iter()
            .map(|b| b[j].load(&backend2))
            .collect::<Result<Vec<_>>>()?;
        let state = backend2.aggregate_combine(&pieces, keys, aggs)?;
        drop(pieces);
        stash(
            spill,
            &backend2,
            backend2.aggregate_finalize(&state, keys, aggs)?,
        )
    })
}

/// Combines states `split_every` at a time until one is left (order preserved, so
/// `first`/`last` stay in partition order).
pub(crate) fn tree_combine(
    backend: &Arc<dyn DataFrameBackend>,
    mut parts: Vec<Partition>,
    keys: &[String],
    aggs: &[AggSpec],
) -> Result<Partition> {
    let fan_in = crate::config::split_every()?.max(2);
    if parts.len() == 1 {
        return backend.aggregate_combine(&parts, keys, aggs);
    }
    while parts.len() > 1 {
        let groups: Vec<Vec<Partition>> = parts.chunks(fan_in).map(|c| c.to_vec()).collect();
        let backend = backend.clone();
        parts = staged("aggregate: tree", groups.len(), move |g| {
            backend.aggregate_combine(&groups[g], keys, aggs)
        })?;
    }
    Ok(parts.pop().expect("one state left"))
}

fn total_bytes(parts: &[Stashed]) -> usize {
    parts.iter().map(|p| p.nbytes()).sum()
}

fn load_all(backend: &Arc<dyn DataFrameBackend>, parts: &[Stashed]) -> Result<Vec<Partition>> {
    parts.iter().map(|p| p.load(backend)).collect()
}

pub(crate) fn concat_or_empty(
    backend: &Arc<dyn DataFrameBackend>,
    parts: &[Partition],
    schema: &arrow_schema::SchemaRef,
) -> Result<Partition> {
    if parts.is_empty() {
        backend.import_batch(empty_batch(schema))
    } else if parts.len() == 1 {
        Ok(parts[0].clone())
    } else {
        backend.concat(parts)
    }
}

/// Broadcast, sorted-merge or shuffle join. Over a spill budget a side is broadcast only
/// when it fits one worker's share, both sides are kept (and spilled) as partitions, and
/// the shuffle makes buckets small enough for a worker to join one (a grace hash join).
///
/// A broadcast join streams: the side guessed smaller (`join_guess`; of those the join
/// type lets be whole, and the right one when the user forces a broadcast of an inner
/// join, as [`JoinStrategy::Broadcast`] says) is computed first, and when it is small enough its
/// hash table is built once and the other side's pipeline runs through it partition by
/// partition — a scan, filter, probe and whatever follows the join run as one task, and
/// the large side is never held whole. Only when that side turns out too large is the
/// other one computed too, and the choice made on both measured sizes.
fn join(
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    left_node: &Node,
    right_node: &Node,
    spec: &JoinSpec,
    strategy: JoinStrategy,
) -> Result<Pipeline> {
    let both_sorted = sorted_on_keys(backend, left_node, right_node, spec);
    let (lschema, rschema) = (left_node.schema(), right_node.schema());
    let hash = JoinSpec {
        algorithm: JoinAlgorithm::Hash,
        ..spec.clone()
    };
    let broadcast_max = spill.as_ref().map_or(BROADCAST_BYTES, |b| {
        BROADCAST_BYTES.min(b.task_bytes as usize)
    });
    let stream_max = broadcast_max.min(STREAMED_BROADCAST_BYTES);
    let may_stream =
        !both_sorted && matches!(strategy, JoinStrategy::Auto | JoinStrategy::Broadcast);
    let (mut left, mut right) = (None, None);
    if may_stream {
        let (lguess, rguess) = (
            crate::join_guess::expected_bytes(left_node),
            crate::join_guess::expected_bytes(right_node),
        );
        let can_left = matches!(spec.how, JoinType::Inner | JoinType::Right);
        let can_right = matches!(
            spec.how,
            JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti
        );
        let forced = strategy == JoinStrategy::Broadcast;
        // A semi or anti join of a small left side with a large right one: the left keys
        // are hashed, not the right side's. Not under a memory budget, where the keys
        // found (as many as the right side's rows, at worst) could pass it: there the
        // right side is measured and kept within the budget as before.
        let distinct =
            |keys: &[String]| keys.iter().enumerate().all(|(i, k)| !keys[..i].contains(k));
        if matches!(spec.how, JoinType::Semi | JoinType::Anti)
            && lguess < rguess
            && !forced
            && spill.is_none()
            && distinct(&spec.left_on)
            && distinct(&spec.right_on)
        {
            let l = pipeline(left_node, backend, spill)?.materialize_stashed(spill, backend)?;
            if total_bytes(&l) <= stream_max {
                let probe = pipeline(right_node, backend, spill)?;
                return semi_by_matched_keys(backend, &l, probe, hash, &lschema, &rschema);
            }
            left = Some(l);
        }
        let first = match (can_left, can_right) {
            (true, true) if lguess < rguess && !forced => Some(Side::Left),
            (_, true) => Some(Side::Right),
            (true, false) => Some(Side::Left),
            (false, false) => None,
        };
        match first {
            _ if left.is_some() => {}
            Some(Side::Right) => {
                let r =
                    pipeline(right_node, backend, spill)?.materialize_stashed(spill, backend)?;
                if forced || total_bytes(&r) <= stream_max {
                    let probe = pipeline(left_node, backend, spill)?;
                    return broadcast(backend, &r, Side::Right, probe, hash, &lschema, &rschema);
                }
                right = Some(r);
            }
            Some(Side::Left) => {
                let l = pipeline(left_node, backend, spill)?.materialize_stashed(spill, backend)?;
                if forced || total_bytes(&l) <= stream_max {
                    let probe = pipeline(right_node, backend, spill)?;
                    return broadcast(backend, &l, Side::Left, probe, hash, &lschema, &rschema);
                }
                left = Some(l);
            }
            None => {}
        }
    }
    let left = match left {
        Some(l) => l,
        None => pipeline(left_node, backend, spill)?.materialize_stashed(spill, backend)?,
    };
    let right = match right {
        Some(r) => r,
        None => pipeline(right_node, backend, spill)?.materialize_stashed(spill, backend)?,
    };
    let (lbytes, rbytes) = (total_bytes(&left), total_bytes(&right));
    let side = broadcast_side(spec, strategy, lbytes, rbytes, broadcast_max);
    let fits = spill
        .as_ref()
        .is_none_or(|b| (lbytes + rbytes) as u64 <= b.task_bytes);
    let keep = |parts: Vec<Partition>| -> Result<Pipeline> {
        let parts = parts
            .into_iter()
            .map(|p| stash(spill, backend, p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Pipeline::stashed(parts, backend))
    };
    if both_sorted && fits && matches!(strategy, JoinStrategy::Auto | JoinStrategy::SortedMerge) {
        let (left, right) = (load_all(backend, &left)?, load_all(backend, &right)?);
        return keep(sorted_merge_join(
            backend, left, right, spec, &lschema, &rschema,
        )?);
    }
    // A side measured small enough after all (the guess picked the other one first).
    match side {
        Some(Side::Right) => {
            let probe = Pipeline::stashed(left, backend);
            return broadcast(
                backend,
                &right,
                Side::Right,
                probe,
                hash,
                &lschema,
                &rschema,
            );
        }
        Some(Side::Left) => {
            let probe = Pipeline::stashed(right, backend);
            return broadcast(backend, &left, Side::Left, probe, hash, &lschema, &rschema);
        }
        None => {}
    }
    let at_least = left.len().max(right.len()).max(1);
    let n = spill
        .as_ref()
        .map_or(at_least, |b| b.buckets((lbytes + rbytes) as u64, at_least));
    let lb = buckets_of(
        "join: partition left",
        backend,
        spill,
        &left,
        &spec.left_on,
        n,
    )?;
    drop(left);
    let rb = buckets_of(
        "join: partition right",
        backend,
        spill,
        &right,
        &spec.right_on,
        n,
    )?;
    drop(right);
    let b = backend.clone();
    staged("join: hash", n, move |j| {
        let l = lb
            .iter()
            .map(|bucket| bucket[j].load(&b))
            .collect::<Result<Vec<_>>>()?;
        let r = rb
            .iter()
            .map(|bucket| bucket[j].load(&b))
            .collect::<Result<Vec<_>>>()?;
        let l = concat_or_empty(&b, &l, &lschema)?;
        let r = concat_or_empty(&b, &r, &rschema)?;
        stash(spill, &b, b.join(&l, &r, &hash)?)
    })
    .map(|parts| Pipeline::stashed(parts, backend))
}

/// `probe`'s partitions each joined with the whole `small` side (the join's `side`), whose
/// hash table is built once: as written for a small right side, turned around
/// (`swap_join`) for a small left one where the join allows, else the small left side
/// joined whole with each right partition.
fn broadcast(
    backend: &Arc<dyn DataFrameBackend>,
    small: &[Stashed],
    side: Side,
    probe: Pipeline,
    hash: JoinSpec,
    lschema: &arrow_schema::SchemaRef,
    rschema: &arrow_schema::SchemaRef,
) -> Result<Pipeline> {
    let schema = if side == Side::Right {
        rschema
    } else {
        lschema
    };
    let small = concat_or_empty(backend, &load_all(backend, small)?, schema)?;
    let (task, b) = (probe.task.clone(), backend.clone());
    let task: Arc<dyn Fn(usize) -> Result<Partition> + Send + Sync> = match side {
        Side::Right => {
            let r = backend.prepare_broadcast(&small, &hash)?;
            Arc::new(move |i| b.join(&task(i)?, &r, &hash))
        }
        Side::Left => match crate::swap_join::swapped(&hash, lschema, rschema) {
            Some(turned) => {
                let l = backend.prepare_broadcast(&small, &turned.spec)?;
                Arc::new(move |j| {
                    let joined = b.join(&task(j)?, &l, &turned.spec)?;
                    b.evaluate(&joined, &turned.restore)
                })
            }
            None => Arc::new(move |j| b.join(&small, &task(j)?, &hash)),
        },
    };
    Ok(Pipeline { n: probe.n, task })
}

/// A semi or anti join whose left side is the small one. The left rows that have a match
/// are those whose keys some right row has; found the other way around, only the left
/// keys are hashed: each partition of the right side, streamed in parallel, keeps its
/// rows whose keys are among them (its keys only), and the left partitions are then
/// joined with those keys as written. TPC-H Q4 at scale 10 semi-joins 570 thousand orders
/// with 38 million late line items, whose keys would otherwise be hashed in one table.
/// Key equality is the join's either way: the matched keys are right values equal to
/// left ones, and a left row has a match on the right exactly when it has one among
/// them.
fn semi_by_matched_keys(
    backend: &Arc<dyn DataFrameBackend>,
    small: &[Stashed],
    probe: Pipeline,
    hash: JoinSpec,
    lschema: &arrow_schema::SchemaRef,
    rschema: &arrow_schema::SchemaRef,
) -> Result<Pipeline> {
    let left = load_all(backend, small)?;
    // Only the key columns are copied into the table's side.
    let key_program = column_program(&hash.left_on);
    let left_keys = left
        .iter()
        .map(|p| backend.evaluate(p, &key_program))
        .collect::<Result<Vec<_>>>()?;
    let left_keys = concat_or_empty(
        backend,
        &left_keys,
        &key_schema(lschema, &hash.left_on, "join")?,
    )?;
    let find = JoinSpec {
        left_on: hash.right_on.clone(),
        right_on: hash.left_on.clone(),
        how: JoinType::Semi,
        suffixes: hash.suffixes.clone(),
        algorithm: JoinAlgorithm::Hash,
    };
    let table = backend.prepare_broadcast(&left_keys, &find)?;
    let right_keys = column_program(&hash.right_on);
    let (task, b) = (probe.task.clone(), backend.clone());
    let matched = staged("join: match keys", probe.n, move |i| {
        b.evaluate(&b.join(&task(i)?, &table, &find)?, &right_keys)
    })?;
    let matched = concat_or_empty(
        backend,
        &matched,
        &key_schema(rschema, &hash.right_on, "join")?,
    )?;
    let matched = backend.prepare_broadcast(&matched, &hash)?;
    let b = backend.clone();
    Ok(Pipeline {
        n: left.len(),
        task: Arc::new(move |i| b.join(&left[i], &matched, &hash)),
    })
}

/// A program that keeps the columns `names`, in that order.
fn column_program(names: &[String]) -> FrameProgram {
    FrameProgram {
        steps: vec![FrameStep::Project(
            names
                .iter()
                .map(|k| (k.clone(), Expr::Column(k.clone())))
                .collect(),
        )],
    }
}

/// `schema` projected onto the key columns `keys` (errors name `op`).
fn key_schema(
    schema: &arrow_schema::SchemaRef,
    keys: &[String],
    op: &str,
) -> Result<arrow_schema::SchemaRef> {
    let at = |e| Error::arrow(op, e);
    let indices = keys
        .iter()
        .map(|k| schema.index_of(k))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(at)?;
    Ok(Arc::new(schema.project(&indices).map_err(at)?))
}

/// A side of a join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The left side.
    Left,
    /// The right side.
    Right,
}

/// The side a join broadcasts, if any: one of at most `max` bytes (`Auto`) or any
/// (`Broadcast`) that the join type allows to be whole (the right side of inner, left, semi
/// and anti joins, the left side of inner and right joins; outer joins shuffle), the smaller when
/// both could be.
pub(crate) fn broadcast_side(
    spec: &JoinSpec,
    strategy: JoinStrategy,
    lbytes: usize,
    rbytes: usize,
    max: usize,
) -> Option<Side> {
    let (auto, forced) = (
        strategy == JoinStrategy::Auto,
        strategy == JoinStrategy::Broadcast,
    );
    let small_right = (auto && rbytes <= max || forced)
        && matches!(
            spec.how,
            JoinType::Inner | JoinType::Left | JoinType::Semi | JoinType::Anti
        );
    let small_left =
        (auto && lbytes <= max || forced) && matches!(spec.how, JoinType::Inner | JoinType::Right);
    if small_right && (rbytes <= lbytes || !small_left || forced) {
        Some(Side::Right)
    } else if small_left {
        Some(Side::Left)
    } else {
        None
    }
}

/// True when both sides are sorted ascending on their join keys and the backend can merge
/// them: the sorted-merge join applies.
pub(crate) fn sorted_on_keys(
    backend: &Arc<dyn DataFrameBackend>,
    left: &Node,
    right: &Node,
    spec: &JoinSpec,
) -> bool {
    let ascending = |keys: &[String], sorted: Option<Vec<SortKey>>| {
        sorted.is_some_and(|by| {
            by.len() >= keys.len()
                && by
                    .iter()
                    .zip(keys)
                    .all(|(k, c)| !k.descending && &k.column == c)
        })
    };
    ascending(&spec.left_on, left.sorted_by())
        && ascending(&spec.right_on, right.sorted_by())
        && !backend
            .capabilities()
            .missing_join_algorithms
            .contains(&JoinAlgorithm::SortedMerge)
}

/// Every partition of `side` hash-partitioned on `on` into `n` buckets, kept.
fn buckets_of(
    stage: &str,
    backend: &Arc<dyn DataFrameBackend>,
    spill: &Spill,
    side: &[Stashed],
    on: &[String],
    n: usize,
) -> Result<Vec<Vec<Stashed>>> {
    staged(stage, side.len(), |i| {
        let part = side[i].load(backend)?;
        backend
            .hash_partition(&part, on, n)?
            .into_iter()
            .map(|b| stash(spill, backend, b))
            .collect()
    })
}

/// Both sides are globally sorted on the keys: split the right side at the left
/// partitions' last keys, so range `i` of the right meets left partition `i`, and merge.
pub(crate) fn sorted_merge_join(
    backend: &Arc<dyn DataFrameBackend>,
    left: Vec<Partition>,
    right: Vec<Partition>,
    spec: &JoinSpec,
    lschema: &arrow_schema::SchemaRef,
    rschema: &arrow_schema::SchemaRef,
) -> Result<Vec<Partition>> {
    let mut left: Vec<Partition> = left.into_iter().filter(|p| p.num_rows() > 0).collect();
    if left.is_empty() {
        // Still one (empty) left partition: right and outer joins keep every right row.
        left.push(concat_or_empty(backend, &[], lschema)?);
    }
    // Bounds: the last key row of every left partition but the last, as a host batch of
    // the key columns renamed to the right side's names.
    let key_program = FrameProgram {
        steps: vec![FrameStep::Project(
            spec.left_on
                .iter()
                .zip(&spec.right_on)
                .map(|(l, r)| (r.clone(), Expr::Column(l.clone())))
                .collect(),
        )],
    };
    let mut last_rows = Vec::new();
    for p in &left[..left.len() - 1] {
        let last = backend.slice(p, p.num_rows().saturating_sub(1), 1)?;
        last_rows.push(backend.export_batch(&backend.evaluate(&last, &key_program)?)?);
    }
    let by: Vec<SortKey> = spec
        .right_on
        .iter()
        .map(|c| SortKey {
            column: c.clone(),
            descending: false,
        })
        .collect();
    let bounds = if last_rows.is_empty() {
        RecordBatch::new_empty(key_schema(rschema, &spec.right_on, "merge")?)
    } else {
        arrow_select::concat::concat_batches(&last_rows[0].schema(), &last_rows)
            .map_err(|e| Error::arrow_in("merge", "join bounds", e))?
    };
    let pieces = {
        let backend = backend.clone();
        let right = &right;
        let (by, bounds) = (&by, &bounds);
        staged("join: range partition", right.len(), move |j| {
            backend.range_partition(&right[j], by, bounds)
        })?
    };
    let merge = JoinSpec {
        algorithm: JoinAlgorithm::SortedMerge,
        ..spec.clone()
    };
    let backend = backend.clone();
    let rschema = rschema.clone();
    // Right ranges past the last left partition only matter for right/outer joins; they
    // all fall into the last range, which meets the last left partition.
    staged("join: sorted merge", left.len(), move |i| {
        let r: Vec<Partition> = pieces.iter().map(|p| p[i].clone()).collect();
        let r = concat_or_empty(&backend, &r, &rschema)?;
        backend.join(&left[i], &r, &merge)
    })
}

/// Evenly spaced rows of partition `p` (about 64), its sort keys only: what a sort's range
/// boundaries are chosen from.
///
/// # Errors
/// The backend's.
pub(crate) fn sort_sample(
    backend: &Arc<dyn DataFrameBackend>,
    p: &Partition,
    by: &[SortKey],
) -> Result<Partition> {
    let columns: Vec<String> = by.iter().map(|k| k.column.clone()).collect();
    let key_program = column_program(&columns);
    let rows = p.num_rows();
    let k = 64.min(rows);
    let idx: Vec<u64> = (0..k).map(|i| (i * rows / k) as u64).collect();
    backend.evaluate(&backend.take(p, &idx)?, &key_program)
}

/// The `n - 1` boundaries of a sort into `n` ranges, from the partitions' samples in
/// partition order ([`sort_sample`]); `None` when every sample is empty.
///
/// # Errors
/// The backend's.
pub(crate) fn range_bounds(
    backend: &Arc<dyn DataFrameBackend>,
    samples: &[Partition],
    by: &[SortKey],
    n: usize,
) -> Result<Option<RecordBatch>> {
    let samples: Vec<Partition> = samples
        .iter()
        .filter(|s| s.num_rows() > 0)
        .cloned()
        .collect();
    if samples.is_empty() {
        return Ok(None);
    }
    let sample = backend.sort(&backend.concat(&samples)?, by)?;
    let s = sample.num_rows();
    let idx: Vec<u64> = (1..n).map(|j| (j * s / n).min(s - 1) as u64).collect();
    backend
        .export_batch(&backend.take(&sample, &idx)?)
        .map(Some)
}

/// Sample sort into as many range partitions as there are input partitions.
fn sort(
    backend: &Arc<dyn DataFrameBackend>,
    parts: Vec<Partition>,
    by: &[SortKey],
    schema: &arrow_schema::SchemaRef,
) -> Result<Vec<Partition>> {
    for k in by {
        if schema.field_with_name(&k.column).is_err() {
            return Err(Error::invalid(
                "sort_values",
                format!("no column '{}'", k.column),
            ));
        }
    }
    let n = parts.len();
    if n <= 1 {
        let all = concat_or_empty(backend, &parts, schema)?;
        return Ok(vec![backend.sort(&all, by)?]);
    }
    let samples = parts
        .iter()
        .filter(|p| p.num_rows() > 0)
        .map(|p| sort_sample(backend, p, by))
        .collect::<Result<Vec<_>>>()?;
    let Some(bounds) = range_bounds(backend, &samples, by, n)? else {
        return Ok(parts);
    };
    let pieces = {
        let backend = backend.clone();
        let parts = &parts;
        let bounds = &bounds;
        staged("sort: range partition", n, move |i| {
            backend.range_partition(&parts[i], by, bounds)
        })?
    };
    let backend = backend.clone();
    let schema = schema.clone();
    staged("sort: local", n, move |j| {
        let r: Vec<Partition> = pieces.iter().map(|p| p[j].clone()).collect();
        let all = concat_or_empty(&backend, &r, &schema)?;
        backend.sort(&all, by)
    })
}

/// `n` partitions of about equal rows, row order kept.
fn repartition(
    backend: &Arc<dyn DataFrameBackend>,
    parts: Vec<Partition>,
    n: usize,
) -> Result<Vec<Partition>> {
    if n == 0 {
        return Err(Error::invalid("repartition", "n must be at least 1"));
    }
    let total: usize = parts.iter().map(|p| p.num_rows()).sum();
    let starts: Vec<usize> = parts
        .iter()
        .scan(0, |acc, p| {
            let s = *acc;
            *acc += p.num_rows();
            Some(s)
        })
        .collect();
    let schema = match parts.first() {
        Some(p) => p.schema(),
        None => return Ok(parts),
    };
    let backend = backend.clone();
    staged("repartition", n, move |j| {
        let (lo, hi) = (j * total / n, (j + 1) * total / n);
        let mut pieces = Vec::new();
        for (p, &s) in parts.iter().zip(&starts) {
            let e = s + p.num_rows();
            if e <= lo || s >= hi {
                continue;
            }
            let (a, b) = (lo.max(s) - s, hi.min(e) - s);
            pieces.push(backend.slice(p, a, b - a)?);
        }
        concat_or_empty(&backend, &pieces, &schema)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::lit;

    fn project(list: &[(&str, Expr)]) -> FrameStep {
        FrameStep::Project(
            list.iter()
                .map(|(n, e)| (n.to_string(), e.clone()))
                .collect(),
        )
    }

    fn sum(column: &str) -> AggSpec {
        AggSpec::new(column, AggFunc::Sum, "out")
    }

    /// A decimal whose values reach only arithmetic and sums, under its name or under
    /// names projections give it, may come in 64 bits; a filter, a comparison, a key or a
    /// `min` reading those values rules it out.
    #[test]
    fn decimals_are_narrowed_only_where_their_values_reach_arithmetic_and_sums() {
        let keys = ["k".to_string()];
        let program = |steps: Vec<FrameStep>| FrameProgram { steps };
        let q1 = program(vec![
            FrameStep::Filter(col("date").lt_eq(lit("1998-09-02"))),
            project(&[
                ("k", col("k")),
                ("p", col("p")),
                ("d", col("p") * (lit(1) - col("r"))),
            ]),
            project(&[("a0", col("p")), ("a1", col("d") * (lit(1) + col("r")))]),
        ]);
        let ok = |k: &str, p: &FrameProgram, aggs: &[AggSpec]| summed_only(k, Some(p), &keys, aggs);
        assert!(ok("p", &q1, &[sum("a0"), sum("a1")]));
        assert!(ok("r", &q1, &[sum("a0"), sum("a1")]));
        // The alias `a0` holds p's values: a mean or count may read it, a min may not.
        assert!(ok("p", &q1, &[AggSpec::new("a0", AggFunc::Mean, "m")]));
        assert!(ok("p", &q1, &[AggSpec::new("a0", AggFunc::Count, "c")]));
        assert!(!ok("p", &q1, &[AggSpec::new("a0", AggFunc::Min, "m")]));
        // `a1` is computed: any aggregation reads a Decimal128.
        assert!(ok("r", &q1, &[AggSpec::new("a1", AggFunc::Max, "m")]));
        // Read by a filter, a comparison, a function, or as a key.
        let filtered = program(vec![FrameStep::Filter(col("p").gt(lit(3)))]);
        assert!(!ok("p", &filtered, &[sum("p")]));
        let compared = program(vec![project(&[("b", col("p").gt(lit(3)))])]);
        assert!(!ok("p", &compared, &[]));
        let inside = program(vec![project(&[("b", col("p").abs() * lit(2))])]);
        assert!(!ok("p", &inside, &[]));
        // Arithmetic is followed through arithmetic only: under a function the rule stays
        // on the safe side.
        let nested = program(vec![project(&[("b", (col("p") * lit(2)).abs())])]);
        assert!(!ok("p", &nested, &[]));
        let deep = program(vec![project(&[(
            "b",
            (col("p") * lit(2) + lit(1)) * col("r"),
        )])]);
        assert!(ok("p", &deep, &[]));
        let keyed = program(vec![project(&[("k", col("p"))])]);
        assert!(!ok("p", &keyed, &[]));
        // A name given a computed value no longer holds the column's values.
        let replaced = program(vec![project(&[("p", col("p") * lit(2))])]);
        assert!(ok("p", &replaced, &[AggSpec::new("p", AggFunc::Min, "m")]));
        // Without a program, the aggregations read the column itself.
        assert!(summed_only("p", None, &keys, &[sum("p")]));
        assert!(!summed_only(
            "p",
            None,
            &keys,
            &[AggSpec::new("p", AggFunc::First, "f")]
        ));
        assert!(!summed_only("k", None, &keys, &[]));
    }
}
