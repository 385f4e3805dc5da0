//! mod_status: `status.status-url` (an HTML page for people, `?auto` text
//! and `?json` for scripts, with the figures and the connection table
//! lighttpd's page has), `status.statistics-url`, `status.config-url`,
//! and glint's `glint.metrics-url` (the Prometheus text format).

mod html;
pub mod metrics;
mod text;

use crate::clock::Clock;
use crate::config::Config;
use crate::msg::Reply;
use crate::stats::board::Board;
use crate::stats::{Recent, Stats};

/// What the pages show: the counters, the last seconds, the connection
/// table, the time, the configuration, and the Host the page was asked
/// for.
pub struct View<'a> {
    pub stats: &'a Stats,
    pub recent: &'a Recent,
    pub board: &'a Board,
    pub clock: &'a Clock,
    pub config: &'a Config,
    pub host: &'a str,
    /// The backends' figures (for the metrics only).
    pub backends: &'a metrics::Backends,
}

impl View<'_> {
    /// Seconds since start.
    fn uptime(&self) -> u64 {
        self.clock.mono_secs
    }

    /// Connections open, and how many more `server.max-connections` allows
    /// (lighttpd's BusyServers and IdleServers).
    fn busy_idle(&self) -> (u64, u64) {
        let busy = self.board.rows().count() as u64;
        let max = u64::from(self.config.global.limits.max_connections.max(1));
        (busy, max.saturating_sub(busy))
    }
}

/// Answers when `path` is one of the configured status URLs; returns false otherwise.
/// Whether `path` is one of mod_status's pages under `s`: the figures a
/// page shows are gathered only then.
#[inline]
pub fn is_page(path: &str, s: &crate::config::Status) -> bool {
    [
        &s.status_url,
        &s.statistics_url,
        &s.metrics_url,
        &s.config_url,
    ]
    .iter()
    .any(|u| u.as_deref() == Some(path))
}

pub fn serve(path: &str, query: &str, r: &mut Reply, v: &View<'_>) -> bool {
    let settings = std::rc::Rc::clone(&r.settings);
    let s = &settings.status;
    let is = |u: &Option<String>| u.as_deref() == Some(path);
    if is(&s.status_url) {
        if query == "auto" {
            send(r, b"text/plain; charset=utf-8", &text::auto(v));
        } else if let Some(rest) = query.strip_prefix("json") {
            let (body, jsonp) = text::json(v, rest);
            let t: &[u8] = if jsonp {
                b"application/javascript"
            } else {
                b"application/json"
            };
            send(r, t, &body);
        } else {
            let refresh = query
                .strip_prefix("refresh=")
                .and_then(|n| n.parse::<u64>().ok());
            let page = html::page(v, !s.no_sort, refresh, &settings.identity.tag);
            send(r, b"text/html; charset=utf-8", &page);
        }
        return true;
    }
    if is(&s.statistics_url) {
        send(r, b"text/plain; charset=utf-8", &text::statistics(v));
        return true;
    }
    if is(&s.metrics_url) {
        send(r, metrics::CONTENT_TYPE, &metrics::render(v));
        return true;
    }
    if is(&s.config_url) {
        send(r, b"text/plain; charset=utf-8", &v.config.dump());
        return true;
    }
    false
}

/// A status page: 200, never cached.
fn send(r: &mut Reply, content_type: &[u8], body: &str) {
    r.start(200);
    r.header("Cache-Control", b"no-cache");
    r.body_bytes(content_type, body.as_bytes());
}

/// `n` with lighttpd's unit prefixes (k, M, G, ... by 1000 or 1024):
/// whole numbers for counts (`base` 1000), two decimals for bytes.
fn scaled(n: f64, base: f64) -> String {
    const UNITS: [&str; 9] = ["", "k", "M", "G", "T", "P", "E", "Z", "Y"];
    let mut v = if n.is_finite() { n.max(0.0) } else { 0.0 };
    let mut u = 0;
    while v > base && u + 1 < UNITS.len() {
        v /= base;
        u += 1;
    }
    if base == 1000.0 {
        format!("{} {}", v as u64, UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::scaled;

    #[test]
    fn figures_are_scaled_as_lighttpd_scales_them() {
        assert_eq!(scaled(999.0, 1000.0), "999 ");
        assert_eq!(scaled(12_345.0, 1000.0), "12 k");
        assert_eq!(scaled(2048.5, 1024.0), "2.00 k");
        assert_eq!(scaled(0.0, 1024.0), "0.00 ");
        // At uptime 0 an average is 0/0: shown as 0, never as a huge number.
        assert_eq!(scaled(f64::NAN, 1000.0), "0 ");
        assert_eq!(scaled(f64::INFINITY, 1024.0), "0.00 ");
    }
}
