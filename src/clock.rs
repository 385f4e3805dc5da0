//! The server's notion of now: read once per loop iteration, with the `Date`
//! header and the access log's timestamp formatted once a second.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::date::{format_clf_date, format_http_date, HTTP_DATE_LEN};

pub struct Clock {
    start: Instant,
    /// Seconds since the server started (monotonic): time-outs count in these.
    pub mono_secs: u64,
    /// Microseconds since the server started, for request durations.
    pub mono_us: u64,
    /// Wall-clock seconds since the epoch.
    pub unix: i64,
    /// `Date` header value for `unix`.
    pub http_date: [u8; HTTP_DATE_LEN],
    /// Access-log timestamp for `unix`.
    pub clf_date: String,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    pub fn new() -> Clock {
        let mut c = Clock {
            start: Instant::now(),
            mono_secs: 0,
            mono_us: 0,
            unix: 0,
            http_date: [b' '; HTTP_DATE_LEN],
            clf_date: String::new(),
        };
        c.update();
        c
    }

    /// Reads the time; returns true when a new second began.
    pub fn update(&mut self) -> bool {
        let mono = self.start.elapsed();
        self.mono_us = mono.as_micros() as u64;
        let secs = mono.as_secs();
        let unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let new_second = secs != self.mono_secs || unix != self.unix;
        self.mono_secs = secs;
        if unix != self.unix {
            self.unix = unix;
            self.http_date = format_http_date(unix);
            self.clf_date = format_clf_date(unix);
        }
        new_second
    }
}

/// Seconds since the epoch now (0 if the clock is before it).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_advance() {
        let mut c = Clock::new();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        c.update();
        assert_eq!(c.mono_secs, 1, "{}", c.mono_us);
    }
}
