//! When to renew: at two thirds of a certificate's lifetime (Let's
//! Encrypt's advice: day 60 of 90), or earlier when the CA's renewal
//! information (RFC 9773) suggests a window; and when to try again after
//! a failure: a back-off from a minute doubling to a day.
//!
//! Pure arithmetic over Unix seconds, tested on its own.

/// The first wait after a failed attempt...
pub const BACKOFF_FIRST: i64 = 60;
/// ...doubling up to a day: a CA that is down for a week is asked about
/// ten times a day at most, well inside any CA's rate limits (Let's
/// Encrypt allows 5 failed validations per name per hour).
pub const BACKOFF_MAX: i64 = 86400;
/// A failing renewal is logged as an error (and counted as at risk) from
/// 14 days before expiry; before that, as a warning.
pub const LOUD_BEFORE: i64 = 14 * 86400;
/// How often renewal information is asked for when the CA names no
/// Retry-After (RFC 9773 4.3 suggests polling about twice a day).
pub const ARI_EVERY: i64 = 6 * 3600;

/// Two thirds into the certificate's lifetime.
pub fn two_thirds(not_before: i64, not_after: i64) -> i64 {
    not_before + (not_after - not_before).max(0) * 2 / 3
}

/// The wait after `failures` failed attempts in a row, for a certificate
/// of `lifetime` seconds (0: none yet). The wait is also kept under a tenth
/// of the lifetime, so that a short-lived certificate gets ten tries before
/// it expires (a 90-day one is not affected: a tenth is 9 days).
pub fn backoff(failures: u32, lifetime: i64) -> i64 {
    let shift = failures.saturating_sub(1).min(16);
    let b = (BACKOFF_FIRST << shift).min(BACKOFF_MAX);
    if lifetime > 0 {
        b.min((lifetime / 10).max(1))
    } else {
        b
    }
}

/// The wait a CA asked for (`Retry-After`, rate limits), bounded to a day
/// and never shorter than our own back-off.
pub fn next_try(now: i64, failures: u32, lifetime: i64, retry_after: Option<u64>) -> i64 {
    let ours = backoff(failures, lifetime);
    let theirs = retry_after.map_or(0, |s| s.min(BACKOFF_MAX as u64) as i64);
    now + ours.max(theirs)
}

/// RFC 9773 4.1: the certificate's id, `base64url(AKI keyIdentifier)`
/// "." `base64url(serial)` (the DER INTEGER's content octets).
pub fn ari_id(aki: &[u8], serial: &[u8]) -> String {
    format!("{}.{}", super::jws::b64(aki), super::jws::b64(serial))
}

/// The suggested window of a renewalInfo answer, as Unix seconds.
pub fn ari_window(v: &serde_json::Value) -> Option<(i64, i64)> {
    let w = &v["suggestedWindow"];
    let start = rfc3339(w["start"].as_str()?)?;
    let end = rfc3339(w["end"].as_str()?)?;
    (start <= end).then_some((start, end))
}

/// A point of the window picked with `random` (RFC 9773 4.2: uniformly,
/// so that clients do not all come at its start).
pub fn pick_in(window: (i64, i64), random: u64) -> i64 {
    let span = (window.1 - window.0) as u64;
    window.0 + (random % (span + 1)) as i64
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// An RFC 3339 date-time (`2025-01-02T04:05:06Z`, fractions and offsets
/// allowed) as Unix seconds.
pub fn rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[n..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && matches!(&o[..1], "+" | "-") && &o[3..4] == ":" => {
            let (oh, om) = (o[1..3].parse::<i64>().ok()?, o[4..6].parse::<i64>().ok()?);
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (oh * 3600 + om * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_is_due_at_two_thirds() {
        // A 90-day certificate: day 60.
        assert_eq!(two_thirds(0, 90 * 86400), 60 * 86400);
        assert_eq!(two_thirds(100, 130), 120);
        assert_eq!(two_thirds(100, 50), 100);
    }

    #[test]
    fn backoff_doubles_from_a_minute_to_a_day() {
        assert_eq!(backoff(1, 0), 60);
        assert_eq!(backoff(2, 0), 120);
        assert_eq!(backoff(5, 0), 960);
        assert_eq!(backoff(12, 0), 86400);
        assert_eq!(backoff(u32::MAX, 0), 86400);
        // A 90-day certificate is not hurried; a 30-second one is.
        assert_eq!(backoff(12, 90 * 86400), 86400);
        assert_eq!(backoff(3, 30), 3);
        // Retry-After wins when longer, up to a day.
        assert_eq!(next_try(1000, 1, 0, Some(3600)), 4600);
        assert_eq!(next_try(1000, 1, 0, Some(10)), 1060);
        assert_eq!(next_try(0, 1, 0, Some(u64::MAX)), 86400);
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339("2021-01-03T00:00:00Z"), Some(1609632000));
        assert_eq!(rfc3339("2021-01-03T00:00:00.123456Z"), Some(1609632000));
        assert_eq!(rfc3339("2021-01-03T02:00:00+02:00"), Some(1609632000));
        assert_eq!(rfc3339("2021-01-02T23:00:00-01:00"), Some(1609632000));
        assert_eq!(rfc3339("2021-13-03T00:00:00Z"), None);
        assert_eq!(rfc3339("2021-01-03 00:00"), None);
        assert_eq!(rfc3339("2021-01-03T00:00:00"), None);
    }

    #[test]
    fn renewal_information() {
        // RFC 9773 4.1's example: AKI 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:
        // 7B:A0:AE:2C:DE:01:C8:D4 and serial 00:87:65:43:21.
        let aki = [
            0x69, 0x88, 0x5B, 0x6B, 0x87, 0x46, 0x40, 0x41, 0xE1, 0xB3, 0x7B, 0x84, 0x7B, 0xA0,
            0xAE, 0x2C, 0xDE, 0x01, 0xC8, 0xD4,
        ];
        assert_eq!(
            ari_id(&aki, &[0x00, 0x87, 0x65, 0x43, 0x21]),
            "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE"
        );
        let v = serde_json::json!({"suggestedWindow": {
            "start": "2025-01-02T04:00:00Z", "end": "2025-01-03T04:00:00Z"}});
        let w = ari_window(&v).unwrap();
        assert_eq!(w.1 - w.0, 86400);
        assert_eq!(pick_in(w, 0), w.0);
        assert_eq!(pick_in(w, 86400), w.1);
        assert!((w.0..=w.1).contains(&pick_in(w, u64::MAX)));
        assert!(ari_window(&serde_json::json!({})).is_none());
    }
}
