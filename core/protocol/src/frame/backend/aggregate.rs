//! Aggregations: the functions ([`AggFunc`]), their partial-state layout, and an output
//! column's spec ([`AggSpec`]).

use std::fmt;
use std::sync::Arc;

use arrow_schema::{DataType, Field};

use crate::error::{Error, Result};
use crate::frame::expr::sum_type;

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
    /// The `q` quantile estimated from a t-digest ([`digest`](crate::frame::digest)): a state of
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
    /// | approx_quantile | `digest`: a List (Float64): a t-digest in [`digest`](crate::frame::digest)'s layout |
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
pub(super) fn mean_sum_type(t: &DataType) -> DataType {
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
