//! pandas' `merge` parameters beyond the join type: `suffixes`, `indicator`, and whether
//! null keys match each other.
//!
//! All three are composed in core from the backend's join, so every backend has them: the
//! suffixes are the join spec's; the indicator is two marker columns, one per side, that
//! are null exactly where a row had no partner; null-key matching joins on the keys'
//! null-safe columns ([`crate::api::null_keys`]) and rebuilds the key columns afterwards.

use crate::api::dataframe::DataFrame;
use crate::api::null_keys::{fresh_in, join_keeping_nulls};
use crate::backend::{JoinSpec, JoinType};
use crate::error::Result;
use crate::expr::{coalesce, col, lit, when, Expr};
use crate::plan::JoinStrategy;

/// How [`DataFrame::merge_with`] joins.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeOptions {
    how: JoinType,
    suffixes: (String, String),
    indicator: Option<String>,
    nulls_equal: bool,
    strategy: JoinStrategy,
}

impl MergeOptions {
    /// A join of type `how`, with pandas' defaults: suffixes `_x` and `_y`, no indicator,
    /// null keys matching nothing (SQL's rule), the strategy chosen at run time.
    pub fn new(how: JoinType) -> MergeOptions {
        MergeOptions {
            how,
            suffixes: ("_x".into(), "_y".into()),
            indicator: None,
            nulls_equal: false,
            strategy: JoinStrategy::Auto,
        }
    }

    /// What is appended to the names of non-key columns both sides have.
    pub fn suffixes(mut self, left: &str, right: &str) -> MergeOptions {
        self.suffixes = (left.into(), right.into());
        self
    }

    /// Adds a last column `name` saying where each row came from: `"both"`,
    /// `"left_only"` or `"right_only"` (pandas' `indicator=True` names it `_merge`).
    pub fn indicator(mut self, name: &str) -> MergeOptions {
        self.indicator = Some(name.into());
        self
    }

    /// With `true`, a null key matches a null key (pandas' `merge` does this by default;
    /// Polars calls it `nulls_equal`); with `false` null keys match nothing.
    pub fn nulls_equal(mut self, yes: bool) -> MergeOptions {
        self.nulls_equal = yes;
        self
    }

    /// Forces how the partitions meet.
    pub fn strategy(mut self, strategy: JoinStrategy) -> MergeOptions {
        self.strategy = strategy;
        self
    }
}

impl DataFrame {
    /// pandas' `merge(other, left_on=, right_on=, how=, suffixes=, indicator=)`, with
    /// null-key matching as an option ([`MergeOptions`]). The columns are those of
    /// [`merge_on`](DataFrame::merge_on) (with the chosen suffixes), then the indicator.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::{Int64Array, StringArray};
    /// use tessera_frame::{DataFrame, JoinType, MergeOptions, Value};
    /// # fn main() -> tessera_core::Result<()> {
    /// let left = DataFrame::from_columns(
    ///     vec![("k", Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])))],
    ///     2,
    /// )?;
    /// let right = DataFrame::from_columns(
    ///     vec![
    ///         ("k", Arc::new(Int64Array::from(vec![Some(1), None]))),
    ///         ("name", Arc::new(StringArray::from(vec!["one", "none"]))),
    ///     ],
    ///     1,
    /// )?;
    /// let options = MergeOptions::new(JoinType::Left).indicator("_merge").nulls_equal(true);
    /// let out = left.merge_with(&right, &["k"], &["k"], options)?.sort_values(&["k"], &[true])?;
    /// let out = out.compute()?;
    /// assert_eq!(out.value("name", 2)?, Value::Str("none".into()));
    /// assert_eq!(out.value("_merge", 1)?, Value::Str("left_only".into()));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`merge_on`](DataFrame::merge_on).
    pub fn merge_with(
        &self,
        other: &DataFrame,
        left_on: &[&str],
        right_on: &[&str],
        options: MergeOptions,
    ) -> Result<DataFrame> {
        self.same_backend("merge", "the right frame", other)?;
        let (mut left, mut right) = self.string_keys_as_text(other, left_on, right_on)?;
        let suffixes = (options.suffixes.0.as_str(), options.suffixes.1.as_str());
        // The columns of the plain merge, which the result keeps in this order.
        let plain = JoinSpec {
            left_on: left_on.iter().map(|s| s.to_string()).collect(),
            right_on: right_on.iter().map(|s| s.to_string()).collect(),
            how: options.how,
            suffixes: options.suffixes.clone(),
            algorithm: crate::backend::JoinAlgorithm::Hash,
        }
        .output_schema(&left.schema(), &right.schema())?;
        let marks = options.indicator.as_ref().map(|_| {
            (
                fresh_in(&[&left, &right], "left"),
                fresh_in(&[&left, &right], "right"),
            )
        });
        if let Some((l, r)) = &marks {
            left = left.with_column(l, lit(true))?;
            right = right.with_column(r, lit(true))?;
        }
        let joined = if options.nulls_equal {
            join_keeping_nulls(
                &left,
                &right,
                left_on,
                right_on,
                options.how,
                suffixes,
                options.strategy,
            )?
        } else {
            left.join_node(
                &right,
                left_on,
                right_on,
                options.how,
                suffixes,
                options.strategy,
            )?
        };
        if !options.nulls_equal && marks.is_none() {
            return Ok(joined);
        }
        let mut exprs: Vec<(String, Expr)> = plain
            .fields()
            .iter()
            .map(|f| {
                let name = f.name();
                // A key both sides name alike: one column, from whichever side has it.
                let shared = options.nulls_equal
                    && left_on
                        .iter()
                        .zip(right_on)
                        .any(|(l, r)| l == r && *l == name);
                let e = if shared {
                    coalesce([
                        col(format!("{name}{}", suffixes.0)),
                        col(format!("{name}{}", suffixes.1)),
                    ])
                } else {
                    col(name.as_str())
                };
                (name.clone(), e)
            })
            .collect();
        if let (Some(name), Some((l, r))) = (&options.indicator, &marks) {
            exprs.push((
                name.clone(),
                when(col(l.as_str()).is_null())
                    .then(lit("right_only"))
                    .when(col(r.as_str()).is_null())
                    .then(lit("left_only"))
                    .otherwise(lit("both")),
            ));
        }
        joined.select_exprs(exprs)
    }
}
