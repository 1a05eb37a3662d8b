//! Text → value parsers for the CSV reader: integers, floats, booleans, timestamps.
//!
//! These are on the hot path of `read_csv` (every projected field of every row goes
//! through one), so they work on bytes and take the common shapes fast: a float such as
//! `12.5` with at most 15 significant digits and no exponent is `mantissa / 10^k`, which
//! IEEE division rounds correctly because both operands are exact (Clinger's fast path);
//! anything else falls back to the standard library's correctly rounded parser.

/// Parses a decimal integer with an optional sign; `None` on anything else or overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    if neg {
        if v == 1 << 63 {
            Some(i64::MIN)
        } else {
            i64::try_from(v).ok().map(|v| -v)
        }
    } else {
        i64::try_from(v).ok()
    }
}

const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Parses a float (decimal, exponent, `inf`, `nan`); `None` when it is not one.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    // Fast path: [sign] digits [. digits], at most 15 significant digits.
    let (neg, body) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let mut mantissa: u64 = 0;
    let mut digits = 0usize;
    let mut frac = 0usize;
    let mut seen_dot = false;
    let mut ok = !body.is_empty();
    for &c in body {
        match c {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(c - b'0');
                digits += 1;
                if seen_dot {
                    frac += 1;
                }
                if digits > 15 {
                    ok = false;
                    break;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => {
                ok = false;
                break;
            }
        }
    }
    if ok && digits > 0 {
        let v = mantissa as f64 / POW10[frac];
        return Some(if neg { -v } else { v });
    }
    std::str::from_utf8(s).ok()?.trim().parse::<f64>().ok()
}

/// Parses `true`/`false` in any case (and `1`/`0` is left to the integer parser).
pub fn parse_bool(s: &[u8]) -> Option<bool> {
    if s.eq_ignore_ascii_case(b"true") {
        Some(true)
    } else if s.eq_ignore_ascii_case(b"false") {
        Some(false)
    } else {
        None
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn digits(s: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in s {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u32::from(d);
    }
    Some(v)
}

/// Parses `YYYY-MM-DD`, `YYYY-MM-DD HH:MM[:SS[.f…]]` or the same with `T`, optionally
/// ending in `Z`, into microseconds since the epoch (no time-zone conversion).
pub fn parse_timestamp_micros(s: &[u8]) -> Option<i64> {
    let s = s.strip_suffix(b"Z").unwrap_or(s);
    if s.len() < 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let y = digits(&s[0..4])?;
    let m = digits(&s[5..7])?;
    let d = digits(&s[8..10])?;
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(i64::from(y), m) {
        return None;
    }
    let mut micros = days_from_civil(i64::from(y), m, d) * 86_400_000_000;
    if s.len() == 10 {
        return Some(micros);
    }
    if !(s[10] == b' ' || s[10] == b'T') || s.len() < 16 || s[13] != b':' {
        return None;
    }
    let hh = digits(&s[11..13])?;
    let mm = digits(&s[14..16])?;
    let mut ss = 0;
    let mut frac_us = 0i64;
    if s.len() > 16 {
        if s[16] != b':' || s.len() < 19 {
            return None;
        }
        ss = digits(&s[17..19])?;
        if s.len() > 19 {
            if s[19] != b'.' || s.len() == 20 {
                return None;
            }
            let f = &s[20..];
            let mut scale = 100_000i64;
            for &c in f {
                let dgt = c.wrapping_sub(b'0');
                if dgt > 9 {
                    return None;
                }
                frac_us += i64::from(dgt) * scale;
                scale /= 10;
            }
        }
    }
    if hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    micros += (i64::from(hh) * 3600 + i64::from(mm) * 60 + i64::from(ss)) * 1_000_000 + frac_us;
    Some(micros)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Formats microseconds since the epoch as `YYYY-MM-DD HH:MM:SS[.ffffff]` (the inverse of
/// [`parse_timestamp_micros`]; the fraction is printed only when non-zero).
pub fn format_timestamp_micros(us: i64) -> String {
    let days = us.div_euclid(86_400_000_000);
    let rem = us.rem_euclid(86_400_000_000);
    let (y, m, d) = civil_from_days(days);
    let secs = rem / 1_000_000;
    let frac = rem % 1_000_000;
    let (hh, mm, ss) = (secs / 3600, secs / 60 % 60, secs % 60);
    if frac == 0 {
        format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}")
    } else {
        format!("{y:04}-{m:02}-{d:02} {hh:02}:{mm:02}:{ss:02}.{frac:06}")
    }
}

/// The date of a day number (inverse of [`days_from_civil`]).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-42"), Some(-42));
        assert_eq!(parse_i64(b"+7"), Some(7));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"1.0"), None);
        assert_eq!(parse_i64(b""), None);
        assert_eq!(parse_i64(b"-"), None);
    }

    #[test]
    fn floats_match_std_exactly() {
        for s in [
            "1.59",
            "0.1",
            "-3.25",
            "12",
            "123456789012345",
            "0.000000000000001",
            "1e10",
            "2.5E-3",
            "inf",
            "-inf",
            "1234567890.12345",
            "9007199254740993",
            ".5",
            "5.",
        ] {
            let want: f64 = s.parse().unwrap();
            assert_eq!(
                parse_f64(s.as_bytes()).unwrap().to_bits(),
                want.to_bits(),
                "{s}"
            );
        }
        assert!(parse_f64(b"nan").unwrap().is_nan());
        assert_eq!(parse_f64(b"abc"), None);
        assert_eq!(parse_f64(b"1.2.3"), None);
        assert_eq!(parse_f64(b""), None);
        assert_eq!(parse_f64(b"."), None);
    }

    #[test]
    fn timestamps_round_trip_and_match_known_values() {
        assert_eq!(parse_timestamp_micros(b"1970-01-01"), Some(0));
        // 2015-01-15 19:05:39 UTC is 1421348739 s since the epoch.
        assert_eq!(
            parse_timestamp_micros(b"2015-01-15 19:05:39"),
            Some(1_421_348_739_000_000)
        );
        assert_eq!(
            parse_timestamp_micros(b"2015-01-15T19:05:39.25Z"),
            Some(1_421_348_739_250_000)
        );
        assert_eq!(
            parse_timestamp_micros(b"1969-12-31 23:59:59"),
            Some(-1_000_000)
        );
        assert_eq!(parse_timestamp_micros(b"2015-02-29"), None);
        assert_eq!(
            parse_timestamp_micros(b"2016-02-29"),
            Some(days_from_civil(2016, 2, 29) * 86_400_000_000)
        );
        assert_eq!(parse_timestamp_micros(b"2015-01-15 25:00:00"), None);
        assert_eq!(parse_timestamp_micros(b"15/01/2015"), None);
        for us in [0, 1_421_348_739_000_000, -1_000_000, 951_782_400_123_456] {
            let s = format_timestamp_micros(us);
            assert_eq!(parse_timestamp_micros(s.as_bytes()), Some(us), "{s}");
        }
        for z in [-800_000, -1, 0, 1, 59, 60, 10_957, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }
}
