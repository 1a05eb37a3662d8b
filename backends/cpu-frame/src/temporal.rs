//! Calendar kernels: a date or timestamp moved by an interval (arrow's date arithmetic),
//! the whole units elapsed between two of them, and truncation to the start of a unit.
//!
//! Truncation works on the wall clock of the timestamp's zone (`chrono` and arrow's
//! `Tz`): a timestamp is turned into local date and time, truncated there and turned back,
//! so a day in `Europe/Berlin` starts at local midnight whatever the UTC offset. Elapsed
//! time is computed exactly in 128-bit nanoseconds, so no unit or input range overflows
//! before the final Int64.

use std::str::FromStr;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, IntervalMonthDayNanoType, TimestampMicrosecondType,
    TimestampMillisecondType, TimestampNanosecondType, TimestampSecondType,
};
use arrow_array::{Array, ArrayRef, Int64Array, IntervalMonthDayNanoArray, PrimitiveArray, Scalar};
use arrow_schema::{DataType, TimeUnit};
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Timelike};
use tessera_core::frame::temporal::unit_nanos;
use tessera_core::frame::{DateUnit, Interval};
use tessera_core::{Error, Result};

const NANOS_PER_DAY: i128 = 86_400_000_000_000;
/// Days from 0001-01-01 (chrono's day 1 of the common era) to 1970-01-01.
const EPOCH_FROM_CE: i32 = 719_163;

/// `a` moved by `interval`, in `a`'s type.
pub(crate) fn offset(a: &ArrayRef, interval: Interval) -> Result<ArrayRef> {
    if *a.data_type() == DataType::Null {
        return Ok(a.clone());
    }
    let value =
        IntervalMonthDayNanoType::make_value(interval.months, interval.days, interval.nanos);
    let delta = Scalar::new(IntervalMonthDayNanoArray::from(vec![value]));
    arrow_arith::numeric::add(a, &delta).map_err(|e| Error::arrow("offset_by", e))
}

/// Each value of a date or timestamp column as nanoseconds since the epoch (dates at
/// midnight UTC), exactly.
fn nanos_of(a: &ArrayRef) -> Result<Vec<Option<i128>>> {
    fn scaled<T: arrow_array::ArrowPrimitiveType>(a: &ArrayRef, scale: i128) -> Vec<Option<i128>>
    where
        T::Native: Into<i128>,
    {
        a.as_primitive::<T>()
            .iter()
            .map(|v| v.map(|v| v.into() * scale))
            .collect()
    }
    Ok(match a.data_type() {
        DataType::Date32 => scaled::<Date32Type>(a, NANOS_PER_DAY),
        DataType::Date64 => scaled::<Date64Type>(a, 1_000_000),
        DataType::Timestamp(TimeUnit::Second, _) => scaled::<TimestampSecondType>(a, 1_000_000_000),
        DataType::Timestamp(TimeUnit::Millisecond, _) => {
            scaled::<TimestampMillisecondType>(a, 1_000_000)
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            scaled::<TimestampMicrosecondType>(a, 1_000)
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => scaled::<TimestampNanosecondType>(a, 1),
        DataType::Null => vec![None; a.len()],
        t => {
            return Err(Error::invalid(
                "elapsed_since",
                format!("needs dates or timestamps, got {t}"),
            ))
        }
    })
}

/// The whole `unit`s from `start` to `end` (equal lengths), rounded toward zero.
pub(crate) fn elapsed(end: &ArrayRef, start: &ArrayRef, unit: DateUnit) -> Result<ArrayRef> {
    let size = i128::from(unit.fixed_nanos().ok_or_else(|| {
        Error::invalid(
            "elapsed_since",
            format!("a {} has no fixed length", unit.name()),
        )
    })?);
    let (e, s) = (nanos_of(end)?, nanos_of(start)?);
    let out = e
        .into_iter()
        .zip(s)
        .map(|(e, s)| match (e, s) {
            (Some(e), Some(s)) => i64::try_from((e - s) / size).map(Some).map_err(|_| {
                Error::invalid(
                    "elapsed_since",
                    format!(
                        "{} {}s do not fit in Int64; count a longer unit",
                        (e - s) / size,
                        unit.name()
                    ),
                )
            }),
            _ => Ok(None),
        })
        .collect::<Result<Int64Array>>()?;
    Ok(Arc::new(out))
}

/// The first day of the `unit` (a day or longer) that `date` falls in.
fn truncate_date(date: NaiveDate, unit: DateUnit) -> NaiveDate {
    let first_of = |month: u32| NaiveDate::from_ymd_opt(date.year(), month, 1).unwrap_or(date);
    match unit {
        DateUnit::Year => first_of(1),
        DateUnit::Quarter => first_of((date.month0() / 3) * 3 + 1),
        DateUnit::Month => first_of(date.month()),
        DateUnit::Week => {
            date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday()))
        }
        _ => date,
    }
}

/// The start of the `unit` that the wall-clock time `t` falls in.
fn truncate_naive(t: NaiveDateTime, unit: DateUnit) -> NaiveDateTime {
    let (h, m, s, ns) = (t.hour(), t.minute(), t.second(), t.nanosecond());
    let time = match unit {
        DateUnit::Hour => NaiveTime::from_hms_opt(h, 0, 0),
        DateUnit::Minute => NaiveTime::from_hms_opt(h, m, 0),
        DateUnit::Second => NaiveTime::from_hms_opt(h, m, s),
        DateUnit::Millisecond => NaiveTime::from_hms_nano_opt(h, m, s, ns - ns % 1_000_000),
        DateUnit::Microsecond => NaiveTime::from_hms_nano_opt(h, m, s, ns - ns % 1_000),
        DateUnit::Nanosecond => return t,
        _ => return truncate_date(t.date(), unit).and_time(NaiveTime::MIN),
    };
    t.date().and_time(time.unwrap_or(NaiveTime::MIN))
}

fn day_to_date(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days.checked_add(EPOCH_FROM_CE)?)
}

fn date_to_day(d: NaiveDate) -> i32 {
    d.num_days_from_ce() - EPOCH_FROM_CE
}

fn out_of_range(v: impl std::fmt::Display) -> Error {
    Error::invalid(
        "truncate",
        format!("the value {v} is outside the calendar's range (years -262143 to 262142)"),
    )
}

/// `a` truncated to the start of `unit`, in `a`'s type.
pub(crate) fn truncate(a: &ArrayRef, unit: DateUnit) -> Result<ArrayRef> {
    match a.data_type().clone() {
        DataType::Null => Ok(a.clone()),
        DataType::Date32 => {
            let out: PrimitiveArray<Date32Type> =
                a.as_primitive::<Date32Type>().try_unary(|d| {
                    let date = day_to_date(d).ok_or_else(|| out_of_range(d))?;
                    Ok::<_, Error>(date_to_day(truncate_date(date, unit)))
                })?;
            Ok(Arc::new(out))
        }
        DataType::Date64 => {
            const MS_PER_DAY: i64 = 86_400_000;
            let out: PrimitiveArray<Date64Type> =
                a.as_primitive::<Date64Type>().try_unary(|ms| {
                    let days =
                        i32::try_from(ms.div_euclid(MS_PER_DAY)).map_err(|_| out_of_range(ms))?;
                    let date = day_to_date(days).ok_or_else(|| out_of_range(ms))?;
                    Ok::<_, Error>(i64::from(date_to_day(truncate_date(date, unit))) * MS_PER_DAY)
                })?;
            Ok(Arc::new(out))
        }
        DataType::Timestamp(tu, zone) => {
            let tz = zone
                .as_deref()
                .map(arrow_array::timezone::Tz::from_str)
                .transpose()
                .map_err(|e| Error::arrow("truncate", e))?;
            let tick = unit_nanos(&tu);
            let per_second = 1_000_000_000 / tick;
            let one = |v: i64| -> Result<i64> {
                let secs = v.div_euclid(per_second);
                let sub = u32::try_from(v.rem_euclid(per_second) * tick).unwrap_or(0);
                let utc = DateTime::from_timestamp(secs, sub)
                    .ok_or_else(|| out_of_range(v))?
                    .naive_utc();
                let back = match &tz {
                    None => truncate_naive(utc, unit).and_utc(),
                    Some(tz) => {
                        let offset = tz.offset_from_utc_datetime(&utc).fix();
                        let local = truncate_naive(utc + offset, unit);
                        tz.from_local_datetime(&local)
                            .earliest()
                            .ok_or_else(|| {
                                Error::invalid(
                                    "truncate",
                                    format!(
                                        "{local} does not exist in {} (the clock skips it); truncate in UTC instead",
                                        zone.as_deref().unwrap_or_default()
                                    ),
                                )
                            })?
                            .to_utc()
                    }
                };
                back.timestamp()
                    .checked_mul(per_second)
                    .and_then(|s| s.checked_add(i64::from(back.timestamp_subsec_nanos()) / tick))
                    .ok_or_else(|| out_of_range(v))
            };
            macro_rules! each {
                ($t:ty) => {{
                    let out: PrimitiveArray<$t> = a.as_primitive::<$t>().try_unary(one)?;
                    Ok(Arc::new(out.with_timezone_opt(zone.clone())) as ArrayRef)
                }};
            }
            match tu {
                TimeUnit::Second => each!(TimestampSecondType),
                TimeUnit::Millisecond => each!(TimestampMillisecondType),
                TimeUnit::Microsecond => each!(TimestampMicrosecondType),
                TimeUnit::Nanosecond => each!(TimestampNanosecondType),
            }
        }
        t => Err(Error::invalid(
            "truncate",
            format!("needs a date or timestamp, got {t}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Date32Array, TimestampSecondArray};

    fn date(y: i32, m: u32, d: u32) -> i32 {
        date_to_day(NaiveDate::from_ymd_opt(y, m, d).unwrap())
    }

    #[test]
    fn dates_truncate_to_calendar_units() {
        // 2024-05-15 is a Wednesday.
        let a: ArrayRef = Arc::new(Date32Array::from(vec![Some(date(2024, 5, 15)), None]));
        let got = |u| {
            truncate(&a, u)
                .unwrap()
                .as_primitive::<Date32Type>()
                .value(0)
        };
        assert_eq!(got(DateUnit::Year), date(2024, 1, 1));
        assert_eq!(got(DateUnit::Quarter), date(2024, 4, 1));
        assert_eq!(got(DateUnit::Month), date(2024, 5, 1));
        assert_eq!(got(DateUnit::Week), date(2024, 5, 13));
        assert_eq!(got(DateUnit::Day), date(2024, 5, 15));
        assert!(truncate(&a, DateUnit::Year).unwrap().is_null(1));
        // Before the epoch, weeks still start on Monday: 1969-12-31 is a Wednesday.
        let b: ArrayRef = Arc::new(Date32Array::from(vec![-1]));
        let w = truncate(&b, DateUnit::Week).unwrap();
        assert_eq!(w.as_primitive::<Date32Type>().value(0), date(1969, 12, 29));
    }

    #[test]
    fn zoned_timestamps_truncate_on_the_wall_clock() {
        // 2024-03-31 01:30 UTC is 03:30 in Berlin, the night the clocks went forward at
        // 02:00: that day began at 2024-03-30 23:00 UTC.
        let v = DateTime::parse_from_rfc3339("2024-03-31T01:30:00Z")
            .unwrap()
            .timestamp();
        let a: ArrayRef =
            Arc::new(TimestampSecondArray::from(vec![v]).with_timezone("Europe/Berlin"));
        let day = truncate(&a, DateUnit::Day).unwrap();
        let want = DateTime::parse_from_rfc3339("2024-03-30T23:00:00Z")
            .unwrap()
            .timestamp();
        assert_eq!(day.as_primitive::<TimestampSecondType>().value(0), want);
        assert_eq!(day.data_type(), a.data_type());
        // India is 5:30 ahead: 01:00 UTC is 06:30 there, whose hour began at 00:30 UTC.
        let v = v - 1800;
        let a: ArrayRef =
            Arc::new(TimestampSecondArray::from(vec![v]).with_timezone("Asia/Kolkata"));
        let hour = truncate(&a, DateUnit::Hour).unwrap();
        let want = DateTime::parse_from_rfc3339("2024-03-31T00:30:00Z")
            .unwrap()
            .timestamp();
        assert_eq!(hour.as_primitive::<TimestampSecondType>().value(0), want);
    }

    #[test]
    fn elapsed_rounds_toward_zero_and_mixes_dates_with_timestamps() {
        let end: ArrayRef = Arc::new(Date32Array::from(vec![Some(3), Some(-3), None]));
        let start: ArrayRef = Arc::new(TimestampSecondArray::from(vec![3600, 3600, 0]));
        let days = elapsed(&end, &start, DateUnit::Day).unwrap();
        let d = days.as_primitive::<arrow_array::types::Int64Type>();
        // 3 days minus an hour: 2 whole days; -3 days minus an hour: -3 (toward zero).
        assert_eq!((d.value(0), d.value(1), d.is_null(2)), (2, -3, true));
        let ns = elapsed(&end, &start, DateUnit::Nanosecond).unwrap();
        assert_eq!(
            ns.as_primitive::<arrow_array::types::Int64Type>().value(0),
            3 * 86_400_000_000_000 - 3_600_000_000_000
        );
    }
}
