//! glint's `glint.metrics-url`: the counters in the Prometheus text
//! exposition format (version 0.0.4), for a Prometheus server to scrape
//! without an exporter beside glint. The counters are the plain integers
//! the server adds to as it works; a scrape only formats them (and reads
//! the process's figures from /proc).

use std::fmt::Write as _;

use super::View;
use crate::stats::board::State;
use crate::stats::{Stats, PROTOCOLS};

pub const CONTENT_TYPE: &[u8] = b"text/plain; version=0.0.4; charset=utf-8";

/// One backend's figures (a gateway host), as the exchange copies them
/// from the backends for a scrape.
#[derive(Debug, Clone, Default)]
pub struct Backend {
    /// The configured label (`host:port`, or the socket) and the route's
    /// prefix or extension.
    pub name: String,
    pub route: String,
    pub requests: u64,
    pub failures: u64,
    pub timeouts: u64,
    /// Connections open to it now.
    pub connections: u64,
    /// Not used now, after a failure (`disable-time`).
    pub disabled: bool,
}

/// Figures of the whole gateway side.
#[derive(Debug, Clone, Default)]
pub struct Backends {
    pub hosts: Vec<Backend>,
    /// Requests waiting for a backend to be free.
    pub queued: u64,
}

/// The whole page.
pub fn render(v: &View<'_>) -> String {
    let mut m = Page(String::with_capacity(4096));
    let s = v.stats;
    m.family(
        "glint_requests_total",
        "counter",
        "Requests answered, by protocol and status class.",
    );
    for (p, classes) in PROTOCOLS.iter().zip(s.answers) {
        for (c, n) in classes.iter().enumerate() {
            let labels = format!("protocol=\"{p}\",code=\"{}xx\"", c + 1);
            m.sample("glint_requests_total", &labels, *n as f64);
        }
    }
    m.one(
        "glint_received_bytes_total",
        "counter",
        "Bytes read from clients (HTTP bytes, inside TLS).",
        s.bytes_in as f64,
    );
    m.one(
        "glint_sent_bytes_total",
        "counter",
        "Bytes written to clients (HTTP bytes, inside TLS).",
        s.bytes_out as f64,
    );
    m.one(
        "glint_connections_accepted_total",
        "counter",
        "Client connections accepted.",
        s.connections as f64,
    );
    connections(&mut m, v);
    m.one(
        "glint_connection_limit",
        "gauge",
        "server.max-connections.",
        f64::from(v.config.global.limits.max_connections),
    );
    m.one(
        "glint_connection_limit_reached_total",
        "counter",
        "Times accepting paused at server.max-connections.",
        s.conn_limit_reached as f64,
    );
    protocols(&mut m, s);
    backends(&mut m, v.backends);
    m.one(
        "glint_uptime_seconds",
        "gauge",
        "Seconds since start.",
        v.clock.mono_secs as f64,
    );
    process(&mut m, v);
    m.0
}

/// The TLS handshakes, HTTP/2 streams, HTTP/3 connections and bytes
/// saved by compression.
fn protocols(m: &mut Page, s: &Stats) {
    m.family(
        "glint_tls_handshakes_total",
        "counter",
        "TLS handshakes, by result.",
    );
    for (result, n) in [
        ("full", s.tls_full),
        ("resumed", s.tls_resumed),
        ("failed", s.tls_failed),
    ] {
        m.sample(
            "glint_tls_handshakes_total",
            &format!("result=\"{result}\""),
            n as f64,
        );
    }
    m.one(
        "glint_http2_streams_total",
        "counter",
        "HTTP/2 streams that carried a request.",
        s.h2_streams as f64,
    );
    m.one(
        "glint_http3_connections_total",
        "counter",
        "QUIC connections accepted for HTTP/3.",
        s.h3_connections as f64,
    );
    m.one(
        "glint_compression_saved_bytes_total",
        "counter",
        "Bytes compression left out of answers compressed as they were sent.",
        s.compress_saved as f64,
    );
}

/// Open connections by state (the scoreboard's states).
fn connections(m: &mut Page, v: &View<'_>) {
    let mut counts = [0u64; State::LEGEND.len()];
    for r in v.board.rows() {
        if let Some(k) = State::LEGEND.iter().position(|&s| s == r.state()) {
            counts[k] += 1;
        }
    }
    m.family(
        "glint_connections",
        "gauge",
        "Client connections open, by state.",
    );
    for (st, n) in State::LEGEND.iter().zip(counts) {
        m.sample(
            "glint_connections",
            &format!("state=\"{}\"", st.name()),
            n as f64,
        );
    }
}

fn backends(m: &mut Page, b: &Backends) {
    m.one(
        "glint_backend_queue_length",
        "gauge",
        "Requests waiting for a free backend.",
        b.queued as f64,
    );
    type Get = fn(&Backend) -> f64;
    let families: [(&str, &str, &str, Get); 5] = [
        (
            "glint_backend_requests_total",
            "counter",
            "Requests sent to the backend.",
            |h| h.requests as f64,
        ),
        (
            "glint_backend_failures_total",
            "counter",
            "Times the backend failed and was disabled.",
            |h| h.failures as f64,
        ),
        (
            "glint_backend_timeouts_total",
            "counter",
            "Requests that timed out on the backend.",
            |h| h.timeouts as f64,
        ),
        (
            "glint_backend_connections",
            "gauge",
            "Connections open to the backend.",
            |h| h.connections as f64,
        ),
        (
            "glint_backend_disabled",
            "gauge",
            "1 while the backend is disabled after a failure.",
            |h| f64::from(u8::from(h.disabled)),
        ),
    ];
    for (name, kind, help, get) in families {
        m.family(name, kind, help);
        for h in &b.hosts {
            let labels = format!(
                "route=\"{}\",backend=\"{}\"",
                escape(&h.route),
                escape(&h.name)
            );
            m.sample(name, &labels, get(h));
        }
    }
}

/// The process's figures under the names Prometheus's client libraries use.
fn process(m: &mut Page, v: &View<'_>) {
    let p = Process::read();
    if let Some(cpu) = p.cpu_seconds {
        m.one(
            "process_cpu_seconds_total",
            "counter",
            "User and system CPU time spent in seconds.",
            cpu,
        );
    }
    if let Some(rss) = p.resident_bytes {
        m.one(
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            rss as f64,
        );
    }
    if let Some(pss) = p.proportional_bytes {
        m.one(
            "glint_process_proportional_memory_bytes",
            "gauge",
            "Proportional set size in bytes (shared pages divided among their users).",
            pss as f64,
        );
    }
    if let Some(fds) = p.open_fds {
        m.one(
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            fds as f64,
        );
    }
    if let Some(max) = p.max_fds {
        m.one(
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
            max as f64,
        );
    }
    let start = v.clock.unix - v.clock.mono_secs as i64;
    m.one(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since unix epoch in seconds.",
        start as f64,
    );
}

/// What /proc says of this process (each figure absent when it cannot
/// be read).
#[derive(Debug, Default)]
pub struct Process {
    pub cpu_seconds: Option<f64>,
    pub resident_bytes: Option<u64>,
    pub proportional_bytes: Option<u64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
}

impl Process {
    pub fn read() -> Process {
        let tick = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .filter(|&t| t > 0)
            .unwrap_or(100) as f64;
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command name (which may hold spaces) in ")".
        let after: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // utime and stime are fields 14 and 15, the 12th and 13th after ")".
        let field = |i: usize| after.get(i).and_then(|f| f.parse::<u64>().ok());
        let cpu_seconds = match (field(11), field(12)) {
            (Some(u), Some(s)) => Some((u + s) as f64 / tick),
            _ => None,
        };
        Process {
            cpu_seconds,
            resident_bytes: kb_line("/proc/self/status", "VmRSS:"),
            proportional_bytes: kb_line("/proc/self/smaps_rollup", "Pss:"),
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|d| d.count() as u64),
            max_fds: nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .ok()
                .map(|(soft, _)| soft),
        }
    }
}

/// The `kB` figure of the line starting with `key` in `path`, in bytes.
fn kb_line(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kb * 1024)
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The page being written.
struct Page(String);

impl Page {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = write!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}\n");
    }

    fn sample(&mut self, name: &str, labels: &str, value: f64) {
        let _ = writeln!(self.0, "{name}{{{labels}}} {value}");
    }

    /// A family of one sample without labels.
    fn one(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        let _ = writeln!(self.0, "{name} {value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn this_process_has_figures() {
        let p = Process::read();
        assert!(p.cpu_seconds.is_some_and(|c| c >= 0.0));
        assert!(p.resident_bytes.is_some_and(|r| r > 0));
        assert!(p.open_fds.is_some_and(|n| n >= 3));
    }
}
