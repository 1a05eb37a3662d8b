//! The logical plan of a lazy dataframe: a [`Node`] tree, typed at construction (every
//! node knows its Arrow schema), so a typo in a column name fails where it is written,
//! not at `compute()`. Chains of filters and projections are fused into one
//! [`FrameProgram`] per partition as they are built ([`Node::map`]).
//!
//! Beside the tree: the file sources a scan reads ([`FileSource`]), the plan in words
//! ([`Node::explain`], `explain.rs`), its projected memory ([`Node::memory`],
//! `memory.rs`), the steps its backend would run through a fallback
//! ([`Node::fallback_notes`], `fallbacks.rs`), and the guess of a join side's size the optimizer and the executor pick
//! sides by (`join_guess.rs`). The rewrites before a plan runs are `crate::optimize`'s.

mod explain;
mod fallbacks;
pub(crate) mod join_guess;
mod memory;

pub use memory::MemoryProjection;

use std::fmt;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};

use crate::backend::{
    program_schema, AggSpec, FrameProgram, FrameStep, JoinSpec, Partition, SortKey, StoredForms,
};
use crate::error::Error;
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
    /// `coded` (indices into [`FileSource::schema`]) may come in the forms the format
    /// stores them in, as far as `forms` (the backend's) allows: a string column as
    /// `Dictionary(Int32, Utf8 | LargeUtf8)` when it is stored dictionary-encoded
    /// ([`StoredForms::dictionary_keys`]), as `Utf8View` views into the decoded pages
    /// otherwise ([`StoredForms::view_keys`]); a `Decimal128(p, s)` of at most 18 digits
    /// as `Decimal64(p, s)` when it is stored in 64 bits
    /// ([`StoredForms::narrow_decimals`]). The engine asks for this for group keys and for
    /// decimals that the backend only sums. The default reads everything in the schema's
    /// types.
    ///
    /// # Errors
    /// As [`FileSource::read`].
    fn read_coded(
        &self,
        partition: usize,
        projection: Option<&[usize]>,
        coded: &[usize],
        forms: StoredForms,
    ) -> Result<RecordBatch> {
        let _ = (coded, forms);
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
    /// Optional: a hint that partition `partition` (its columns at `projection`) will be
    /// read soon, so that a format may ask for its bytes ahead (a scan hints the
    /// partition a worker will take next while it decodes the current one). The default
    /// does nothing; nothing may depend on it.
    fn prefetch(&self, partition: usize, projection: Option<&[usize]>) {
        let _ = (partition, projection);
    }
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
        /// Columns read in the forms the format stores them in ([`FileSource::read_coded`]),
        /// as indices into the source's schema: decided for the groupby above by the
        /// optimizer's stored-forms pass (`optimize/stored_forms.rs`); empty, every
        /// column arrives in the plan's types.
        stored: Vec<usize>,
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

    /// The inputs of this node.
    pub(crate) fn inputs(&self) -> Vec<&Arc<Node>> {
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

    /// This node over `inputs` in place of its own (as many, in the order of
    /// [`inputs`](Node::inputs)); what the node computes is unchanged, so its schema is
    /// kept. How the optimizer rebuilds a plan whose inputs a rule rewrote.
    ///
    /// # Errors
    /// `inputs` of another length than the node's own.
    pub(crate) fn with_inputs(&self, inputs: Vec<Arc<Node>>) -> Result<Arc<Node>> {
        let want = self.inputs().len();
        if inputs.len() != want {
            return Err(Error::Internal(format!(
                "a plan node with {want} inputs was given {}",
                inputs.len()
            )));
        }
        let mut it = inputs.into_iter();
        let mut next = || it.next().expect("length checked above");
        Ok(Arc::new(match self {
            Node::Partitions { .. } | Node::Scan { .. } => self.clone(),
            Node::Map {
                program, schema, ..
            } => Node::Map {
                input: next(),
                program: program.clone(),
                schema: schema.clone(),
            },
            Node::MapPartitions { func, schema, .. } => Node::MapPartitions {
                input: next(),
                func: func.clone(),
                schema: schema.clone(),
            },
            Node::Aggregate {
                keys,
                aggs,
                strategy,
                schema,
                ..
            } => Node::Aggregate {
                input: next(),
                keys: keys.clone(),
                aggs: aggs.clone(),
                strategy: *strategy,
                schema: schema.clone(),
            },
            Node::Join {
                spec,
                strategy,
                schema,
                ..
            } => Node::Join {
                left: next(),
                right: next(),
                spec: spec.clone(),
                strategy: *strategy,
                schema: schema.clone(),
            },
            Node::Sort { by, .. } => Node::Sort {
                input: next(),
                by: by.clone(),
            },
            Node::Repartition { n, .. } => Node::Repartition {
                input: next(),
                n: *n,
            },
            Node::Head { n, .. } => Node::Head {
                input: next(),
                n: *n,
            },
            Node::Tail { n, .. } => Node::Tail {
                input: next(),
                n: *n,
            },
            Node::Concat { schema, .. } => Node::Concat {
                inputs: std::iter::from_fn(|| it.next()).collect(),
                schema: schema.clone(),
            },
            Node::TopK { by, n, .. } => Node::TopK {
                input: next(),
                by: by.clone(),
                n: *n,
            },
            Node::Window { spec, schema, .. } => Node::Window {
                input: next(),
                spec: spec.clone(),
                schema: schema.clone(),
            },
        }))
    }
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

/// An empty batch of `schema`.
pub(crate) fn empty_batch(schema: &SchemaRef) -> RecordBatch {
    RecordBatch::new_empty(schema.clone())
}
