//! The user-facing lazy [`DataFrame`].
//!
//! Every method builds a plan node and returns at once; `compute`, `len`, `head`,
//! `describe`, `to_csv` and `to_parquet` run it. The frame remembers its backend, chosen
//! by an explicit name, or else the `dataframe.backend` config key (`tessera.toml`,
//! `TESSERA_DATAFRAME_BACKEND`, or a scoped [`crate::config::set`]) when it is created.

use std::fmt;
use std::sync::Arc;

use arrow_array::{Array as _, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::api::computed::Computed;
use crate::api::display::{value_at, Value};
use crate::backend::{AggFunc, FrameBackendRef, FrameStep, Partition, SortKey, StoredForms};
use crate::error::{Error, Result};
use crate::exec::run;
use crate::expr::{col, is_string, when, Expr, Literal};
use crate::optimize::optimize;
use crate::plan::{Node, PartitionFn};
use crate::registry::resolve_dataframe_backend;
use crate::window::{WindowFunc, WindowSpec};

/// A lazy, partitioned dataframe.
#[derive(Clone)]
pub struct DataFrame {
    pub(crate) node: Arc<Node>,
    pub(crate) backend: FrameBackendRef,
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

    pub(crate) fn derive(&self, node: Node) -> DataFrame {
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
    pub(crate) fn optimized(&self) -> Result<Arc<Node>> {
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
        run::partitions(&self.planned()?, &self.backend)
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
        let node = run::persist(&self.planned()?, &self.backend, self.schema())?;
        Ok(self.derive(node))
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
