//! The logical plan of a lazy dataframe, and the optimizer that rewrites it before it runs.
//!
//! A [`Node`] tree is typed at construction (every node knows its Arrow schema), so a
//! typo in a column name fails where it is written, not at `compute()`. Before running,
//! [`optimize`]:
//!
//! 1. **fuses** chains of filters and projections into one [`FrameProgram`] per partition;
//! 2. **pushes projections down** into file scans — a CSV reader skips the bytes of
//!    unused columns, a Parquet reader never decodes them — and drops projected
//!    expressions nobody reads;
//! 3. **pushes simple predicates** (`col op literal`, joined by `&`) into scans whose
//!    format keeps statistics (Parquet row groups), which skip partitions that cannot
//!    match; the filter itself stays, since statistics only prove absence.
//!
//! [`Node::explain`] prints the result in words.

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use crate::backend::{
    program_schema, AggSpec, FrameProgram, FrameStep, JoinSpec, Partition, SortKey,
};
use crate::error::Result;
use crate::expr::{BinaryOp, Expr, Literal};
use crate::window::WindowSpec;

/// A comparison of a column with a literal, the predicates file formats can prune with.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnPredicate {
    /// The column.
    pub column: String,
    /// A comparison operator.
    pub op: BinaryOp,
    /// The literal.
    pub value: Literal,
}

/// A file format a scan reads: partitions of one or more files.
pub trait FileSource: Send + Sync + fmt::Debug {
    /// Format name (`csv`, `parquet`).
    fn format(&self) -> &'static str;
    /// The full schema of the files.
    fn schema(&self) -> SchemaRef;
    /// Number of partitions (byte ranges, row groups).
    fn partitions(&self) -> usize;
    /// Reads one partition, only the columns at `projection` (all when `None`). An empty
    /// projection yields a batch with no columns and the right row count.
    fn read(&self, partition: usize, projection: Option<&[usize]>) -> Result<RecordBatch>;
    /// Reads one partition as [`FileSource::read`] does, knowing the filter its rows go
    /// through next: rows for which `filter.predicate` is false or null may be left out
    /// (a row for which it is true never is), and the schema is the same. A format that
    /// can test part of the predicate more cheaply while decoding than after does so
    /// (Parquet tests a dictionary-encoded string column once per distinct value); the
    /// default reads everything.
    ///
    /// # Errors
    /// As [`FileSource::read`].
    fn read_filtered(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        filter: &ScanFilter<'_>,
    ) -> Result<RecordBatch> {
        let _ = filter;
        self.read(partition, projection)
    }
    /// Reads one partition as [`FileSource::read`] does, except that the columns at
    /// `coded` (indices into [`FileSource::schema`]) may come in the form the format stores
    /// them in: a string column as `Dictionary(Int32, Utf8 | LargeUtf8)` when it is stored
    /// dictionary-encoded, a `Decimal128(p, s)` of at most 18 digits as `Decimal64(p, s)`
    /// when it is stored in 64 bits. The engine asks for this for group keys that a
    /// backend groups by their codes
    /// ([`tessera_core::frame::DataFrameBackend::groups_dictionary_keys`]) and for decimals
    /// that it sums in 64 bits
    /// ([`tessera_core::frame::DataFrameBackend::reads_narrow_decimals`]). The default
    /// reads everything in the schema's types.
    ///
    /// # Errors
    /// As [`FileSource::read`].
    fn read_coded(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        coded: &[usize],
    ) -> Result<RecordBatch> {
        let _ = coded;
        self.read(partition, projection)
    }
    /// The partitions that may hold rows matching every predicate; `None` when the
    /// format keeps no statistics.
    fn prune(&self, predicates: &[ColumnPredicate]) -> Option<Vec<usize>> {
        let _ = predicates;
        None
    }
    /// Files and options in words, for `explain`.
    fn describe(&self) -> String;
    /// About how many bytes partition `partition` takes in memory once read (all
    /// columns), for the plan's memory projection; `None` when unknown.
    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        let _ = partition;
        None
    }
}

/// The filter over a scan, handed to its reader ([`FileSource::read_filtered`]).
pub struct ScanFilter<'a> {
    /// The predicate the rows are filtered with after the read (null counts as false).
    pub predicate: &'a Expr,
    /// The frame backend's evaluator: the values of an expression on each row of a batch
    /// (the reader asks it about small batches, such as a dictionary's distinct values).
    pub evaluate: &'a (dyn Fn(&RecordBatch, &Expr) -> Result<arrow_array::ArrayRef> + Send + Sync),
}

impl fmt::Debug for ScanFilter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScanFilter")
            .field("predicate", self.predicate)
            .finish_non_exhaustive()
    }
}

/// A user function applied to every partition (as an Arrow batch).
pub type PartitionFn = Arc<dyn Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync>;

/// A groupby strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GroupStrategy {
    /// Combine partial results in a tree into one output partition (few groups).
    Tree,
    /// Hash-partition partial results and combine each bucket (many groups): one output
    /// partition per input partition.
    Shuffle,
}

/// How the partitions of a join meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum JoinStrategy {
    /// Broadcast a side under [`crate::exec::BROADCAST_BYTES`] (256 MiB across the
    /// ranks of a job), else a sorted merge when both sides are sorted on the keys, else a
    /// hash shuffle.
    #[default]
    Auto,
    /// Join every partition of one side with the whole other side (the right side for
    /// inner and left joins, the left side for right joins; outer joins shuffle).
    Broadcast,
    /// Hash-partition both sides into matching buckets.
    Shuffle,
    /// Both sides must be sorted on the keys (`sort_values`/`set_index`): merge aligned
    /// ranges; falls back to a shuffle when they are not.
    SortedMerge,
}

/// A node of the logical plan.
#[derive(Clone)]
pub enum Node {
    /// Partitions already in memory on the frame's backend.
    Partitions {
        /// The partitions.
        parts: Vec<Partition>,
        /// Their schema.
        schema: SchemaRef,
    },
    /// A file scan.
    Scan {
        /// The format and files.
        source: Arc<dyn FileSource>,
        /// Column indices read (all when `None`).
        projection: Option<Vec<usize>>,
        /// Partitions read (all when `None`), after predicate pruning.
        selected: Option<Vec<usize>>,
        /// Predicates pushed into the scan (for `explain`).
        pushed: Vec<ColumnPredicate>,
    },
    /// A fused program of filters and projections.
    Map {
        /// Input.
        input: Arc<Node>,
        /// The program.
        program: FrameProgram,
        /// Output schema.
        schema: SchemaRef,
    },
    /// A user function per partition.
    MapPartitions {
        /// Input.
        input: Arc<Node>,
        /// The function.
        func: PartitionFn,
        /// Output schema.
        schema: SchemaRef,
    },
    /// Groupby-aggregation (no keys: one row for the whole frame).
    Aggregate {
        /// Input.
        input: Arc<Node>,
        /// Key columns.
        keys: Vec<String>,
        /// Aggregations.
        aggs: Vec<AggSpec>,
        /// Forced strategy (chosen from the partial results' size when `None`).
        strategy: Option<GroupStrategy>,
        /// Output schema.
        schema: SchemaRef,
    },
    /// A join.
    Join {
        /// Left input.
        left: Arc<Node>,
        /// Right input.
        right: Arc<Node>,
        /// The join (its `algorithm` is chosen at run time).
        spec: JoinSpec,
        /// How the partitions meet.
        strategy: JoinStrategy,
        /// Output schema.
        schema: SchemaRef,
    },
    /// A global sort (sample sort into range partitions).
    Sort {
        /// Input.
        input: Arc<Node>,
        /// Sort keys.
        by: Vec<SortKey>,
    },
    /// Rebalance into `n` partitions of about equal rows, keeping row order.
    Repartition {
        /// Input.
        input: Arc<Node>,
        /// Output partitions.
        n: usize,
    },
    /// The first `n` rows.
    Head {
        /// Input.
        input: Arc<Node>,
        /// Rows.
        n: usize,
    },
    /// The last `n` rows.
    Tail {
        /// Input.
        input: Arc<Node>,
        /// Rows.
        n: usize,
    },
    /// The rows of several plans one after the other (`concat`): the inputs' partitions
    /// in order. The inputs have the same columns, in the same order and of the same
    /// types (`DataFrame::concat` casts them so).
    Concat {
        /// The inputs, in order.
        inputs: Vec<Arc<Node>>,
        /// The output schema.
        schema: SchemaRef,
    },
    /// The first `n` rows in the order of `by` (what `sort_values(by).head(n)` returns,
    /// ties in input order) without a full sort: each partition keeps its own top `n`,
    /// then one task picks from those (`nlargest`, `nsmallest`, and the optimizer's
    /// rewrite of a head of a sort).
    TopK {
        /// Input.
        input: Arc<Node>,
        /// Sort keys.
        by: Vec<SortKey>,
        /// Rows.
        n: usize,
    },
    /// A window function over the rows in order (per group of keys): each partition's
    /// carry in parallel, the carries folded in partition order, then every partition
    /// with its incoming carry in parallel (see the protocol's `window` module).
    Window {
        /// Input.
        input: Arc<Node>,
        /// The function, its column, keys and output.
        spec: WindowSpec,
        /// Output schema.
        schema: SchemaRef,
    },
}

impl Node {
    /// The output schema.
    pub fn schema(&self) -> SchemaRef {
        match self {
            Node::Partitions { schema, .. }
            | Node::Map { schema, .. }
            | Node::MapPartitions { schema, .. }
            | Node::Aggregate { schema, .. }
            | Node::Join { schema, .. }
            | Node::Window { schema, .. }
            | Node::Concat { schema, .. } => schema.clone(),
            Node::Scan {
                source, projection, ..
            } => match projection {
                None => source.schema(),
                Some(p) => Arc::new(
                    source
                        .schema()
                        .project(p)
                        .unwrap_or_else(|_| Schema::empty()),
                ),
            },
            Node::Sort { input, .. }
            | Node::Repartition { input, .. }
            | Node::Head { input, .. }
            | Node::Tail { input, .. }
            | Node::TopK { input, .. } => input.schema(),
        }
    }

    /// The keys this node's output is globally sorted on (ascending), if known.
    pub fn sorted_by(&self) -> Option<Vec<SortKey>> {
        match self {
            Node::Sort { by, .. } | Node::TopK { by, .. } => Some(by.clone()),
            Node::Head { input, .. } | Node::Tail { input, .. } => input.sorted_by(),
            Node::Map { input, program, .. } => {
                let by = input.sorted_by()?;
                // Sortedness survives filters and projections that pass the keys through.
                let keeps = |k: &SortKey| {
                    program.steps.iter().all(|s| match s {
                        FrameStep::Filter(_) => true,
                        FrameStep::Project(list) => list
                            .iter()
                            .any(|(n, e)| n == &k.column && *e == Expr::Column(k.column.clone())),
                    })
                };
                by.iter().all(keeps).then_some(by)
            }
            // Rows keep their order; only the output column changes.
            Node::Window { input, spec, .. } => {
                let by = input.sorted_by()?;
                by.iter().all(|k| k.column != spec.output).then_some(by)
            }
            _ => None,
        }
    }

    /// Builds a `Map` node, fusing with a `Map` input, and types the program.
    pub fn map(input: Arc<Node>, step: FrameStep) -> Result<Node> {
        let (base, mut program) = match &*input {
            Node::Map { input, program, .. } => (input.clone(), program.clone()),
            _ => (input.clone(), FrameProgram::default()),
        };
        program.steps.push(step);
        let schema = program_schema(&base.schema(), &program)?;
        Ok(Node::Map {
            input: base,
            program,
            schema,
        })
    }

    /// The plan in words: one line per node, inputs indented.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        self.explain_into(&mut out, 0);
        out
    }

    fn explain_into(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        let cols = |s: &SchemaRef| {
            s.fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Node::Partitions { parts, schema } => {
                let rows: usize = parts.iter().map(|p| p.num_rows()).sum();
                let _ = writeln!(
                    out,
                    "{pad}in memory: {} partitions, {rows} rows [{}]",
                    parts.len(),
                    cols(schema)
                );
            }
            Node::Scan {
                source,
                projection,
                selected,
                pushed,
            } => {
                let total = source.partitions();
                let read = selected.as_ref().map_or(total, |s| s.len());
                let _ = write!(
                    out,
                    "{pad}scan {} {}: {read} of {total} partitions",
                    source.format(),
                    source.describe()
                );
                match projection {
                    Some(_) => {
                        let _ = write!(
                            out,
                            ", projection pushed down: reads {} of {} columns [{}]",
                            self.schema().fields().len(),
                            source.schema().fields().len(),
                            cols(&self.schema())
                        );
                    }
                    None => {
                        let _ = write!(out, ", all columns");
                    }
                }
                if !pushed.is_empty() {
                    let p: Vec<String> = pushed
                        .iter()
                        .map(|p| format!("{} {} {}", p.column, p.op.symbol(), p.value))
                        .collect();
                    let _ = write!(out, ", predicates pushed down: {}", p.join(" & "));
                }
                out.push('\n');
            }
            Node::Map { input, program, .. } => {
                let steps: Vec<String> = program
                    .steps
                    .iter()
                    .map(|s| match s {
                        FrameStep::Filter(e) => format!("filter {e}"),
                        FrameStep::Project(list) => {
                            let items: Vec<String> = list
                                .iter()
                                .map(|(n, e)| match e {
                                    Expr::Column(c) if c == n => n.clone(),
                                    _ => format!("{n} = {e}"),
                                })
                                .collect();
                            format!("project [{}]", items.join(", "))
                        }
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{pad}fused per partition ({} steps, one pass): {}",
                    program.steps.len(),
                    steps.join(" -> ")
                );
                input.explain_into(out, depth + 1);
            }
            Node::MapPartitions { input, .. } => {
                let _ = writeln!(out, "{pad}map_partitions (user function on RecordBatch)");
                input.explain_into(out, depth + 1);
            }
            Node::Aggregate {
                input,
                keys,
                aggs,
                strategy,
                ..
            } => {
                let a: Vec<String> = aggs
                    .iter()
                    .map(|a| format!("{} = {}({})", a.output, a.func.name(), a.column))
                    .collect();
                let how = match strategy {
                    Some(GroupStrategy::Tree) => "tree combine (forced)",
                    Some(GroupStrategy::Shuffle) => "shuffle combine (forced)",
                    None => "tree combine, or shuffle if the partial results are large",
                };
                if keys.is_empty() {
                    let _ = writeln!(
                        out,
                        "{pad}aggregate [{}]: partial per partition (fused with its input), {how}",
                        a.join(", ")
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "{pad}groupby [{}] agg [{}]: partial per partition (fused with its input), {how}",
                        keys.join(", "),
                        a.join(", ")
                    );
                }
                input.explain_into(out, depth + 1);
            }
            Node::Join {
                left,
                right,
                spec,
                strategy,
                ..
            } => {
                let how = match strategy {
                    JoinStrategy::Auto => "broadcast the small side, sorted merge if both are sorted on the keys, else hash shuffle",
                    JoinStrategy::Broadcast => "broadcast (forced)",
                    JoinStrategy::Shuffle => "hash shuffle (forced)",
                    JoinStrategy::SortedMerge => "sorted merge (forced)",
                };
                let _ = writeln!(
                    out,
                    "{pad}{} join on [{}] = [{}]: {how}",
                    spec.how.name(),
                    spec.left_on.join(", "),
                    spec.right_on.join(", ")
                );
                left.explain_into(out, depth + 1);
                right.explain_into(out, depth + 1);
            }
            Node::Sort { input, by } => {
                let _ = writeln!(
                    out,
                    "{pad}sort by [{}] (sample sort into range partitions)",
                    sort_keys(by)
                );
                input.explain_into(out, depth + 1);
            }
            Node::Repartition { input, n } => {
                let _ = writeln!(out, "{pad}repartition into {n}");
                input.explain_into(out, depth + 1);
            }
            Node::Concat { inputs, .. } => {
                let _ = writeln!(
                    out,
                    "{pad}concat of {} frames (their partitions in order)",
                    inputs.len()
                );
                for i in inputs {
                    i.explain_into(out, depth + 1);
                }
            }
            Node::Head { input, n } => {
                let _ = writeln!(
                    out,
                    "{pad}head {n} (reads partitions in order until it has enough)"
                );
                input.explain_into(out, depth + 1);
            }
            Node::Tail { input, n } => {
                let _ = writeln!(
                    out,
                    "{pad}tail {n} (reads partitions from the last until it has enough)"
                );
                input.explain_into(out, depth + 1);
            }
            Node::TopK { input, by, n } => {
                let _ = writeln!(
                    out,
                    "{pad}top {n} by [{}] (each partition keeps its top {n}, no full sort)",
                    sort_keys(by)
                );
                input.explain_into(out, depth + 1);
            }
            Node::Window { input, spec, .. } => {
                let over = if spec.keys.is_empty() {
                    "all rows".to_string()
                } else {
                    format!("each group of [{}]", spec.keys.join(", "))
                };
                let _ = writeln!(
                    out,
                    "{pad}window {}({}) as {} over {over} in row order (carries between partitions)",
                    spec.func.name(),
                    spec.column,
                    spec.output
                );
                input.explain_into(out, depth + 1);
            }
        }
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

/// Rewrites a plan: fusion happened at construction; this moves filters below inner
/// joins (`pushdown`), small tables below the joins that hold their keys (`join_order`),
/// computes arithmetic a projection repeats once (`cse`), prunes unused columns down into scans and pushes predicates into
/// formats that can prune partitions.
pub fn optimize(node: &Arc<Node>) -> Result<Arc<Node>> {
    prune(node, None)
}

/// Sort keys as `explain()` shows them: `a, b desc`.
fn sort_keys(by: &[SortKey]) -> String {
    by.iter()
        .map(|k| format!("{}{}", k.column, if k.descending { " desc" } else { "" }))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A projection of the columns of `schema` named in `keep`, in `schema`'s order.
fn columns_in(schema: &SchemaRef, keep: &BTreeSet<String>) -> Vec<(String, Expr)> {
    schema
        .fields()
        .iter()
        .filter(|f| keep.contains(f.name()))
        .map(|f| (f.name().clone(), Expr::Column(f.name().clone())))
        .collect()
}

fn prune(node: &Arc<Node>, required: Option<&BTreeSet<String>>) -> Result<Arc<Node>> {
    if let Some(moved) = crate::join_order::small_table_first(node)? {
        return prune(&moved, required);
    }
    Ok(match &**node {
        Node::Partitions { schema, .. } => match required {
            // Drop unused in-memory columns before a blocking node copies them.
            Some(r) if r.len() < schema.fields().len() => Arc::new(Node::map(
                node.clone(),
                FrameStep::Project(columns_in(schema, r)),
            )?),
            _ => node.clone(),
        },
        Node::Scan {
            source,
            projection,
            selected,
            pushed,
        } => {
            let full = source.schema();
            let projection = match (required, projection) {
                (Some(req), None) => Some(
                    (0..full.fields().len())
                        .filter(|&i| req.contains(full.field(i).name()))
                        .collect(),
                ),
                (Some(req), Some(p)) => Some(
                    p.iter()
                        .copied()
                        .filter(|&i| req.contains(full.field(i).name()))
                        .collect(),
                ),
                (None, p) => p.clone(),
            };
            Arc::new(Node::Scan {
                source: source.clone(),
                projection,
                selected: selected.clone(),
                pushed: pushed.clone(),
            })
        }
        Node::Map { input, program, .. } => {
            // Filters over an inner join go below it first, where they can.
            let (input, program) = match crate::pushdown::below_inner_join(input, program)? {
                Some((join, rest)) if rest.steps.is_empty() => return prune(&join, required),
                Some((join, rest)) => (join, rest),
                None => (input.clone(), program.clone()),
            };
            let input = &input;
            // Walk the steps backwards, keeping only projected expressions someone reads.
            let mut steps = program.steps.clone();
            let mut need: Option<BTreeSet<String>> = required.cloned();
            for step in steps.iter_mut().rev() {
                match step {
                    FrameStep::Filter(e) => {
                        if let Some(n) = need.as_mut() {
                            e.columns_into(n);
                        }
                    }
                    FrameStep::Project(list) => {
                        if let Some(n) = &need {
                            list.retain(|(name, _)| n.contains(name));
                        }
                        let mut next = BTreeSet::new();
                        for (_, e) in list.iter() {
                            e.columns_into(&mut next);
                        }
                        need = Some(next);
                    }
                }
            }
            let program = FrameProgram { steps };
            let mut input = prune(input, need.as_ref())?;
            // Predicate pushdown: leading filters over a scan.
            if let Node::Scan {
                source,
                projection,
                selected,
                pushed,
            } = &*input
            {
                let mut preds = pushed.clone();
                for step in &program.steps {
                    match step {
                        FrameStep::Filter(e) => simple_predicates(e, &mut preds),
                        FrameStep::Project(_) => break,
                    }
                }
                if preds.len() > pushed.len() {
                    if let Some(keep) = source.prune(&preds) {
                        let keep = match selected {
                            Some(s) => s.iter().copied().filter(|i| keep.contains(i)).collect(),
                            None => keep,
                        };
                        input = Arc::new(Node::Scan {
                            source: source.clone(),
                            projection: projection.clone(),
                            selected: Some(keep),
                            pushed: preds,
                        });
                    }
                }
            }
            let mut program = crate::cse::hoist_shared(&program, &input.schema())?;
            let mut schema = program_schema(&input.schema(), &program)?;
            // A filter passes on every column it read: those only its predicate needed
            // (TPC-H Q13's `o_comment`) are dropped right after it, not carried into the
            // join or shuffle above.
            if let Some(r) = required {
                if schema.fields().iter().any(|f| !r.contains(f.name())) {
                    program
                        .steps
                        .push(FrameStep::Project(columns_in(&schema, r)));
                    schema = program_schema(&input.schema(), &program)?;
                }
            }
            Arc::new(Node::Map {
                input,
                program,
                schema,
            })
        }
        Node::MapPartitions {
            input,
            func,
            schema,
        } => Arc::new(Node::MapPartitions {
            input: prune(input, None)?,
            func: func.clone(),
            schema: schema.clone(),
        }),
        Node::Aggregate {
            input,
            keys,
            aggs,
            strategy,
            schema,
        } => {
            let aggs = crate::count_rows::counts_on_read_columns(&input.schema(), keys, aggs);
            let mut need: BTreeSet<String> = keys.iter().cloned().collect();
            need.extend(aggs.iter().map(|a| a.column.clone()));
            Arc::new(Node::Aggregate {
                input: prune(input, Some(&need))?,
                keys: keys.clone(),
                aggs,
                strategy: *strategy,
                schema: schema.clone(),
            })
        }
        Node::Join {
            left,
            right,
            spec,
            strategy,
            schema,
        } => {
            // Each side keeps its keys, the columns the output needs, and any column whose
            // name clashes with the other side (so suffixed output names stay the same).
            let (ls, rs) = (left.schema(), right.schema());
            let side = |own: &SchemaRef, other: &SchemaRef, keys: &[String], suffix: &str| {
                required.map(|r| {
                    own.fields()
                        .iter()
                        .map(|f| f.name())
                        .filter(|n| {
                            keys.contains(n)
                                || r.contains(*n)
                                || r.contains(&format!("{n}{suffix}"))
                                || other.field_with_name(n).is_ok()
                        })
                        .cloned()
                        .collect::<BTreeSet<String>>()
                })
            };
            let lneed = side(&ls, &rs, &spec.left_on, &spec.suffixes.0);
            let rneed = side(&rs, &ls, &spec.right_on, &spec.suffixes.1);
            let left = prune(left, lneed.as_ref())?;
            let right = prune(right, rneed.as_ref())?;
            let schema = if required.is_some() {
                spec.output_schema(&left.schema(), &right.schema())?
            } else {
                schema.clone()
            };
            Arc::new(Node::Join {
                left,
                right,
                spec: spec.clone(),
                strategy: *strategy,
                schema,
            })
        }
        Node::Sort { input, by } => {
            let need = required.map(|r| {
                let mut n = r.clone();
                n.extend(by.iter().map(|k| k.column.clone()));
                n
            });
            let input = prune(input, need.as_ref())?;
            Arc::new(Node::Sort {
                input,
                by: by.clone(),
            })
        }
        Node::Repartition { input, n } => Arc::new(Node::Repartition {
            input: prune(input, required)?,
            n: *n,
        }),
        // A head of a sort needs only the top rows: no full sort.
        Node::Head { input, n } => match &**input {
            Node::Sort { input: sorted, by } => prune(
                &Arc::new(Node::TopK {
                    input: sorted.clone(),
                    by: by.clone(),
                    n: *n,
                }),
                required,
            )?,
            _ => Arc::new(Node::Head {
                input: prune(input, required)?,
                n: *n,
            }),
        },
        Node::Tail { input, n } => Arc::new(Node::Tail {
            input: prune(input, required)?,
            n: *n,
        }),
        Node::Concat { inputs, schema } => {
            // Every input keeps the same columns, so they still line up.
            let inputs = inputs
                .iter()
                .map(|i| prune(i, required))
                .collect::<Result<Vec<_>>>()?;
            let schema = inputs.first().map_or_else(
                || schema.clone(),
                |i| {
                    let kept = i.schema();
                    Arc::new(Schema::new(
                        schema
                            .fields()
                            .iter()
                            .filter(|f| kept.field_with_name(f.name()).is_ok())
                            .cloned()
                            .collect::<Vec<_>>(),
                    ))
                },
            );
            Arc::new(Node::Concat { inputs, schema })
        }
        Node::TopK { input, by, n } => {
            let need = required.map(|r| {
                let mut need = r.clone();
                need.extend(by.iter().map(|k| k.column.clone()));
                need
            });
            Arc::new(Node::TopK {
                input: prune(input, need.as_ref())?,
                by: by.clone(),
                n: *n,
            })
        }
        Node::Window { input, spec, .. } => {
            let need = required.map(|r| {
                let mut need = r.clone();
                need.remove(&spec.output);
                need.extend(spec.keys.iter().cloned());
                need.insert(spec.column.clone());
                need
            });
            let input = prune(input, need.as_ref())?;
            let schema = spec.output_schema(&input.schema())?;
            Arc::new(Node::Window {
                input,
                spec: spec.clone(),
                schema,
            })
        }
    })
}

/// Collects `col op literal` conjuncts of `e`.
fn simple_predicates(e: &Expr, out: &mut Vec<ColumnPredicate>) {
    if let Expr::Binary { op, left, right } = e {
        if *op == BinaryOp::And {
            simple_predicates(left, out);
            simple_predicates(right, out);
            return;
        }
        if op.is_comparison() {
            let flip = |op: BinaryOp| match op {
                BinaryOp::Lt => BinaryOp::Gt,
                BinaryOp::LtEq => BinaryOp::GtEq,
                BinaryOp::Gt => BinaryOp::Lt,
                BinaryOp::GtEq => BinaryOp::LtEq,
                o => o,
            };
            match (&**left, &**right) {
                (Expr::Column(c), Expr::Literal(l)) if *l != Literal::Null => {
                    out.push(ColumnPredicate {
                        column: c.clone(),
                        op: *op,
                        value: l.clone(),
                    })
                }
                (Expr::Literal(l), Expr::Column(c)) if *l != Literal::Null => {
                    out.push(ColumnPredicate {
                        column: c.clone(),
                        op: flip(*op),
                        value: l.clone(),
                    })
                }
                _ => {}
            }
        }
    }
}

/// An empty batch of `schema`.
pub(crate) fn empty_batch(schema: &SchemaRef) -> RecordBatch {
    RecordBatch::new_empty(schema.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{col, lit};

    #[test]
    fn simple_predicates_are_conjuncts_of_column_comparisons() {
        let mut out = Vec::new();
        simple_predicates(
            &(col("a").gt(1) & lit(2.5).gt_eq(col("b")) & (col("c") + 1).lt(3)),
            &mut out,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].column, "a");
        assert_eq!(out[0].op, BinaryOp::Gt);
        assert_eq!(out[1].column, "b");
        assert_eq!(
            out[1].op,
            BinaryOp::LtEq,
            "literal on the left flips the operator"
        );
        let mut none = Vec::new();
        simple_predicates(&(col("a").gt(1) | col("b").lt(2)), &mut none);
        assert!(none.is_empty(), "a disjunction cannot prune");
    }
}

/// A plan's projected memory, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryProjection {
    /// Held at once while the plan runs (streamed stages hold one partition per worker;
    /// sorts, joins and repartitions hold their whole inputs).
    pub held: u64,
    /// The output, all partitions.
    pub output: u64,
    /// The largest output partition.
    pub largest: u64,
}

impl Node {
    /// The inputs of this node.
    fn inputs(&self) -> Vec<&Arc<Node>> {
        match self {
            Node::Partitions { .. } | Node::Scan { .. } => Vec::new(),
            Node::Map { input, .. }
            | Node::MapPartitions { input, .. }
            | Node::Head { input, .. }
            | Node::Tail { input, .. }
            | Node::Aggregate { input, .. }
            | Node::Sort { input, .. }
            | Node::TopK { input, .. }
            | Node::Window { input, .. }
            | Node::Repartition { input, .. } => vec![input],
            Node::Join { left, right, .. } => vec![left, right],
            Node::Concat { inputs, .. } => inputs.iter().collect(),
        }
    }

    /// The largest input of a sort or repartition in the plan (they hold it whole, with
    /// no spilling), if there is one.
    pub fn held_whole(&self) -> Option<u64> {
        let own = match self {
            Node::Sort { input, .. }
            | Node::Repartition { input, .. }
            | Node::Window { input, .. } => Some(input.memory(1).output),
            _ => None,
        };
        self.inputs()
            .into_iter()
            .filter_map(|i| i.held_whole())
            .chain(own)
            .max()
    }

    /// The largest partition any stage of the plan produces (a task holds it whole).
    pub fn largest_partition(&self, workers: u64) -> u64 {
        self.inputs()
            .into_iter()
            .map(|i| i.largest_partition(workers))
            .chain([self.memory(workers).largest])
            .max()
            .unwrap_or(0)
    }

    /// For a scan, the bytes each partition it reads is estimated to take in memory: what
    /// the format reports for all columns, scaled by the columns read (unknown: 0). Empty
    /// for any other node.
    pub(crate) fn scan_partition_bytes(&self) -> Vec<u64> {
        let Node::Scan {
            source,
            projection,
            selected,
            ..
        } = self
        else {
            return Vec::new();
        };
        let all: Vec<usize> = (0..source.partitions()).collect();
        let ids = selected.as_deref().unwrap_or(&all);
        let cols = source.schema().fields().len().max(1) as u64;
        let read = projection.as_ref().map_or(cols, |p| p.len() as u64);
        ids.iter()
            .map(|&i| source.partition_bytes(i).unwrap_or(0).saturating_mul(read) / cols)
            .collect()
    }

    /// What computing this node holds in memory, by a simple and documented model:
    /// partitions already in memory count whole; a scan, a fused program and a user
    /// function per partition stream (one partition per worker at a time; a program's
    /// output scales with its number of columns); an aggregation
    /// adds its partials (estimated as its largest input partition, and so its output);
    /// a sort, a repartition, a window and a join materialise their whole inputs. `workers` is the
    /// scheduler's thread count. Unknown sizes count as zero.
    pub fn memory(&self, workers: u64) -> MemoryProjection {
        let stream = |input: &MemoryProjection| MemoryProjection {
            held: input.held,
            output: input.output,
            largest: input.largest,
        };
        match self {
            Node::Partitions { parts, .. } => {
                let sizes = parts.iter().map(|p| p.nbytes() as u64);
                let output = sizes.clone().fold(0u64, u64::saturating_add);
                MemoryProjection {
                    held: output,
                    output,
                    largest: sizes.max().unwrap_or(0),
                }
            }
            Node::Scan { .. } => {
                let sizes = self.scan_partition_bytes();
                let largest = sizes.iter().copied().max().unwrap_or(0);
                MemoryProjection {
                    held: largest.saturating_mul(workers),
                    output: sizes.iter().copied().fold(0u64, u64::saturating_add),
                    largest,
                }
            }
            Node::Map { input, schema, .. } => {
                // A program keeps at most its input's rows; its width scales the bytes.
                let i = input.memory(workers);
                let (to, from) = (
                    schema.fields().len() as u64,
                    input.schema().fields().len().max(1) as u64,
                );
                let scale = |b: u64| b.saturating_mul(to) / from;
                MemoryProjection {
                    held: i
                        .held
                        .saturating_add(scale(i.largest).saturating_mul(workers)),
                    output: scale(i.output),
                    largest: scale(i.largest),
                }
            }
            Node::MapPartitions { input, .. }
            | Node::Head { input, .. }
            | Node::Tail { input, .. } => stream(&input.memory(workers)),
            Node::TopK { input, .. } => {
                // Streams, keeping one partition's top rows per worker and the winners.
                let i = input.memory(workers);
                MemoryProjection {
                    held: i.held.saturating_add(i.largest),
                    output: i.largest.min(i.output),
                    largest: i.largest.min(i.output),
                }
            }
            Node::Aggregate { input, .. } => {
                let i = input.memory(workers);
                MemoryProjection {
                    held: i.held.saturating_add(i.largest),
                    output: i.largest,
                    largest: i.largest,
                }
            }
            Node::Sort { input, .. }
            | Node::Repartition { input, .. }
            | Node::Window { input, .. } => {
                let i = input.memory(workers);
                MemoryProjection {
                    held: i.held.saturating_add(i.output),
                    output: i.output,
                    largest: i.largest,
                }
            }
            Node::Concat { inputs, .. } => {
                // The inputs stream one after the other.
                let all: Vec<MemoryProjection> = inputs.iter().map(|i| i.memory(workers)).collect();
                MemoryProjection {
                    held: all.iter().map(|m| m.held).max().unwrap_or(0),
                    output: all.iter().map(|m| m.output).fold(0u64, u64::saturating_add),
                    largest: all.iter().map(|m| m.largest).max().unwrap_or(0),
                }
            }
            Node::Join { left, right, .. } => {
                let (l, r) = (left.memory(workers), right.memory(workers));
                let output = l.output.saturating_add(r.output);
                MemoryProjection {
                    held: l.held.saturating_add(r.held).saturating_add(output),
                    output,
                    largest: l.largest.saturating_add(r.largest),
                }
            }
        }
    }
}
