//! HTTP dates (RFC 9110 §5.6.7) on the `httpdate` crate: formatting
//! IMF-fixdate and parsing the three forms a client may send, without
//! allocating and refusing dates that do not exist ("31 Feb"); a wrong
//! weekday is let pass, as lighttpd lets it. The broken-down time (`utc_parts`) stays here for the
//! access log's and the listing's formats, which are not HTTP dates.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use httpdate::HttpDate;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const HTTP_DATE_LEN: usize = 29;

/// The last second `httpdate` formats: 9999-12-31 23:59:59 (it panics past
/// it, and before the epoch).
const LAST_SECOND: i64 = 253_402_300_799;

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

/// Broken-down UTC time: (year, month 1-12, day, hour, minute, second, days
/// since 1970-01-01 modulo 7, 0 being a Thursday).
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

/// Formats `unix` (seconds since the epoch, clamped to 1970..=9999) as an
/// IMF-fixdate, into a fixed array: the clock does this once a second and
/// the static-file cache once per file, and neither wants a `String`.
pub fn format_http_date(unix: i64) -> [u8; HTTP_DATE_LEN] {
    use std::io::Write;
    let at = UNIX_EPOCH + Duration::from_secs(unix.clamp(0, LAST_SECOND) as u64);
    let mut out = [b' '; HTTP_DATE_LEN];
    // `HttpDate`'s Display writes exactly HTTP_DATE_LEN bytes.
    let _ = write!(&mut out[..], "{}", HttpDate::from(at));
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

/// Parses an HTTP date in IMF-fixdate, RFC 850 or asctime form (leading and
/// trailing whitespace allowed); `None` for anything else, including dates
/// that do not exist. The weekday is not checked, as lighttpd does not
/// check it (its own tests send `Sun, 01 Jan <next year>`): `httpdate`
/// refuses a wrong one, so a date it refuses is tried once more with each
/// weekday in the IMF-fixdate and asctime forms (the day name is their
/// first three letters), at most 7 more parses and only for a refused date.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let to_unix = |d: HttpDate| {
        SystemTime::from(d)
            .duration_since(UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs() as i64)
    };
    if let Ok(d) = s.parse::<HttpDate>() {
        return to_unix(d);
    }
    let t = s.trim();
    if !(t.len() == HTTP_DATE_LEN || t.len() == 24) || !t.is_char_boundary(3) {
        return None;
    }
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let mut buf = [0u8; HTTP_DATE_LEN];
    let buf = &mut buf[..t.len()];
    buf.copy_from_slice(t.as_bytes());
    DAYS.iter().find_map(|day| {
        buf[..3].copy_from_slice(day.as_bytes());
        let d = std::str::from_utf8(buf).ok()?.parse::<HttpDate>().ok()?;
        to_unix(d)
    })
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
            ("31 February", "Sat, 31 Feb 2024 08:49:37 GMT", None),
            (
                "29 February of a common year",
                "Thu, 29 Feb 2023 00:00:00 GMT",
                None,
            ),
            (
                "the wrong weekday, as lighttpd's tests send",
                "Mon, 06 Nov 1994 08:49:37 GMT",
                Some(784_111_777),
            ),
            (
                "asctime, wrong weekday",
                "Mon Nov  6 08:49:37 1994",
                Some(784_111_777),
            ),
            (
                "31 February whatever the weekday",
                "Thu, 31 Feb 2024 08:49:37 GMT",
                None,
            ),
            ("day 32", "Wed, 32 Nov 1994 08:49:37 GMT", None),
            ("minute 60", "Sun, 06 Nov 1994 08:60:37 GMT", None),
            ("before the epoch", "Wed, 31 Dec 1969 23:59:59 GMT", None),
            ("non-ASCII", "Sun, 06 Nov 1994 08:49:37 GMT\u{e9}", None),
            (
                "surrounding blanks",
                " Sun, 06 Nov 1994 08:49:37 GMT ",
                Some(784_111_777),
            ),
            (
                "leap day",
                "Thu, 29 Feb 2024 00:00:00 GMT",
                Some(1_709_164_800),
            ),
        ];
        for (what, s, want) in cases {
            assert_eq!(parse_http_date(s), want, "{what}: {s:?}");
        }
    }

    #[test]
    fn formats_out_of_range_times_clamped_instead_of_panicking() {
        assert_eq!(&format_http_date(-5), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            &format_http_date(i64::MAX),
            b"Fri, 31 Dec 9999 23:59:59 GMT"
        );
    }

    #[test]
    fn clf_date() {
        assert_eq!(format_clf_date(784_111_777), "[06/Nov/1994:08:49:37 +0000]");
    }
}
