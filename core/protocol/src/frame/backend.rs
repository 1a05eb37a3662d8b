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

use std::any::Any;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::backend::Availability;
use crate::error::{Error, Result};
use crate::frame::expr::{sum_type, Expr};
use crate::frame::window::WindowSpec;

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
        .ok_or_else(|| Error::ForeignChunk {
            op: op.to_string(),
            backend: backend.to_string(),
            owner: part.backend().to_string(),
        })
}

/// One step of a fused per-partition program.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameStep {
    /// Keep the rows where the boolean expression is true (null counts as false).
    Filter(Expr),
    /// Replace the columns by these named expressions, in this order.
    Project(Vec<(String, Expr)>),
}

/// Filters and projections run in order in one pass over a partition. Core fuses every
/// chain of `filter`/`select`/`with_column`/`rename`/`drop` into one program, so a backend
/// sees each partition once per chain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FrameProgram {
    /// The steps, in order.
    pub steps: Vec<FrameStep>,
}

/// The schema a program produces over `input`, checking every expression.
pub fn program_schema(input: &SchemaRef, program: &FrameProgram) -> Result<SchemaRef> {
    let mut schema = input.clone();
    for step in &program.steps {
        match step {
            FrameStep::Filter(e) => {
                let t = e.data_type(&schema)?;
                if t != arrow_schema::DataType::Boolean {
                    return Err(Error::invalid(
                        "filter",
                        format!("the predicate {e} is {t}; it must be Boolean"),
                    ));
                }
            }
            FrameStep::Project(list) => {
                let mut seen = BTreeSet::new();
                let mut fields = Vec::with_capacity(list.len());
                for (name, e) in list {
                    if !seen.insert(name.as_str()) {
                        return Err(Error::invalid(
                            "select",
                            format!("column '{name}' appears twice in the output"),
                        ));
                    }
                    let t = e.data_type(&schema)?;
                    let nullable = match e {
                        Expr::Column(c) => {
                            schema.field_with_name(c).map_or(true, |f| f.is_nullable())
                        }
                        _ => true,
                    };
                    fields.push(Field::new(name, t, nullable));
                }
                schema = Arc::new(Schema::new(fields));
            }
        }
    }
    Ok(schema)
}

/// An aggregation function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggFunc {
    /// Sum of non-null values (Int64 for integers, Float64 for floats, Decimal128(38, s) for
    /// a decimal of scale s; 0 when empty).
    Sum,
    /// Mean of non-null values (Float64; null when empty).
    Mean,
    /// Number of non-null values (Int64).
    Count,
    /// Minimum (input type; null when empty), in the sort order: NaN is above every
    /// number, so it is the minimum only of a group of NaN alone.
    Min,
    /// Maximum (input type; null when empty), in the sort order: a group holding NaN has
    /// the maximum NaN (DuckDB's rule; pandas skips NaN).
    Max,
    /// Sample standard deviation, ddof 1 as in pandas (Float64).
    Std,
    /// Sample variance, ddof 1 (Float64).
    Var,
    /// Sample skewness, the adjusted Fisher–Pearson coefficient as pandas computes it:
    /// `n √(n−1) / (n−2) · M3 / M2^1.5` over the central sums `Mk` (Float64; null below 3
    /// values and when they are all equal, as DuckDB; pandas gives NaN for both).
    Skew,
    /// Sample excess kurtosis, unbiased, as pandas' `kurt()`: `n (n+1) (n−1) M4 / ((n−2)
    /// (n−3) M2²) − 3 (n−1)² / ((n−2)(n−3))` (Float64; null below 4 values and when they
    /// are all equal).
    Kurt,
    /// First non-null value in partition order.
    First,
    /// Last non-null value in partition order.
    Last,
    /// Number of distinct non-null values (Int64).
    NUnique,
    /// Median of the non-null, non-NaN values (Float64; the mean of the two middle values
    /// of an even count, as in pandas; null when none), exact.
    Median,
    /// The `q` quantile of the non-null, non-NaN values (Float64; null when none), exact,
    /// interpolated linearly between the two nearest values as pandas' and NumPy's
    /// default (`method="linear"`). Its state holds every value of a group.
    Quantile(Quantile),
    /// The `k` largest values of each group, largest first, as a list in the input's type
    /// (nulls and NaN left out, as pandas' `nlargest`; fewer when the group has fewer):
    /// each partition keeps a bounded selection of `k` per group, no sort.
    Largest(u32),
    /// The `k` smallest values of each group, smallest first; see [`AggFunc::Largest`].
    Smallest(u32),
    /// Sample covariance of the aggregation's column with its second column
    /// ([`AggSpec::with`]), ddof 1 as pandas' `Series.cov`, over the rows where both are
    /// non-null and not NaN (Float64; null below 2 such rows).
    Cov,
    /// Pearson correlation of the aggregation's column with its second column
    /// ([`AggSpec::with`]), as pandas' `Series.corr`, over the rows where both are
    /// non-null and not NaN (Float64; null below 2 such rows and when either column is
    /// constant there).
    Corr,
    /// The `q` quantile estimated from a t-digest ([`digest`](super::digest)): a state of
    /// a few hundred numbers per group whatever the group's size, for quantiles of large
    /// groups; the rank of the estimate is typically within 0.5% of `q`.
    ApproxQuantile(Quantile),
}

/// A quantile level `q` in `[0, 1]`, compared and hashed by its bits so that it can sit in
/// an [`AggFunc`].
#[derive(Clone, Copy)]
pub struct Quantile(f64);

impl Quantile {
    /// The median's level.
    pub const MEDIAN: Quantile = Quantile(0.5);

    /// The level `q`.
    ///
    /// # Errors
    /// [`Error::Invalid`] when `q` is NaN or outside `[0, 1]`.
    pub fn new(q: f64) -> Result<Quantile> {
        if (0.0..=1.0).contains(&q) {
            Ok(Quantile(q + 0.0))
        } else {
            Err(Error::invalid(
                "quantile",
                format!("the level {q} is outside [0, 1]; give 0.25 for the 25th percentile"),
            ))
        }
    }

    /// The level.
    pub fn value(self) -> f64 {
        self.0
    }
}

impl PartialEq for Quantile {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}
impl Eq for Quantile {}
impl std::hash::Hash for Quantile {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}
impl fmt::Debug for Quantile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl AggFunc {
    /// Lower-case name, as in pandas.
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Sum => "sum",
            AggFunc::Mean => "mean",
            AggFunc::Count => "count",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::Std => "std",
            AggFunc::Var => "var",
            AggFunc::Skew => "skew",
            AggFunc::Kurt => "kurt",
            AggFunc::First => "first",
            AggFunc::Last => "last",
            AggFunc::NUnique => "nunique",
            AggFunc::Median => "median",
            AggFunc::Quantile(_) => "quantile",
            AggFunc::ApproxQuantile(_) => "approx_quantile",
            AggFunc::Cov => "cov",
            AggFunc::Corr => "corr",
            AggFunc::Largest(_) => "nlargest",
            AggFunc::Smallest(_) => "nsmallest",
        }
    }

    /// The count `k` of `nlargest(k)` and `nsmallest(k)`.
    pub fn count_param(self) -> Option<u32> {
        match self {
            AggFunc::Largest(k) | AggFunc::Smallest(k) => Some(k),
            _ => None,
        }
    }

    /// Whether it aggregates a pair of columns (`cov`, `corr`: [`AggSpec::with`] names the
    /// second).
    pub fn is_pair(self) -> bool {
        matches!(self, AggFunc::Cov | AggFunc::Corr)
    }

    /// The quantile level of `quantile` and `approx_quantile`.
    pub fn level(self) -> Option<Quantile> {
        match self {
            AggFunc::Quantile(q) | AggFunc::ApproxQuantile(q) => Some(q),
            _ => None,
        }
    }

    /// Every function without a parameter, for tests and docs (the quantiles take a level).
    pub const ALL: [AggFunc; 15] = [
        AggFunc::Sum,
        AggFunc::Mean,
        AggFunc::Count,
        AggFunc::Min,
        AggFunc::Max,
        AggFunc::Std,
        AggFunc::Var,
        AggFunc::Skew,
        AggFunc::Kurt,
        AggFunc::First,
        AggFunc::Last,
        AggFunc::NUnique,
        AggFunc::Median,
        AggFunc::Cov,
        AggFunc::Corr,
    ];

    /// Parses a pandas-style name; `quantile` and `approx_quantile` take their level in
    /// parentheses (`quantile(0.9)`) and default to the median's, as pandas' `quantile()`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the known functions, or a level that is not in `[0, 1]`.
    pub fn parse(name: &str) -> Result<AggFunc> {
        for (stem, make) in [
            ("nlargest", AggFunc::Largest as fn(u32) -> AggFunc),
            ("nsmallest", AggFunc::Smallest),
        ] {
            if let Some(arg) = name
                .strip_prefix(stem)
                .and_then(|r| r.strip_prefix('('))
                .and_then(|r| r.strip_suffix(')'))
            {
                let k = arg
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|&k| k > 0)
                    .ok_or_else(|| {
                        Error::invalid(
                            "agg",
                            format!("'{name}': the count '{arg}' is not a whole number above 0"),
                        )
                    })?;
                return Ok(make(k));
            }
        }
        for (stem, make) in [
            ("quantile", AggFunc::Quantile as fn(Quantile) -> AggFunc),
            ("approx_quantile", AggFunc::ApproxQuantile),
        ] {
            if name == stem {
                return Ok(make(Quantile::MEDIAN));
            }
            if let Some(arg) = name
                .strip_prefix(stem)
                .and_then(|r| r.strip_prefix('('))
                .and_then(|r| r.strip_suffix(')'))
            {
                let q = arg.trim().parse::<f64>().map_err(|_| {
                    Error::invalid(
                        "agg",
                        format!("'{name}': the level '{arg}' is not a number"),
                    )
                })?;
                return Ok(make(Quantile::new(q)?));
            }
        }
        AggFunc::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                Error::invalid(
                    "agg",
                    format!(
                        "unknown aggregation '{name}'; known: {}, quantile(q), approx_quantile(q), nlargest(k), nsmallest(k)",
                        AggFunc::ALL.map(|f| f.name()).join(", ")
                    ),
                )
            })
    }

    /// The name with its level, as [`AggFunc::parse`] reads it back: `quantile(0.9)`.
    pub fn spec(self) -> String {
        match (self.level(), self.count_param()) {
            (Some(q), _) => format!("{}({})", self.name(), q.value()),
            (_, Some(k)) => format!("{}({k})", self.name()),
            _ => self.name().to_string(),
        }
    }

    /// Whether the function accepts an input of type `t`.
    pub fn accepts(self, t: &DataType) -> bool {
        match self {
            AggFunc::Count | AggFunc::NUnique | AggFunc::First | AggFunc::Last => true,
            AggFunc::Min | AggFunc::Max | AggFunc::Largest(_) | AggFunc::Smallest(_) => {
                t.is_numeric()
                    || crate::frame::expr::is_string(t)
                    || matches!(
                        t,
                        DataType::Boolean
                            | DataType::Timestamp(_, _)
                            | DataType::Date32
                            | DataType::Date64
                            | DataType::Time32(_)
                            | DataType::Time64(_)
                            | DataType::Duration(_)
                            | DataType::Binary
                            | DataType::LargeBinary
                            | DataType::BinaryView
                            | DataType::FixedSizeBinary(_)
                    )
            }
            AggFunc::Sum
            | AggFunc::Mean
            | AggFunc::Std
            | AggFunc::Var
            | AggFunc::Skew
            | AggFunc::Kurt
            | AggFunc::Median
            | AggFunc::Quantile(_)
            | AggFunc::ApproxQuantile(_)
            | AggFunc::Cov
            | AggFunc::Corr => t.is_numeric() || *t == DataType::Boolean,
        }
    }

    /// The type of the final result for input type `t`.
    pub fn output_type(self, t: &DataType) -> DataType {
        match self {
            AggFunc::Sum => sum_type(t),
            AggFunc::Count | AggFunc::NUnique => DataType::Int64,
            AggFunc::Mean
            | AggFunc::Std
            | AggFunc::Var
            | AggFunc::Skew
            | AggFunc::Kurt
            | AggFunc::Median
            | AggFunc::Quantile(_)
            | AggFunc::ApproxQuantile(_)
            | AggFunc::Cov
            | AggFunc::Corr => DataType::Float64,
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => t.clone(),
            AggFunc::Largest(_) | AggFunc::Smallest(_) => {
                DataType::List(Arc::new(Field::new_list_field(t.clone(), true)))
            }
        }
    }

    /// The columns of the partial-aggregation state, named `{output}#{part}`. Core defines
    /// this layout so that states from any backend combine the same way:
    ///
    /// | function | state |
    /// |---|---|
    /// | sum | `sum` (Int64 / UInt64 / Float64 / Decimal128(38, s)) |
    /// | count | `count` (Int64) |
    /// | mean | `sum` (Float64; Decimal128(38, s) for a decimal), `count` |
    /// | var, std | `count`, `mean`, `m2` (Float64; Chan et al.'s pairwise update) |
    /// | skew, kurt | `count`, `mean`, `m2`, `m3`, `m4` (Float64; Pébay's pairwise update) |
    /// | nlargest(k), nsmallest(k) | `values`: a List (input type) of up to k values, best first |
    /// | cov, corr | `count`, `mean_x`, `mean_y`, `m2_x`, `m2_y`, `c_xy` over the rows where both columns hold a number (Float64; the co-moment's pairwise update) |
    /// | min, max, first, last | `value` (input type, null when none) |
    /// | nunique | `values`: a List of the distinct non-null values |
    /// | median, quantile | `values`: a List (Float64) of the non-null values |
    /// | approx_quantile | `digest`: a List (Float64): a t-digest in [`digest`](super::digest)'s layout |
    pub fn state_fields(self, output: &str, t: &DataType) -> Vec<Field> {
        let f = |part: &str, dt: DataType| Field::new(format!("{output}#{part}"), dt, true);
        match self {
            AggFunc::Sum => vec![f("sum", sum_type(t))],
            AggFunc::Count => vec![f("count", DataType::Int64)],
            AggFunc::Mean => vec![f("sum", mean_sum_type(t)), f("count", DataType::Int64)],
            AggFunc::Std | AggFunc::Var => vec![
                f("count", DataType::Int64),
                f("mean", DataType::Float64),
                f("m2", DataType::Float64),
            ],
            AggFunc::Skew | AggFunc::Kurt => vec![
                f("count", DataType::Int64),
                f("mean", DataType::Float64),
                f("m2", DataType::Float64),
                f("m3", DataType::Float64),
                f("m4", DataType::Float64),
            ],
            AggFunc::Cov | AggFunc::Corr => vec![
                f("count", DataType::Int64),
                f("mean_x", DataType::Float64),
                f("mean_y", DataType::Float64),
                f("m2_x", DataType::Float64),
                f("m2_y", DataType::Float64),
                f("c_xy", DataType::Float64),
            ],
            AggFunc::Min | AggFunc::Max | AggFunc::First | AggFunc::Last => {
                vec![f("value", t.clone())]
            }
            AggFunc::Largest(_) | AggFunc::Smallest(_) => vec![f(
                "values",
                DataType::List(Arc::new(Field::new_list_field(t.clone(), true))),
            )],
            AggFunc::NUnique => vec![f(
                "values",
                DataType::List(Arc::new(Field::new_list_field(t.clone(), true))),
            )],
            AggFunc::ApproxQuantile(_) => vec![f(
                "digest",
                DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true))),
            )],
            AggFunc::Median | AggFunc::Quantile(_) => vec![f(
                "values",
                DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true))),
            )],
        }
    }
}

/// The type of a mean's running sum: exact for a Decimal128 (the mean is then one
/// division, as DuckDB computes it), Float64 otherwise.
fn mean_sum_type(t: &DataType) -> DataType {
    match t {
        DataType::Decimal64(_, _) | DataType::Decimal128(_, _) => sum_type(t),
        _ => DataType::Float64,
    }
}

/// One aggregation of a groupby: `func(column) as output`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AggSpec {
    /// The input column.
    pub column: String,
    /// The function.
    pub func: AggFunc,
    /// The output column name.
    pub output: String,
    /// The second input column of a pair function (`cov`, `corr`); `None` for the others.
    pub with: Option<String>,
}

impl AggSpec {
    /// `func(column)`, named `column` when it is the only aggregation of that column
    /// (callers rename duplicates), else as given.
    pub fn new(column: impl Into<String>, func: AggFunc, output: impl Into<String>) -> Self {
        AggSpec {
            column: column.into(),
            func,
            output: output.into(),
            with: None,
        }
    }

    /// `func(x, y)` of a pair function (`cov`, `corr`) as `output`.
    pub fn pair(
        x: impl Into<String>,
        func: AggFunc,
        y: impl Into<String>,
        output: impl Into<String>,
    ) -> Self {
        AggSpec {
            with: Some(y.into()),
            ..AggSpec::new(x, func, output)
        }
    }

    /// The input columns it reads: its column, and the second one of a pair.
    pub fn inputs(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.column.as_str()).chain(self.with.as_deref())
    }

    /// Checks that a pair function has its second column and no other function has one.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the aggregation.
    pub fn check_arity(&self) -> Result<()> {
        match (self.func.is_pair(), &self.with) {
            (true, None) => Err(Error::invalid(
                "agg",
                format!(
                    "{}({}) takes a second column: give it as a pair, e.g. ({}, {}, other)",
                    self.func.name(),
                    self.column,
                    self.column,
                    self.func.name()
                ),
            )),
            (false, Some(w)) => Err(Error::invalid(
                "agg",
                format!(
                    "{}({}) takes one column; '{w}' was given as a second",
                    self.func.name(),
                    self.column
                ),
            )),
            _ => Ok(()),
        }
    }
}

/// Kind of join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinType {
    /// Rows with a match on both sides.
    Inner,
    /// Every left row; right columns null where there is no match.
    Left,
    /// Every right row; left columns null where there is no match.
    Right,
    /// Every row of both sides.
    Outer,
    /// The left rows with a match, each once, with only the left columns (a left semi
    /// join; SQL's `EXISTS`). Optional: see [`FrameCapabilities::filter_joins`].
    Semi,
    /// The left rows without a match (a null key matches nothing, so its row is kept),
    /// with only the left columns (a left anti join; SQL's `NOT EXISTS`). Optional: see
    /// [`FrameCapabilities::filter_joins`].
    Anti,
}

impl JoinType {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            JoinType::Inner => "inner",
            JoinType::Left => "left",
            JoinType::Right => "right",
            JoinType::Outer => "outer",
            JoinType::Semi => "semi",
            JoinType::Anti => "anti",
        }
    }
}

/// How one pair of partitions is joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinAlgorithm {
    /// Build a hash table on the right side, probe with the left.
    Hash,
    /// Both sides are sorted ascending on the keys (nulls last): one merge pass.
    SortedMerge,
}

/// A join of two partitions.
///
/// The output holds the left columns, then (except for semi and anti joins, which give
/// the left columns only) the right columns that are not join keys of the same name. A key that has the same name on both sides appears once (coalesced for
/// right and outer joins); other clashing names get `suffixes`. Null keys never match, as
/// in pandas and SQL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JoinSpec {
    /// Key columns of the left side.
    pub left_on: Vec<String>,
    /// Key columns of the right side (same count and comparable types).
    pub right_on: Vec<String>,
    /// Kind of join.
    pub how: JoinType,
    /// Appended to clashing non-key names of the left and right side.
    pub suffixes: (String, String),
    /// Pairwise algorithm.
    pub algorithm: JoinAlgorithm,
}

impl JoinSpec {
    /// The key columns with the same name on both sides: the output keeps each once (from
    /// the left, or from either side for right and outer joins).
    pub fn shared_keys(&self) -> Vec<&String> {
        self.left_on
            .iter()
            .zip(&self.right_on)
            .filter(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect()
    }

    /// The output schema of this join over the two input schemas, or an error naming a
    /// missing key or mismatched key types.
    pub fn output_schema(
        &self,
        left: &arrow_schema::Schema,
        right: &arrow_schema::Schema,
    ) -> Result<SchemaRef> {
        if self.left_on.len() != self.right_on.len() || self.left_on.is_empty() {
            return Err(Error::invalid(
                "merge",
                format!(
                    "left_on has {} keys and right_on {}; give the same positive number",
                    self.left_on.len(),
                    self.right_on.len()
                ),
            ));
        }
        for (l, r) in self.left_on.iter().zip(&self.right_on) {
            let lt = left.field_with_name(l).map_err(|_| {
                Error::invalid("merge", format!("left side has no key column '{l}'"))
            })?;
            let rt = right.field_with_name(r).map_err(|_| {
                Error::invalid("merge", format!("right side has no key column '{r}'"))
            })?;
            if lt.data_type() != rt.data_type() {
                return Err(Error::invalid(
                    "merge",
                    format!(
                        "key '{l}' is {} on the left but '{r}' is {} on the right; cast one side",
                        lt.data_type(),
                        rt.data_type()
                    ),
                ));
            }
        }
        if matches!(self.how, JoinType::Semi | JoinType::Anti) {
            return Ok(Arc::new(arrow_schema::Schema::new(
                left.fields()
                    .iter()
                    .map(|f| Field::new(f.name(), f.data_type().clone(), true))
                    .collect::<Vec<_>>(),
            )));
        }
        let shared = |r: &str| {
            self.left_on
                .iter()
                .zip(&self.right_on)
                .any(|(a, b)| a == b && b == r)
        };
        let right_names: Vec<&str> = right
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|n| !shared(n))
            .collect();
        let mut fields = Vec::new();
        for f in left.fields() {
            let clash = right_names.contains(&f.name().as_str()) && !shared(f.name());
            let name = if clash {
                format!("{}{}", f.name(), self.suffixes.0)
            } else {
                f.name().clone()
            };
            // Outer joins introduce nulls on either side, so every output column is nullable.
            fields.push(Field::new(name, f.data_type().clone(), true));
        }
        for f in right.fields() {
            if shared(f.name()) {
                continue;
            }
            let clash = left.field_with_name(f.name()).is_ok();
            let name = if clash {
                format!("{}{}", f.name(), self.suffixes.1)
            } else {
                f.name().clone()
            };
            fields.push(Field::new(name, f.data_type().clone(), true));
        }
        Ok(Arc::new(arrow_schema::Schema::new(fields)))
    }
}

/// A sort key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SortKey {
    /// Column.
    pub column: String,
    /// Descending instead of ascending.
    pub descending: bool,
}

/// What a dataframe backend supports beyond the required primitives.
#[derive(Debug, Clone, Default)]
pub struct FrameCapabilities {
    /// Join algorithms it does *not* implement (core picks another where it can).
    pub missing_join_algorithms: Vec<JoinAlgorithm>,
    /// Aggregations it does *not* implement (for the quantiles, at any level).
    pub missing_aggregations: Vec<AggFunc>,
    /// Whether it implements the window functions ([`DataFrameBackend::window`] and
    /// [`DataFrameBackend::window_carry`]); core refuses a window on a backend without
    /// them when the plan is built.
    pub windows: bool,
    /// Whether [`DataFrameBackend::join`] implements [`JoinType::Semi`] and
    /// [`JoinType::Anti`]; without them core composes `semi_join`/`anti_join` from the
    /// other side's distinct keys and an inner or left join.
    pub filter_joins: bool,
    /// The stored forms [`DataFrameBackend::aggregate_partial_of`] takes in place of the
    /// plan's types (none by default).
    pub stored_forms: StoredForms,
}

/// Column forms a scan may hand a backend's [`DataFrameBackend::aggregate_partial_of`] as
/// stored, in place of the types the plan gives those columns: what a backend that reads
/// them saves is the conversion per row. Each is off by default, and every column then
/// arrives in the plan's type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StoredForms {
    /// Group key columns typed `Dictionary(Int32, Utf8 | LargeUtf8)` in place of the
    /// string columns a plan gives them (its key columns in the result may stay
    /// dictionaries: the engine casts them back to the plan's type). A scan that stores
    /// those strings dictionary-encoded (Parquet) then hands over the dictionary's keys,
    /// and the backend groups by the keys without reading a string per row.
    pub dictionary_keys: bool,
    /// `Decimal64(p, s)` columns (a decimal of at most 18 digits in 64 bits, as Parquet
    /// stores it in `INT64`) in place of the plan's `Decimal128(p, s)`, for columns that
    /// the program reads only as operands of `+`, `-` and `*` or passes through
    /// unchanged, and that no aggregation but `sum`, `mean` and `count` reads. Such a
    /// backend gives the same types as for the `Decimal128` column: the arithmetic's
    /// results and the sums' states are `Decimal128` ([`sum_type`]). A scan then hands
    /// over the stored 64-bit values without widening each to 128 bits, and the sums read
    /// half the bytes.
    pub narrow_decimals: bool,
    /// Group key columns typed `Utf8View` in place of the `Utf8`/`LargeUtf8` columns a
    /// plan gives them (cast back to the plan's type after the partial aggregation, as
    /// dictionaries are). A scan that stores those strings as plain pages (a writer's
    /// fallback when a chunk's distinct strings outgrow its dictionary page) then hands
    /// over a view per row into the decoded pages — strings of at most 12 bytes inline —
    /// instead of copying every string into one buffer.
    pub view_keys: bool,
}

impl FrameCapabilities {
    /// Whether the backend lacks `func`: the quantiles are compared by name, whatever
    /// their level.
    pub fn lacks(&self, func: AggFunc) -> bool {
        self.missing_aggregations
            .iter()
            .any(|m| m.name() == func.name())
    }
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
