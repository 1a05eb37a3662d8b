//! Calendar arithmetic in expressions: a date or timestamp moved by an [`Interval`]
//! ([`Expr::Offset`]), the whole [`DateUnit`]s elapsed between two of them
//! ([`Expr::Elapsed`]), and truncation to the start of a unit ([`Expr::Truncate`]).
//!
//! The semantics are SQL's and pandas' (`date + interval '3' month`, `+ DateOffset`):
//! months move the calendar date and clamp to the month's last day (January 31 plus one
//! month is February 28 or 29), days move the calendar date, and the sub-day part is a
//! fixed duration. A date has no time of day, so only whole days move it. Timestamps with
//! a time zone move, and truncate, on the zone's wall clock; where a truncated wall-clock
//! time falls twice (the hour a clock goes back) the earlier instant is taken, and where it
//! does not exist (the hour a clock skips) evaluation fails naming the time.
//!
//! Typing lives here, next to the types, so that [`Expr::data_type`] stays a dispatcher.

use std::fmt;

use arrow_schema::{DataType, TimeUnit};

use super::expr::Expr;

const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// A calendar interval: months, days and a fixed duration in nanoseconds, kept apart
/// because neither a month nor (across a daylight-saving change) a day has a fixed length
/// (Arrow's `IntervalMonthDayNano`, SQL's `INTERVAL`).
///
/// ```
/// use tessera_core::frame::Interval;
/// assert_eq!(Interval::years(1), Interval::months(12));
/// assert_eq!(Interval::weeks(2).to_string(), "14d");
/// assert_eq!(Interval::new(1, 2, 3_600_000_000_000).to_string(), "1mo2d1h");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    /// Calendar months.
    pub months: i32,
    /// Calendar days.
    pub days: i32,
    /// A fixed duration, in nanoseconds.
    pub nanos: i64,
}

impl Interval {
    /// `months` months, `days` days and `nanos` nanoseconds.
    pub fn new(months: i32, days: i32, nanos: i64) -> Interval {
        Interval {
            months,
            days,
            nanos,
        }
    }
    /// `n` years (12 months each; saturating beyond `i32` months).
    pub fn years(n: i32) -> Interval {
        Interval::new(n.saturating_mul(12), 0, 0)
    }
    /// `n` calendar months.
    pub fn months(n: i32) -> Interval {
        Interval::new(n, 0, 0)
    }
    /// `n` weeks of 7 calendar days (saturating beyond `i32` days).
    pub fn weeks(n: i32) -> Interval {
        Interval::new(0, n.saturating_mul(7), 0)
    }
    /// `n` calendar days.
    pub fn days(n: i32) -> Interval {
        Interval::new(0, n, 0)
    }
    /// `n` hours (saturating beyond `i64` nanoseconds).
    pub fn hours(n: i64) -> Interval {
        Interval::new(0, 0, n.saturating_mul(3_600_000_000_000))
    }
    /// `n` minutes (saturating beyond `i64` nanoseconds).
    pub fn minutes(n: i64) -> Interval {
        Interval::new(0, 0, n.saturating_mul(60_000_000_000))
    }
    /// `n` seconds (saturating beyond `i64` nanoseconds).
    pub fn seconds(n: i64) -> Interval {
        Interval::new(0, 0, n.saturating_mul(1_000_000_000))
    }
    /// `n` nanoseconds.
    pub fn nanos(n: i64) -> Interval {
        Interval::new(0, 0, n)
    }
    /// The interval in the other direction (saturating at the types' ends, far beyond any
    /// representable date).
    pub fn negated(self) -> Interval {
        Interval::new(
            self.months.saturating_neg(),
            self.days.saturating_neg(),
            self.nanos.saturating_neg(),
        )
    }
}

impl fmt::Display for Interval {
    /// Polars' duration syntax: `1y2mo3d4h5m6s7ms8us9ns`, zero parts left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Interval::default() {
            return write!(f, "0d");
        }
        let (y, mo) = (self.months / 12, self.months % 12);
        let mut rest = self.nanos;
        let mut parts: Vec<(i64, &str)> = vec![(y.into(), "y"), (mo.into(), "mo")];
        parts.push((self.days.into(), "d"));
        for (size, name) in [
            (3_600_000_000_000i64, "h"),
            (60_000_000_000, "m"),
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ] {
            parts.push((rest / size, name));
            rest %= size;
        }
        for (n, name) in parts.into_iter().filter(|(n, _)| *n != 0) {
            write!(f, "{n}{name}")?;
        }
        Ok(())
    }
}

/// A unit of calendar time, for [`Expr::Truncate`] (every unit) and [`Expr::Elapsed`]
/// (the fixed-length units, weeks and shorter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DateUnit {
    /// A calendar year.
    Year,
    /// A quarter: January, April, July, October.
    Quarter,
    /// A calendar month.
    Month,
    /// A week starting on Monday (ISO 8601).
    Week,
    /// A day.
    Day,
    /// An hour.
    Hour,
    /// A minute.
    Minute,
    /// A second.
    Second,
    /// A millisecond.
    Millisecond,
    /// A microsecond.
    Microsecond,
    /// A nanosecond.
    Nanosecond,
}

impl DateUnit {
    /// Every unit, longest first.
    pub const ALL: [DateUnit; 11] = [
        DateUnit::Year,
        DateUnit::Quarter,
        DateUnit::Month,
        DateUnit::Week,
        DateUnit::Day,
        DateUnit::Hour,
        DateUnit::Minute,
        DateUnit::Second,
        DateUnit::Millisecond,
        DateUnit::Microsecond,
        DateUnit::Nanosecond,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            DateUnit::Year => "year",
            DateUnit::Quarter => "quarter",
            DateUnit::Month => "month",
            DateUnit::Week => "week",
            DateUnit::Day => "day",
            DateUnit::Hour => "hour",
            DateUnit::Minute => "minute",
            DateUnit::Second => "second",
            DateUnit::Millisecond => "millisecond",
            DateUnit::Microsecond => "microsecond",
            DateUnit::Nanosecond => "nanosecond",
        }
    }

    /// The unit's length in nanoseconds when it has a fixed one (weeks and shorter; a day
    /// counted as 24 hours, as pandas' `Timedelta` does).
    pub fn fixed_nanos(self) -> Option<i64> {
        Some(match self {
            DateUnit::Year | DateUnit::Quarter | DateUnit::Month => return None,
            DateUnit::Week => 7 * NANOS_PER_DAY,
            DateUnit::Day => NANOS_PER_DAY,
            DateUnit::Hour => 3_600_000_000_000,
            DateUnit::Minute => 60_000_000_000,
            DateUnit::Second => 1_000_000_000,
            DateUnit::Millisecond => 1_000_000,
            DateUnit::Microsecond => 1_000,
            DateUnit::Nanosecond => 1,
        })
    }

    /// Whether the unit is a day or longer (what a date can be truncated to).
    pub fn is_calendar(self) -> bool {
        matches!(
            self,
            DateUnit::Year | DateUnit::Quarter | DateUnit::Month | DateUnit::Week | DateUnit::Day
        )
    }
}

/// True for the types calendar arithmetic accepts: dates and timestamps.
pub fn is_temporal(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
    )
}

/// The type of `expr.offset_by(interval)` for an input of type `t`: the input's type.
///
/// # Errors
/// A text saying why: not a date or timestamp, or a date moved by part of a day.
pub fn offset_type(t: &DataType, interval: &Interval) -> Result<DataType, String> {
    match t {
        DataType::Timestamp(_, _) => Ok(t.clone()),
        DataType::Date32 | DataType::Date64 => {
            if interval.nanos % NANOS_PER_DAY != 0 {
                Err(format!(
                    "a {t} has no time of day, so it moves by whole days only, not by {interval}; cast it to a timestamp first"
                ))
            } else {
                Ok(t.clone())
            }
        }
        DataType::Null => Ok(DataType::Null),
        _ => Err(format!(
            "needs a date or timestamp, got {t}; parse the column with `parse_dates` or cast it"
        )),
    }
}

/// The type of `end.elapsed_since(start, unit)`: Int64.
///
/// # Errors
/// A text saying why: an input that is not a date or timestamp, timestamps in different
/// time zones, or a unit without a fixed length.
pub fn elapsed_type(end: &DataType, start: &DataType, unit: DateUnit) -> Result<DataType, String> {
    if unit.fixed_nanos().is_none() {
        return Err(format!(
            "a {} has no fixed length; count weeks or shorter units, or compare `year()`/`month()` parts",
            unit.name()
        ));
    }
    for t in [end, start] {
        if !is_temporal(t) && *t != DataType::Null {
            return Err(format!(
                "needs dates or timestamps, got {t}; parse the column with `parse_dates` or cast it"
            ));
        }
    }
    let zone = |t: &DataType| match t {
        DataType::Timestamp(_, z) => Some(z.clone()),
        _ => None,
    };
    if let (Some(a), Some(b)) = (zone(end), zone(start)) {
        if a.is_some() != b.is_some() {
            return Err(format!(
                "cannot subtract a timestamp without a time zone from one with a time zone ({end} and {start}); give both a zone"
            ));
        }
    }
    Ok(DataType::Int64)
}

/// The type of `expr.truncate(unit)`: the input's type.
///
/// # Errors
/// A text saying why: not a date or timestamp, or a date truncated to less than a day.
pub fn truncate_type(t: &DataType, unit: DateUnit) -> Result<DataType, String> {
    match t {
        DataType::Timestamp(_, _) | DataType::Null => Ok(t.clone()),
        DataType::Date32 | DataType::Date64 if unit.is_calendar() => Ok(t.clone()),
        DataType::Date32 | DataType::Date64 => Err(format!(
            "a {t} has no time of day to truncate to a {}; cast it to a timestamp first",
            unit.name()
        )),
        _ => Err(format!(
            "needs a date or timestamp, got {t}; parse the column with `parse_dates` or cast it"
        )),
    }
}

/// Nanoseconds in one tick of `unit`.
pub fn unit_nanos(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

impl Expr {
    /// This date or timestamp moved by `interval` (SQL `+ INTERVAL`, pandas
    /// `+ DateOffset`, Polars `dt.offset_by`); [`Interval::negated`] moves back.
    ///
    /// ```
    /// use tessera_core::frame::{col, Interval};
    /// let due = col("shipped").offset_by(Interval::days(30));
    /// assert_eq!(due.to_string(), "shipped.offset_by(30d)");
    /// ```
    pub fn offset_by(self, interval: Interval) -> Expr {
        Expr::Offset {
            expr: Box::new(self),
            interval,
        }
    }
    /// The whole `unit`s from `start` to this date or timestamp, rounded toward zero
    /// (Int64; negative when `start` is later), as Polars' `(end - start).dt.total_days()`.
    pub fn elapsed_since(self, start: impl Into<Expr>, unit: DateUnit) -> Expr {
        Expr::Elapsed {
            end: Box::new(self),
            start: Box::new(start.into()),
            unit,
        }
    }
    /// The start of the `unit` this date or timestamp falls in (SQL `date_trunc`, Polars
    /// `dt.truncate`), on the wall clock of its time zone.
    pub fn truncate(self, unit: DateUnit) -> Expr {
        Expr::Truncate {
            expr: Box::new(self),
            unit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_print_in_polars_duration_syntax() {
        assert_eq!(Interval::default().to_string(), "0d");
        assert_eq!(Interval::months(14).to_string(), "1y2mo");
        assert_eq!(Interval::days(-90).to_string(), "-90d");
        assert_eq!(
            Interval::nanos(3_723_004_005_006).to_string(),
            "1h2m3s4ms5us6ns"
        );
        assert_eq!(Interval::days(3).negated(), Interval::days(-3));
        assert_eq!(Interval::years(i32::MAX).months, i32::MAX);
    }

    #[test]
    fn typing_names_what_is_wrong() {
        let ts = DataType::Timestamp(TimeUnit::Microsecond, None);
        let utc = DataType::Timestamp(TimeUnit::Second, Some("UTC".into()));
        assert_eq!(
            offset_type(&DataType::Date32, &Interval::months(1)),
            Ok(DataType::Date32)
        );
        let e = offset_type(&DataType::Date32, &Interval::hours(3)).unwrap_err();
        assert!(e.contains("whole days") && e.contains("3h"), "{e}");
        assert!(offset_type(&DataType::Utf8, &Interval::days(1)).is_err());
        assert_eq!(
            elapsed_type(&ts, &DataType::Date32, DateUnit::Day),
            Ok(DataType::Int64)
        );
        let e = elapsed_type(&ts, &ts, DateUnit::Month).unwrap_err();
        assert!(e.contains("month has no fixed length"), "{e}");
        let e = elapsed_type(&ts, &utc, DateUnit::Day).unwrap_err();
        assert!(e.contains("time zone"), "{e}");
        assert_eq!(truncate_type(&utc, DateUnit::Hour), Ok(utc.clone()));
        let e = truncate_type(&DataType::Date32, DateUnit::Hour).unwrap_err();
        assert!(e.contains("no time of day"), "{e}");
        assert_eq!(DateUnit::Week.fixed_nanos(), Some(7 * NANOS_PER_DAY));
    }
}
