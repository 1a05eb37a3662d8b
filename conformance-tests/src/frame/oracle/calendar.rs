//! The proleptic Gregorian calendar from its definition (Howard Hinnant's day-count
//! algorithms), for the oracle's date parts, offsets, truncation and elapsed time. Nothing
//! here calls a date library.

/// Microseconds in a day.
pub const US_PER_DAY: i64 = 86_400_000_000;

/// `(year, month 1..=12, day 1..=31)` of a count of days since 1970-01-01.
pub fn civil(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Days since 1970-01-01 of a civil date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Whether `y` is a leap year.
pub fn leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Days in month `m` of year `y`.
pub fn month_len(y: i64, m: i64) -> i64 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Monday = 0 .. Sunday = 6 (1970-01-01 was a Thursday).
pub fn weekday(days: i64) -> i64 {
    (days + 3).rem_euclid(7)
}

/// Day of the year, 1-based.
pub fn day_of_year(days: i64) -> i64 {
    let (y, _, _) = civil(days);
    days - days_from_civil(y, 1, 1) + 1
}

/// `days` moved by `months` calendar months, the day clamped to the new month's length.
pub fn add_months(days: i64, months: i64) -> i64 {
    let (y, m, d) = civil(days);
    let index = y * 12 + (m - 1) + months;
    let (ny, nm) = (index.div_euclid(12), index.rem_euclid(12) + 1);
    days_from_civil(ny, nm, d.min(month_len(ny, nm)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(-1), (1969, 12, 31));
        // 2024-01-31 plus one month is 2024-02-29.
        assert_eq!(
            civil(add_months(days_from_civil(2024, 1, 31), 1)),
            (2024, 2, 29)
        );
        // 2020-11-30 was a Monday.
        assert_eq!(weekday(days_from_civil(2020, 11, 30)), 0);
        assert_eq!(day_of_year(days_from_civil(2020, 12, 31)), 366);
        for d in -800_000..800_000i64 {
            let (y, m, day) = civil(d);
            assert_eq!(days_from_civil(y, m, day), d);
        }
    }
}
