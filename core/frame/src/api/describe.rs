//! `describe()`: pandas' summary statistics of the numeric and datetime columns.
//!
//! Every statistic of every column is one aggregation spec of a single keyless aggregate,
//! so the frame is read once. A numeric column's statistics are Float64. A date or
//! timestamp column is described as pandas describes a `datetime64` column — count, mean,
//! min, percentiles and max as instants, no std — through its integer ticks: the mean and
//! the interpolated percentiles are computed on them and turned back into instants of the
//! column's unit and zone, shown as text (`2024-02-05 00:00:00`, `+01:00` appended for a
//! zoned column) because one column cannot hold both a count and instants, as Polars'
//! `describe` does too. Unlike pandas, zoned timestamps and dates are described as well.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, StringArray};
use arrow_schema::{DataType, TimeUnit};

use crate::api::computed::Computed;
use crate::api::dataframe::{batch_from_columns, DataFrame};
use crate::backend::{AggFunc, AggSpec, Quantile};
use crate::error::{Error, Result};
use crate::expr::col;

/// How a described column is read.
enum Kind {
    /// Float64 statistics.
    Numeric,
    /// Instants: the ticks' type (a timestamp of the column's unit and zone).
    Instant(DataType),
}

/// The described column's kind, or `None` when `describe` leaves it out.
fn kind_of(t: &DataType) -> Option<Kind> {
    Some(match t {
        t if t.is_numeric() => Kind::Numeric,
        DataType::Date32 => Kind::Instant(DataType::Timestamp(TimeUnit::Second, None)),
        DataType::Date64 => Kind::Instant(DataType::Timestamp(TimeUnit::Millisecond, None)),
        DataType::Timestamp(unit, tz) => Kind::Instant(DataType::Timestamp(*unit, tz.clone())),
        _ => return None,
    })
}

impl DataFrame {
    /// pandas' `describe()` for the numeric and datetime columns: count, mean, std, min,
    /// the 25%, 50% and 75% percentiles (exact, interpolated linearly as pandas does) and
    /// max, one row per statistic named in the `statistic` column. Numeric columns give
    /// Float64; date and timestamp columns give their statistics as instants written out
    /// (`2024-01-23 12:00:00`), with the count as a number and no std.
    ///
    /// ```
    /// # use tessera_cpu_frame as _; // links the `cpu` dataframe backend
    /// use std::sync::Arc;
    /// use tessera_frame::arrow_array::Float64Array;
    /// use tessera_frame::{DataFrame, Value};
    /// # fn main() -> tessera_core::Result<()> {
    /// let df = DataFrame::from_columns(
    ///     vec![("x", Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, 4.0])))],
    ///     2,
    /// )?;
    /// let d = df.describe()?;
    /// assert_eq!(d.value("statistic", 4)?, Value::Str("25%".into()));
    /// assert_eq!(d.value("x", 4)?, Value::Float(1.75));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A frame without numeric, date or timestamp columns.
    pub fn describe(&self) -> Result<Computed> {
        self.describe_with(&[0.25, 0.5, 0.75], false)
    }

    /// `describe()` with these percentiles (levels in `[0, 1]`, named like pandas: `0.9`
    /// is `90%`), exact or, with `approximate`, estimated from t-digests
    /// ([`AggFunc::ApproxQuantile`]): a state of a few kilobytes per column where the
    /// exact percentiles hold every value.
    ///
    /// # Errors
    /// A frame without numeric, date or timestamp columns, or a level outside `[0, 1]`.
    pub fn describe_with(&self, percentiles: &[f64], approximate: bool) -> Result<Computed> {
        let described: Vec<(String, Kind)> = self
            .schema()
            .fields()
            .iter()
            .filter_map(|f| Some((f.name().clone(), kind_of(f.data_type())?)))
            .collect();
        if described.is_empty() {
            return Err(Error::invalid(
                "describe",
                format!(
                    "the frame has no numeric, date or timestamp columns (columns: {})",
                    self.columns().join(", ")
                ),
            ));
        }
        let mut stats: Vec<(String, AggFunc)> =
            [AggFunc::Count, AggFunc::Mean, AggFunc::Std, AggFunc::Min]
                .into_iter()
                .map(|f| (f.name().to_string(), f))
                .collect();
        for &p in percentiles {
            let q = Quantile::new(p)?;
            let func = if approximate {
                AggFunc::ApproxQuantile(q)
            } else {
                AggFunc::Quantile(q)
            };
            stats.push((format!("{}%", p * 100.0), func));
        }
        stats.push(("max".to_string(), AggFunc::Max));
        // Instants are aggregated as their ticks, in a temporary Int64 column.
        let mut frame = self.clone();
        let mut specs = Vec::new();
        for (i, (c, kind)) in described.iter().enumerate() {
            let input = match kind {
                Kind::Numeric => c.clone(),
                Kind::Instant(ticks) => {
                    let tmp = crate::api::temp_names::fresh_in(&[&frame], &format!("ticks{i}"));
                    frame = frame.with_column(
                        &tmp,
                        col(c.as_str()).cast(ticks.clone()).cast(DataType::Int64),
                    )?;
                    tmp
                }
            };
            for (name, f) in &stats {
                if matches!(kind, Kind::Instant(_)) && *f == AggFunc::Std {
                    continue;
                }
                specs.push(AggSpec::new(&input, *f, format!("{c}\u{1}{name}")));
            }
        }
        let row = frame.aggregate(Vec::new(), specs, None)?.compute()?;
        let value = |c: &str, name: &str| row.value(&format!("{c}\u{1}{name}"), 0);
        let mut columns: Vec<(String, ArrayRef)> = vec![(
            "statistic".to_string(),
            Arc::new(StringArray::from(
                stats
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>(),
            )),
        )];
        for (c, kind) in &described {
            let column: ArrayRef = match kind {
                Kind::Numeric => {
                    let vals: Vec<Option<f64>> = stats
                        .iter()
                        .map(|(name, _)| value(c, name).map(|v| v.as_f64()))
                        .collect::<Result<_>>()?;
                    Arc::new(Float64Array::from(vals))
                }
                Kind::Instant(ticks) => {
                    let mut count = None;
                    let mut instants = Vec::with_capacity(stats.len());
                    for (name, f) in &stats {
                        instants.push(match f {
                            AggFunc::Std => None,
                            AggFunc::Count => {
                                count = value(c, name)?.as_f64();
                                None
                            }
                            _ => value(c, name)?.as_f64().map(|t| t.round() as i64),
                        });
                    }
                    let mut text = instants_as_text(instants, ticks)?;
                    text[0] = count.map(|n| format!("{n}"));
                    Arc::new(StringArray::from(text))
                }
            };
            columns.push((c.clone(), column));
        }
        let batch = batch_from_columns(
            columns
                .iter()
                .map(|(n, a)| (n.as_str(), a.clone()))
                .collect(),
        )?;
        Ok(Computed {
            schema: batch.schema(),
            batches: vec![batch],
        })
    }
}

/// Ticks of `ticks` (a timestamp type) written as pandas writes a `Timestamp`: date, a
/// space, the time, fractional seconds when there are any, the UTC offset when zoned.
fn instants_as_text(instants: Vec<Option<i64>>, ticks: &DataType) -> Result<Vec<Option<String>>> {
    let array = arrow_cast::cast(&(Arc::new(Int64Array::from(instants)) as ArrayRef), ticks)
        .map_err(|e| Error::arrow("describe", e))?;
    let options = arrow_cast::display::FormatOptions::default()
        .with_timestamp_format(Some("%Y-%m-%d %H:%M:%S%.f"))
        .with_timestamp_tz_format(Some("%Y-%m-%d %H:%M:%S%.f%:z"));
    let f = arrow_cast::display::ArrayFormatter::try_new(array.as_ref(), &options)
        .map_err(|e| Error::arrow("describe", e))?;
    (0..array.len())
        .map(|i| Ok(array.is_valid(i).then(|| f.value(i).to_string())))
        .collect()
}
