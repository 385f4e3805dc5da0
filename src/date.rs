//! HTTP dates (RFC 9110 §5.6.7): formatting IMF-fixdate and parsing the three
//! forms a client may send.

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const HTTP_DATE_LEN: usize = 29;

/// Civil date from days since 1970-01-01 (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a civil date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Broken-down UTC time: (year, month 1-12, day, hour, minute, second, weekday index into DAYS).
pub fn utc_parts(unix: i64) -> (i64, u32, u32, u32, u32, u32, usize) {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    (
        y,
        m,
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        days.rem_euclid(7) as usize,
    )
}

fn two(out: &mut [u8], v: u32) {
    out[0] = b'0' + (v / 10 % 10) as u8;
    out[1] = b'0' + (v % 10) as u8;
}

/// Formats `unix` (seconds since the epoch) as an IMF-fixdate.
pub fn format_http_date(unix: i64) -> [u8; HTTP_DATE_LEN] {
    let (y, mo, d, h, mi, s, wd) = utc_parts(unix);
    let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    out[0..3].copy_from_slice(DAYS[wd].as_bytes());
    two(&mut out[5..7], d);
    out[8..11].copy_from_slice(MONTHS[(mo - 1) as usize].as_bytes());
    let y = y.clamp(0, 9999) as u32;
    two(&mut out[12..14], y / 100);
    two(&mut out[14..16], y % 100);
    two(&mut out[17..19], h);
    two(&mut out[20..22], mi);
    two(&mut out[23..25], s);
    out
}

/// Formats the time as the access log's `[30/Nov/2026:10:45:42 +0000]`.
pub fn format_clf_date(unix: i64) -> String {
    let (y, mo, d, h, mi, s, _) = utc_parts(unix);
    format!(
        "[{:02}/{}/{:04}:{:02}:{:02}:{:02} +0000]",
        d,
        MONTHS[(mo - 1) as usize],
        y,
        h,
        mi,
        s
    )
}

fn month_index(s: &str) -> Option<u32> {
    MONTHS.iter().position(|m| *m == s).map(|i| i as u32 + 1)
}

fn parse_hms(s: &str) -> Option<(u32, u32, u32)> {
    let mut it = s.split(':');
    let h = it.next()?.parse().ok()?;
    let m = it.next()?.parse().ok()?;
    let sec = it.next()?.parse().ok()?;
    if it.next().is_some() || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    Some((h, m, sec))
}

fn to_unix(y: i64, mo: u32, d: u32, (h, mi, s): (u32, u32, u32)) -> Option<i64> {
    if !(1..=31).contains(&d) {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + (h * 3600 + mi * 60 + s) as i64)
}

/// Parses an HTTP date in IMF-fixdate, RFC 850 or asctime form.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let parts: Vec<&str> = s.split_ascii_whitespace().collect();
    match parts.as_slice() {
        // Sun, 06 Nov 1994 08:49:37 GMT
        [_, d, mo, y, t, "GMT"] if parts[0].ends_with(',') => {
            let y: i64 = y.parse().ok()?;
            to_unix(y, month_index(mo)?, d.parse().ok()?, parse_hms(t)?)
        }
        // Sunday, 06-Nov-94 08:49:37 GMT
        [_, dmy, t, "GMT"] => {
            let mut it = dmy.split('-');
            let d = it.next()?.parse().ok()?;
            let mo = month_index(it.next()?)?;
            let y: i64 = it.next()?.parse().ok()?;
            let y = if y < 70 {
                2000 + y
            } else if y < 100 {
                1900 + y
            } else {
                y
            };
            to_unix(y, mo, d, parse_hms(t)?)
        }
        // Sun Nov  6 08:49:37 1994
        [_, mo, d, t, y] => to_unix(
            y.parse().ok()?,
            month_index(mo)?,
            d.parse().ok()?,
            parse_hms(t)?,
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        let cases = [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_796_035_542, "Mon, 30 Nov 2026 10:45:42 GMT"),
        ];
        for (t, want) in cases {
            assert_eq!(std::str::from_utf8(&format_http_date(t)).unwrap(), want);
            assert_eq!(parse_http_date(want), Some(t), "round trip of {want}");
        }
    }

    #[test]
    fn parses_the_three_forms() {
        let cases = [
            (
                "IMF-fixdate",
                "Sun, 06 Nov 1994 08:49:37 GMT",
                Some(784_111_777),
            ),
            (
                "RFC 850",
                "Sunday, 06-Nov-94 08:49:37 GMT",
                Some(784_111_777),
            ),
            ("asctime", "Sun Nov  6 08:49:37 1994", Some(784_111_777)),
            ("garbage", "yesterday", None),
            ("bad month", "Sun, 06 Foo 1994 08:49:37 GMT", None),
            ("bad hour", "Sun, 06 Nov 1994 28:49:37 GMT", None),
            ("not GMT", "Sun, 06 Nov 1994 08:49:37 CET", None),
            ("empty", "", None),
        ];
        for (what, s, want) in cases {
            assert_eq!(parse_http_date(s), want, "{what}: {s:?}");
        }
    }

    #[test]
    fn clf_date() {
        assert_eq!(format_clf_date(784_111_777), "[06/Nov/1994:08:49:37 +0000]");
    }
}
