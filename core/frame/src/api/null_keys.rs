//! Keys whose nulls are values: `groupby(dropna=False)`, `drop_duplicates` and `unique`.
//!
//! Backends drop rows whose key has a null from groups (pandas' default, and SQL's), so
//! the operations where pandas treats a missing key as a value of its own are composed
//! from that primitive: each key `k` is replaced by two columns that are never null — a
//! flag `k is null` and `k` with its nulls filled by a fixed value of its type — so that
//! equal keys, nulls included, have equal pairs and different keys different pairs (the
//! flag tells a filled null from the fill value itself). The flag sorts before the value,
//! so groups of null keys come after the others, as pandas puts them.

use crate::api::dataframe::DataFrame;
use crate::api::temp_names::fresh_in;
use crate::backend::AggSpec;
use crate::error::{Error, Result};
use crate::expr::{col, is_string, lit, when, Expr, Literal};
use crate::plan::GroupStrategy;
use crate::window::WindowFunc;
use arrow_schema::DataType;

/// Which of a set of duplicate rows `drop_duplicates` keeps (pandas' `keep`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The first in row order.
    First,
    /// The last in row order.
    Last,
    /// None of them: only rows without a duplicate stay.
    None,
}

/// The two never-null columns standing for key `k`: its null flag and its filled value.
pub(crate) struct SafeKey {
    flag: String,
    value: String,
}

/// A value of type `t` to fill a key's nulls with (any value will do: the flag tells it
/// apart from a real one).
fn filler(t: &DataType, key: &str) -> Result<Expr> {
    Ok(
        if t.is_numeric()
            || matches!(
                t,
                DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
            )
        {
            lit(0)
        } else if is_string(t)
            || matches!(
                t,
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView
            )
        {
            lit("")
        } else if *t == DataType::Boolean {
            lit(false)
        } else {
            return Err(Error::invalid(
            "keys with nulls",
            format!("key '{key}' of type {t} cannot be grouped with its nulls kept; cast it to a number or a string"),
        ));
        },
    )
}

/// `frame` with the null-safe columns of `keys` added, and their names in key order.
pub(crate) fn with_safe_keys(
    frame: &DataFrame,
    keys: &[String],
) -> Result<(DataFrame, Vec<SafeKey>)> {
    let safe = safe_names(&[frame], keys.len());
    Ok((add_safe_keys(frame, keys, &safe)?, safe))
}

/// Names for the null-safe columns of `n` keys that none of `frames` has.
fn safe_names(frames: &[&DataFrame], n: usize) -> Vec<SafeKey> {
    (0..n)
        .map(|i| SafeKey {
            flag: fresh_in(frames, &format!("null{i}")),
            value: fresh_in(frames, &format!("value{i}")),
        })
        .collect()
}

/// `frame` with the null-safe columns of `keys` added under the names `safe`.
fn add_safe_keys(frame: &DataFrame, keys: &[String], safe: &[SafeKey]) -> Result<DataFrame> {
    let schema = frame.schema();
    let mut out = frame.clone();
    for (k, s) in keys.iter().zip(safe) {
        let t = schema
            .field_with_name(k)
            .map_err(|_| Error::invalid("groupby", format!("no key column '{k}'")))?
            .data_type()
            .clone();
        out = out.with_column(&s.flag, col(k.as_str()).is_null())?;
        out = out.with_column(&s.value, col(k.as_str()).fill_null(filler(&t, k)?))?;
    }
    Ok(out)
}

/// The join of `left` and `right` where null keys match each other: on the null-safe
/// columns of the keys (the same names on both sides), as `(frame, join key names)`.
pub(crate) fn join_keeping_nulls(
    left: &DataFrame,
    right: &DataFrame,
    left_on: &[&str],
    right_on: &[&str],
    how: crate::backend::JoinType,
    suffixes: (&str, &str),
    strategy: crate::plan::JoinStrategy,
) -> Result<DataFrame> {
    let safe = safe_names(&[left, right], left_on.len());
    let own = |keys: &[&str]| keys.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let l = add_safe_keys(left, &own(left_on), &safe)?;
    let r = add_safe_keys(right, &own(right_on), &safe)?;
    let on = names(&safe);
    let on: Vec<&str> = on.iter().map(String::as_str).collect();
    l.join_node(&r, &on, &on, how, suffixes, strategy)
}

/// The null-safe columns' names, flag then value for each key.
pub(crate) fn names(safe: &[SafeKey]) -> Vec<String> {
    safe.iter()
        .flat_map(|s| [s.flag.clone(), s.value.clone()])
        .collect()
}

/// `groupby(keys, dropna=False).agg(specs)`: the keys (null for the null groups, which
/// sort last), then the aggregations.
pub(crate) fn aggregate_keeping_nulls(
    frame: &DataFrame,
    keys: &[String],
    specs: Vec<AggSpec>,
    strategy: Option<GroupStrategy>,
) -> Result<DataFrame> {
    let (with, safe) = with_safe_keys(frame, keys)?;
    let outputs: Vec<String> = specs.iter().map(|s| s.output.clone()).collect();
    let grouped = with.aggregate(names(&safe), specs, strategy)?;
    let mut exprs: Vec<(String, Expr)> = keys
        .iter()
        .zip(&safe)
        .map(|(k, s)| {
            (
                k.clone(),
                when(col(s.flag.as_str()))
                    .then(lit(Literal::Null))
                    .otherwise(col(s.value.as_str())),
            )
        })
        .collect();
    exprs.extend(outputs.into_iter().map(|o| (o.clone(), col(o))));
    grouped.select_exprs(exprs)
}

/// A grouped window where rows with null keys form groups of their own.
pub(crate) fn window_keeping_nulls(
    frame: &DataFrame,
    keys: &[String],
    column: &str,
    func: WindowFunc,
    output: &str,
) -> Result<DataFrame> {
    let (with, safe) = with_safe_keys(frame, keys)?;
    let out = with.window_over(names(&safe), column, func, output)?;
    let temps = names(&safe);
    out.drop(&temps.iter().map(String::as_str).collect::<Vec<_>>())
}

impl DataFrame {
    /// The rows that are not duplicates of an earlier row (`keep`: of a later row, or of
    /// any row) in the `subset` columns (every column when empty), in row order; nulls
    /// equal nulls, as in pandas' `drop_duplicates(subset, keep)`.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::Int64Array;
    /// use tessera_frame::{DataFrame, Keep};
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![
    ///         ("k", Arc::new(Int64Array::from(vec![Some(1), None, Some(1), None, Some(2)]))),
    ///         ("v", Arc::new(Int64Array::from(vec![10, 20, 30, 40, 50]))),
    ///     ],
    ///     2,
    /// )?;
    /// assert_eq!(df.drop_duplicates(&["k"], Keep::First)?.len()?, 3);
    /// assert_eq!(df.drop_duplicates(&["k"], Keep::None)?.len()?, 1);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A missing column, or a key type that cannot be compared (lists, structs).
    pub fn drop_duplicates(&self, subset: &[&str], keep: Keep) -> Result<DataFrame> {
        let all = self.columns();
        let keys: Vec<String> = if subset.is_empty() {
            all.clone()
        } else {
            subset.iter().map(|s| s.to_string()).collect()
        };
        for k in &keys {
            if !all.contains(k) {
                return Err(Error::invalid(
                    "drop_duplicates",
                    format!("no column '{k}'; columns: {}", all.join(", ")),
                ));
            }
        }
        let (with, safe) = with_safe_keys(self, &keys)?;
        let group = names(&safe);
        // A marker that is never null: its shift within the group is null exactly where
        // the row has no earlier (later) duplicate.
        let marker = fresh_in(&[&with], "row");
        let with = with.with_column(&marker, lit(true))?;
        let before = fresh_in(&[&with], "before");
        let after = fresh_in(&[&with], "after");
        let mut framed = with;
        let mut keep_if: Option<Expr> = None;
        if matches!(keep, Keep::First | Keep::None) {
            framed = framed.window_over(group.clone(), &marker, WindowFunc::Shift(1), &before)?;
            keep_if = Some(col(before.as_str()).is_null());
        }
        if matches!(keep, Keep::Last | Keep::None) {
            framed = framed.window_over(group.clone(), &marker, WindowFunc::Shift(-1), &after)?;
            let none_after = col(after.as_str()).is_null();
            keep_if = Some(match keep_if {
                Some(k) => k.and(none_after),
                None => none_after,
            });
        }
        let kept = framed.filter(keep_if.unwrap_or_else(|| lit(true)))?;
        kept.select(&all.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// The distinct rows, first occurrences in row order (pandas' `drop_duplicates()`,
    /// SQL `SELECT DISTINCT`).
    ///
    /// # Errors
    /// A column type that cannot be compared.
    pub fn unique(&self) -> Result<DataFrame> {
        self.drop_duplicates(&[], Keep::First)
    }
}
