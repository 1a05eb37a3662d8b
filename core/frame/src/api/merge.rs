//! pandas' `merge` parameters beyond the join type: `suffixes`, `indicator`, and whether
//! null keys match each other.
//!
//! All three are composed in core from the backend's join, so every backend has them: the
//! suffixes are the join spec's; the indicator is two marker columns, one per side, that
//! are null exactly where a row had no partner; null-key matching joins on the keys'
//! null-safe columns ([`crate::api::null_keys`]) and rebuilds the key columns afterwards.

use crate::api::dataframe::DataFrame;
use crate::api::null_keys::join_keeping_nulls;
use crate::api::temp_names::{fresh_among, fresh_in};
use arrow_schema::DataType;

use crate::backend::{AggFunc, JoinAlgorithm, JoinSpec, JoinType};
use crate::error::{Error, Result};
use crate::expr::{coalesce, col, is_string, lit, when, Expr};
use crate::plan::JoinStrategy;
use crate::plan::Node;

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

impl DataFrame {
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
        let fresh = |base: &str| fresh_among(&mine, base);
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
}
