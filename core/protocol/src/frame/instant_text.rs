//! Dates and times written as text in expressions: `col("pickup") >= lit("2015-01-10
//! 08:30")` compares with the instant the text names.
//!
//! The forms are those pandas and SQL users write, ISO 8601 with a space or a `T`:
//! `2015-01-10`, `2015-01-10 08:30`, `2015-01-10T08:30:15`, `2015-01-10 08:30:15.123456`
//! (up to nine fraction digits), each optionally ending in `Z`. Text that names no
//! instant is refused when the expression is typed, rather than comparing as null and
//! silently selecting nothing.

/// Nanoseconds since the Unix epoch (UTC-naive) that `text` names, or `None` when it
/// is not one of the forms in the module docs or names an impossible date or time.
///
/// ```
/// use tessera_core::frame::instant_text::parse_instant;
/// assert_eq!(parse_instant("1970-01-02"), Some(86_400_000_000_000));
/// assert_eq!(parse_instant("1970-01-01 00:01"), Some(60_000_000_000));
/// assert_eq!(parse_instant("1970-01-01T00:00:00.5Z"), Some(500_000_000));
/// assert_eq!(parse_instant("2015-02-30"), None);
/// assert_eq!(parse_instant("yesterday"), None);
/// ```
pub fn parse_instant(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, time) = match text.find([' ', 'T']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let mut parts = date.split('-');
    let year: i64 = number(parts.next()?, 4)?;
    let month: i64 = number(parts.next()?, 2)?;
    let day: i64 = number(parts.next()?, 2)?;
    if parts.next().is_some() || !(1..=12).contains(&month) || day < 1 || day > days_in(year, month)
    {
        return None;
    }
    let mut nanos = days_from_civil(year, month, day).checked_mul(86_400_000_000_000)?;
    if let Some(time) = time {
        let (clock, fraction) = match time.split_once('.') {
            Some((c, f)) => (c, Some(f)),
            None => (time, None),
        };
        let mut fields = clock.split(':');
        let hour: i64 = number(fields.next()?, 2)?;
        let minute: i64 = number(fields.next()?, 2)?;
        let second: i64 = match fields.next() {
            Some(s) => number(s, 2)?,
            None if fraction.is_none() => 0,
            None => return None,
        };
        if fields.next().is_some() || hour > 23 || minute > 59 || second > 59 {
            return None;
        }
        let mut sub = 0i64;
        if let Some(f) = fraction {
            if f.is_empty() || f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            sub = f.parse::<i64>().ok()? * 10i64.pow(9 - f.len() as u32);
        }
        nanos = nanos.checked_add(((hour * 60 + minute) * 60 + second) * 1_000_000_000 + sub)?;
    }
    Some(nanos)
}

/// Digits of exactly `width` characters (a year may have more).
fn number(s: &str, width: usize) -> Option<i64> {
    let ok = if width == 4 {
        s.len() >= 4
    } else {
        s.len() == width
    };
    if !ok || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_users_write_name_the_same_instants() {
        let t = parse_instant("2024-02-29 13:45:30").unwrap();
        assert_eq!(parse_instant("2024-02-29T13:45:30"), Some(t));
        assert_eq!(parse_instant("2024-02-29 13:45:30Z"), Some(t));
        assert_eq!(
            parse_instant("2024-02-29 13:45:30.25"),
            Some(t + 250_000_000)
        );
        assert_eq!(parse_instant("2024-02-29 13:45"), Some(t - 30_000_000_000));
        // 2024-02-29 is day 19782 of the epoch (as `date -d 2024-02-29 +%s` / 86400).
        assert_eq!(
            parse_instant("2024-02-29"),
            Some(19_782 * 86_400_000_000_000)
        );
        assert_eq!(parse_instant("1969-12-31"), Some(-86_400_000_000_000));
    }

    #[test]
    fn text_naming_no_instant_is_refused() {
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "2024-01-01 24:00",
            "2024-01-01 10",
            "2024-01-01 10:00:00.",
            "2024-01-01 10:00:00.1234567890",
            "10:00",
            "",
            "x",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
    }
}
