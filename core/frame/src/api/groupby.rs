//! [`GroupBy`]: a frame grouped by key columns, and the aggregations, windows and
//! per-group heads that make it a frame again. Null keys (`dropna(false)`) go through
//! `crate::api::null_keys`.

use crate::api::dataframe::DataFrame;
use crate::api::reduce::named_aggs;
use crate::api::temp_names::{fresh_among, fresh_in};
use crate::backend::{AggFunc, AggSpec, Quantile};
use crate::error::{Error, Result};
use crate::expr::{col, Expr};
use crate::plan::GroupStrategy;
use crate::window::WindowFunc;

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
            let tmp = fresh_among(&mine, &format!("agg{i}"));
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
        let one = fresh_in(&[&self.frame], "one");
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
        let row = fresh_in(&[&self.frame], "row");
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        self.cumcount(&row)?
            .filter(crate::col(row.as_str()).lt(crate::lit(n)))?
            .drop(&[row.as_str()])
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

impl DataFrame {
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
}
