//! The user-facing lazy [`DataFrame`].
//!
//! Every method builds a plan node and returns at once; `compute`, `len`, `head`,
//! `describe`, `to_csv` and `to_parquet` run it. The frame remembers its backend, chosen
//! by an explicit name, or else the `dataframe.backend` config key (`tessera.toml`,
//! `TESSERA_DATAFRAME_BACKEND`, or a scoped [`crate::config::set`]) when it is created.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{Array as _, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::api::display::{format_batches, value_at, Value};
use crate::backend::{
    AggFunc, AggSpec, FrameBackendRef, FrameStep, JoinAlgorithm, JoinSpec, JoinType, Partition,
    Quantile, SortKey, StoredForms,
};
use crate::error::{Error, Result};
use crate::exec::pipeline;
use crate::exec::spill::{Spill, SpillBudget};
use crate::expr::{col, is_string, when, Expr, Literal};
use crate::optimize::optimize;
use crate::plan::{GroupStrategy, JoinStrategy, Node, PartitionFn};
use crate::registry::resolve_dataframe_backend;
use crate::window::{WindowFunc, WindowSpec};

/// A lazy, partitioned dataframe.
#[derive(Clone)]
pub struct DataFrame {
    node: Arc<Node>,
    backend: FrameBackendRef,
}

impl fmt::Debug for DataFrame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DataFrame<{}>[{}]",
            self.backend.name(),
            self.columns().join(", ")
        )
    }
}

/// The result of [`DataFrame::compute`]: Arrow batches (one per partition) that print as
/// a table.
#[derive(Debug, Clone)]
pub struct Computed {
    /// The schema.
    pub schema: SchemaRef,
    /// One batch per output partition, in order.
    pub batches: Vec<RecordBatch>,
}

impl Computed {
    /// Total rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// All rows in one batch.
    pub fn concat(&self) -> Result<RecordBatch> {
        arrow_select::concat::concat_batches(&self.schema, &self.batches)
            .map_err(|e| Error::arrow("concat", e))
    }

    /// The value at `row` of `column` (across batches).
    pub fn value(&self, column: &str, mut row: usize) -> Result<Value> {
        let idx = self
            .schema
            .index_of(column)
            .map_err(|_| Error::invalid("value", format!("no column '{column}'")))?;
        for b in &self.batches {
            if row < b.num_rows() {
                return Ok(value_at(b.column(idx).as_ref(), row));
            }
            row -= b.num_rows();
        }
        Err(Error::invalid(
            "value",
            format!("row {row} is past the end ({} rows)", self.num_rows()),
        ))
    }
}

impl fmt::Display for Computed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_batches(&self.schema, &self.batches, 40))
    }
}

/// Splits `batch` into `n` partitions of about equal rows.
fn split_batch(batch: &RecordBatch, n: usize) -> Vec<RecordBatch> {
    let rows = batch.num_rows();
    let n = n.max(1).min(rows.max(1));
    (0..n)
        .map(|j| {
            let (lo, hi) = (j * rows / n, (j + 1) * rows / n);
            batch.slice(lo, hi - lo)
        })
        .collect()
}

impl DataFrame {
    /// Wraps a plan node (the IO readers use it).
    pub(crate) fn from_node(node: Node, backend: Option<&str>) -> Result<DataFrame> {
        Ok(DataFrame {
            node: Arc::new(node),
            backend: resolve_dataframe_backend(backend)?,
        })
    }

    fn derive(&self, node: Node) -> DataFrame {
        DataFrame {
            node: Arc::new(node),
            backend: self.backend.clone(),
        }
    }

    /// A frame from Arrow batches, one partition each, on `backend` (the configured
    /// `dataframe.backend` when `None`). All batches must share one schema.
    pub fn from_record_batches(
        batches: Vec<RecordBatch>,
        backend: Option<&str>,
    ) -> Result<DataFrame> {
        let backend = resolve_dataframe_backend(backend)?;
        let Some(first) = batches.first() else {
            return Err(Error::invalid(
                "from_record_batches",
                "no batches; give at least one (it may be empty) so the schema is known",
            ));
        };
        let schema = first.schema();
        for (i, b) in batches.iter().enumerate() {
            if b.schema().fields() != schema.fields() {
                return Err(Error::invalid(
                    "from_record_batches",
                    format!(
                        "batch {i} has schema {:?}, batch 0 has {:?}",
                        b.schema(),
                        schema
                    ),
                ));
            }
        }
        let parts = batches
            .into_iter()
            .map(|b| backend.import_batch(b))
            .collect::<Result<Vec<_>>>()?;
        Ok(DataFrame {
            node: Arc::new(Node::Partitions { parts, schema }),
            backend,
        })
    }

    /// A frame from one batch split into `npartitions` of about equal rows.
    pub fn from_record_batch(
        batch: RecordBatch,
        npartitions: usize,
        backend: Option<&str>,
    ) -> Result<DataFrame> {
        DataFrame::from_record_batches(split_batch(&batch, npartitions), backend)
    }

    /// A frame from named Arrow columns of equal length, split into `npartitions` (like
    /// `dd.from_dict`).
    pub fn from_columns(columns: Vec<(&str, ArrayRef)>, npartitions: usize) -> Result<DataFrame> {
        let batch = batch_from_columns(columns)?;
        DataFrame::from_record_batch(batch, npartitions, None)
    }

    /// A frame whose columns are 1-d tessera arrays (computed now); partitions follow the
    /// first array's chunks.
    pub fn from_arrays(columns: Vec<(&str, &tessera_array::Array)>) -> Result<DataFrame> {
        let Some((_, first)) = columns.first() else {
            return Err(Error::invalid("from_arrays", "no columns given"));
        };
        let mut cols = Vec::with_capacity(columns.len());
        for (name, a) in &columns {
            if a.shape().len() != 1 || a.shape() != first.shape() {
                return Err(Error::shape(
                    "from_arrays",
                    format!(
                        "column '{name}' has shape {:?}; every column must be 1-d of shape {:?}",
                        a.shape(),
                        first.shape()
                    ),
                ));
            }
            let data = tessera_core::host::arrow::host_array_data(a.compute()?);
            cols.push((*name, arrow_array::make_array(data)));
        }
        let batch = batch_from_columns(cols)?;
        let mut parts = Vec::new();
        let mut offset = 0;
        for &len in first.chunks().axis(0) {
            parts.push(batch.slice(offset, len));
            offset += len;
        }
        if parts.is_empty() {
            parts.push(batch);
        }
        DataFrame::from_record_batches(parts, None)
    }

    /// The backend this frame computes on.
    pub fn backend(&self) -> &str {
        self.backend.name()
    }

    /// The backend itself, for the crate's writers.
    pub(crate) fn backend_ref(&self) -> &FrameBackendRef {
        &self.backend
    }

    /// Moves the frame to another backend (by Arrow batches, partition by partition),
    /// computing it.
    pub fn to_backend(&self, name: &str) -> Result<DataFrame> {
        let target = resolve_dataframe_backend(Some(name))?;
        let parts = self.partitions()?;
        let moved = parts
            .iter()
            .map(|p| target.import_batch(self.backend.export_batch(p)?))
            .collect::<Result<Vec<_>>>()?;
        Ok(DataFrame {
            node: Arc::new(Node::Partitions {
                parts: moved,
                schema: self.schema(),
            }),
            backend: target,
        })
    }

    /// The schema.
    pub fn schema(&self) -> SchemaRef {
        self.node.schema()
    }

    /// Column names.
    pub fn columns(&self) -> Vec<String> {
        self.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// Keeps the rows where `predicate` (a Boolean expression) is true.
    pub fn filter(&self, predicate: Expr) -> Result<DataFrame> {
        Ok(self.derive(Node::map(self.node.clone(), FrameStep::Filter(predicate))?))
    }

    /// Keeps these columns, in this order.
    pub fn select(&self, columns: &[&str]) -> Result<DataFrame> {
        self.select_exprs(columns.iter().map(|c| (c.to_string(), col(*c))).collect())
    }

    /// Replaces the columns by named expressions.
    pub fn select_exprs(&self, exprs: Vec<(String, Expr)>) -> Result<DataFrame> {
        Ok(self.derive(Node::map(self.node.clone(), FrameStep::Project(exprs))?))
    }

    /// Adds (or replaces) a column.
    pub fn with_column(&self, name: &str, expr: Expr) -> Result<DataFrame> {
        let mut list: Vec<(String, Expr)> = Vec::new();
        let mut replaced = false;
        for c in self.columns() {
            if c == name {
                list.push((c, expr.clone()));
                replaced = true;
            } else {
                list.push((c.clone(), col(c)));
            }
        }
        if !replaced {
            list.push((name.to_string(), expr));
        }
        self.select_exprs(list)
    }

    /// Renames columns (`(old, new)` pairs); an unknown old name is an error.
    pub fn rename(&self, pairs: &[(&str, &str)]) -> Result<DataFrame> {
        let cols = self.columns();
        for (old, _) in pairs {
            if !cols.iter().any(|c| c == old) {
                return Err(Error::invalid(
                    "rename",
                    format!("no column '{old}'; columns: {}", cols.join(", ")),
                ));
            }
        }
        self.select_exprs(
            cols.into_iter()
                .map(|c| {
                    let new = pairs
                        .iter()
                        .find(|(o, _)| *o == c)
                        .map_or(c.clone(), |(_, n)| n.to_string());
                    (new, col(c))
                })
                .collect(),
        )
    }

    /// Drops columns; an unknown name is an error.
    pub fn drop(&self, columns: &[&str]) -> Result<DataFrame> {
        self.columns_named("drop", columns)?;
        let cols = self.columns();
        self.select_exprs(
            cols.into_iter()
                .filter(|c| !columns.contains(&c.as_str()))
                .map(|c| (c.clone(), col(c)))
                .collect(),
        )
    }

    /// The rows of `frames` one after the other, lazily (pandas' and Polars' `concat`): the
    /// frames' partitions in order, nothing copied until a plan runs. Columns are matched
    /// by name, in the first frame's order, and their types must agree logically: the
    /// same type; strings of any Arrow string type (a CSV frame's `Utf8`, a Parquet
    /// frame's `Utf8View` or dictionary), which meet as `Utf8`; integers and floats,
    /// which meet as `Float64` (integers of different widths as `Int64`).
    ///
    /// # Errors
    /// No frames; frames on different backends; a column missing from a frame or extra
    /// in one (named); a column whose types do not meet (named, with the types).
    pub fn concat(frames: &[DataFrame]) -> Result<DataFrame> {
        let Some(first) = frames.first() else {
            return Err(Error::invalid("concat", "no frames to concatenate"));
        };
        let names = first.columns();
        let mut types: Vec<DataType> = Vec::with_capacity(names.len());
        for (k, f) in frames.iter().enumerate() {
            first.same_backend("concat", &format!("frame {k}"), f)?;
            let cols = f.columns();
            let missing: Vec<&String> = names.iter().filter(|n| !cols.contains(n)).collect();
            let extra: Vec<&String> = cols.iter().filter(|c| !names.contains(c)).collect();
            if !missing.is_empty() || !extra.is_empty() {
                return Err(Error::invalid(
                    "concat",
                    format!(
                        "frame {k} lacks {missing:?} and has {extra:?} beyond frame 0's columns {names:?}; select the same columns in each"
                    ),
                ));
            }
            let schema = f.schema();
            for (i, n) in names.iter().enumerate() {
                let t = schema
                    .field_with_name(n)
                    .map_err(|e| Error::arrow("concat", e))?
                    .data_type()
                    .clone();
                if k == 0 {
                    types.push(t);
                    continue;
                }
                let prev = &types[i];
                let met = if *prev == t {
                    t
                } else if is_string(prev) && is_string(&t) {
                    DataType::Utf8
                } else if prev.is_numeric() && t.is_numeric() {
                    if prev.is_floating() || t.is_floating() {
                        DataType::Float64
                    } else {
                        DataType::Int64
                    }
                } else {
                    return Err(Error::invalid(
                        "concat",
                        format!(
                            "column '{n}' is {prev} before frame {k} and {t} in it; cast one side"
                        ),
                    ));
                };
                types[i] = met;
            }
        }
        let mut inputs = Vec::with_capacity(frames.len());
        for f in frames {
            let schema = f.schema();
            let exprs = names
                .iter()
                .zip(&types)
                .map(|(n, t)| {
                    let same = schema.field_with_name(n).is_ok_and(|x| x.data_type() == t);
                    let e = if same {
                        col(n.as_str())
                    } else {
                        col(n.as_str()).cast(t.clone())
                    };
                    (n.clone(), e)
                })
                .collect();
            inputs.push(f.select_exprs(exprs)?.node.clone());
        }
        let schema = Arc::new(Schema::new(
            names
                .iter()
                .zip(types)
                .map(|(n, t)| Field::new(n, t, true))
                .collect::<Vec<_>>(),
        ));
        Ok(first.derive(Node::Concat { inputs, schema }))
    }

    /// Refuses `other` (named `what` in the message) on another backend than this frame's.
    pub(crate) fn same_backend(&self, op: &str, what: &str, other: &DataFrame) -> Result<()> {
        if other.backend.name() == self.backend.name() {
            return Ok(());
        }
        Err(Error::invalid(
            op,
            format!(
                "{what} is on backend '{}' and this frame on '{}'; move one with `to_backend`",
                other.backend.name(),
                self.backend.name()
            ),
        ))
    }

    /// The names in `subset` checked against the columns (all columns when empty).
    fn columns_named(&self, op: &str, subset: &[&str]) -> Result<Vec<String>> {
        let cols = self.columns();
        if subset.is_empty() {
            return Ok(cols);
        }
        subset
            .iter()
            .map(|&c| {
                if cols.iter().any(|k| k == c) {
                    Ok(c.to_string())
                } else {
                    Err(Error::invalid(
                        op,
                        format!("no column '{c}'; columns: {}", cols.join(", ")),
                    ))
                }
            })
            .collect()
    }

    /// Whether `c` holds a value: not null, and for a float column not NaN (pandas counts
    /// NaN as missing).
    fn present(&self, c: &str) -> Result<Expr> {
        let t = self
            .schema()
            .field_with_name(c)
            .map(|f| f.data_type().clone());
        let not_null = col(c).is_not_null();
        Ok(match t {
            Ok(t) if t.is_floating() => not_null.and(!col(c).is_nan()),
            _ => not_null,
        })
    }

    /// The rows with a value in every column of `subset` (`how = Any`, pandas' default) or
    /// in at least one (`how = All` drops the rows missing all of them); `subset` empty
    /// means every column. As in pandas, NaN in a float column is missing, like null.
    ///
    /// # Errors
    /// A name in `subset` that is not a column.
    pub fn dropna(&self, subset: &[&str], how: DropHow) -> Result<DataFrame> {
        let cols = self.columns_named("dropna", subset)?;
        let mut keep: Option<Expr> = None;
        for c in &cols {
            let p = self.present(c)?;
            keep = Some(match (keep, how) {
                (None, _) => p,
                (Some(k), DropHow::Any) => k.and(p),
                (Some(k), DropHow::All) => k.or(p),
            });
        }
        match keep {
            Some(k) => self.filter(k),
            None => Ok(self.clone()),
        }
    }

    /// Each named column with its missing values (null, and NaN in a float column)
    /// replaced by the given value, as pandas' `fillna({"a": 0, "b": "x"})`. The value
    /// takes the column's type (an integer literal in a float column is that float).
    ///
    /// # Errors
    /// An unknown column; a value of a type the column cannot take (a string for a
    /// number), reported when the frame's schema is checked.
    pub fn fillna(&self, values: &[(&str, Literal)]) -> Result<DataFrame> {
        let names: Vec<&str> = values.iter().map(|(c, _)| *c).collect();
        self.columns_named("fillna", &names)?;
        let mut out = self.clone();
        for (c, v) in values {
            let filled = when(self.present(c)?)
                .then(col(*c))
                .otherwise(Expr::Literal(v.clone()));
            out = out.with_column(c, filled)?;
        }
        Ok(out)
    }

    /// Groups by key columns; aggregate with [`GroupBy::agg`].
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::{Float64Array, Int64Array};
    /// use tessera_frame::{AggFunc, DataFrame, Value};
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![
    ///         ("k", Arc::new(Int64Array::from(vec![1, 2, 1, 2, 1]))),
    ///         ("x", Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, 4.0, 5.0]))),
    ///     ],
    ///     2, // partitions
    /// )?;
    /// let g = df.groupby(&["k"])?.agg(&[("x", AggFunc::Sum)])?.sort_values(&["k"], &[true])?;
    /// let out = g.compute()?;
    /// assert_eq!(out.value("x", 0)?, Value::Float(9.0)); // k = 1: 1 + 3 + 5
    /// assert_eq!(out.value("x", 1)?, Value::Float(6.0)); // k = 2: 2 + 4
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A key that is not a column of the frame, or no keys.
    pub fn groupby(&self, keys: &[&str]) -> Result<GroupBy> {
        let schema = self.schema();
        for k in keys {
            if schema.field_with_name(k).is_err() {
                return Err(Error::invalid(
                    "groupby",
                    format!(
                        "no key column '{k}'; columns: {}",
                        self.columns().join(", ")
                    ),
                ));
            }
        }
        if keys.is_empty() {
            return Err(Error::invalid(
                "groupby",
                "no keys; use `agg` on the frame for a whole-frame aggregation",
            ));
        }
        Ok(GroupBy {
            frame: self.clone(),
            keys: keys.iter().map(|k| k.to_string()).collect(),
            strategy: None,
            dropna: true,
        })
    }

    /// Whole-frame aggregation: one row, one column per `(column, func)`, named
    /// `column` (or `column_func` when a column is aggregated more than once).
    pub fn agg(&self, aggs: &[(&str, AggFunc)]) -> Result<DataFrame> {
        self.aggregate(Vec::new(), named_aggs(aggs), None)
    }

    pub(crate) fn aggregate(
        &self,
        keys: Vec<String>,
        aggs: Vec<AggSpec>,
        strategy: Option<GroupStrategy>,
    ) -> Result<DataFrame> {
        let input = self.schema();
        let mut fields: Vec<Field> = Vec::new();
        for k in &keys {
            let f = input
                .field_with_name(k)
                .map_err(|_| Error::invalid("groupby", format!("no key column '{k}'")))?;
            fields.push(Field::new(k, f.data_type().clone(), true));
        }
        if aggs.is_empty() {
            return Err(Error::invalid("agg", "no aggregations given"));
        }
        let mut names = BTreeSet::new();
        for a in &aggs {
            a.check_arity()?;
            let mut read = Vec::new();
            for c in a.inputs() {
                read.push(input.field_with_name(c).map_err(|_| {
                    Error::invalid(
                        "agg",
                        format!("no column '{c}'; columns: {}", self.columns().join(", ")),
                    )
                })?);
            }
            for (c, f) in a.inputs().zip(&read) {
                if !a.func.accepts(f.data_type()) {
                    return Err(Error::invalid(
                        "agg",
                        format!(
                            "{} does not apply to column '{c}' of type {}",
                            a.func.name(),
                            f.data_type()
                        ),
                    ));
                }
            }
            let f = read[0];
            if self.backend.capabilities().lacks(a.func) {
                return Err(Error::invalid(
                    "agg",
                    format!(
                        "dataframe backend '{}' does not support {} (declared in its capabilities)",
                        self.backend.name(),
                        a.func.name()
                    ),
                ));
            }
            if keys.contains(&a.output) || !names.insert(a.output.clone()) {
                return Err(Error::invalid(
                    "agg",
                    format!(
                        "output column '{}' appears twice; name it differently",
                        a.output
                    ),
                ));
            }
            fields.push(Field::new(
                &a.output,
                a.func.output_type(f.data_type()),
                true,
            ));
        }
        Ok(self.derive(Node::Aggregate {
            input: self.node.clone(),
            keys,
            aggs,
            strategy,
            schema: Arc::new(Schema::new(fields)),
        }))
    }

    fn numeric_agg(&self, func: AggFunc) -> Result<DataFrame> {
        let cols: Vec<String> = self
            .schema()
            .fields()
            .iter()
            .filter(|f| func.accepts(f.data_type()))
            .map(|f| f.name().clone())
            .collect();
        let aggs: Vec<(&str, AggFunc)> = cols.iter().map(|c| (c.as_str(), func)).collect();
        self.agg(&aggs)
    }

    /// Sum of every numeric column (one row).
    pub fn sum(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Sum)
    }
    /// Mean of every numeric column.
    pub fn mean(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Mean)
    }
    /// Minimum of every orderable column.
    pub fn min(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Min)
    }
    /// Maximum of every orderable column.
    pub fn max(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Max)
    }
    /// Non-null count of every column.
    pub fn count(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Count)
    }
    /// Sample standard deviation of every numeric column.
    pub fn std(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Std)
    }
    /// Sample variance of every numeric column.
    pub fn var(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Var)
    }
    /// Sample skewness of every numeric column, as pandas' `skew()`.
    pub fn skew(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Skew)
    }
    /// Sample excess kurtosis of every numeric column, as pandas' `kurt()`.
    pub fn kurt(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Kurt)
    }
    /// Distinct non-null values of every column.
    pub fn nunique(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::NUnique)
    }
    /// Median of every numeric column (exact; NaN and nulls skipped, as pandas does).
    pub fn median(&self) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Median)
    }

    /// The `q` quantile of every numeric column (one row): exact, interpolated linearly
    /// between the nearest values as pandas' `quantile(q)`; NaN and nulls skipped.
    ///
    /// # Errors
    /// `q` outside `[0, 1]`.
    pub fn quantile(&self, q: f64) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::Quantile(Quantile::new(q)?))
    }

    /// The `q` quantile of every numeric column estimated from a t-digest
    /// ([`AggFunc::ApproxQuantile`]): constant memory per column, rank error typically
    /// under 0.5%.
    ///
    /// # Errors
    /// `q` outside `[0, 1]`.
    pub fn approx_quantile(&self, q: f64) -> Result<DataFrame> {
        self.numeric_agg(AggFunc::ApproxQuantile(Quantile::new(q)?))
    }

    /// Whole-frame aggregations of expressions (see [`GroupBy::agg_exprs`]).
    ///
    /// # Errors
    /// As [`GroupBy::agg_exprs`].
    pub fn agg_exprs(&self, aggs: &[(Expr, AggFunc, &str)]) -> Result<DataFrame> {
        GroupBy {
            frame: self.clone(),
            keys: Vec::new(),
            strategy: None,
            dropna: true,
        }
        .agg_exprs(aggs)
    }

    /// One reduction of one column, computed: `df.reduce("fare", AggFunc::Mean)`.
    pub fn reduce(&self, column: &str, func: AggFunc) -> Result<Value> {
        self.agg(&[(column, func)])?.compute()?.value(column, 0)
    }

    /// A window function of `column` over the frame's rows in order (`shift`, `diff`,
    /// `cumsum`, `ffill`, `rolling(..)`; see [`WindowFunc`]), into the column `output`,
    /// which replaces a column of that name or is added last: pandas'
    /// `df[output] = df[column].cumsum()`. Partitions are computed in parallel, each
    /// with the few rows of its neighbours it depends on.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::Int64Array;
    /// use tessera_frame::{DataFrame, Value, WindowFunc};
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![("v", Arc::new(Int64Array::from(vec![1, 2, 3, 4, 5])))],
    ///     3,
    /// )?;
    /// let out = df.window("v", WindowFunc::CumSum, "total")?.compute()?;
    /// assert_eq!(out.value("total", 4)?, Value::Int(15));
    /// let out = df.window("v", WindowFunc::Shift(2), "before")?.compute()?;
    /// assert_eq!(out.value("before", 1)?, Value::Null);
    /// assert_eq!(out.value("before", 2)?, Value::Int(1));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A missing column, a function that does not apply to its type (see
    /// [`WindowFunc::output_type`]), or a backend without window functions.
    pub fn window(&self, column: &str, func: WindowFunc, output: &str) -> Result<DataFrame> {
        self.window_over(Vec::new(), column, func, output)
    }

    /// Nulls of `columns` replaced by the last non-null value above them (pandas'
    /// `df.ffill()` on those columns).
    ///
    /// # Errors
    /// A missing column, or a backend without window functions.
    pub fn ffill(&self, columns: &[&str]) -> Result<DataFrame> {
        columns.iter().try_fold(self.clone(), |df, c| {
            df.window(c, WindowFunc::FillForward, c)
        })
    }

    /// Nulls of `columns` replaced by the first non-null value below them (pandas'
    /// `df.bfill()` on those columns).
    ///
    /// # Errors
    /// A missing column, or a backend without window functions.
    pub fn bfill(&self, columns: &[&str]) -> Result<DataFrame> {
        columns.iter().try_fold(self.clone(), |df, c| {
            df.window(c, WindowFunc::FillBackward, c)
        })
    }

    pub(crate) fn window_over(
        &self,
        keys: Vec<String>,
        column: &str,
        func: WindowFunc,
        output: &str,
    ) -> Result<DataFrame> {
        if !self.backend.capabilities().windows {
            return Err(Error::FrameUnsupported {
                backend: self.backend.name().to_string(),
                op: format!("window {}", func.name()),
            });
        }
        let spec = WindowSpec {
            keys,
            func,
            column: column.to_string(),
            output: output.to_string(),
        };
        let schema = spec.output_schema(&self.schema())?;
        Ok(self.derive(Node::Window {
            input: self.node.clone(),
            spec,
            schema,
        }))
    }

    /// pandas-style merge on key columns of the same name (strategy chosen at run time:
    /// broadcast, sorted merge, or hash shuffle).
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::{Int64Array, StringArray};
    /// use tessera_frame::{DataFrame, JoinType};
    /// # fn main() -> tessera_core::Result<()> {
    /// let trips = DataFrame::from_columns(
    ///     vec![("zone", Arc::new(Int64Array::from(vec![1, 2, 2, 3])))],
    ///     2,
    /// )?;
    /// let zones = DataFrame::from_columns(
    ///     vec![
    ///         ("zone", Arc::new(Int64Array::from(vec![1, 2]))),
    ///         ("name", Arc::new(StringArray::from(vec!["a", "b"]))),
    ///     ],
    ///     1,
    /// )?;
    /// assert_eq!(trips.merge(&zones, &["zone"], JoinType::Inner)?.len()?, 3);
    /// assert_eq!(trips.merge(&zones, &["zone"], JoinType::Left)?.len()?, 4);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A key missing from either side, or key columns whose types cannot be compared.
    pub fn merge(&self, other: &DataFrame, on: &[&str], how: JoinType) -> Result<DataFrame> {
        self.merge_on(other, on, on, how, JoinStrategy::Auto)
    }

    /// Merge on differently named keys (both kept in the output), with a strategy
    /// (`Auto` decides from sizes and sortedness at run time).
    pub fn merge_on(
        &self,
        other: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        how: JoinType,
        strategy: JoinStrategy,
    ) -> Result<DataFrame> {
        self.same_backend("merge", "the right frame", other)?;
        if matches!(how, JoinType::Semi | JoinType::Anti) {
            return self.filter_join(other, left_on, right_on, how == JoinType::Semi, strategy);
        }
        let (left, right) = self.string_keys_as_text(other, left_on, right_on)?;
        left.join_node(&right, left_on, right_on, how, ("_x", "_y"), strategy)
    }

    /// The join of this frame and `other` as a plan node, keys as given (no casts).
    pub(crate) fn join_node(
        &self,
        other: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        how: JoinType,
        suffixes: (&str, &str),
        strategy: JoinStrategy,
    ) -> Result<DataFrame> {
        let spec = JoinSpec {
            left_on: left_on.iter().map(|s| s.to_string()).collect(),
            right_on: right_on.iter().map(|s| s.to_string()).collect(),
            how,
            suffixes: (suffixes.0.to_string(), suffixes.1.to_string()),
            algorithm: JoinAlgorithm::Hash,
        };
        let schema = spec.output_schema(&self.schema(), &other.schema())?;
        Ok(self.derive(Node::Join {
            left: self.node.clone(),
            right: other.node.clone(),
            spec,
            strategy,
            schema,
        }))
    }

    /// This frame and `other` with every pair of join keys that are strings of different
    /// Arrow types (a CSV frame's `Utf8` against a Parquet frame's `Utf8View` or
    /// dictionary) cast to `Utf8` on both sides, so that they join as the text they are.
    /// Other keys are left as they are (mismatches are reported by the join).
    pub(crate) fn string_keys_as_text(
        &self,
        other: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
    ) -> Result<(DataFrame, DataFrame)> {
        let (ls, rs) = (self.schema(), other.schema());
        let (mut left, mut right) = (self.clone(), other.clone());
        for (l, r) in left_on.iter().zip(right_on) {
            let (Ok(lf), Ok(rf)) = (ls.field_with_name(l), rs.field_with_name(r)) else {
                continue;
            };
            let (lt, rt) = (lf.data_type(), rf.data_type());
            if lt != rt && is_string(lt) && is_string(rt) {
                if *lt != DataType::Utf8 {
                    left = left.with_column(l, col(*l).cast(DataType::Utf8))?;
                }
                if *rt != DataType::Utf8 {
                    right = right.with_column(r, col(*r).cast(DataType::Utf8))?;
                }
            }
        }
        Ok((left, right))
    }

    /// The rows of this frame whose keys occur in `other` (a left semi join: each row at
    /// most once, only this frame's columns; null keys never match).
    ///
    /// # Errors
    /// As [`DataFrame::merge_on`].
    pub fn semi_join(
        &self,
        other: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
    ) -> Result<DataFrame> {
        self.filter_join(other, left_on, right_on, true, JoinStrategy::Auto)
    }

    /// The rows of this frame whose keys do not occur in `other` (a left anti join; rows
    /// with a null key are kept: they match nothing).
    ///
    /// # Errors
    /// As [`DataFrame::merge_on`].
    pub fn anti_join(
        &self,
        other: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
    ) -> Result<DataFrame> {
        self.filter_join(other, left_on, right_on, false, JoinStrategy::Auto)
    }

    /// Semi (`keep`) or anti join. A backend that implements them
    /// ([`FrameCapabilities::filter_joins`](crate::backend::FrameCapabilities)) joins with
    /// `other`'s key columns directly. For another, `other`'s distinct keys, renamed apart
    /// from this frame's columns and marked, are joined to this frame (inner for semi, left
    /// for anti, keeping the unmarked rows), then this frame's columns are kept.
    fn filter_join(
        &self,
        other: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        keep: bool,
        strategy: JoinStrategy,
    ) -> Result<DataFrame> {
        let op = if keep { "semi_join" } else { "anti_join" };
        if left_on.len() != right_on.len() || left_on.is_empty() {
            return Err(Error::invalid(
                op,
                format!(
                    "left_on has {} keys and right_on {}; give the same positive number",
                    left_on.len(),
                    right_on.len()
                ),
            ));
        }
        self.same_backend(op, "the other frame", other)?;
        if self.backend.capabilities().filter_joins {
            let (left, right) = self.string_keys_as_text(other, left_on, right_on)?;
            let how = if keep { JoinType::Semi } else { JoinType::Anti };
            return left.join_node(
                &right.select(right_on)?,
                left_on,
                right_on,
                how,
                ("_x", "_y"),
                strategy,
            );
        }
        let mine = self.columns();
        let fresh = |base: &str| {
            let mut name = format!("__tessera_{base}");
            while mine.contains(&name) {
                name.push('_');
            }
            name
        };
        let keys: Vec<String> = (0..right_on.len())
            .map(|i| fresh(&format!("key{i}")))
            .collect();
        let marker = fresh("matched");
        let renames: Vec<(&str, &str)> = right_on
            .iter()
            .copied()
            .zip(keys.iter().map(String::as_str))
            .collect();
        let distinct = other
            .select(right_on)?
            .rename(&renames)?
            .groupby(&keys.iter().map(String::as_str).collect::<Vec<_>>())?
            // One row per distinct key, its (non-null) count the mark.
            .agg_named(&[(keys[0].as_str(), AggFunc::Count, marker.as_str())])?;
        let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let how = if keep {
            JoinType::Inner
        } else {
            JoinType::Left
        };
        let joined = self.merge_on(&distinct, left_on, &key_refs, how, strategy)?;
        let kept = if keep {
            joined
        } else {
            joined.filter(col(&marker).is_null())?
        };
        kept.select(&mine.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Globally sorts by columns (stable, nulls last); `ascending` per column or one
    /// value for all.
    pub fn sort_values(&self, by: &[&str], ascending: &[bool]) -> Result<DataFrame> {
        if by.is_empty() {
            return Err(Error::invalid("sort_values", "no sort columns given"));
        }
        if !(ascending.len() == by.len() || ascending.len() == 1) {
            return Err(Error::invalid(
                "sort_values",
                format!(
                    "{} columns but {} ascending flags; give one per column or one for all",
                    by.len(),
                    ascending.len()
                ),
            ));
        }
        self.check_columns("sort_values", by)?;
        let keys = by
            .iter()
            .enumerate()
            .map(|(i, c)| SortKey {
                column: c.to_string(),
                descending: !ascending[if ascending.len() == 1 { 0 } else { i }],
            })
            .collect();
        Ok(self.derive(Node::Sort {
            input: self.node.clone(),
            by: keys,
        }))
    }

    /// `Ok` when every one of `columns` is a column of this frame, else an error of `op`
    /// naming the missing one and the columns there are.
    fn check_columns(&self, op: &str, columns: &[&str]) -> Result<()> {
        let schema = self.schema();
        match columns.iter().find(|c| schema.field_with_name(c).is_err()) {
            Some(c) => Err(Error::invalid(
                op,
                format!("no column '{c}'; columns: {}", self.columns().join(", ")),
            )),
            None => Ok(()),
        }
    }

    /// Sorted partitioning on one column, as `dd.set_index` does: partitions hold
    /// consecutive key ranges (the divisions), so later merges on it are sorted merges.
    pub fn set_index(&self, column: &str) -> Result<DataFrame> {
        self.sort_values(&[column], &[true])
    }

    /// The first key of every partition and the last key of the last one, when the
    /// frame is sorted on one column (after `set_index`/`sort_values`); computes the frame.
    pub fn divisions(&self) -> Result<Option<Vec<Value>>> {
        let Some(by) = self.node.sorted_by() else {
            return Ok(None);
        };
        let key = &by[0].column;
        let idx = self
            .schema()
            .index_of(key)
            .map_err(|e| Error::arrow_in("divisions", key.clone(), e))?;
        let parts = self.partitions()?;
        let mut out = Vec::new();
        for p in parts.iter().filter(|p| p.num_rows() > 0) {
            let b = self.backend.export_batch(p)?;
            out.push(value_at(b.column(idx).as_ref(), 0));
        }
        if let Some(p) = parts.iter().rev().find(|p| p.num_rows() > 0) {
            let b = self.backend.export_batch(p)?;
            out.push(value_at(b.column(idx).as_ref(), b.num_rows() - 1));
        }
        Ok(Some(out))
    }

    /// Rebalances into `n` partitions of about equal rows (order kept).
    pub fn repartition(&self, n: usize) -> Result<DataFrame> {
        if n == 0 {
            return Err(Error::invalid("repartition", "n must be at least 1"));
        }
        Ok(self.derive(Node::Repartition {
            input: self.node.clone(),
            n,
        }))
    }

    /// Applies `func` to every partition as an Arrow batch. The output schema is inferred
    /// by calling `func` on an empty batch (like Dask's `meta`); use
    /// [`map_partitions_with_schema`](Self::map_partitions_with_schema) when the function
    /// cannot take an empty batch.
    pub fn map_partitions<F>(&self, func: F) -> Result<DataFrame>
    where
        F: Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync + 'static,
    {
        let empty = RecordBatch::new_empty(self.schema());
        let out = func(empty).map_err(|e| {
            Error::user_function(
                "map_partitions",
                format!("could not infer the output schema from an empty batch ({e}); use map_partitions_with_schema"),
            )
        })?;
        self.map_partitions_with_schema(func, out.schema())
    }

    /// Applies `func` to every partition; every output must have `schema`.
    pub fn map_partitions_with_schema<F>(&self, func: F, schema: SchemaRef) -> Result<DataFrame>
    where
        F: Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync + 'static,
    {
        let func: PartitionFn = Arc::new(func);
        Ok(self.derive(Node::MapPartitions {
            input: self.node.clone(),
            func,
            schema,
        }))
    }

    /// The `n` rows with the largest values of `columns` (compared in order), largest
    /// first, ties in row order (pandas' `nlargest`, `keep="first"`); each partition keeps
    /// its own top `n` and one task picks from those — no full sort.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming an unknown column.
    pub fn nlargest(&self, n: usize, columns: &[&str]) -> Result<DataFrame> {
        self.top_k(n, columns, true)
    }

    /// The `n` rows with the smallest values of `columns`, smallest first (pandas'
    /// `nsmallest`); see [`DataFrame::nlargest`].
    ///
    /// # Errors
    /// [`Error::Invalid`] naming an unknown column.
    pub fn nsmallest(&self, n: usize, columns: &[&str]) -> Result<DataFrame> {
        self.top_k(n, columns, false)
    }

    fn top_k(&self, n: usize, columns: &[&str], descending: bool) -> Result<DataFrame> {
        self.check_columns(if descending { "nlargest" } else { "nsmallest" }, columns)?;
        let by = columns
            .iter()
            .map(|c| SortKey {
                column: c.to_string(),
                descending,
            })
            .collect();
        Ok(self.derive(Node::TopK {
            input: self.node.clone(),
            by,
            n,
        }))
    }

    /// How often each value of `column` occurs: columns `column` and `count`, most
    /// frequent first, ties by value (pandas' `value_counts`; nulls are not counted).
    ///
    /// # Errors
    /// [`Error::Invalid`] naming an unknown column, or a column named `count`.
    pub fn value_counts(&self, column: &str) -> Result<DataFrame> {
        if column == "count" {
            return Err(Error::invalid(
                "value_counts",
                "the column is named 'count', like the result's count column; rename it first",
            ));
        }
        self.groupby(&[column])?
            .agg_named(&[(column, AggFunc::Count, "count")])?
            .sort_values(&["count", column], &[false, true])
    }

    /// The last `n` rows (runs only the partitions it needs, from the last one back).
    ///
    /// # Errors
    /// As [`DataFrame::compute`].
    pub fn tail(&self, n: usize) -> Result<Computed> {
        self.derive(Node::Tail {
            input: self.node.clone(),
            n,
        })
        .compute()
    }

    /// The first `n` rows (runs only the partitions it needs).
    pub fn head(&self, n: usize) -> Result<Computed> {
        self.derive(Node::Head {
            input: self.node.clone(),
            n,
        })
        .compute()
    }

    /// The first `n` rows as a lazy frame (SQL `LIMIT`; `head` computes them). After a
    /// sort it is a top-k: no full sort.
    pub fn limit(&self, n: usize) -> DataFrame {
        self.derive(Node::Head {
            input: self.node.clone(),
            n,
        })
    }

    /// Number of rows. A scan reads no column for it.
    pub fn len(&self) -> Result<usize> {
        let counted = self.select_exprs(Vec::new())?;
        Ok(counted.partitions()?.iter().map(|p| p.num_rows()).sum())
    }

    /// True when the frame has no rows.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Number of partitions the frame has now (before running blocking nodes).
    pub fn npartitions(&self) -> usize {
        match &*self.node {
            Node::Partitions { parts, .. } => parts.len(),
            Node::Scan {
                source, selected, ..
            } => selected.as_ref().map_or(source.partitions(), |s| s.len()),
            Node::Repartition { n, .. } => *n,
            Node::Aggregate { .. } | Node::Head { .. } | Node::Tail { .. } | Node::TopK { .. } => 1,
            Node::Map { input, .. }
            | Node::MapPartitions { input, .. }
            | Node::Window { input, .. }
            | Node::Sort { input, .. } => self.derive((**input).clone()).npartitions(),
            Node::Join { left, right, .. } => self
                .derive((**left).clone())
                .npartitions()
                .max(self.derive((**right).clone()).npartitions()),
            Node::Concat { inputs, .. } => inputs
                .iter()
                .map(|i| self.derive((**i).clone()).npartitions())
                .sum(),
        }
    }

    /// The optimized plan in words: fused stages, pushed-down projections and predicates,
    /// the algorithms of blocking nodes, and under `scheduler = "mpi"` the bytes each rank
    /// is projected to send and receive (see the `traffic` module for the model).
    ///
    /// # Errors
    /// A plan the optimizer rejects, or a cluster that cannot open.
    pub fn explain(&self) -> Result<String> {
        let node = self.optimized()?;
        let memory = match check_memory(&node, Output::InMemory, &self.backend) {
            Ok(None) => String::new(),
            Ok(Some(b)) if b.keep == u64::MAX => {
                let m = node.memory(tessera_runtime::pool::worker_threads()? as u64);
                let peak = m.held.saturating_add(m.output);
                let limit = b.task_bytes.saturating_mul(4);
                let fb = tessera_core::chunks::format_bytes;
                format!(
                    "device memory: backend '{}' holds at most {} per device (device.memory-limit); the plan is projected to hold about {} at its peak ({}); shuffles, broadcast sides and groupby combines are sized to about {} per task, and what does not fit on a device spills to host memory, then to spill-dir, and is read back by the kernel that needs it\n",
                    self.backend.name(),
                    fb(limit),
                    fb(peak),
                    if peak > limit {
                        format!("about {} over one device's limit spills", fb(peak - limit))
                    } else {
                        "within one device's limit".to_string()
                    },
                    fb(b.task_bytes)
                )
            }
            Ok(Some(b)) => format!(
                "memory-limit: groupby states, shuffle buckets, join sides and blocking results beyond {} (measured as they run) are spilled to {} (Arrow IPC, LZ4) and read back by the task that needs them; shuffles make buckets of about {} per task\n",
                tessera_core::chunks::format_bytes(b.keep),
                b.base.display(),
                tessera_core::chunks::format_bytes(b.task_bytes)
            ),
            Err(e) => format!("over memory-limit, refused before running: {e}\n"),
        };
        let traffic = match tessera_runtime::cluster::current()? {
            Some(cluster) => {
                let p = crate::exec::ranks::traffic::project(&node, &self.backend, cluster.size());
                let fmt = tessera_core::chunks::format_bytes;
                let mut s = format!(
                    "distributed over {}: partition i on rank i mod {}; projected traffic per rank (sizes from the memory model: filters keep every row, groupby states are as large as their input):\n",
                    cluster.describe(),
                    cluster.size()
                );
                for step in &p.steps {
                    s.push_str(&format!("  {step}\n"));
                }
                for (r, (sent, received)) in p.per_rank.iter().enumerate() {
                    s.push_str(&format!(
                        "  rank {r}: sends {}, receives {}\n",
                        fmt(*sent),
                        fmt(*received)
                    ));
                }
                s
            }
            None => String::new(),
        };
        let notes = node.fallback_notes(self.backend.as_ref());
        let fallbacks = if notes.is_empty() {
            String::new()
        } else {
            let mut s = format!(
                "fallbacks: backend '{}' runs {} step{} of this plan another way:\n",
                self.backend.name(),
                notes.len(),
                if notes.len() == 1 { "" } else { "s" }
            );
            for n in &notes {
                s.push_str(&format!("  {n}\n"));
            }
            s
        };
        Ok(format!(
            "dataframe on backend '{}'\n{}{fallbacks}{memory}{traffic}",
            self.backend.name(),
            node.explain()
        ))
    }

    /// Under `scheduler = "mpi"`, the bytes each rank is projected to send and receive to
    /// compute this frame on every rank, `(sent, received)` per rank, by the model
    /// `explain()` prints; `None` outside a distributed run.
    ///
    /// # Errors
    /// A plan the optimizer rejects, or a cluster that cannot open.
    pub fn projected_traffic(&self) -> Result<Option<Vec<(u64, u64)>>> {
        let Some(cluster) = tessera_runtime::cluster::current()? else {
            return Ok(None);
        };
        let node = self.optimized()?;
        Ok(Some(
            crate::exec::ranks::traffic::project(&node, &self.backend, cluster.size()).per_rank,
        ))
    }

    /// The plan as it runs: optimized unless `optimize = false`.
    pub(crate) fn planned(&self) -> Result<Arc<Node>> {
        let node = if crate::config::optimize()? {
            self.optimized()?
        } else {
            self.node.clone()
        };
        // Under `dataframe.fallback = "error"`, a plan with any step the backend would
        // run through a fallback is refused before anything runs, naming every such step.
        if tessera_core::config::dataframe_fallback()?
            == tessera_core::config::FallbackPolicy::Error
        {
            let notes = node.fallback_notes(self.backend.as_ref());
            if !notes.is_empty() {
                return Err(Error::FrameUnsupported {
                    backend: self.backend.name().to_string(),
                    op: format!(
                        "this plan natively (dataframe.fallback = \"error\"; set it to \"allow\" to run these on the host): {}",
                        notes.join("; ")
                    ),
                });
            }
        }
        Ok(node)
    }

    /// The plan optimized for this frame's backend (the stored forms it takes; none across
    /// the ranks of a job, whose executor reads every column in the plan's types).
    fn optimized(&self) -> Result<Arc<Node>> {
        let across_ranks = tessera_runtime::cluster::current()?.is_some_and(|c| c.size() > 1);
        let forms = if across_ranks {
            StoredForms::default()
        } else {
            self.backend.capabilities().stored_forms
        };
        optimize(&self.node, forms)
    }

    /// Runs the optimized plan and returns its partitions on the backend. Under
    /// `scheduler = "mpi"` the plan runs over the ranks of the job and every rank gets
    /// every partition.
    pub fn partitions(&self) -> Result<Vec<Partition>> {
        let node = self.planned()?;
        if let Some(cluster) = tessera_runtime::cluster::current()? {
            let ex = cluster.begin()?;
            return crate::exec::ranks::partitions(&node, &self.backend, &ex);
        }
        let spill = check_memory(&node, Output::InMemory, &self.backend)?;
        pipeline(&node, &self.backend, &spill)?.materialize()
    }

    /// The plan's output as a lazy sequence for writers that take one partition at a time
    /// (`to_parquet`, `to_csv`): the blocking nodes run now, within the spill budget, and
    /// the returned function produces partition `i` as an Arrow batch. The output never
    /// has to fit in memory at once.
    pub(crate) fn batch_stream(&self) -> Result<BatchStream> {
        self.stream_of(&self.planned()?)
    }

    /// [`DataFrame::batch_stream`] of the planned `node`.
    fn stream_of(&self, node: &Arc<Node>) -> Result<BatchStream> {
        let spill = check_memory(node, Output::Streamed, &self.backend)?;
        let pipe = pipeline(node, &self.backend, &spill)?;
        let backend = self.backend.clone();
        let task = pipe.task.clone();
        Ok(BatchStream {
            n: pipe.n,
            schema: self.schema(),
            batch: Arc::new(move |i| backend.export_batch(&task(i)?)),
            _spill: spill,
        })
    }

    /// Computes the frame and keeps it on the backend (later operations start here). A
    /// frame over `memory-limit` is persisted to the spill directory instead, a partition
    /// at a time, and later plans read it back like a file (`explain` says "persisted to
    /// the spill directory"); its files go when the last frame built on it is dropped.
    ///
    /// # Errors
    /// As [`DataFrame::compute`]; [`Error::MemoryLimit`] only when the frame does not fit
    /// and spilling is off (`spill-dir = none`) or even its stages cannot run within the
    /// limit.
    pub fn persist(&self) -> Result<DataFrame> {
        let node = self.planned()?;
        if let Some(cluster) = tessera_runtime::cluster::current()? {
            return Ok(self.derive(Node::Partitions {
                parts: crate::exec::ranks::on_rank::persist(
                    &node,
                    &self.backend,
                    &self.schema(),
                    &cluster,
                )?,
                schema: self.schema(),
            }));
        }
        let parts = match check_memory(&node, Output::InMemory, &self.backend) {
            Ok(spill) => pipeline(&node, &self.backend, &spill)?.materialize()?,
            Err(e @ Error::MemoryLimit { .. }) => {
                let Some(base) = crate::config::spill_dir()? else {
                    return Err(e);
                };
                let out = self.stream_of(&node)?;
                let source = crate::exec::spill::PersistedSource::write(
                    &base,
                    out.schema.clone(),
                    out.n,
                    out.batch.as_ref(),
                )?;
                return Ok(self.derive(Node::Scan {
                    source: Arc::new(source),
                    projection: None,
                    selected: None,
                    pushed: Vec::new(),
                    stored: Vec::new(),
                }));
            }
            Err(e) => return Err(e),
        };
        Ok(self.derive(Node::Partitions {
            parts,
            schema: self.schema(),
        }))
    }

    /// [`DataFrame::compute`], recording a [`Profile`](tessera_observe::Profile) of every
    /// stage's tasks and the plan's `explain()` text (see `Array::compute_with_profile`).
    ///
    /// # Errors
    /// As [`DataFrame::compute`].
    pub fn compute_with_profile(&self) -> Result<(Computed, tessera_observe::Profile)> {
        let explain = self.explain()?;
        let (out, mut profile) = tessera_observe::profile::record(|| self.compute());
        profile.explain = explain;
        profile.title = "tessera profile: dataframe compute".into();
        Ok((out?, profile))
    }

    /// Computes the frame into Arrow batches on the host.
    pub fn compute(&self) -> Result<Computed> {
        let parts = self.partitions()?;
        let batches = parts
            .iter()
            .map(|p| self.backend.export_batch(p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Computed {
            schema: self.schema(),
            batches,
        })
    }
}

/// Which rows [`DataFrame::dropna`] drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DropHow {
    /// Rows missing a value in any of the columns (pandas' default).
    #[default]
    Any,
    /// Rows missing a value in all of the columns.
    All,
}

/// A plan's output, one partition at a time ([`DataFrame::batch_stream`]).
pub(crate) struct BatchStream {
    /// Partitions.
    pub n: usize,
    /// Their schema.
    pub schema: SchemaRef,
    /// Produces partition `i`.
    pub batch: Arc<dyn Fn(usize) -> Result<RecordBatch> + Send + Sync>,
    /// Keeps the plan's spill budget (and the stashes it accounts) alive while streaming.
    _spill: Spill,
}

impl BatchStream {
    /// Partitions already computed, as a stream (what a rank that gathered a frame writes).
    pub(crate) fn of_partitions(
        backend: FrameBackendRef,
        schema: SchemaRef,
        parts: Vec<Partition>,
    ) -> BatchStream {
        BatchStream {
            n: parts.len(),
            schema,
            batch: Arc::new(move |i| {
                let part = parts.get(i).ok_or_else(|| {
                    Error::Internal(format!("partition {i} of a stream of {}", parts.len()))
                })?;
                backend.export_batch(part)
            }),
            _spill: None,
        }
    }
}

/// Where a plan's output goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Output {
    /// All of it in memory at once (`compute`, `persist`).
    InMemory,
    /// A partition at a time (writers).
    Streamed,
}

/// How a plan runs within `memory-limit`: unbudgeted when its projected peak — what it
/// holds while running plus its output — fits; with a spill budget when only what its
/// groupbys, joins and shuffles keep between stages is over; refused before anything
/// runs when what must be in memory at once is over (the output, which `compute` returns
/// in memory; a sort's or repartition's whole input; a partition per worker), or when
/// `spill-dir` is `none`.
///
/// A backend with a memory budget of its own (a device's, which spills within the backend)
/// gets tasks sized to a quarter of it: shuffle buckets, broadcast sides and groupby
/// combines then fit on the device, with `memory-limit` or without.
fn check_memory(node: &Arc<Node>, output: Output, backend: &FrameBackendRef) -> Result<Spill> {
    let device_task = backend.memory_budget().map(|d| (d / 4).max(1));
    let Some(limit) = crate::config::memory_limit()? else {
        return Ok(device_task.map(|task| {
            let base = crate::config::spill_dir()
                .ok()
                .flatten()
                .unwrap_or_else(std::env::temp_dir);
            // Nothing is kept back by the engine: the backend moves what its devices
            // cannot hold.
            Arc::new(SpillBudget::new(base, u64::MAX, task))
        }));
    };
    let workers = tessera_runtime::pool::worker_threads()? as u64;
    let m = node.memory(workers);
    let out_held = match output {
        Output::InMemory => m.output,
        Output::Streamed => m.largest.saturating_mul(workers),
    };
    let projected = m.held.saturating_add(out_held);
    let spill_dir = crate::config::spill_dir()?;
    // Half the limit for what stages keep (spilled beyond it), half for the tasks running.
    let keep = limit / 2;
    let task_bytes = (limit / 2 / workers.max(1) / 4).min(device_task.unwrap_or(u64::MAX));
    let budget = |base: PathBuf| Some(Arc::new(SpillBudget::new(base, keep, task_bytes)));
    if projected <= limit {
        // The projection is a model: what stages keep is also measured as they run (a
        // groupby's states grow with its number of groups), and spills when it is over.
        return Ok(spill_dir.and_then(budget));
    }
    let refuse = |why: String| {
        Err(Error::MemoryLimit {
            projected,
            limit,
            advice: format!(
                "the frame plan holds about {} bytes while running and {} bytes of output; \
                 {why}filter or select earlier, aggregate instead of collecting, write the result \
                 with to_parquet/to_csv in partitions, or raise memory-limit",
                m.held, m.output
            ),
        })
    };
    let Some(base) = spill_dir else {
        return refuse("spilling is off (spill-dir = none); ".into());
    };
    if output == Output::InMemory && m.output > keep {
        return refuse(format!(
            "its output must be in memory at once and is over half the limit ({keep} bytes; the rest is for the tasks producing it); "
        ));
    }
    if let Some(whole) = node.held_whole() {
        if whole > keep {
            return refuse(format!(
                "a sort or repartition holds its whole input, {whole} bytes, at once (only groupbys, joins and shuffles spill); "
            ));
        }
    }
    let largest = node.largest_partition(workers);
    if largest > task_bytes {
        return refuse(format!(
            "partitions of up to {largest} bytes, one per worker ({workers}), leave no room to spill within the limit: each should be at most {task_bytes} bytes (smaller partitions or fewer threads); "
        ));
    }
    Ok(budget(base))
}

/// Output names for `(column, func)` pairs: the column name, or `column_func` when the
/// column is aggregated more than once.
fn named_aggs(aggs: &[(&str, AggFunc)]) -> Vec<AggSpec> {
    aggs.iter()
        .map(|(c, f)| {
            let repeated = aggs.iter().filter(|(c2, _)| c2 == c).count() > 1;
            let out = if repeated {
                format!("{c}_{}", f.name())
            } else {
                c.to_string()
            };
            AggSpec::new(*c, *f, out)
        })
        .collect()
}

/// A batch from named columns of equal length.
pub fn batch_from_columns(columns: Vec<(&str, ArrayRef)>) -> Result<RecordBatch> {
    let rows = columns.first().map_or(0, |(_, a)| a.len());
    for (n, a) in &columns {
        if a.len() != rows {
            return Err(Error::shape(
                "from_columns",
                format!("column '{n}' has {} rows, the first column {rows}", a.len()),
            ));
        }
    }
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    RecordBatch::try_new_with_options(
        schema,
        columns.into_iter().map(|(_, a)| a).collect(),
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )
    .map_err(|e| Error::invalid("from_columns", e.to_string()))
}

/// A grouped frame; [`agg`](GroupBy::agg) makes it a frame again.
#[derive(Debug, Clone)]
pub struct GroupBy {
    pub(crate) frame: DataFrame,
    pub(crate) keys: Vec<String>,
    pub(crate) strategy: Option<GroupStrategy>,
    pub(crate) dropna: bool,
}

impl GroupBy {
    /// Forces the tree or shuffle strategy (chosen from the partial results otherwise).
    pub fn strategy(mut self, strategy: GroupStrategy) -> GroupBy {
        self.strategy = Some(strategy);
        self
    }

    /// pandas' `groupby(..., dropna=False)` with `false`: rows whose key has a null form
    /// groups of their own (sorted after the others) instead of being dropped, in
    /// aggregations and windows. The default is `true`, pandas' default.
    pub fn dropna(mut self, dropna: bool) -> GroupBy {
        self.dropna = dropna;
        self
    }

    /// The aggregation of `frame` (this group's frame, perhaps with computed columns) by
    /// the keys, keeping null keys when asked.
    fn run(&self, frame: DataFrame, specs: Vec<AggSpec>) -> Result<DataFrame> {
        if self.dropna {
            frame.aggregate(self.keys.clone(), specs, self.strategy)
        } else {
            crate::api::null_keys::aggregate_keeping_nulls(&frame, &self.keys, specs, self.strategy)
        }
    }

    /// Aggregations `(column, func)`: output columns named `column`, or `column_func` when
    /// a column is aggregated more than once. Result: keys, then aggregations, sorted
    /// by the keys within each output partition.
    pub fn agg(&self, aggs: &[(&str, AggFunc)]) -> Result<DataFrame> {
        self.run(self.frame.clone(), named_aggs(aggs))
    }

    /// Aggregations given whole ([`AggSpec`]), pair functions among them:
    /// `AggSpec::pair("x", AggFunc::Corr, "y", "r")`.
    ///
    /// # Errors
    /// A column missing or of a type the function does not take, a pair function without
    /// its second column (or another function with one), an output name used twice.
    pub fn agg_specs(&self, aggs: Vec<AggSpec>) -> Result<DataFrame> {
        self.run(self.frame.clone(), aggs)
    }

    /// The sample covariance of `x` and `y` per group, ddof 1 (pandas'
    /// `groupby(..).apply(lambda g: g.x.cov(g.y))`), over the rows where both hold a
    /// number; named `x_y_cov`.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::{Float64Array, Int64Array};
    /// use tessera_frame::DataFrame;
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![
    ///         ("k", Arc::new(Int64Array::from(vec![1, 1, 1, 1, 2, 2]))),
    ///         ("x", Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, 4.0, 1.0, 2.0]))),
    ///         ("y", Arc::new(Float64Array::from(vec![2.0, 4.0, 5.0, 9.0, 3.0, 1.0]))),
    ///     ],
    ///     2,
    /// )?;
    /// let r = df.groupby(&["k"])?.corr("x", "y")?.sort_values(&["k"], &[true])?;
    /// let c = r.compute()?.batches;
    /// let mut got = Vec::new();
    /// for b in &c {
    ///     let col = b.column(1).as_any().downcast_ref::<Float64Array>().unwrap();
    ///     got.extend(col.iter().flatten());
    /// }
    /// assert!((got[0] - 11.0 / 130f64.sqrt()).abs() < 1e-12); // by hand
    /// assert_eq!(got[1], -1.0);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`GroupBy::agg_specs`].
    pub fn cov(&self, x: &str, y: &str) -> Result<DataFrame> {
        self.agg_specs(vec![AggSpec::pair(
            x,
            AggFunc::Cov,
            y,
            format!("{x}_{y}_cov"),
        )])
    }

    /// The Pearson correlation of `x` and `y` per group (pandas' `Series.corr`), over
    /// the rows where both hold a number; null where fewer than two or either is constant
    /// there. Named `x_y_corr`.
    ///
    /// # Errors
    /// As [`GroupBy::agg_specs`].
    pub fn corr(&self, x: &str, y: &str) -> Result<DataFrame> {
        self.agg_specs(vec![AggSpec::pair(
            x,
            AggFunc::Corr,
            y,
            format!("{x}_{y}_corr"),
        )])
    }

    /// Aggregations with explicit output names.
    pub fn agg_named(&self, aggs: &[(&str, AggFunc, &str)]) -> Result<DataFrame> {
        self.run(
            self.frame.clone(),
            aggs.iter()
                .map(|(c, f, o)| AggSpec::new(*c, *f, *o))
                .collect(),
        )
    }

    /// Aggregations of expressions: `(expr, func, output)` — `sum(price * (1 - discount))`,
    /// or a conditional aggregation with `when` (`sum(when(c).then(x).otherwise(0))`).
    /// Each expression is computed per row (fused into the partial aggregation's program),
    /// then aggregated.
    ///
    /// # Errors
    /// An expression that does not type over the frame, or a function that does not take
    /// its type (as [`GroupBy::agg`]).
    pub fn agg_exprs(&self, aggs: &[(Expr, AggFunc, &str)]) -> Result<DataFrame> {
        let mine = self.frame.columns();
        // One projection with every expression, so that arithmetic they share is computed
        // once (the optimizer's `cse` looks within a projection).
        let mut list: Vec<(String, Expr)> = mine.iter().map(|c| (c.clone(), col(c))).collect();
        let mut specs = Vec::with_capacity(aggs.len());
        for (i, (e, func, output)) in aggs.iter().enumerate() {
            let mut tmp = format!("__tessera_agg{i}");
            while mine.contains(&tmp) {
                tmp.push('_');
            }
            list.push((tmp.clone(), e.clone()));
            specs.push(AggSpec::new(tmp, *func, *output));
        }
        self.run(self.frame.select_exprs(list)?, specs)
    }

    /// `groupby(keys)[column].mean()`.
    pub fn mean(&self, column: &str) -> Result<DataFrame> {
        self.agg(&[(column, AggFunc::Mean)])
    }
    /// `groupby(keys)[column].median()` (exact).
    pub fn median(&self, column: &str) -> Result<DataFrame> {
        self.agg(&[(column, AggFunc::Median)])
    }

    /// `groupby(keys)[column].quantile(q)` (exact, linear interpolation).
    ///
    /// # Errors
    /// `q` outside `[0, 1]`, or `column` missing or not numeric.
    pub fn quantile(&self, column: &str, q: f64) -> Result<DataFrame> {
        self.agg(&[(column, AggFunc::Quantile(Quantile::new(q)?))])
    }

    /// The `q` quantile of `column` per group, estimated from t-digests (constant memory
    /// per group; see [`AggFunc::ApproxQuantile`]).
    ///
    /// # Errors
    /// `q` outside `[0, 1]`, or `column` missing or not numeric.
    pub fn approx_quantile(&self, column: &str, q: f64) -> Result<DataFrame> {
        self.agg(&[(column, AggFunc::ApproxQuantile(Quantile::new(q)?))])
    }

    /// A window function of `column` within each group, in the frame's row order, into
    /// the column `output` of the whole frame (pandas'
    /// `df[output] = df.groupby(keys)[column].cumsum()`); rows whose key has a null get
    /// null. See [`DataFrame::window`].
    ///
    /// # Errors
    /// A missing column, a function that does not apply to its type, or a backend without
    /// window functions.
    pub fn window(&self, column: &str, func: WindowFunc, output: &str) -> Result<DataFrame> {
        if self.dropna {
            self.frame
                .window_over(self.keys.clone(), column, func, output)
        } else {
            crate::api::null_keys::window_keeping_nulls(
                &self.frame,
                &self.keys,
                column,
                func,
                output,
            )
        }
    }
    /// Each row's number within its group, from 0 in the frame's row order (pandas'
    /// `groupby(keys).cumcount()`), as the column `output`. A running count per group —
    /// the rows stream through once, carried across partitions, with no sort. Rows whose
    /// key is null are in no group (null) unless `dropna(false)`.
    ///
    /// # Errors
    /// A missing key column, or a backend without window functions.
    pub fn cumcount(&self, output: &str) -> Result<DataFrame> {
        let one = self.unused_name("one");
        let with_ones = self.frame.with_column(&one, crate::lit(1i64))?;
        let grouped = GroupBy {
            frame: with_ones,
            ..self.clone()
        };
        grouped
            .window(&one, WindowFunc::CumSum, output)?
            .with_column(output, crate::col(output) - crate::lit(1i64))?
            .drop(&[one.as_str()])
    }

    /// The first `n` rows of each group, in the frame's row order (pandas'
    /// `groupby(keys).head(n)`): the rows whose [`GroupBy::cumcount`] is below `n`, found
    /// in one streaming pass without sorting.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::Int64Array;
    /// use tessera_frame::DataFrame;
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![
    ///         ("k", Arc::new(Int64Array::from(vec![1, 2, 1, 1, 2, 3]))),
    ///         ("v", Arc::new(Int64Array::from(vec![10, 20, 11, 12, 21, 30]))),
    ///     ],
    ///     3,
    /// )?;
    /// let first_two = df.groupby(&["k"])?.head(2)?;
    /// assert_eq!(first_two.columns(), vec!["k", "v"]);
    /// assert_eq!(first_two.len()?, 5); // 10, 20, 11, 21, 30
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`GroupBy::cumcount`].
    pub fn head(&self, n: usize) -> Result<DataFrame> {
        let row = self.unused_name("row");
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        self.cumcount(&row)?
            .filter(crate::col(row.as_str()).lt(crate::lit(n)))?
            .drop(&[row.as_str()])
    }

    /// A column name the frame does not have, starting from `stem`.
    fn unused_name(&self, stem: &str) -> String {
        let schema = self.frame.schema();
        (0..)
            .map(|i| format!("__{stem}{i}"))
            .find(|c| schema.field_with_name(c).is_err())
            .unwrap_or_else(|| format!("__{stem}"))
    }

    /// `groupby(keys)[column].sum()`.
    pub fn sum(&self, column: &str) -> Result<DataFrame> {
        self.agg(&[(column, AggFunc::Sum)])
    }
    /// `groupby(keys)[column].count()`.
    pub fn count(&self, column: &str) -> Result<DataFrame> {
        self.agg(&[(column, AggFunc::Count)])
    }
}
