//! Window functions over ordered rows — `shift`, `diff`, cumulative sums and extremes,
//! forward/backward fill, rolling aggregates — over the whole frame or per group of key
//! columns (pandas' `df["v"].cumsum()` and `df.groupby("k")["v"].cumsum()`), in the
//! frame's row order.
//!
//! A window crosses partitions, so a backend computes it with a **carry**: the few rows of
//! the earlier partitions (the later ones, for the backward functions) that a partition's
//! results depend on, in the columns `keys…, column`:
//!
//! | function | carry per group |
//! |---|---|
//! | `shift(n)`, `diff(n)`, n > 0 | the last `n` rows |
//! | `shift(n)`, `diff(n)`, n < 0 | the first `-n` rows |
//! | `rolling(w, ..)` | the last `w - 1` rows |
//! | `cumsum`, `cumprod` | one row: the running total (in [`WindowFunc::output_type`]); a float total that is NaN as two rows whose sum or product is NaN (`inf, -inf`; `0, inf`), since a NaN row is a missing value the next partition skips |
//! | `cummin`, `cummax` | one row: the running extreme |
//! | `ffill` / `bfill` | one row: the last / first non-null value |
//!
//! The carry has the shape of its own input, so the carry of a carry followed by another
//! carry is again [`DataFrameBackend::window_carry`](super::DataFrameBackend::window_carry)
//! of their concatenation: core computes each partition's carry in parallel, folds them
//! in partition order (small batches), then runs every partition with its incoming carry
//! in parallel.
//!
//! Missing values follow pandas: nulls (and NaN, for floats) are skipped by the
//! cumulative functions and stay missing in their output; rolling windows count rows, and
//! a window with fewer than `min_periods` values that are not missing is null (so a window
//! of NaN alone is null, not NaN); rows whose key has a null are
//! null in a grouped window (pandas' `dropna=True`).

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::error::{Error, Result};
use crate::frame::expr::sum_type;

/// An aggregate over a rolling window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RollingAgg {
    /// Sum of the values.
    Sum,
    /// Mean of the values.
    Mean,
    /// Smallest value.
    Min,
    /// Largest value.
    Max,
}

impl RollingAgg {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            RollingAgg::Sum => "sum",
            RollingAgg::Mean => "mean",
            RollingAgg::Min => "min",
            RollingAgg::Max => "max",
        }
    }
}

/// A window function of one column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowFunc {
    /// The value `n` rows earlier (`n < 0`: later) in the group; null where there is none
    /// (pandas' `shift(n)`, SQL `LAG`/`LEAD`). Any type.
    Shift(i64),
    /// The value minus the one `n` rows earlier (`n < 0`: later); numeric, Int64 for
    /// integers, Float64 for floats, Decimal128(38, s) for decimals.
    Diff(i64),
    /// Running sum (Int64, UInt64, Float64, or Decimal128(38, s) as `sum`).
    CumSum,
    /// Running product (Int64, UInt64 or Float64 — decimals too; integers wrap on
    /// overflow as in NumPy).
    CumProd,
    /// Running minimum, in the input's type (any orderable type).
    CumMin,
    /// Running maximum, in the input's type (any orderable type).
    CumMax,
    /// Nulls replaced by the last non-null value before them (pandas' `ffill`).
    FillForward,
    /// Nulls replaced by the first non-null value after them (pandas' `bfill`).
    FillBackward,
    /// An aggregate over the window of the last `window` rows including this one (Float64);
    /// null where the window holds fewer than `min_periods` non-null values (pandas'
    /// `rolling(window, min_periods).sum()`, ...).
    Rolling {
        /// The aggregate.
        agg: RollingAgg,
        /// Rows in the window (at least 1).
        window: usize,
        /// Non-null values a result needs (1 ..= `window`).
        min_periods: usize,
    },
}

impl WindowFunc {
    /// Lower-case name, as the pandas method.
    pub fn name(self) -> String {
        match self {
            WindowFunc::Shift(n) => format!("shift({n})"),
            WindowFunc::Diff(n) => format!("diff({n})"),
            WindowFunc::CumSum => "cumsum".into(),
            WindowFunc::CumProd => "cumprod".into(),
            WindowFunc::CumMin => "cummin".into(),
            WindowFunc::CumMax => "cummax".into(),
            WindowFunc::FillForward => "ffill".into(),
            WindowFunc::FillBackward => "bfill".into(),
            WindowFunc::Rolling {
                agg,
                window,
                min_periods,
            } => format!(
                "rolling({window}, min_periods={min_periods}).{}",
                agg.name()
            ),
        }
    }

    /// Whether results depend on later rows (the carry comes from the later partitions).
    pub fn backward(self) -> bool {
        matches!(
            self,
            WindowFunc::Shift(i64::MIN..=-1)
                | WindowFunc::Diff(i64::MIN..=-1)
                | WindowFunc::FillBackward
        )
    }

    /// Rows per group the carry keeps for the row-based functions (`None`: one row of
    /// state).
    pub fn carry_rows(self) -> Option<usize> {
        match self {
            WindowFunc::Shift(n) | WindowFunc::Diff(n) => {
                Some(usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX))
            }
            WindowFunc::Rolling { window, .. } => Some(window.saturating_sub(1)),
            _ => None,
        }
    }

    /// The result's type for an input of type `t`.
    ///
    /// # Errors
    /// A text saying why the function does not apply, or why its parameters are wrong.
    pub fn output_type(self, t: &DataType) -> std::result::Result<DataType, String> {
        let numeric = t.is_numeric() || *t == DataType::Boolean;
        let orderable = numeric
            || matches!(
                t,
                DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
                    | DataType::Date32
                    | DataType::Date64
                    | DataType::Timestamp(_, _)
            );
        let need = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(format!("{} needs {what}, got {t}", self.name()))
            }
        };
        match self {
            WindowFunc::Shift(_) | WindowFunc::FillForward | WindowFunc::FillBackward => {
                Ok(t.clone())
            }
            WindowFunc::Diff(n) => {
                need(t.is_numeric(), "a numeric column")?;
                if n == 0 {
                    return Err("diff(0) is zero everywhere; give a non-zero lag".into());
                }
                Ok(match t {
                    DataType::Decimal128(_, s) => DataType::Decimal128(38, *s),
                    t if t.is_floating() || matches!(t, DataType::Decimal256(_, _)) => {
                        DataType::Float64
                    }
                    _ => DataType::Int64,
                })
            }
            WindowFunc::CumSum | WindowFunc::CumProd => {
                need(numeric, "a numeric or boolean column")?;
                Ok(if self == WindowFunc::CumSum {
                    // A running sum has the type of the sum.
                    sum_type(t)
                } else if t.is_floating()
                    || matches!(t, DataType::Decimal128(_, _) | DataType::Decimal256(_, _))
                {
                    DataType::Float64
                } else if t.is_unsigned_integer() {
                    DataType::UInt64
                } else {
                    DataType::Int64
                })
            }
            WindowFunc::CumMin | WindowFunc::CumMax => {
                need(orderable, "an orderable column (numbers, strings, dates)")?;
                Ok(t.clone())
            }
            WindowFunc::Rolling {
                window,
                min_periods,
                ..
            } => {
                need(numeric, "a numeric or boolean column")?;
                if window == 0 || min_periods == 0 || min_periods > window {
                    return Err(format!(
                        "rolling needs 1 <= min_periods <= window, got window {window} and min_periods {min_periods}"
                    ));
                }
                Ok(DataType::Float64)
            }
        }
    }

    /// The type of the carry's value column for an input of type `t`: the running state
    /// for the cumulative functions, the input's type for the others.
    pub fn carry_type(self, t: &DataType) -> DataType {
        match self {
            WindowFunc::CumSum | WindowFunc::CumProd => {
                self.output_type(t).unwrap_or_else(|_| t.clone())
            }
            _ => t.clone(),
        }
    }
}

/// One window function of a frame: `func(column)` over the rows of each group of `keys`
/// (all rows when there are none), in row order, into the column `output` (which replaces
/// a column of that name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WindowSpec {
    /// The group keys (none: one window over the whole frame).
    pub keys: Vec<String>,
    /// The function.
    pub func: WindowFunc,
    /// The input column.
    pub column: String,
    /// The output column.
    pub output: String,
}

impl WindowSpec {
    /// The schema of a partition after the window: the input's columns with `output`
    /// replaced, or appended when it is new.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming a missing column or a function that does not apply.
    pub fn output_schema(&self, input: &Schema) -> Result<SchemaRef> {
        let op = self.func.name();
        let missing = |c: &str| {
            let names: Vec<&str> = input.fields().iter().map(|f| f.name().as_str()).collect();
            Error::invalid(
                &op,
                format!("no column '{c}'; columns: {}", names.join(", ")),
            )
        };
        for k in &self.keys {
            input.field_with_name(k).map_err(|_| missing(k))?;
        }
        let t = input
            .field_with_name(&self.column)
            .map_err(|_| missing(&self.column))?
            .data_type();
        let out_t = self
            .func
            .output_type(t)
            .map_err(|why| Error::invalid(&op, format!("column '{}': {why}", self.column)))?;
        let out = Field::new(&self.output, out_t, true);
        let mut fields: Vec<Field> = input.fields().iter().map(|f| f.as_ref().clone()).collect();
        match fields.iter().position(|f| f.name() == &self.output) {
            Some(i) => fields[i] = out,
            None => fields.push(out),
        }
        Ok(Arc::new(Schema::new(fields)))
    }

    /// The carry's schema over `input`: the keys, then `column` in
    /// [`WindowFunc::carry_type`].
    ///
    /// # Errors
    /// [`Error::Invalid`] naming a missing column.
    pub fn carry_schema(&self, input: &Schema) -> Result<SchemaRef> {
        let mut fields = Vec::with_capacity(self.keys.len() + 1);
        for name in self.keys.iter().chain([&self.column]) {
            let f = input
                .field_with_name(name)
                .map_err(|_| Error::invalid(self.func.name(), format!("no column '{name}'")))?;
            let t = if *name == self.column {
                self.func.carry_type(f.data_type())
            } else {
                f.data_type().clone()
            };
            fields.push(Field::new(name, t, true));
        }
        Ok(Arc::new(Schema::new(fields)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_carries_follow_the_function() {
        let s = Schema::new(vec![
            Field::new("k", DataType::Utf8, true),
            Field::new("v", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ]);
        let spec = |func, column: &str, output: &str| WindowSpec {
            keys: vec!["k".into()],
            func,
            column: column.into(),
            output: output.into(),
        };
        let out = spec(WindowFunc::CumSum, "v", "v")
            .output_schema(&s)
            .unwrap();
        assert_eq!(out.fields().len(), 3);
        assert_eq!(out.field(1).data_type(), &DataType::Int64);
        let carry = spec(WindowFunc::CumSum, "v", "x").carry_schema(&s).unwrap();
        assert_eq!(carry.field(1).data_type(), &DataType::Int64);
        let out = spec(WindowFunc::Shift(-2), "s", "next")
            .output_schema(&s)
            .unwrap();
        assert_eq!(out.field(3).data_type(), &DataType::Utf8);
        assert!(WindowFunc::Shift(-2).backward() && !WindowFunc::Diff(3).backward());
        assert_eq!(WindowFunc::Diff(-3).carry_rows(), Some(3));
        let e = spec(WindowFunc::CumSum, "s", "x")
            .output_schema(&s)
            .unwrap_err();
        assert!(e.to_string().contains("cumsum needs a numeric"), "{e}");
        let e = spec(WindowFunc::CumMax, "nope", "x")
            .output_schema(&s)
            .unwrap_err();
        assert!(
            e.to_string().contains("no column 'nope'; columns: k, v, s"),
            "{e}"
        );
        let bad = WindowFunc::Rolling {
            agg: RollingAgg::Mean,
            window: 3,
            min_periods: 4,
        };
        let e = spec(bad, "v", "x").output_schema(&s).unwrap_err();
        assert!(e.to_string().contains("1 <= min_periods <= window"), "{e}");
    }
}
