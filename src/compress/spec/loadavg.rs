//! The load average `deflate.max-loadavg` is compared with.

/// The 1-minute load average from `/proc/loadavg`, read at most once per
/// [`LoadAvg::REFRESH_SECS`]: the kernel recomputes it every 5 s
/// (LOAD_FREQ), so reading more often returns the same number. lighttpd
/// reads it every 30 s.
#[derive(Debug)]
pub struct LoadAvg {
    value: f64,
    read_at: Option<u64>,
    source: fn() -> Option<f64>,
}

impl Default for LoadAvg {
    fn default() -> Self {
        LoadAvg::with_source(|| parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?))
    }
}

impl LoadAvg {
    pub const REFRESH_SECS: u64 = 5;

    /// A cache over another reader (tests).
    pub fn with_source(source: fn() -> Option<f64>) -> LoadAvg {
        LoadAvg {
            value: 0.0,
            read_at: None,
            source,
        }
    }

    /// The load at `now` (seconds on any monotonic clock the caller keeps).
    /// A failed read keeps the last value (0.0 at first), as lighttpd does.
    pub fn get(&mut self, now: u64) -> f64 {
        let fresh = self
            .read_at
            .is_some_and(|t| now >= t && now - t < Self::REFRESH_SECS);
        if !fresh {
            if let Some(v) = (self.source)() {
                self.value = v;
            }
            self.read_at = Some(now);
        }
        self.value
    }
}

/// The first field of `/proc/loadavg` ("0.52 0.58 0.59 1/389 12345").
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}
