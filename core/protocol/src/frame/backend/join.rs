//! Joins of two partitions: the join type, the algorithm asked for, and the spec with its
//! output schema.

use std::sync::Arc;

use arrow_schema::{Field, SchemaRef};

use crate::error::{Error, Result};

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
    /// join; SQL's `EXISTS`). Optional: see [`FrameCapabilities::filter_joins`](crate::frame::backend::FrameCapabilities::filter_joins).
    Semi,
    /// The left rows without a match (a null key matches nothing, so its row is kept),
    /// with only the left columns (a left anti join; SQL's `NOT EXISTS`). Optional: see
    /// [`FrameCapabilities::filter_joins`](crate::frame::backend::FrameCapabilities::filter_joins).
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
