//! Ranks and pivots: `rank` (pandas' five tie methods, over the frame or per group),
//! `pivot_table` and `crosstab`.
//!
//! Both are composed from the engine's primitives, so every backend has them:
//!
//! - **rank** sorts the rows by the keys and the value (a sample sort, so it scales past
//!   one partition), numbers each row within its group and within its run of ties with
//!   window functions, and sorts back to the original order;
//! - **pivot_table** reads the distinct values of the `columns` column first (one small
//!   aggregation; the output's columns depend on them, as Dask requires known categories
//!   for the same reason), then computes one conditional aggregation per value in a single
//!   groupby.

use arrow_schema::DataType;

use crate::api::dataframe::DataFrame;
use crate::api::display::Value;
use crate::api::groupby::GroupBy;
use crate::api::temp_names::fresh_in;
use crate::backend::AggFunc;
use crate::error::{Error, Result};
use crate::expr::{col, lit, when, Expr, Literal};
use crate::window::WindowFunc;

/// How `rank` numbers tied values (pandas' `method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankMethod {
    /// The mean of the positions the ties take (Float64).
    Average,
    /// The lowest position of the ties.
    Min,
    /// The highest position of the ties.
    Max,
    /// Positions in row order among ties.
    First,
    /// Like `Min`, but ranks increase by one between distinct values.
    Dense,
}

impl DataFrame {
    /// The rank of each row's `column` value among all rows (see [`GroupBy::rank`]),
    /// into the column `output`.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::Int64Array;
    /// use tessera_frame::{DataFrame, RankMethod, Value};
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![("v", Arc::new(Int64Array::from(vec![30, 10, 30, 20])))],
    ///     2,
    /// )?;
    /// let r = df.rank("v", RankMethod::Average, false, "r")?.compute()?;
    /// assert_eq!(r.value("r", 0)?, Value::Float(3.5));
    /// assert_eq!(r.value("r", 1)?, Value::Float(1.0));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A missing column, or one that cannot be sorted.
    pub fn rank(
        &self,
        column: &str,
        method: RankMethod,
        descending: bool,
        output: &str,
    ) -> Result<DataFrame> {
        rank(self, &[], column, method, descending, output)
    }

    /// pandas' `pivot_table(values=, index=, columns=, aggfunc=)`: one row per `index`
    /// key (sorted), one column per distinct value of `columns` (sorted, named by the
    /// value), each holding `func` of `values` over the rows with that index key and
    /// that value; null where there are none. Null `columns` values are left out, as in
    /// pandas. The distinct values are computed first.
    ///
    /// # Errors
    /// Missing columns, a function that does not take `values`' type, or more than 1,000
    /// distinct values of `columns` (a pivot that wide is rarely meant).
    pub fn pivot_table(
        &self,
        index: &[&str],
        columns: &str,
        values: &str,
        func: AggFunc,
    ) -> Result<DataFrame> {
        pivot(self, index, columns, Some((values, func)))
    }

    /// pandas' `crosstab(df[index], df[columns])`: the number of rows for each pair of
    /// an `index` key and a `columns` value (0 where there are none).
    ///
    /// # Errors
    /// As [`pivot_table`](DataFrame::pivot_table).
    pub fn crosstab(&self, index: &[&str], columns: &str) -> Result<DataFrame> {
        pivot(self, index, columns, None)
    }
}

impl GroupBy {
    /// The rank of each row's `column` value within its group (1 for the smallest, or
    /// the largest with `descending`), ties numbered by `method`, into the column
    /// `output` of the whole frame in its row order (pandas'
    /// `df.groupby(keys)[column].rank(method=, ascending=)`); null where the value (or,
    /// unless [`dropna(false)`](GroupBy::dropna), the key) is missing. Average ranks are
    /// Float64, the others Int64.
    ///
    /// # Errors
    /// A missing column, or one that cannot be sorted.
    pub fn rank(
        &self,
        column: &str,
        method: RankMethod,
        descending: bool,
        output: &str,
    ) -> Result<DataFrame> {
        let keys: Vec<&str> = self.keys.iter().map(String::as_str).collect();
        if self.dropna {
            rank(&self.frame, &keys, column, method, descending, output)
        } else {
            // Null keys rank among themselves: rank on the keys' null-safe stand-ins.
            let owned: Vec<String> = self.keys.clone();
            let (with, safe) = crate::api::null_keys::with_safe_keys(&self.frame, &owned)?;
            let safe = crate::api::null_keys::names(&safe);
            let names: Vec<&str> = safe.iter().map(String::as_str).collect();
            let ranked = rank(&with, &names, column, method, descending, output)?;
            ranked.drop(&names)
        }
    }
}

fn rank(
    frame: &DataFrame,
    keys: &[&str],
    column: &str,
    method: RankMethod,
    descending: bool,
    output: &str,
) -> Result<DataFrame> {
    let schema = frame.schema();
    let t = schema
        .field_with_name(column)
        .map_err(|_| {
            Error::invalid(
                "rank",
                format!(
                    "no column '{column}'; columns: {}",
                    frame.columns().join(", ")
                ),
            )
        })?
        .data_type()
        .clone();
    let tmp = |stem: &str, f: &DataFrame| fresh_in(&[f], stem);
    // The original row order, to restore at the end.
    let one = tmp("one", frame);
    let mut f = frame.with_column(&one, lit(1i64))?;
    let row = tmp("row", &f);
    f = f.window(&one, WindowFunc::CumSum, &row)?;
    // The value to rank, with NaN as missing (pandas' rule) so it sorts with the nulls.
    let value = tmp("value", &f);
    let v = if t.is_floating() {
        when(col(column).is_nan())
            .then(lit(Literal::Null))
            .otherwise(col(column))
    } else {
        col(column)
    };
    f = f.with_column(&value, v)?;
    let mut by: Vec<&str> = keys.to_vec();
    by.extend([value.as_str(), row.as_str()]);
    let mut ascending = vec![true; keys.len()];
    ascending.extend([!descending, true]);
    f = f.sort_values(&by, &ascending)?;
    let mut ties: Vec<&str> = keys.to_vec();
    ties.push(value.as_str());
    let ties: Vec<String> = ties.iter().map(|s| s.to_string()).collect();
    let keys: Vec<String> = keys.iter().map(|s| s.to_string()).collect();
    // Position within the group, in sorted order.
    let pos = tmp("pos", &f);
    f = f.window_over(keys.clone(), &one, WindowFunc::CumSum, &pos)?;
    let low = tmp("low", &f);
    let high = tmp("high", &f);
    let rank: Expr = match method {
        RankMethod::First => col(pos.as_str()),
        RankMethod::Min | RankMethod::Average | RankMethod::Max => {
            if method != RankMethod::Max {
                f = f.window_over(ties.clone(), &pos, WindowFunc::CumMin, &low)?;
            }
            if method != RankMethod::Min {
                // The last position of each run of ties, filled back over the run.
                let next = tmp("next", &f);
                f = f.window_over(ties.clone(), &one, WindowFunc::Shift(-1), &next)?;
                let last = tmp("last", &f);
                f = f.with_column(
                    &last,
                    when(col(next.as_str()).is_null())
                        .then(col(pos.as_str()))
                        .otherwise(lit(Literal::Null)),
                )?;
                f = f.window_over(ties.clone(), &last, WindowFunc::FillBackward, &high)?;
            }
            match method {
                RankMethod::Min => col(low.as_str()),
                RankMethod::Max => col(high.as_str()),
                _ => (col(low.as_str()) + col(high.as_str())).cast(DataType::Float64) / lit(2.0),
            }
        }
        RankMethod::Dense => {
            let before = tmp("before", &f);
            f = f.window_over(ties.clone(), &one, WindowFunc::Shift(1), &before)?;
            let new = tmp("new", &f);
            f = f.with_column(
                &new,
                when(col(before.as_str()).is_null())
                    .then(lit(1i64))
                    .otherwise(lit(0i64)),
            )?;
            f = f.window_over(keys.clone(), &new, WindowFunc::CumSum, &low)?;
            col(low.as_str())
        }
    };
    let rank = when(col(value.as_str()).is_null())
        .then(lit(Literal::Null))
        .otherwise(rank);
    f = f.with_column(output, rank)?;
    f = f.sort_values(&[row.as_str()], &[true])?;
    let mut keep: Vec<String> = frame.columns();
    if !keep.iter().any(|c| c == output) {
        keep.push(output.to_string());
    }
    f.select(&keep.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `column == v` for a value read back from that column.
fn equals(column: &str, v: &Value) -> Result<Expr> {
    let c = col(column);
    Ok(match v {
        Value::Bool(b) => c.eq(lit(*b)),
        Value::Int(i) => c.eq(lit(*i)),
        Value::UInt(u) => c.eq(lit(i64::try_from(*u).map_err(|_| {
            Error::invalid(
                "pivot_table",
                format!("the value {u} of '{column}' does not fit a 64-bit literal"),
            )
        })?)),
        Value::Float(x) => c.eq(lit(*x)),
        Value::Str(s) => c.eq(lit(s.as_str())),
        Value::Date(d) => c.cast(DataType::Int32).eq(lit(*d)),
        Value::TimestampMicros(t) => c
            .cast(DataType::Timestamp(
                arrow_schema::TimeUnit::Microsecond,
                None,
            ))
            .cast(DataType::Int64)
            .eq(lit(*t)),
        Value::Decimal { unscaled, scale } => {
            let digits = unscaled
                .unsigned_abs()
                .checked_ilog10()
                .map_or(1, |d| d as u8 + 1)
                .max(scale.unsigned_abs() + 1)
                .min(38);
            c.cast(DataType::Decimal128(38, *scale))
                .eq(lit(v.to_string()).cast(DataType::Decimal128(digits.max(1), *scale)))
        }
        Value::Null => c.is_null(),
    })
}

/// The display form of a pivot value, as a column name.
fn column_name(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        other => other.to_string(),
    }
}

fn pivot(
    frame: &DataFrame,
    index: &[&str],
    columns: &str,
    values: Option<(&str, AggFunc)>,
) -> Result<DataFrame> {
    const MOST: usize = 1000;
    let distinct = frame
        .select(&[columns])?
        .filter(col(columns).is_not_null())?
        .drop_duplicates(&[], crate::Keep::First)?
        .sort_values(&[columns], &[true])?
        .compute()?;
    if distinct.num_rows() > MOST {
        return Err(Error::invalid(
            "pivot_table",
            format!(
                "'{columns}' has {} distinct values; a pivot makes a column of each (at most {MOST}); filter or bin it first",
                distinct.num_rows()
            ),
        ));
    }
    let group = frame.groupby(index)?;
    let mut aggs: Vec<(Expr, AggFunc, String)> = Vec::new();
    let mut outputs: Vec<(String, String, String)> = Vec::new();
    for r in 0..distinct.num_rows() {
        let v = distinct.value(columns, r)?;
        let name = column_name(&v);
        let matches = equals(columns, &v)?;
        let agg_name = format!("\u{1}agg{r}");
        let count_name = format!("\u{1}count{r}");
        match values {
            Some((values, func)) => {
                aggs.push((
                    when(matches.clone())
                        .then(col(values))
                        .otherwise(lit(Literal::Null)),
                    func,
                    agg_name.clone(),
                ));
                aggs.push((
                    when(matches).then(lit(1i64)).otherwise(lit(Literal::Null)),
                    AggFunc::Count,
                    count_name.clone(),
                ));
            }
            None => aggs.push((
                when(matches).then(lit(1i64)).otherwise(lit(Literal::Null)),
                AggFunc::Count,
                agg_name.clone(),
            )),
        }
        outputs.push((name, agg_name, count_name));
    }
    let specs: Vec<(Expr, AggFunc, &str)> = aggs
        .iter()
        .map(|(e, f, n)| (e.clone(), *f, n.as_str()))
        .collect();
    let grouped = group.agg_exprs(&specs)?;
    let mut exprs: Vec<(String, Expr)> = index.iter().map(|k| (k.to_string(), col(*k))).collect();
    for (name, agg, count) in outputs {
        let e = if values.is_some() {
            // No row with this value in the group: null, whatever the function gives
            // for nothing (a sum gives 0).
            when(col(count.as_str()).eq(lit(0i64)))
                .then(lit(Literal::Null))
                .otherwise(col(agg.as_str()))
        } else {
            col(agg.as_str())
        };
        exprs.push((name, e));
    }
    grouped.select_exprs(exprs)
}
